"""Exact DP check of the Gaussian histogram release on a tiny domain (spec §3, §4).

Every table of 3 records over a 4-value domain, every replace-one neighbour, hard
votes over 2 candidates per round. For each neighbouring pair the released
``N(H(D), sigma^2 I)`` vs ``N(H(D'), sigma^2 I)`` (stacked over the rounds) has a
hockey-stick divergence that depends only on the difference ``v`` of the stacked
histograms: the likelihood ratio is a function of the projection on ``v``. We compute
it by numerical integration of ``[p - e^eps q]_+`` along that direction (no closed
form involved) and check it against the accountant's claim: never above the claimed
delta at the claimed epsilon, and equal to it for the worst pair (the accounting is
tight, not merely valid).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from dpevolve.privacy import Accountant, Budget, GaussianEvent, calibrate_gaussian

DOMAIN = (0.0, 0.35, 0.6, 1.0)
N_RECORDS = 3
# One candidate population per round (public at release time). They split the domain
# differently, so a substitution moves a vote in some rounds and not in others; only
# 0.0 <-> 1.0 moves one in every round (the worst pair).
POPULATIONS = ((0.1, 0.9), (0.2, 0.3), (0.7, 0.9))
HARD_L2 = math.sqrt(2.0)  # spec §3: hard votes move one unit between two cells
DELTA = 1e-5


def hard_histogram(table: tuple[float, ...], candidates: tuple[float, ...]) -> np.ndarray:
    dist = np.abs(np.subtract.outer(np.asarray(table), np.asarray(candidates)))
    winners = np.argmin(dist, axis=1)  # ties to the lowest index, as in spec §3
    return np.bincount(winners, minlength=len(candidates)).astype(float)


def neighbouring_pairs() -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
    pairs = []
    for table in itertools.product(DOMAIN, repeat=N_RECORDS):
        for i, value in itertools.product(range(N_RECORDS), DOMAIN):
            if value != table[i]:
                pairs.append((table, (*table[:i], value, *table[i + 1 :])))
    return pairs


def stacked_shift(
    table: tuple[float, ...], other: tuple[float, ...], sigmas: tuple[float, ...]
) -> float:
    """``||v||`` in noise units: ``sqrt(sum_t ||H_t(D) - H_t(D')||^2 / sigma_t^2)``."""
    total = 0.0
    for candidates, sigma in zip(POPULATIONS, sigmas, strict=False):
        v = hard_histogram(table, candidates) - hard_histogram(other, candidates)
        assert np.linalg.norm(v) <= HARD_L2 + 1e-12
        total += float(v @ v) / sigma**2
    return math.sqrt(total)


def hockey_stick_by_quadrature(shift: float, eps: float) -> float:
    """``int [p(x) - e^eps q(x)]_+ dx`` for p = N(shift, 1), q = N(0, 1), by quad."""
    if shift == 0.0:
        return 0.0

    def density(x: float, mean: float) -> float:
        return math.exp(-0.5 * (x - mean) ** 2) / math.sqrt(2 * math.pi)

    def integrand(x: float) -> float:
        return max(density(x, shift) - math.exp(eps) * density(x, 0.0), 0.0)

    # p > e^eps q exactly right of the crossing point; start there so quad sees no kink.
    crossing = (eps + shift**2 / 2) / shift
    value, err = integrate.quad(
        integrand, crossing, crossing + 40.0, epsabs=1e-17, epsrel=1e-12, limit=200
    )
    assert err < 1e-13
    return value


def check_release(sigmas: tuple[float, ...]) -> None:
    events = [GaussianEvent(HARD_L2, s) for s in sigmas]
    claimed = Accountant(DELTA).epsilon(events)
    assert claimed.delta == DELTA
    shifts = {stacked_shift(d, d2, sigmas) for d, d2 in neighbouring_pairs()}
    deltas = {s: hockey_stick_by_quadrature(s, claimed.epsilon) for s in shifts}
    worst = max(deltas.values())
    assert worst <= DELTA * (1 + 1e-9)
    # Tight: the worst pair (a record moving between cells in every round) hits delta.
    assert worst == pytest.approx(DELTA, rel=1e-6, abs=1e-6)
    assert max(shifts) == pytest.approx(
        math.sqrt(sum(HARD_L2**2 / s**2 for s in sigmas)), rel=1e-12
    )


def test_one_round() -> None:
    sigma = HARD_L2 * calibrate_gaussian(1, Budget(1.0, DELTA))
    check_release((sigma,))


def test_three_rounds_calibrated() -> None:
    z = calibrate_gaussian(len(POPULATIONS), Budget(1.0, DELTA))
    check_release((HARD_L2 * z,) * len(POPULATIONS))


def test_three_rounds_unequal_noise() -> None:
    check_release((2.0, 3.5, 5.0))


def test_one_round_in_the_full_histogram_space() -> None:
    """The projection argument itself: integrate over R^2 for the worst pair."""
    sigma = 2.5
    eps = Accountant(DELTA).epsilon([GaussianEvent(HARD_L2, sigma)]).epsilon
    h = hard_histogram((0.0, 0.0, 0.0), POPULATIONS[0])
    h2 = hard_histogram((1.0, 0.0, 0.0), POPULATIONS[0])

    def density(x: float, y: float, centre: np.ndarray) -> float:
        return math.exp(-((x - centre[0]) ** 2 + (y - centre[1]) ** 2) / (2 * sigma**2)) / (
            2 * math.pi * sigma**2
        )

    def integrand(y: float, x: float) -> float:
        return max(density(x, y, h) - math.exp(eps) * density(x, y, h2), 0.0)

    # {p > e^eps q} is a half-plane, x - y > c for these two centres (h - h2 = (1, -1)).
    c = (eps * sigma**2 + (float(h @ h) - float(h2 @ h2)) / 2) / 1.0
    lo, hi = -12 * sigma, 12 * sigma + 3
    value, _ = integrate.dblquad(
        integrand, lo, hi, lambda x: lo, lambda x: min(hi, x - c), epsabs=1e-14, epsrel=1e-9
    )
    assert value == pytest.approx(DELTA, rel=1e-4)
