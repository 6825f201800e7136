"""The privacy audit's harness: recorded noise calls, replays, events and result rows.

:mod:`privacy_audit` holds the cases (one function each, registered with :func:`case`);
this module holds what they share. Each replay draws its noise chunk by chunk, every
chunk from a fresh :class:`SeededNoise` seed derived from the case's name (the secure
source's distributions, vectorised, and the same counts on every run), and the counts
become a Clopper-Pearson 95% lower bound on epsilon (:mod:`dpevolve.privacy.audit`).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import math
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import numpy as np
from scipy import stats

from dpevolve.pe.pubmix.noise import pubmix_sample
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.privacy.audit import clopper_pearson, eps_lower_bound, exact_epsilon
from dpevolve.privacy.noise import SeededNoise

#: Every audit case by name: one function of ``trials`` each (see :func:`case`).
CASES: dict[str, Callable[[int], dict[str, Any]]] = {}


def case(fn: Callable[[int], dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
    """Register an audit case under its function name (dashes for underscores)."""
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


DELTA = 1e-5


CHUNK = 50_000


def tail(trials: int) -> float:
    """How often ``D'`` passes a projection test's cut: about 1000 hits at 10**6 trials
    (tight intervals, well above delta), 2% of a small run."""
    return min(0.02, 1000 / trials)


def count_gaussian(
    release: GaussianRelease, here: np.ndarray, there: np.ndarray, trials: int, seed: int
) -> tuple[int, int]:
    """Hits of the projection test on ``here - there`` (``there`` passes w.p. ``tail``).

    Every chunk calls the release's own ``noisy`` with a fresh seeded source."""
    v = here - there
    norm = float(np.linalg.norm(v))
    if norm == 0:
        return 0, 0
    cut = float(v @ there) / norm + release.sigma * float(stats.norm.isf(tail(trials)))
    chunks = range(0, trials, CHUNK)
    seeds = iter(np.random.SeedSequence(seed).generate_state(2 * len(chunks), dtype=np.uint64))
    counts = []
    for h in (here, there):
        hits = 0
        for start in chunks:
            size = min(CHUNK, trials - start)
            chunk = copy.copy(release)
            chunk.noise = SeededNoise(int(next(seeds)))
            noisy = np.asarray(chunk.noisy(np.tile(h, size))).reshape(size, h.size)
            hits += int(((noisy @ v) / norm > cut).sum())
        counts.append(hits)
    return counts[0], counts[1]


def row(
    name: str, claimed: float, hits: int, hits_prime: int, trials: int, exact: float | None
) -> dict[str, Any]:
    return {
        "case": name,
        "claimed_epsilon": claimed,
        "delta": DELTA,
        "lower_bound": eps_lower_bound(hits, trials, hits_prime, trials, DELTA),
        "exact_epsilon": exact,
        "trials": trials,
        "p_D_ci": clopper_pearson(hits, trials, 0.025),
        "p_D_prime_ci": clopper_pearson(hits_prime, trials, 0.025),
    }


class SpyNoise(SeededNoise):
    """A seeded source that records every call a release makes to it."""

    def __init__(self, noise_seed: int = 0) -> None:
        super().__init__(noise_seed)
        self.gaussians: list[tuple[np.ndarray, float]] = []
        self.laplaces: list[tuple[np.ndarray, float]] = []
        self.argmaxes: list[tuple[np.ndarray, float]] = []

    def gaussian(self, values: Any, sigma: float) -> np.ndarray:
        self.gaussians.append((np.array(values, dtype=np.float64), float(sigma)))
        return super().gaussian(values, sigma)

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        self.laplaces.append((np.array(values, dtype=np.float64), float(scale)))
        return super().laplace(values, scale)

    def noisy_argmax(self, scores: Any, scale: float) -> int:
        self.argmaxes.append((np.array(scores, dtype=np.float64), float(scale)))
        return super().noisy_argmax(scores, scale)


@contextlib.contextmanager
def spying(module: str) -> Iterator[list[SpyNoise]]:
    """Every noise source ``module`` makes is a :class:`SpyNoise`; yields them."""
    made: list[SpyNoise] = []

    def make(noise_seed: int | None) -> SpyNoise:
        made.append(SpyNoise(0))
        return made[-1]

    with mock.patch(f"{module}.make_noise", make), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield made


def chunk_seeds(name: str, count: int) -> Iterator[int]:
    seed = int.from_bytes(name.encode(), "little") % 2**32  # stable across runs
    yield from (int(s) for s in np.random.SeedSequence(seed).generate_state(count, np.uint64))


def replay_gaussians(
    name: str, here: SpyNoise, there: SpyNoise, trials: int
) -> tuple[int, int, float]:
    """The most powerful test on the recorded Gaussian calls of two neighbours.

    Every call ``i`` released ``v_i + N(0, s_i^2)``; the statistic
    ``sum_i (v_i - v'_i) . y_i / s_i^2`` is replayed ``trials`` times on each neighbour,
    each call through the noise source's own ``gaussian``. Returns the hits of both and
    the pair's ``mu = sqrt(sum ||v_i - v'_i||^2 / s_i^2)``."""
    calls = list(zip(here.gaussians, there.gaussians, strict=True))
    for (a, s), (b, t) in calls:
        if a.shape != b.shape or s != t:
            raise AssertionError("the neighbours' releases differ in shape or sigma")
    shifts = [(a - b) / (s * s) for (a, s), (b, _) in calls]
    mu = math.sqrt(sum(float(((a - b) ** 2).sum()) / (s * s) for (a, s), (b, _) in calls))
    if mu == 0:
        return 0, 0, 0.0
    centre = sum(float(w @ b) for w, (_, (b, _)) in zip(shifts, calls, strict=True))
    cut = centre + mu * float(stats.norm.isf(tail(trials)))
    width = sum(a.size for (a, _), _ in calls)
    per_chunk = max(1, min(trials, 2_000_000 // width))
    chunks = range(0, trials, per_chunk)
    seeds = chunk_seeds(name, 2 * len(chunks) * len(calls))
    hits = []
    for side in (0, 1):
        count = 0
        for start in chunks:
            size = min(per_chunk, trials - start)
            statistic = np.zeros(size)
            for w, pair in zip(shifts, calls, strict=True):
                values, sigma = pair[side]
                noisy = SeededNoise(next(seeds)).gaussian(np.tile(values, size), sigma)
                statistic += noisy.reshape(size, values.size) @ w
            count += int((statistic > cut).sum())
        hits.append(count)
    return hits[0], hits[1], mu


def best_event(p: np.ndarray, q: np.ndarray, trials: int) -> tuple[np.ndarray, bool]:
    """The outcome set to count, chosen from the exact pmfs before any sampling: the
    likelihood-ratio prefix with the largest expected lower bound, and whether it
    favours ``p`` (else ``q``: the bound is then taken the other way round)."""
    best, chosen, forward = -math.inf, np.zeros(p.size, dtype=bool), True
    for a, b in ((p, q), (q, p)):
        order = np.argsort(-(np.log(a + 1e-300) - np.log(b + 1e-300)), kind="stable")
        pa, pb = np.cumsum(a[order]), np.cumsum(b[order])
        for k in range(min(p.size, 400)):
            hits_a, hits_b = round(pa[k] * trials), round(pb[k] * trials)
            if hits_a < 1:
                continue
            bound = eps_lower_bound(hits_a, trials, hits_b, trials, DELTA)
            if bound > best:
                best, chosen = bound, np.isin(np.arange(p.size), order[: k + 1])
                forward = a is p
    return chosen, forward


def outcome_table(m: int, d: int = 3) -> tuple[np.ndarray, dict[tuple[int, ...], int]]:
    """Every count vector of ``m`` draws over ``d`` bins, and its index."""
    outcomes = [c for c in itertools.product(range(m + 1), repeat=d) if sum(c) == m]
    return np.array(outcomes), {c: i for i, c in enumerate(outcomes)}


def mixture_case(
    name: str,
    draws: list[tuple[np.ndarray, np.ndarray, float, int]],
    draws_prime: list[tuple[np.ndarray, np.ndarray, float, int]],
    claimed: float,
    trials: int,
) -> dict[str, Any]:
    """Rounds of PubMix sampling (recorded ``pubmix_sample`` calls) on two neighbours:
    the exact pmf of the rounds' joint counts, the best event, and its replay."""
    m, d = draws[0][3], draws[0][0].size
    outcomes, index = outcome_table(m, d)

    def joint(calls: list[tuple[np.ndarray, np.ndarray, float, int]]) -> np.ndarray:
        pmf = np.ones(1)
        for counts, p_noise, beta, _ in calls:
            mix = (1 - beta) * counts / counts.sum() + beta * p_noise
            pmf = np.outer(pmf, stats.multinomial.pmf(outcomes, m, mix)).ravel()
        return pmf

    p, q = joint(draws), joint(draws_prime)
    event, forward = best_event(p, q, trials)
    lookup = np.zeros((m + 1,) * d, dtype=np.int64)
    for c, i in index.items():
        lookup[c] = i
    seeds = chunk_seeds(name, 2 * len(draws) * (trials // CHUNK + 1))
    hits = []
    for calls in (draws, draws_prime):
        count = 0
        for start in range(0, trials, CHUNK):
            size = min(CHUNK, trials - start)
            code = np.zeros(size, dtype=np.int64)
            for counts, p_noise, beta, _ in calls:
                cells = pubmix_sample(counts, p_noise, beta, m * size, SeededNoise(next(seeds)))
                per = np.stack([(cells.reshape(size, m) == j).sum(axis=1) for j in range(d)])
                code = code * len(outcomes) + lookup[tuple(per)]
            count += int(event[code].sum())
        hits.append(count)
    if not forward:
        hits.reverse()
    return row(name, claimed, hits[0], hits[1], trials, exact_epsilon(p, q, DELTA))


MixtureCall = tuple[np.ndarray, np.ndarray, float, int]


def recorder(calls: list[MixtureCall]) -> Callable[..., Any]:
    """``pubmix_sample`` that also appends its arguments to ``calls``."""

    def record(counts: Any, p_noise: Any, beta: float, size: int, source: Any) -> Any:
        calls.append((np.array(counts, float), np.array(p_noise, float), beta, size))
        return pubmix_sample(counts, p_noise, beta, size, source)

    return record


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


def run_case(key: str, trials: int) -> dict[str, Any]:
    """One case, timed."""
    started = time.perf_counter()
    result = CASES[key](trials)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result
