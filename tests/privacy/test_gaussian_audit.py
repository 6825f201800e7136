"""Audit of the Gaussian histogram release: hard and soft votes, policies, exact calibration.

Each case picks neighbours adversarially (a record alone in its bin, a threshold edge
carrying the reach, a float near-tie, a fractional value in an integer column) and
checks the release two ways: exactly (the divergence of ``N(H(D), s^2 I)`` from
``N(H(D'), s^2 I)`` at the ledger's epsilon, against its delta) and empirically
(a Clopper-Pearson lower bound on epsilon from repeated draws of the release's noise).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from dpevolve.privacy.accounting import Budget, calibrate_gaussian
from scipy import stats

from dpevolve.backends import LocalBackend, make_backend
from dpevolve.core.distance import make_distance
from dpevolve.core.policy import Policy
from dpevolve.core.sensitivity import reach_edge
from dpevolve.core.votes import HardVote, SoftVote
from dpevolve.data.encoding import Records, encode
from dpevolve.privacy.audit import (
    eps_lower_bound,
    gaussian_delta,
    gaussian_epsilon,
    independent_epsilon,
)
from dpevolve.release.gaussian import GaussianRelease

from .conftest import DELTA, fit_spied, noisy_trials, projection_event

TRIALS = 20_000


def _round_claim(event: object) -> float:
    """Epsilon at DELTA that one recorded event claims (independent accountant)."""
    return independent_epsilon([event], DELTA)


def _audit_round(
    release: GaussianRelease,
    here: np.ndarray,
    there: np.ndarray,
    claimed: float,
    seed: int,
) -> tuple[float, float]:
    """(exact epsilon at DELTA, empirical lower bound) of one noisy-histogram release."""
    shift = float(np.linalg.norm(here - there))
    exact = gaussian_epsilon(shift / release.sigma, DELTA)
    if shift == 0:  # identical output distributions: nothing to distinguish
        return exact, -math.inf
    rng = np.random.default_rng(seed)
    tail = 50 / TRIALS
    hits = projection_event(
        noisy_trials(release, here, TRIALS, rng), here, there, release.sigma, tail
    )
    hits_prime = projection_event(
        noisy_trials(release, there, TRIALS, rng), here, there, release.sigma, tail
    )
    lower = eps_lower_bound(int(hits.sum()), TRIALS, int(hits_prime.sum()), TRIALS, DELTA)
    return exact, lower


def test_hard_vote_record_alone_in_its_bin(age_sex) -> None:
    """Whole-record DP: the one record nearest candidate 2 moves to candidate 0's bin."""
    distance = make_distance("gower", age_sex)
    candidates = encode(pd.DataFrame({"age": [20, 50, 85], "sex": ["Male"] * 3}), age_sex)
    base = pd.DataFrame({"age": [21, 22, 19], "sex": ["Male", "Male", "Female"]})
    d = encode(pd.concat([base, pd.DataFrame({"age": [88], "sex": ["Female"]})]), age_sex)
    d2 = encode(pd.concat([base, pd.DataFrame({"age": [17], "sex": ["Male"]})]), age_sex)
    backend, vote = make_backend("auto"), HardVote()
    here = backend.vote(d, candidates, distance, vote)
    there = backend.vote(d2, candidates, distance, vote)
    sensitivity = vote.l2_sensitivity(distance.diameter())
    assert np.linalg.norm(here - there) == pytest.approx(sensitivity)
    sigma = calibrate_gaussian(1, Budget.from_args(epsilon=4.0, delta=DELTA)) * sensitivity
    release = GaussianRelease(sigma, sensitivity)
    claimed = _round_claim(release.event())
    assert claimed == pytest.approx(4.0, rel=1e-3)
    exact, lower = _audit_round(release, here, there, claimed, seed=11)
    assert exact <= claimed + 1e-6
    assert lower <= claimed
    assert lower > 1.0  # the audit has power: the record's move is visible


def test_soft_vote_on_the_edge_that_carries_the_reach(age_sex) -> None:
    """Policy age threshold 7: the edge (x, x') with population [x', x] attains the bound."""
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, age_sex)
    distance = make_distance("gower", age_sex)
    vote = SoftVote(0.075)
    x, x_prime = reach_edge(policy, distance, "age")
    population = Records.concat([x_prime, x])
    others = encode(pd.DataFrame({"age": [40, 60], "sex": ["Male", "Female"]}), age_sex)
    backend = make_backend("auto")
    here = backend.vote(Records.concat([others, x]), population, distance, vote)
    there = backend.vote(Records.concat([others, x_prime]), population, distance, vote)
    sensitivity = vote.l2_sensitivity(policy.reach(distance))
    assert np.linalg.norm(here - there) == pytest.approx(sensitivity, rel=1e-9)
    sigma = calibrate_gaussian(1, Budget.from_args(epsilon=2.0, delta=DELTA)) * sensitivity
    release = GaussianRelease(sigma, sensitivity)
    claimed = _round_claim(release.event())
    exact, lower = _audit_round(release, here, there, claimed, seed=12)
    assert exact == pytest.approx(claimed, rel=1e-3)  # tight, and not above
    assert lower <= claimed


@pytest.mark.parametrize(
    ("vote", "policy"),
    [("hard", None), ("soft", {"attributes": {"age": {"threshold": 7}}})],
)
def test_end_to_end_rounds_within_the_ledger(age_sex, vote, policy) -> None:
    """Synthesizer, 3 rounds: every round's actual histogram shift on an adversarial pair
    (a boundary record alone in its corner vs the far boundary) is within what the
    ledger charged, and the composed exact epsilon of the shifts is within its claim."""
    pol = None if policy is None else Policy.from_dict(policy, age_sex)
    moving = ({"age": 40, "sex": "Female"}, {"age": 47, "sex": "Female"})
    if pol is None:
        moving = ({"age": 90, "sex": "Female"}, {"age": 17, "sex": "Male"})
    rows = pd.DataFrame({"age": [30, 31, 45], "sex": ["Male"] * 3})
    d = pd.concat([rows, pd.DataFrame([moving[0]])], ignore_index=True)
    d2 = pd.concat([rows, pd.DataFrame([moving[1]])], ignore_index=True)
    settings = {
        "epsilon": 3.0, "preset": "bfsoft", "vote": vote, "temperature": 0.075,
        "policy": pol, "population_size": 6, "rounds": 3, "random_state": 5,
    }  # fmt: skip
    model, spy = fit_spied(age_sex, d, **settings)
    _, spy2 = fit_spied(age_sex, d2, **settings)
    events = model.ledger_.events
    mu2 = 0.0
    for event, pop, pop2, h, h2 in zip(
        events, spy.populations, spy2.populations, spy.histograms, spy2.histograms, strict=True
    ):
        if not pop.equals(pop2):  # later rounds follow different noise: compare round 1 only
            break
        assert np.linalg.norm(h - h2) <= event.sensitivity + 1e-9
        mu2 += (np.linalg.norm(h - h2) / event.sigma) ** 2
    claimed = model.ledger_.result().epsilon
    assert gaussian_epsilon(math.sqrt(mu2), DELTA) <= claimed + 1e-6
    assert mu2 > 0  # the pair is visible in round 1


# ------------------------------------------------------------- exact calibration
def _exact_calibration_case(age_sex, ages: list[int], record_age: int, before: tuple[int, int]):
    """Fits on (record_age, Female) vs (record_age, Male), policy sex: complete, exact
    calibration, one round over a population drawn from public Male candidates; the
    seed is the first whose population holds age ``before[0]`` ahead of ``before[1]``
    (the population is public: choosing it adversarially is fair)."""
    policy = Policy.from_dict({"attributes": {"sex": "complete"}}, age_sex)
    public = pd.DataFrame({"age": ages, "sex": ["Male"] * len(ages)})
    rows = pd.DataFrame({"age": [20, 89], "sex": ["Male", "Male"]})
    d = pd.concat([rows, pd.DataFrame({"age": [record_age], "sex": ["Female"]})])
    d2 = pd.concat([rows, pd.DataFrame({"age": [record_age], "sex": ["Male"]})])
    for seed in range(64):
        settings = {
            "epsilon": 6.0, "calibration": "exact", "policy": policy, "public": public,
            "population_size": len(ages), "rounds": 1, "random_state": seed,
        }  # fmt: skip
        model, spy = fit_spied(age_sex, d.reset_index(drop=True), **settings)
        drawn = list(np.rint(spy.populations[0].numeric[:, 0] * 73 + 17).astype(int))
        if before[0] in drawn and before[1] in drawn:
            if drawn.index(before[0]) < drawn.index(before[1]):
                _, spy2 = fit_spied(age_sex, d2.reset_index(drop=True), **settings)
                return model, spy.histograms[0], spy2.histograms[0]
    raise AssertionError("no seed drew the wanted population")


def _check_exact_calibration(
    model, here: np.ndarray, there: np.ndarray
) -> tuple[float, float, float]:
    """(claimed epsilon, exact epsilon, empirical lower bound) of the one round."""
    event = model.ledger_.events[0]
    claimed = model.ledger_.result().epsilon
    release = GaussianRelease(event.sigma, event.sensitivity)
    exact, lower = _audit_round(release, here, there, claimed, seed=13)
    return claimed, exact, lower


def test_exact_calibration_far_from_ties(age_sex) -> None:
    """Candidates whose midpoints are not integers: no edge flips a vote; the round is
    free and the histograms agree (a zero claim is exact)."""
    model, here, there = _exact_calibration_case(age_sex, [20, 51, 80], 62, (20, 51))
    claimed, exact, lower = _check_exact_calibration(model, here, there)
    assert np.array_equal(here, there)
    assert claimed == 0.0 and exact <= claimed and lower <= claimed


@pytest.mark.xfail(
    strict=True,
    reason="finding 1: exact calibration searches with the numpy distance while votes use "
    "the fused kernel; on a float near-tie (62 between 61 and 63) the vote flips in a "
    "round charged as free",
)
def test_exact_calibration_on_a_float_near_tie(age_sex) -> None:
    model, here, there = _exact_calibration_case(age_sex, [54, 61, 88, 70, 63], 62, (61, 63))
    claimed, exact, lower = _check_exact_calibration(model, here, there)
    assert lower <= claimed, f"lower bound {lower:.3f} > claimed {claimed:.3f}"
    assert exact <= claimed, f"exact epsilon {exact:.3f} > claimed {claimed:.3f}"


# ------------------------------------------------------ inputs the schema repairs
@pytest.mark.xfail(
    strict=True,
    reason="finding 3: a non-integer in an integer column is rounded (30.5 -> 30, 37.5 -> "
    "38), so a protected threshold-7 edge moves the soft vote by more than its bound",
)
def test_fractional_value_in_an_integer_column(age_sex) -> None:
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, age_sex)
    public = pd.DataFrame({"age": [38, 30], "sex": ["Male", "Male"]})
    rows = pd.DataFrame({"age": [50, 60], "sex": ["Male", "Female"]})
    d = pd.concat([rows, pd.DataFrame({"age": [30.5], "sex": ["Male"]})], ignore_index=True)
    d2 = pd.concat([rows, pd.DataFrame({"age": [37.5], "sex": ["Male"]})], ignore_index=True)
    worst = 0.0
    for seed in range(3):
        settings = {
            "epsilon": 2.0, "preset": "bfsoft", "vote": "soft", "temperature": 0.075,
            "policy": policy, "public": public, "population_size": 2, "rounds": 1,
            "random_state": seed,
        }  # fmt: skip
        model, spy = fit_spied(age_sex, d, **settings)
        _, spy2 = fit_spied(age_sex, d2, **settings)
        event = model.ledger_.events[0]
        shift = float(np.linalg.norm(spy.histograms[0] - spy2.histograms[0]))
        found = gaussian_epsilon(shift / event.sigma, DELTA)
        claimed = model.ledger_.result().epsilon
        worst = max(worst, found - claimed)
    assert worst <= 1e-6, f"exact epsilon exceeds the claim by {worst:.3f}"


# ------------------------------------------------- the noise is what the ledger says
def test_noise_spread_matches_the_ledger_end_to_end(age_sex) -> None:
    """Released facts only: with threshold t = sigma, a candidate with no vote survives
    the clip with probability Phi(-t / sigma). Noise drawn at sigma / 1.1 (or any other
    scale than the ledger's) moves the kept count by many standard deviations."""
    table = pd.DataFrame({"age": [30, 40, 50, 60], "sex": ["Male", "Female", "Male", "Female"]})
    settings = {"epsilon": 1.0, "preset": "bfsoft", "population_size": 4000, "rounds": 3}
    probe, _ = fit_spied(age_sex, table, random_state=1, **settings)
    sigma = probe.ledger_.to_dict()["sigma"]
    model, _ = fit_spied(age_sex, table, random_state=2, threshold=sigma, **settings)
    assert all(event.sigma == pytest.approx(sigma) for event in model.ledger_.events)
    kept = sum(entry["kept_candidates"] for entry in model.history_)
    rounds, size, n = 3, 4000, len(table)
    p = float(stats.norm.sf(1.0))
    expected, spread = rounds * (size - n) * p, math.sqrt(rounds * size * p * (1 - p))
    assert abs(kept - expected) <= 4 * spread + rounds * n


@pytest.mark.parametrize(
    "histogram",
    [
        np.zeros(7),
        np.array([0, 0, 0, 1.0, 0, 0, 0]),
        np.full(7, 1e6),
        np.array([3.5, 0.25, 0, 0, 2, 1, 1e-9]),
    ],
    ids=["all-zero", "one-hot", "huge", "fractional"],
)
def test_noise_is_never_skipped(histogram) -> None:
    """A data-dependent shortcut (no noise on empty, tiny, huge or one-hot histograms)
    shows as residuals that are not N(0, sigma^2)."""
    release = GaussianRelease(sigma=2.5, sensitivity=math.sqrt(2))
    noisy = noisy_trials(release, histogram, 3000, np.random.default_rng(3))
    residual = (noisy - histogram).ravel() / 2.5
    assert stats.kstest(residual, "norm").pvalue > 1e-4
    assert abs(residual.std() - 1.0) < 0.03
    selection = release.select(
        np.asarray(histogram, dtype=float), 200, np.random.default_rng(4),
        population=Records(np.zeros((7, 0)), np.zeros((7, 0), dtype=np.int32)), mode="sample",
    )  # fmt: skip
    assert len(np.unique(selection.parents)) > 1  # noise reaches the selection


def test_gaussian_claim_is_tight_to_the_exact_profile() -> None:
    """The exact Balle-Wang profile of the calibrated sigma meets delta at epsilon."""
    for epsilon, rounds in ((0.5, 1), (1.0, 10), (4.0, 29)):
        z = calibrate_gaussian(rounds, Budget.from_args(epsilon=epsilon, delta=DELTA))
        assert gaussian_delta(math.sqrt(rounds) / z, epsilon) <= DELTA * (1 + 1e-6)
        assert gaussian_delta(math.sqrt(rounds) / z, epsilon * 0.99) > DELTA


def test_local_and_fused_votes_agree_off_ties(age_sex) -> None:
    """The audits read histograms from the default backend; off ties it is the reference."""
    distance = make_distance("gower", age_sex)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"age": rng.integers(17, 91, 300), "sex": rng.choice(["Male", "Female"], 300)}
    )
    candidates = encode(pd.DataFrame({"age": [20, 51, 80], "sex": ["Male"] * 3}), age_sex)
    private = encode(frame, age_sex)
    assert np.array_equal(
        LocalBackend().vote(private, candidates, distance, HardVote()),
        make_backend("auto").vote(private, candidates, distance, HardVote()),
    )
