"""Privacy audit at scale: empirical epsilon lower bounds, one case per mechanism and option.

Each case builds an adversarial pair of neighbouring inputs, runs the release's own
noise path ``trials`` times on each (vectorised, in chunks, each chunk from a fresh
:class:`SeededNoise` seed: the secure source's distributions, fast), counts a
distinguishing event and turns the counts into a Clopper-Pearson 95% lower bound on
epsilon (:mod:`dpevolve.privacy.audit`). Beside it stand the claim (the ledger's, or
the recorded event's) and, where the output distributions are known, the exact epsilon
of the pair (``exact_epsilon``): Balle-Wang for Gaussian shifts, the hockey-stick
divergence of the exact pmfs for PubMix and the exponential mechanism, ``shift / b``
for Laplace. Both must stay at or below the claim, and so must the lower bound.

Cases that run a whole command (``synth``, ``hybrid``, ``pubmix``) record what the
release handed the noise source (:class:`SpyNoise`) on each neighbour, then replay
exactly those calls; one PE round keeps the release non-adaptive, so the recorded calls
are the whole mechanism.

A new case is one function decorated with :func:`case`: it takes ``trials`` and
returns :func:`row` (the suite runs every registered case at a small trial count).

Usage::

    python benchmarks/privacy_audit.py --trials 1000000
    # -> benchmarks/results/privacy_audit.json
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import itertools
import json
import math
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
from scipy import stats

from dpevolve import Synthesizer
from dpevolve.backends import make_backend
from dpevolve.core.canonical import soft_quantisation_slack
from dpevolve.core.distance import make_distance
from dpevolve.core.invalid_rows import calibrate as calibrate_invalid_rows
from dpevolve.core.policy import Policy
from dpevolve.core.sensitivity import enumerate_domain, per_round_hard_sensitivity, reach_edge
from dpevolve.core.votes import HardVote, SoftVote
from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.privacy import Budget, GaussianEvent, calibrate_gaussian
from dpevolve.privacy.audit import (
    cks_epsilon,
    clopper_pearson,
    eps_lower_bound,
    exact_epsilon,
    gaussian_epsilon,
    independent_epsilon,
)
from dpevolve.pubmix.noise import pubmix_sample
from dpevolve.release.gaussian import GaussianRelease
from dpevolve.release.noise import SeededNoise

#: Every audit case by name: one function of ``trials`` each (see :func:`case`).
CASES: dict[str, Callable[[int], dict[str, Any]]] = {}


def case(fn: Callable[[int], dict[str, Any]]) -> Callable[[int], dict[str, Any]]:
    """Register an audit case under its function name (dashes for underscores)."""
    CASES[fn.__name__.replace("_", "-")] = fn
    return fn


DELTA = 1e-5
CHUNK = 50_000
SCHEMA = Schema(
    (NumericColumn("age", 17, 90, integer=True), CategoricalColumn("sex", ("Female", "Male")))
)


def frame(ages: list[float], sexes: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"age": ages, "sex": sexes})


def records(table: pd.DataFrame) -> Records:
    """Through validation, as the Synthesizer reads a private table."""
    validated, _ = SCHEMA.validate(table)
    return encode(validated, SCHEMA)


def tail(trials: int) -> float:
    """How often ``D'`` passes a projection test's cut: about 1000 hits at 10**6 trials
    (tight intervals, well above delta), 2% of a small run."""
    return min(0.02, 1000 / trials)


def release_for(epsilon: float, sensitivity: float, slack: float = 0.0) -> GaussianRelease:
    """One round calibrated as the Synthesizer does: discrete Gaussian, zCDP, for the
    sensitivity plus the slack quantised soft votes and the noise grid add."""
    z = calibrate_gaussian(1, Budget.from_args(epsilon=epsilon, delta=DELTA), discrete=True)
    return GaussianRelease(
        z * (sensitivity + slack), sensitivity, noise=SeededNoise(0), rounding_slack=slack
    )


def soft_slack(m: int) -> float:
    return soft_quantisation_slack(m) + SeededNoise(0).rounding_slack(m)


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


def gaussian_case(
    name: str,
    here: np.ndarray,
    there: np.ndarray,
    release: GaussianRelease,
    event: GaussianEvent,
    trials: int,
) -> dict[str, Any]:
    claimed = independent_epsilon([event], DELTA)
    seed = int.from_bytes(name.encode(), "little") % 2**32  # stable across runs
    a, b = count_gaussian(release, here, there, trials, seed=seed)
    shift = float(np.linalg.norm(here - there))
    out = row(name, claimed, a, b, trials, gaussian_epsilon(shift / release.sigma, DELTA))
    out["shift"] = shift
    out["sensitivity_charged"] = event.sensitivity
    out["shift_zcdp_epsilon"] = cks_epsilon(shift**2 / (2 * release.sigma**2), DELTA)
    return out


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


@case
def hard_alone(trials: int) -> dict[str, Any]:
    distance, vote = make_distance("gower", SCHEMA), HardVote()
    candidates = records(frame([20, 50, 85], ["Male"] * 3))
    base = frame([21, 22, 19], ["Male", "Male", "Female"])
    d = records(pd.concat([base, frame([88], ["Female"])]))
    d2 = records(pd.concat([base, frame([17], ["Male"])]))
    backend = make_backend("auto")
    here, there = (backend.vote(t, candidates, distance, vote) for t in (d, d2))
    release = release_for(1.0, vote.l2_sensitivity(distance.diameter()))
    return gaussian_case("hard-vote-alone-in-bin", here, there, release, release.event(), trials)


@case
def soft_edge(trials: int) -> dict[str, Any]:
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    distance, vote = make_distance("gower", SCHEMA), SoftVote(0.075)
    x, x2 = reach_edge(policy, distance, "age")
    population = Records.concat([x2, x])
    backend = make_backend("auto")
    here = backend.vote(x, population, distance, vote)
    there = backend.vote(x2, population, distance, vote)
    release = release_for(1.0, vote.l2_sensitivity(policy.reach(distance)), soft_slack(2))
    return gaussian_case("soft-vote-reach-edge", here, there, release, release.event(), trials)


@case
def fixed_near_tie(trials: int) -> dict[str, Any]:
    """Former finding 1: exact calibration on a float near-tie (62 between 61 and 63).

    The search now decides with the vote's own arithmetic and the round is charged at
    the bound fixed before the run; the exact sensitivity it finds is reported apart
    (``ex_post_sensitivity``) and must cover the actual shift."""
    policy = Policy.from_dict({"attributes": {"sex": "complete"}}, SCHEMA)
    distance, vote = make_distance("tabpe", SCHEMA), HardVote()
    population = records(frame([54, 61, 88, 70, 63], ["Male"] * 5))
    exact_s = per_round_hard_sensitivity(
        policy, distance, population, enumerate_domain(distance.layout, None, 1_000_000)
    )
    backend = make_backend("auto")
    here = backend.vote(records(frame([62], ["Female"])), population, distance, vote)
    there = backend.vote(records(frame([62], ["Male"])), population, distance, vote)
    release = release_for(1.0, vote.l2_sensitivity(distance.diameter()))
    out = gaussian_case("exact-calibration-near-tie", here, there, release, release.event(), trials)
    out["ex_post_sensitivity"] = exact_s
    assert out["shift"] <= exact_s + 1e-12, "the search misses a vote flip"
    return out


@case
def fixed_fraction(trials: int) -> dict[str, Any]:
    """Former finding 3: 30.5 in an integer column was rounded to 30 (so the protected
    edge 30.5/37.5 became 30/38). It is now an invalid row: refused by default, and
    under ``on_invalid=drop`` it casts an empty vote, with the noise calibrated for
    ``max(S, 1)``. The pair: the invalid row (empty vote) against a valid 38."""
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    distance, vote = make_distance("gower", SCHEMA), SoftVote(0.075)
    population = records(frame([38, 30], ["Male"] * 2))
    kept, _ = SCHEMA.validate(frame([30.5], ["Male"]), on_invalid="drop")
    assert len(kept) == 0, "a fraction in an integer column must be invalid"
    backend = make_backend("auto")
    there = backend.vote(records(frame([38], ["Male"])), population, distance, vote)
    here = np.zeros_like(there)  # the invalid row's empty vote
    calibration = calibrate_invalid_rows("drop", vote.l2_sensitivity(policy.reach(distance)))
    release = release_for(1.0, calibration.sensitivity, soft_slack(2))
    return gaussian_case(
        "soft-vote-drop-invalid-row", here, there, release, release.event(), trials
    )


# ------------------------------------------------------------ recorded noise calls
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


def synth_pair(
    schema: Schema, tables: tuple[pd.DataFrame, pd.DataFrame], **params: Any
) -> tuple[SpyNoise, SpyNoise, Any]:
    """Fit ``Synthesizer(schema, **params)`` on both neighbours, recording the noise."""
    spies, ledger = [], None
    for table in tables:
        with spying("dpevolve.synthesizer") as made:
            model = Synthesizer(schema, delta=DELTA, random_state=0, **params).fit(table)
        spies.append(made[-1])
        ledger = model.ledger_
    return spies[0], spies[1], ledger


def recorded_gaussian_case(
    name: str, here: SpyNoise, there: SpyNoise, ledger: Any, trials: int
) -> dict[str, Any]:
    hits, hits_prime, mu = replay_gaussians(name, here, there, trials)
    claimed = ledger.result().epsilon
    out = row(name, claimed, hits, hits_prime, trials, gaussian_epsilon(mu, DELTA))
    out["independent_epsilon"] = independent_epsilon(ledger.events, DELTA)
    out["releases"] = len(here.gaussians)
    out["mu"] = mu
    return out


def pair_frames(n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` random records and the same with the last record moved across the domain."""
    rng = np.random.default_rng(seed)
    base = frame(list(rng.integers(17, 91, n - 1)), list(rng.choice(["Female", "Male"], n - 1)))
    return (
        pd.concat([base, frame([17], ["Female"])], ignore_index=True),
        pd.concat([base, frame([90], ["Male"])], ignore_index=True),
    )


@case
def soft_vote_sharpened(trials: int) -> dict[str, Any]:
    """BF-Soft with sharpening 4 under ``age: threshold 7``, one round; the pair differs
    along the protected edge (age 30 vs 37)."""
    rng = np.random.default_rng(5)
    base = frame(list(rng.integers(17, 91, 30)), list(rng.choice(["Female", "Male"], 30)))
    tables = tuple(pd.concat([base, frame([age], ["Male"])], ignore_index=True) for age in (30, 37))
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    here, there, ledger = synth_pair(
        SCHEMA, tables, epsilon=1.0, preset="bfsoft", policy=policy, sharpen=4.0,
        temperature=0.02, population_size=16, rounds=1,
    )  # fmt: skip
    return recorded_gaussian_case("soft-vote-sharpened", here, there, ledger, trials)


# The fit after the release is post-processing: kept short, it does not change the audit.
HYBRID_FAST = {"grow_rounds": 1, "children": 60, "iterations": 20}


@case
def marginal_release(trials: int) -> dict[str, Any]:
    """The hybrid preset's marginals alone (share 1: no PE round)."""
    here, there, ledger = synth_pair(
        SCHEMA, pair_frames(40, 6), epsilon=1.0, preset="hybrid", marginals=1.0,
        marginal_options=HYBRID_FAST, population_size=16, rounds=1,
    )  # fmt: skip
    return recorded_gaussian_case("marginal-release", here, there, ledger, trials)


@case
def marginals_with_pe_round(trials: int) -> dict[str, Any]:
    """The hybrid preset's budget split: one PE round, then the marginal release."""
    here, there, ledger = synth_pair(
        SCHEMA, pair_frames(40, 7), epsilon=1.0, preset="hybrid", marginals=0.5,
        marginal_options=HYBRID_FAST, population_size=16, rounds=1,
    )  # fmt: skip
    return recorded_gaussian_case("marginals-split-with-pe-round", here, there, ledger, trials)


# ------------------------------------------------------------- discrete outcomes
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


DISCRETE = Schema((CategoricalColumn("c", ("p", "q", "r")),))
PUBLIC = pd.DataFrame({"c": ["p"] * 80 + ["q"] * 15 + ["r"] * 5})


def discrete_pair(n: int = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The moving record alone in one of the two smallest public bins, or the other."""
    base = ["p"] * (n - 1)
    return pd.DataFrame({"c": [*base, "q"]}), pd.DataFrame({"c": [*base, "r"]})


def tv_pair(n: int = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The record moved between a bin the private table over-fills and one it
    under-fills: ``TV(public, private)`` moves by the full ``1/n``."""
    base = ["p"] * (n - 1)
    return pd.DataFrame({"c": [*base, "q"]}), pd.DataFrame({"c": [*base, "p"]})


def standalone(
    noise: str,
    budget: Budget,
    m: int,
    pair: Callable[[], tuple[pd.DataFrame, pd.DataFrame]] = discrete_pair,
    **options: Any,
) -> tuple[list, list, Any]:
    """``sample_discrete`` on both neighbours, its noise and mixture draws recorded."""
    from dpevolve.release import discrete

    spies, mixes, ledger = [], [], None
    for table in pair():
        calls: list[tuple[np.ndarray, np.ndarray, float, int]] = []

        record = recorder(calls)

        with (
            spying("dpevolve.release.discrete") as made,
            mock.patch.object(discrete, "pubmix_sample", record),
        ):
            release = discrete.sample_discrete(
                table, PUBLIC, DISCRETE, m, budget, noise=noise, random_state=0, **options
            )  # type: ignore[arg-type]
        spies.append(made[-1])
        mixes.append(calls)
        ledger = release.ledger
    return spies, mixes, ledger


@case
def standalone_pubmix(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix``: WF floor, gamma given, m = 4 samples over 3 cells."""
    _, (a, b), ledger = standalone("pubmix", Budget(epsilon=1.0, delta=DELTA), 4, gamma=0.2)
    return mixture_case("standalone-pubmix", a, b, ledger.result().epsilon, trials)


@case
def standalone_linmix(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix --noise linmix``: uniform noise, m = 4 samples over 3 cells."""
    _, (a, b), ledger = standalone("linmix", Budget(epsilon=1.0, delta=DELTA), 4)
    return mixture_case("standalone-linmix", a, b, ledger.result().epsilon, trials)


@case
def standalone_gaussian(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix --noise gaussian``: discrete-Gaussian counts over 3 cells."""
    (here, there), _, ledger = standalone("gaussian", Budget(epsilon=1.0, delta=DELTA), 4)
    return recorded_gaussian_case("standalone-gaussian", here, there, ledger, trials)


@case
def private_gamma_estimate(trials: int) -> dict[str, Any]:
    """``--gamma-epsilon 0.3``: Laplace on TV(public, private); the claim is the
    estimate's own event, the exact figure ``|TV - TV'| / b``."""
    (here, there), _, ledger = standalone(
        "pubmix", Budget(epsilon=1.0, delta=DELTA), 4, tv_pair, gamma_epsilon=0.3
    )
    ((tv, scale),), ((tv2, _),) = here.laplaces, there.laplaces
    event = next(e for e in ledger.events if getattr(e, "label", "") == "gamma_estimate")
    cut = max(float(tv[0]), float(tv2[0]))
    seeds = chunk_seeds("gamma", 2 * (trials // CHUNK + 1))
    hits = []
    for value in (tv, tv2):
        count = 0
        for start in range(0, trials, CHUNK):
            size = min(CHUNK, trials - start)
            noisy = SeededNoise(next(seeds)).laplace(np.full(size, value[0]), scale)
            count += int((noisy >= cut).sum())
        hits.append(count)
    exact = abs(float(tv[0] - tv2[0])) / scale
    out = row("private-gamma-estimate", event.epsilon, hits[0], hits[1], trials, exact)
    out["shift"] = abs(float(tv[0] - tv2[0]))
    return out


@case
def private_floor_choice(trials: int) -> dict[str, Any]:
    """``--floor-epsilon 0.3``: Gumbel noisy max over the candidate floors' scores; the
    exact pmf is the softmax of the scores over the scale."""
    (here, there), _, ledger = standalone(
        "pubmix", Budget(epsilon=1.0, delta=DELTA), 4, tv_pair, floor_epsilon=0.3
    )
    ((scores, scale),), ((scores2, _),) = here.argmaxes, there.argmaxes
    event = next(e for e in ledger.events if getattr(e, "label", "") == "floor_selection")
    p, q = (stats.multinomial.pmf(np.eye(s.size), 1, softmax(s / scale)) for s in (scores, scores2))
    chosen, forward = best_event(p, q, trials)
    seeds = chunk_seeds("floor", 2)
    hits = []
    for values in (scores, scores2):
        source = SeededNoise(next(seeds))
        picks = np.array([source.noisy_argmax(values, scale) for _ in range(trials)])
        hits.append(int(chosen[picks].sum()))
    if not forward:
        hits.reverse()
    return row("private-floor-choice", event.epsilon, hits[0], hits[1], trials,
               exact_epsilon(p, q, 0.0))  # fmt: skip


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max())
    return z / z.sum()


# ------------------------------------------------------------------ PubMix in PE
def pe_pubmix_case(name: str, accounting: str, rounds: int, trials: int) -> dict[str, Any]:
    """PubMix as PE's selection over 3 candidates, ``rounds`` rounds of m = 4 parents
    on the worst-case pair (the record alone in either of the two smallest public
    bins); the claim is the composition of the rounds' recorded events."""
    import dpevolve.release.pubmix as pe_pubmix
    from dpevolve.release.pubmix import PubMixRelease

    schema = DISCRETE
    distance = make_distance("gower", schema)
    population = encode(pd.DataFrame({"c": ["p", "q", "r"]}), schema)
    public = encode(PUBLIC, schema)
    n = 60
    draws: list[list[tuple[np.ndarray, np.ndarray, float, int]]] = [[], []]
    events = []
    for side, valid in enumerate((np.array([59.0, 1, 0]), np.array([59.0, 0, 1]))):
        release = PubMixRelease(
            public, distance, make_backend("auto"), n, rounds,
            Budget(epsilon=1.0, delta=DELTA), accounting=accounting, noise=SpyNoise(0),
            gamma=0.2,
        )  # fmt: skip
        calls = draws[side]

        record = recorder(calls)

        with mock.patch.object(pe_pubmix, "pubmix_sample", record):
            for _ in range(rounds):
                selection = release.select(
                    valid, 4, np.random.default_rng(0), population=population, mode="sample"
                )
                if side == 0:
                    events.append(selection.event)
    claimed = independent_epsilon(events, DELTA)
    out = mixture_case(name, draws[0], draws[1], claimed, trials)
    out["rounds"] = rounds
    return out


@case
def pubmix_basic(trials: int) -> dict[str, Any]:
    """PubMix in PE, basic accounting, two rounds."""
    return pe_pubmix_case("pubmix-basic-two-rounds", "basic", 2, trials)


@case
def pubmix_tight(trials: int) -> dict[str, Any]:
    """PubMix in PE, tight accounting (the composed worst-case pair), two rounds."""
    return pe_pubmix_case("pubmix-tight-two-rounds", "tight", 2, trials)


def run_case(key: str, trials: int) -> dict[str, Any]:
    """One case, timed."""
    started = time.perf_counter()
    result = CASES[key](trials)
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "privacy_audit.json"
    )
    args = parser.parse_args()
    rows = []
    for key in args.cases:
        result = run_case(key, args.trials)
        rows.append(result)
        exact = result["exact_epsilon"]
        if result["lower_bound"] > result["claimed_epsilon"]:
            print(f"LEAK: {result['case']} lower bound above the claim")
        print(
            f"{result['case']:<34} claimed {result['claimed_epsilon']:7.3f}  "
            f"lower bound {result['lower_bound']:7.3f}  exact "
            f"{'-' if exact is None else f'{exact:.3f}'}  ({result['seconds']} s)",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"trials": args.trials, "cases": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
