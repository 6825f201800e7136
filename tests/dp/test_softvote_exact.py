"""Exact DP check of one soft-vote Gaussian release under a threshold policy (spec §2-§4).

Tiny domain: ``a`` in {0..4} (numeric, declared range 4) and a binary ``b``, Gower weight
1/2 each; the policy protects ``a`` with threshold(1), so the reach is ``r = 0.5 / 4``.
Every table of 3 records, every protected neighbour (one record's ``a`` moved by 1).
The release is ``N(H(D), sigma^2 I)`` with ``H`` the soft-vote histogram over a fixed
public population and ``sigma = z * sqrt(2) tanh(r / (2 tau))`` (the closed-form bound).

For two Gaussians with the same covariance the hockey-stick divergence depends only on
``mu = ||H(D) - H(D')|| / sigma``:
``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, exact. The analytic
Gaussian mechanism claims ``(eps*, 1e-5)`` for noise multiplier ``z`` (``mu = 1/z``); every
protected pair must stay within it, and a substitution the policy does not protect
(``a: 0 -> 4``) must be able to break it: the policy is what makes the claim hold.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import brentq
from scipy.special import softmax
from scipy.stats import norm

from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.pe.distance import Gower
from dpevolve.pe.policy.blowfish import Policy, Threshold
from dpevolve.pe.policy.sensitivity import exact_soft_sensitivity, soft_bound
from dpevolve.pe.votes import SoftVote

SCHEMA = Schema((NumericColumn("a", 0, 4, integer=True), CategoricalColumn("b", ("no", "yes"))))
POLICY = Policy({"a": Threshold(1)})
DOMAIN = list(itertools.product(range(5), range(2)))  # (a, b code)
TAU = 0.1
N_RECORDS = 3
DELTA = 1e-5
Z = 1.0
POPULATIONS = {
    "spread": ((0, 0), (2, 1), (4, 0)),
    # Holds the protected edge (0, no) -> (1, no) as [x', x]: close to the bound.
    "near-tight": ((1, 0), (0, 0), (4, 1)),
}


def gower(x: tuple[int, int], c: tuple[int, int]) -> float:
    """Spec §1 by hand: ``0.5 |a - a_c| / 4 + 0.5 [b != b_c]``."""
    return 0.5 * abs(x[0] - c[0]) / 4 + 0.5 * (x[1] != c[1])


def votes(population: tuple[tuple[int, int], ...]) -> np.ndarray:
    """Soft vote of every domain point, (10, m): ``softmax(-d(x, C) / tau)``."""
    d = np.array([[gower(x, c) for c in population] for x in DOMAIN])
    return softmax(-d / TAU, axis=1)


def hockey_stick(mu: np.ndarray | float, eps: float) -> np.ndarray:
    """``delta(eps)`` between ``N(0, 1)`` and ``N(mu, 1)``; 0 at ``mu = 0``."""
    mu = np.maximum(np.asarray(mu, dtype=np.float64), 1e-300)
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def analytic_epsilon(z: float, delta: float) -> float:
    """The eps the analytic Gaussian mechanism claims at noise multiplier ``z``."""
    return brentq(lambda eps: float(hockey_stick(1.0 / z, eps)) - delta, 0.0, 100.0, xtol=1e-14)


def neighbour_shifts(population, substitution) -> np.ndarray:
    """``||H(D') - H(D)||_2`` over every table D of N_RECORDS and every neighbour D'."""
    p = votes(population)
    index = {x: i for i, x in enumerate(DOMAIN)}
    tables = np.array(list(itertools.product(range(len(DOMAIN)), repeat=N_RECORDS)))
    h = p[tables].sum(axis=1)
    shifts = []
    for row in range(N_RECORDS):
        for i, x in enumerate(DOMAIN):
            for x_prime in substitution(x):
                changed = tables[tables[:, row] == i].copy()
                base = h[tables[:, row] == i]
                changed[:, row] = index[x_prime]
                shifts.append(np.linalg.norm(p[changed].sum(axis=1) - base, axis=1))
    return np.concatenate(shifts)


def protected(x: tuple[int, int]) -> list[tuple[int, int]]:
    return [(a, x[1]) for a in (x[0] - 1, x[0] + 1) if 0 <= a <= 4]


def test_claimed_epsilon_matches_spec_table() -> None:
    # z = 1 is rho = 0.5 (spec §4 table: exact eps 4.3772 at delta 1e-5).
    assert round(analytic_epsilon(Z, DELTA), 4) == 4.3772


def test_local_votes_are_the_library_votes() -> None:
    g = Gower(SCHEMA)
    domain = Records(
        np.array([[a / 4] for a, _ in DOMAIN]), np.array([[b] for _, b in DOMAIN], dtype=np.int32)
    )
    for population in POPULATIONS.values():
        c = Records(
            np.array([[a / 4] for a, _ in population]),
            np.array([[b] for _, b in population], dtype=np.int32),
        )
        library = SoftVote(TAU).row_votes(g.pairwise(domain, c))
        np.testing.assert_allclose(library, votes(population), rtol=0, atol=1e-15)


@pytest.mark.parametrize("name", sorted(POPULATIONS))
def test_protected_neighbours_meet_the_claim(name: str) -> None:
    population = POPULATIONS[name]
    g = Gower(SCHEMA)
    reach = POLICY.reach(g)
    assert reach == pytest.approx(0.125)
    bound = soft_bound(reach, TAU)
    sigma = Z * bound
    eps = analytic_epsilon(Z, DELTA)

    shifts = neighbour_shifts(population, protected)
    assert len(shifts) == 3 * 16 * 100  # 3 rows x 16 protected moves x 100 other tables
    assert shifts.max() <= bound + 1e-12
    divergence = hockey_stick(shifts / sigma, eps)
    assert divergence.max() <= DELTA * (1 + 1e-9)

    # The exact edge search over the domain sees the same worst shift.
    c = Records(
        np.array([[a / 4] for a, _ in population]),
        np.array([[b] for _, b in population], dtype=np.int32),
    )
    assert exact_soft_sensitivity(POLICY, g, c, TAU).value == pytest.approx(shifts.max(), abs=1e-12)
    if name == "near-tight":
        assert shifts.max() / bound > 0.999


def test_unprotected_substitution_breaks_the_claim() -> None:
    bound = soft_bound(POLICY.reach(Gower(SCHEMA)), TAU)
    eps = analytic_epsilon(Z, DELTA)
    shifts = neighbour_shifts(POPULATIONS["spread"], lambda x: [(4, x[1])] if x[0] == 0 else [])
    divergence = hockey_stick(shifts / (Z * bound), eps)
    assert shifts.max() > bound
    assert divergence.max() > 100 * DELTA


def test_closed_form_divergence_by_integration() -> None:
    """The 1-D formula agrees with integrating ``[p - e^eps q]_+`` numerically."""
    eps = analytic_epsilon(Z, DELTA)
    for mu in (0.3, 1.0, 1.7):
        value, _ = integrate.quad(
            lambda t, mu=mu: max(norm.pdf(t - mu) - math.exp(eps) * norm.pdf(t), 0.0),
            -10,
            20,
            points=[mu / 2 + eps / mu],
            epsabs=1e-14,
            limit=200,
        )
        assert value == pytest.approx(float(hockey_stick(mu, eps)), rel=1e-6, abs=1e-13)
