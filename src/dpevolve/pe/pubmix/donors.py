"""Exact donor selection for maximum-invariance floor raising (docs/math.md §5).

The donors of MIFR solve a covering knapsack: among the entries above the floor, choose
S minimising ``sum_S A_i`` subject to ``sum_S (A_i - t) >= D(t)``. Three exact solvers:
an integer DP when A is counts / N, branch and bound on value classes, and HiGHS' MILP.
:func:`dpevolve.pe.pubmix.floor.max_invariance_donors` picks one.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from dpevolve.errors import InputError

__all__ = [
    "FEASIBILITY_RTOL",
    "donors_by_bnb",
    "donors_by_count_dp",
    "donors_by_milp",
    "greedy_cover",
]


FEASIBILITY_RTOL = 1e-10
"""Donors cover the deficit when ``sum_S (A_i - t) >= (1 - FEASIBILITY_RTOL) D(t)``.

Relative, so that any positive deficit needs at least one donor, and wide enough that
exact ties computed in floating point (docs/math.md §5) count as covers."""


# The exact integer DP holds one bit-array of length ~N_pub per item bundle; above this
# many cells, branch and bound on value classes is used instead.
_DP_MAX_CELLS = 400_000_000


# Branch-and-bound nodes (~1 s) before handing over to HiGHS.
_BNB_MAX_NODES = 200_000


def greedy_cover(weights: NDArray[np.float64], need: float) -> int:
    """Number of leading entries (weights sorted decreasingly) whose sum reaches ``need``."""
    reach = np.cumsum(weights)
    k = int(np.searchsorted(reach, need, side="left")) + 1
    return min(k, weights.size)


def donors_by_count_dp(
    c: NDArray[np.int64],
    arr: NDArray[np.float64],
    t: float,
    need: float,
    cand: NDArray[np.int64],
    *,
    strict: bool,
) -> NDArray[np.int64] | None:
    total = int(c.sum())
    T = total * t
    # In count units, with the same relative tolerance as in probability units.
    need_c = total * need * (1.0 - FEASIBILITY_RTOL)
    cc = c[cand]
    values, mult = np.unique(cc, return_counts=True)
    # Upper bound on the optimal count sum: the largest-first greedy cover.
    order = np.sort(cc)[::-1]
    k = greedy_cover((order - T).astype(np.float64), need_c)
    upper = int(order[:k].sum())
    bundles: list[tuple[int, int, int]] = []  # (value, copies, class index)
    for j, (v, n_v) in enumerate(zip(values.tolist(), mult.tolist(), strict=True)):
        q = 1
        left = n_v
        while left > 0:
            take = min(q, left)
            bundles.append((v, take, j))
            left -= take
            q *= 2
    if len(bundles) * (upper + 1) > _DP_MAX_CELLS:
        if strict:
            raise InputError(
                f"the MIFR integer DP would need {len(bundles) * (upper + 1)} cells; "
                "use solver='bnb' or 'milp'"
            )
        return None
    big = np.iinfo(np.int64).max // 4
    kmin = np.full(upper + 1, big, dtype=np.int64)
    kmin[0] = 0
    took = np.zeros((len(bundles), upper + 1), dtype=bool)
    for b, (v, q, _) in enumerate(bundles):
        w = v * q
        if w > upper:
            continue
        cand_k = kmin[:-w] + q if w > 0 else kmin + q
        better = cand_k < kmin[w:]
        kmin[w:] = np.where(better, cand_k, kmin[w:])
        took[b, w:] = better
    s_grid = np.arange(upper + 1)
    ok = (kmin < big) & (s_grid - T * kmin >= need_c)
    hits = np.flatnonzero(ok)
    if hits.size == 0:  # pragma: no cover - the greedy cover is feasible by construction
        raise AssertionError("MIFR DP found no cover below the greedy bound")
    s = int(hits[0])
    per_class = np.zeros(values.size, dtype=np.int64)
    for b in range(len(bundles) - 1, -1, -1):
        if took[b, s]:
            v, q, j = bundles[b]
            per_class[j] += q
            s -= v * q
    picks = [cand[cc == values[j]][:x] for j, x in enumerate(per_class.tolist()) if x > 0]
    return np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)


def donors_by_bnb(
    arr: NDArray[np.float64],
    t: float,
    need: float,
    cand: NDArray[np.int64],
) -> NDArray[np.int64] | None:
    values, mult = np.unique(arr[cand], return_counts=True)
    values = values[::-1].copy()
    mult = mult[::-1].copy()
    w = values - t
    n_cls = values.size
    cap_prefix = np.concatenate([[0.0], np.cumsum(mult * w)])
    cost_prefix = np.concatenate([[0.0], np.cumsum(mult * values)])
    tol = FEASIBILITY_RTOL * need

    def lp_bound(j: int, left: float) -> float:
        """Fractional cover of ``left`` by classes j.. taken in decreasing value."""
        target = cap_prefix[j] + left - tol
        if target > cap_prefix[n_cls]:
            return math.inf
        jj = int(np.searchsorted(cap_prefix, target, side="left")) - 1
        jj = max(jj, j)
        covered = cap_prefix[jj] - cap_prefix[j]
        return float(cost_prefix[jj] - cost_prefix[j]) + max(0.0, left - covered) * (
            values[jj] / w[jj]
        )

    def x_max(j: int, left: float) -> int:
        return int(min(mult[j], max(0, math.ceil((left - tol) / w[j]))))

    # Incumbent: largest-first greedy.
    best = math.inf
    best_x: dict[int, int] = {}
    left = need
    greedy: dict[int, int] = {}
    cost = 0.0
    for j in range(n_cls):
        x = x_max(j, left)
        if x:
            greedy[j] = x
            left -= x * w[j]
            cost += x * values[j]
        if left <= tol:
            best, best_x = cost, greedy
            break

    # Frames: [class j, deficit left, cost so far, next multiplicity to try (descending)].
    frames: list[list[float]] = [[0, need, 0.0, x_max(0, need)]]
    nodes = 0
    while frames:
        nodes += 1
        if nodes > _BNB_MAX_NODES:
            return None
        frame = frames[-1]
        j = int(frame[0])
        left, cost, x = frame[1], frame[2], int(frame[3])
        if x < 0:
            frames.pop()
            continue
        frame[3] = x - 1
        left2 = left - x * w[j]
        cost2 = cost + x * values[j]
        if left2 <= tol:
            if cost2 < best:
                best = cost2
                best_x = {int(f[0]): int(f[3]) + 1 for f in frames}
            continue
        bound = cost2 + lp_bound(j + 1, left2) if j + 1 < n_cls else math.inf
        if bound >= best:
            # Fewer copies of class j only raise the bound: later classes cover a unit
            # of capacity at a higher price than class j.
            frames.pop()
            continue
        frames.append([j + 1, left2, cost2, x_max(j + 1, left2)])

    picks = [cand[arr[cand] == values[j]][:x] for j, x in sorted(best_x.items()) if x > 0]
    return np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)


def donors_by_milp(
    arr: NDArray[np.float64],
    t: float,
    need: float,
    cand: NDArray[np.int64],
) -> NDArray[np.int64]:
    from scipy.optimize import Bounds, LinearConstraint, milp

    values, mult = np.unique(arr[cand], return_counts=True)
    w = values - t
    row = w / need
    x = np.zeros(values.size, dtype=np.int64)
    # HiGHS accepts rows violated by up to ~1e-7; asking for a margin above that makes the
    # answer feasible in floating point, at the price of exactness on knife edges.
    for margin in (1e-9, 1e-6):
        res = milp(
            c=values,
            constraints=LinearConstraint(row[None, :], lb=1.0 + margin, ub=np.inf),
            integrality=np.ones(values.size),
            bounds=Bounds(np.zeros(values.size), mult.astype(np.float64)),
            options={"mip_rel_gap": 0.0},
        )
        if res.x is None:
            continue
        x = np.round(res.x).astype(np.int64)
        if float((x * w).sum()) >= need * (1.0 - FEASIBILITY_RTOL):
            break
    else:
        # No margin is feasible only when the candidates' total spare capacity is within
        # 1e-6 of D(t) (t at or next to 1/d): then all of them are needed.
        x = mult.astype(np.int64)
    picks = [cand[arr[cand] == values[j]][:k] for j, k in enumerate(x.tolist()) if k > 0]
    return np.concatenate(picks) if picks else np.zeros(0, dtype=np.int64)
