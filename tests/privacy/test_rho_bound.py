"""The zCDP lower bound of the audit tool (:func:`dpevolve.privacy.audit.rho_lower_bound`):
its divergence against the formula, never above the ``rho`` of a Gaussian mechanism
whatever the event, and above a claim four times too small."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy import stats

from dpevolve.privacy.audit import bernoulli_renyi, rho_lower_bound


def test_the_divergence_is_the_formula() -> None:
    p, q, a = 0.3, 0.1, 2.0
    want = math.log(p**2 / q + (1 - p) ** 2 / (1 - q))
    assert bernoulli_renyi(p, q, a) == pytest.approx(want)
    kl = p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    assert bernoulli_renyi(p, q, 1.0) == pytest.approx(kl)
    assert bernoulli_renyi(0.5, 0.5, 3.0) == pytest.approx(0.0, abs=1e-15)


@given(st.floats(0.05, 3.0), st.floats(-3.0, 5.0), st.floats(1.01, 64.0))
@example(3.0, 5.0, 64.0)  # a rare event at a high order: no float overflow
def test_no_event_of_a_gaussian_exceeds_its_rho(mu: float, cut: float, order: float) -> None:
    """``N(mu, 1)`` against ``N(0, 1)`` is ``mu^2 / 2``-zCDP: no threshold event's
    divergence (data processing) goes above ``order * rho``."""
    p, q = float(stats.norm.sf(cut - mu)), float(stats.norm.sf(cut))
    rho = mu * mu / 2
    assert bernoulli_renyi(p, q, order) <= order * rho * (1 + 1e-9) + 1e-12
    assert bernoulli_renyi(q, p, order) <= order * rho * (1 + 1e-9) + 1e-12


def test_the_bound_needs_apart_counts_and_finds_a_loud_leak() -> None:
    assert rho_lower_bound(50, 100, 50, 100) == 0.0
    # the same counts either way round give the same bound
    assert rho_lower_bound(80, 100, 20, 100) == pytest.approx(rho_lower_bound(20, 100, 80, 100))
    # a Gaussian at mu = 2 (rho 2) sampled at 2,000 trials: bound between rho / 4 and rho
    rng = np.random.default_rng(0)
    d, n = rng.normal(2.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000)
    bound = rho_lower_bound(int((d > 1).sum()), 2000, int((n > 1).sum()), 2000)
    assert 0.5 < bound <= 2.0
