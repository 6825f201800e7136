"""Floor raising of a public histogram (docs/math.md §5).

Raise every entry of the public histogram A (d bins, sums to 1) to a floor t in
[0, 1/d]; the deficit

    D(t) = sum_i (t - A_i)_+

is taken from entries above t, none going below t.  Every floor raising B has
``TV(A, B) = D(t)``.  Two ways to take the deficit:

* WF (water-filling): ``B_i = max(t, A_i - s)`` with s >= 0 such that ``sum B = 1``; this
  is the Euclidean projection of A onto ``{B >= t, sum B = 1}``.
* MIFR (maximum invariance): keep as much mass unchanged as possible.  Choose donors S
  among the entries above t minimising ``sum_S A_i`` subject to
  ``sum_S (A_i - t) >= D(t)`` (a covering knapsack), then split the deficit among the
  donors in proportion to their spare capacity ``A_i - t``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpevolve.errors import InputError
from dpevolve.pe.pubmix.donors import (
    FEASIBILITY_RTOL,
    donors_by_bnb,
    donors_by_count_dp,
    donors_by_milp,
)

__all__ = [
    "FEASIBILITY_RTOL",
    "DonorChoice",
    "deficit",
    "invariant_mass",
    "max_invariance_donors",
    "max_invariance_fill",
    "water_fill",
]


# Sums of a probability vector are trusted to this absolute error.
_SUM_TOL = 1e-9
# Largest smallest-count tried when recognising A as counts / N.
_MAX_MIN_COUNT = 64

Solver = Literal["auto", "dp", "bnb", "milp"]


def as_histogram(A: ArrayLike) -> NDArray[np.float64]:
    """A as a float vector, checked to be a probability vector (sum within 1e-9 of 1)."""
    arr = np.asarray(A, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(
            f"the public histogram must be a non-empty 1-D array, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError("the public histogram must have finite, non-negative entries")
    total = float(arr.sum())
    if abs(total - 1.0) > _SUM_TOL:
        raise InputError(f"the public histogram must sum to 1 (normalise it first), got {total}")
    return arr


def _check_floor(t: float, d: int) -> float:
    t = float(t)
    # Allow t = 1/d computed as (1/d) * (k/k) etc.: a relative slack of a few ulps.
    if not (math.isfinite(t) and 0.0 <= t <= (1.0 / d) * (1.0 + 1e-12)):
        raise InputError(f"the floor t must lie in [0, 1/d] = [0, {1.0 / d}], got {t}")
    return min(t, 1.0 / d)


def deficit(A: ArrayLike, t: float) -> float:
    """Mass needed to raise A to the floor t: ``D(t) = sum_i (t - A_i)_+`` (docs/math.md §5)."""
    arr = np.asarray(A, dtype=np.float64)
    return float(np.maximum(float(t) - arr, 0.0).sum())


def invariant_mass(A: ArrayLike, B: ArrayLike) -> float:
    """Mass left unchanged by a floor raising: ``sum_{i: B_i = A_i} A_i``."""
    a = np.asarray(A, dtype=np.float64)
    b = np.asarray(B, dtype=np.float64)
    return float(a[a == b].sum())


def water_fill(A: ArrayLike, t: float) -> NDArray[np.float64]:
    """Water-filling floor raising ``B_i = max(t, A_i - s)``, ``sum B = 1`` (docs/math.md §5).

    B is the Euclidean projection of A onto ``{B >= t, sum B = 1}`` (KKT: ``B_i - A_i =
    nu_i - s`` with ``nu_i >= 0`` active only where ``B_i = t``).  With A sorted in
    decreasing order ``u_1 >= ... >= u_d`` and ``S_k = u_1 + ... + u_k``,

        s_k = (S_k + (d - k) t - 1) / k,   rho = max {k : u_k - s_k > t},   s = s_rho,

    the usual simplex-projection argument applied to ``A - t`` on the simplex of radius
    ``1 - d t``.

    Parameters
    ----------
    A : array_like
        Public histogram, non-negative, sums to 1.
    t : float
        Floor in [0, 1/d].

    Returns
    -------
    numpy.ndarray
        B >= t with sum 1 and ``TV(A, B) = D(t)``.
    """
    arr = as_histogram(A)
    d = arr.size
    t = _check_floor(t, d)
    if deficit(arr, t) == 0.0:
        # s = 0: returning A itself keeps every entry bit-for-bit invariant.
        return arr.copy()
    if t == 1.0 / d:
        # The feasible set is the single point B = t; skip the rounding of the formula.
        return np.full(d, t)
    u = np.sort(arr)[::-1]
    k = np.arange(1, d + 1)
    s = (np.cumsum(u) + (d - k) * t - 1.0) / k
    above = np.flatnonzero(u - s > t)
    if above.size == 0:  # pragma: no cover - only when t = 1/d, handled above
        return np.full(d, t)
    # s >= 0 in exact arithmetic (sum A = 1); clamping the rounding keeps entries below
    # the floor at exactly t.
    return np.maximum(t, arr - max(0.0, float(s[above[-1]])))


@dataclass(frozen=True)
class DonorChoice:
    """An optimal donor set for MIFR.

    Attributes
    ----------
    donors : tuple[int, ...]
        Indices of the donors, increasing.
    donated_mass : float
        ``sum_S A_i``, the mass that stops being invariant.
    capacity : float
        ``sum_S (A_i - t)``, at least ``(1 - FEASIBILITY_RTOL) D(t)``.
    solver : str
        "dp", "bnb", "milp"; "none" when ``D(t) = 0``; "all" when only every candidate
        together covers D(t) (t = 1/d up to rounding).
    """

    donors: tuple[int, ...]
    donated_mass: float
    capacity: float
    solver: str


def max_invariance_fill(
    A: ArrayLike,
    t: float,
    *,
    counts: ArrayLike | None = None,
    solver: Solver = "auto",
) -> NDArray[np.float64]:
    """Maximum-invariance floor raising (MIFR) of A to the floor t (docs/math.md §5).

    Entries below t are raised to t; donors S (see :func:`max_invariance_donors`) give
    ``D(t)`` in proportion to their spare capacity,

        B_i = t + (A_i - t) (1 - D(t) / sum_S (A_j - t))   for i in S,

    and every other entry keeps ``B_i = A_i``.  The invariant mass ``sum_{B_i = A_i} A_i``
    is the largest of all floor raisings to t.

    Parameters
    ----------
    A : array_like
        Public histogram, non-negative, sums to 1.
    t : float
        Floor in [0, 1/d].
    counts : array_like of int, optional
        The integer counts A was normalised from (``A = counts / counts.sum()``); enables
        the exact integer dynamic program.
    solver : {"auto", "dp", "bnb", "milp"}
        See :func:`max_invariance_donors`.

    Returns
    -------
    numpy.ndarray
        B >= t with sum 1 and ``TV(A, B) = D(t)``.
    """
    arr = as_histogram(A)
    t = _check_floor(t, arr.size)
    need = deficit(arr, t)
    if need == 0.0:
        return arr.copy()
    if t == 1.0 / arr.size:
        # The only floor raising to 1/d is uniform; every entry above 1/d is a donor.
        return np.full(arr.size, t)
    choice = max_invariance_donors(arr, t, counts=counts, solver=solver)
    out = arr.copy()
    out[arr < t] = t
    idx = np.asarray(choice.donors, dtype=np.int64)
    spare = arr[idx] - t
    # The factor is clipped at 0 so a donor never goes below t, even when the cover is
    # short of D(t) by the feasibility tolerance (B then sums to 1 + 1e-10 D(t) at most).
    keep = max(0.0, 1.0 - need / float(spare.sum()))
    out[idx] = t + spare * keep
    return out


def max_invariance_donors(
    A: ArrayLike,
    t: float,
    *,
    counts: ArrayLike | None = None,
    solver: Solver = "auto",
) -> DonorChoice:
    """Solve the MIFR covering knapsack exactly (docs/math.md §5).

    ``min_S sum_{i in S} A_i  subject to  sum_{i in S} (A_i - t) >= D(t)``, S among the
    entries with ``A_i > t``.  Neither smallest-first nor largest-first greedy is optimal.

    Solvers
    -------
    dp
        Needs ``counts`` (A = c / N).  With ``T = N t`` the constraint reads
        ``sum_S c_i - T |S| >= N D(t)``; for a fixed count sum s a smaller |S| is always
        better, so a dynamic program for ``kmin(s)``, the fewest cells with counts summing
        to exactly s, solves it: the optimum is the least s with
        ``s - T kmin(s) >= N D(t)``.  Cells with equal counts are interchangeable and are
        handled as one bounded item (binary splitting).  Exact; memory is one byte per
        (bundle, s) for s up to the largest-first greedy cover's count sum (<= N).
    bnb
        Depth-first branch and bound over the distinct values of A (each with its
        multiplicity), bounded by the fractional (LP) cover, which takes values in
        decreasing order since the cost per unit of capacity ``A_i / (A_i - t)`` falls as
        ``A_i`` grows.  Exact in floating point; exponential in the worst case, so it
        hands over to ``milp`` after 2e5 nodes (about a second).
    milp
        scipy.optimize.milp (HiGHS) with zero relative gap; exact up to HiGHS's
        feasibility tolerance (the cover row is scaled to right-hand side 1 and tightened
        by 1e-9, or 1e-6 if HiGHS's answer is still short, so the returned set is
        feasible in floating point).  Slow at d ~ 15,000 (minutes).
    auto
        ``dp`` when counts are given, or when A is recognisably ``c / N`` for integers c
        (smallest positive count <= 64, ``|c/N - A| <= 1e-12``) and memory allows; else
        ``bnb``, then ``milp``.  At d ~ 15,000 and N_pub ~ 27,000 the DP takes tens of
        milliseconds, where HiGHS can take minutes.

    Returns
    -------
    DonorChoice
    """
    if solver not in ("auto", "dp", "bnb", "milp"):
        raise InputError(f"solver must be one of auto, dp, bnb, milp; got {solver!r}")
    arr = as_histogram(A)
    t = _check_floor(t, arr.size)
    need = deficit(arr, t)
    if need == 0.0:
        return DonorChoice((), 0.0, 0.0, "none")
    cand = np.flatnonzero(arr > t)
    if float((arr[cand] - t).sum()) < need * (1.0 - FEASIBILITY_RTOL):
        # Only at t = 1/d (or within rounding of it), where every candidate must give.
        return DonorChoice(
            donors=tuple(int(i) for i in cand),
            donated_mass=float(arr[cand].sum()),
            capacity=float((arr[cand] - t).sum()),
            solver="all",
        )
    chosen: NDArray[np.int64] | None = None
    used = solver
    c: NDArray[np.int64] | None = None
    if counts is not None:
        c = _as_counts(counts, arr)
    elif solver in ("auto", "dp"):
        c = _infer_counts(arr)
    if solver == "dp" and c is None:
        raise InputError("the exact integer DP for MIFR needs counts= (integer public counts)")
    if solver in ("auto", "dp") and c is not None:
        chosen = donors_by_count_dp(c, arr, t, need, cand, strict=solver == "dp")
        used = "dp"
    if chosen is None and solver in ("auto", "bnb"):
        chosen = donors_by_bnb(arr, t, need, cand)
        used = "bnb"
    if chosen is None:
        chosen = donors_by_milp(arr, t, need, cand)
        used = "milp"
    chosen = np.sort(chosen)
    return DonorChoice(
        donors=tuple(int(i) for i in chosen),
        donated_mass=float(arr[chosen].sum()),
        capacity=float((arr[chosen] - t).sum()),
        solver=used,
    )


def _as_counts(counts: ArrayLike, arr: NDArray[np.float64]) -> NDArray[np.int64]:
    raw = np.asarray(counts)
    if raw.shape != arr.shape:
        raise InputError(f"counts must have the histogram's shape {arr.shape}, got {raw.shape}")
    if not np.all(np.isfinite(raw)) or np.any(raw < 0) or np.any(raw != np.round(raw)):
        raise InputError("counts must be non-negative integers")
    c = raw.astype(np.int64)
    total = int(c.sum())
    if total == 0 or not np.allclose(c / total, arr, rtol=0.0, atol=1e-12):
        raise InputError("the histogram must equal counts / counts.sum()")
    return c


def _infer_counts(arr: NDArray[np.float64]) -> NDArray[np.int64] | None:
    """Integers c with ``c / c.sum() == A`` to 1e-12, if A is an empirical histogram."""
    smallest = float(arr[arr > 0].min())
    for j in range(1, _MAX_MIN_COUNT + 1):
        total = round(j / smallest)
        if total < 1 or total > 10**9:
            break
        c = np.round(arr * total)
        if int(c.sum()) == total and float(np.max(np.abs(c / total - arr))) <= 1e-12:
            return c.astype(np.int64)
    return None
