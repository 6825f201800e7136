"""The ledger's epsilon against an independent recomputation from its own events.

``epsilon <= budget`` is only meaningful if the ledger's epsilon is what its events
cost: a ledger that copies the budget, or composes fewer rounds than it ran, passes a
budget check. Each run here is recomputed by :func:`~dpevolve.privacy.audit.independent_epsilon`
(closed forms, a zCDP conversion and PLDs built without dpevolve's accountant), and the
events themselves are checked against what the run did (one per round, the recorded
sigma). Gaussian rounds draw the discrete Gaussian: the ledger reports the smaller of
its zCDP (CKS) and RDP conversions; dp_accounting's RDP conversion is the CKS formula on
a grid of orders, never below the continuous minimum the audit computes, so the two
must agree.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.errors import InputError
from dpevolve.pe.policy.blowfish import Policy
from dpevolve.pe.pubmix.discrete import sample_discrete
from dpevolve.pe.specs import GaussianSpec, PubMixSpec, VoteSpec
from dpevolve.presets import get_method
from dpevolve.privacy import ApproxDPEvent, Budget, GaussianEvent
from dpevolve.privacy.audit import cks_epsilon, eps_lower_bound, independent_epsilon

from .conftest import DELTA, fit_spied

PUBLIC = pd.DataFrame({"age": [20, 35, 50, 65, 80] * 4, "sex": ["Male", "Female"] * 10})


def _table(n: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"age": rng.integers(17, 91, n), "sex": rng.choice(["Male", "Female"], n)})


CASES = {
    "gaussian-hard": {"epsilon": 1.0},
    "gaussian-soft-policy": {
        "epsilon": 1.0,
        "vote": VoteSpec(kind="soft", temperature=0.1),
        "policy": {"age": {"threshold": 7}},
    },
    "gaussian-rho": {"rho": 0.2},
    "exact-calibration": {
        "epsilon": 1.0,
        "mechanism": GaussianSpec(calibration="exact"),
        "policy": {"sex": "complete"},
    },
    "pubmix-tight": {
        "epsilon": 1.0,
        "mechanism": PubMixSpec(gamma=0.2),
    },
    "pubmix-basic": {
        "epsilon": 1.0,
        "mechanism": PubMixSpec(accounting="basic", gamma=0.2),
    },
}


@pytest.mark.parametrize("case", list(CASES))
def test_ledger_epsilon_is_what_its_events_cost(age_sex, case) -> None:
    settings = dict(CASES[case])
    if "policy" in settings:
        settings["policy"] = Policy.from_dict({"attributes": settings["policy"]}, age_sex)
    rounds = 3
    pe = {k: settings.pop(k) for k in ("vote", "mechanism") if k in settings}
    method = get_method("bfsoft", population=5, rounds=rounds, **pe)
    model, _ = fit_spied(
        age_sex, _table(), public=PUBLIC, method=method, random_state=2, **settings,
    )  # fmt: skip
    ledger = model.ledger_
    events = [e for e in ledger.events if type(e).__name__ != "ZeroCostEvent"]
    assert len(events) == rounds
    if "sigma" in ledger.to_dict():
        assert all(e.sigma == pytest.approx(ledger.to_dict()["sigma"]) for e in events)
    independent = independent_epsilon(ledger.events, ledger.delta)
    reported = ledger.result().epsilon
    # PLDs (PubMix pairs) are discretised pessimistically: the audit's value may sit
    # above the ledger's by the discretisation, but not below it.
    tolerance = 2e-3
    if all(getattr(e, "discrete", False) for e in events):
        # The ledger may be tighter only if the audit's method were looser: it is not
        # (the same conversion, minimised to high precision), so both ways agree.
        tolerance = 1e-6
        assert reported <= independent * (1 + tolerance)
        assert reported >= independent * (1 - tolerance), "ledger reports less than it costs"
    else:
        assert reported == pytest.approx(independent, rel=tolerance, abs=tolerance)
    if "epsilon" in settings:
        assert independent <= settings["epsilon"] * (1 + min(tolerance, 1e-3))
    else:
        assert independent == pytest.approx(
            independent_epsilon([_gaussian(settings["rho"] / rounds)] * rounds, ledger.delta),
            rel=1e-6,
        )
    ex_post = ledger.ex_post_epsilon()
    if getattr(pe.get("mechanism"), "calibration", None) == "exact":
        # Charged at the bound; the search's figure is reported apart, never above it.
        bound = ledger.to_dict()["l2_sensitivity"]
        assert all(e.sensitivity == pytest.approx(bound) for e in events)
        assert ex_post is not None and ex_post <= reported * (1 + 1e-9)
    else:
        assert ex_post is None


def _gaussian(rho: float) -> GaussianEvent:
    return GaussianEvent(sensitivity=1.0, sigma=(1 / (2 * rho)) ** 0.5, discrete=True)


def _cks_at(t: np.ndarray, rho: float, delta: float) -> np.ndarray:
    """The CKS formula at orders ``alpha = 1 + e^t`` (numpy, written here)."""
    log_alpha = np.logaddexp(0.0, t)
    alpha = np.exp(log_alpha)
    return alpha * rho + (t - log_alpha) + (math.log(1 / delta) - log_alpha) * np.exp(-t)


@settings(max_examples=15, deadline=None)
@given(
    rho=st.floats(1e-5, 20.0),
    delta=st.floats(1e-12, 1e-2),
    t=st.floats(-9.0, 9.0),
)
def test_cks_epsilon_is_the_minimum_over_orders(rho, delta, t) -> None:
    """The audit's conversion is a minimum: never above the formula at any order, and
    within rounding of a dense scan of orders (so it is not loose either)."""
    eps = cks_epsilon(rho, delta)
    assert eps <= max(float(_cks_at(np.array(t), rho, delta)), 0.0) * (1 + 1e-12)
    scan = float(_cks_at(np.linspace(-30, 30, 400_001), rho, delta).min())
    assert max(scan, 0.0) * (1 - 1e-7) <= eps <= max(scan, 0.0) * (1 + 1e-12)


def test_independent_epsilon_reads_ledger_dicts_and_refuses_what_it_cannot_compose() -> None:
    """The JSON form of discrete events gives the same value as the objects, and a
    discrete Gaussian (no PLD is claimed for it) is not silently composed with others."""
    events = [GaussianEvent(sensitivity=1.0, sigma=3.0, discrete=True)] * 4
    as_dicts = [e.to_dict() for e in events]
    value = independent_epsilon(events, DELTA)
    assert value == independent_epsilon(as_dicts, DELTA) == cks_epsilon(4 / 18, DELTA)
    continuous = [GaussianEvent(sensitivity=1.0, sigma=3.0)] * 4
    assert independent_epsilon(continuous, DELTA) < value  # Balle-Wang is tighter
    with pytest.raises(InputError, match="discrete"):
        independent_epsilon([*events, ApproxDPEvent(epsilon=0.1, delta=0.0)], DELTA)


@pytest.mark.parametrize(
    "options",
    [
        {"noise": "gaussian"},
        {"noise": "linmix"},
        {"noise": "pubmix", "gamma": 0.3},
        {"noise": "pubmix", "gamma_epsilon": 0.3},
        {"noise": "pubmix", "floor_epsilon": 0.3},
    ],
    ids=["gaussian", "linmix", "pubmix-gamma", "pubmix-gamma-estimate", "pubmix-private-floor"],
)
def test_discrete_sampler_ledger(age_sex, options) -> None:
    """Every private step of the standalone sampler is an event, and they add up."""
    budget = Budget.from_args(epsilon=1.0, delta=DELTA)
    release = sample_discrete(_table(), PUBLIC, age_sex, 50, budget, random_state=0, **options)
    events = release.ledger.events
    extra = int("gamma_epsilon" in options or "floor_epsilon" in options)
    assert len(events) == 1 + extra
    independent = independent_epsilon(events, DELTA)
    assert release.ledger.result().epsilon == pytest.approx(independent, rel=2e-3, abs=2e-3)
    assert independent <= 1.0 + 1e-3


def _released(table: pd.DataFrame, age_sex, key: str, options: dict, seeds: range) -> list:
    budget = Budget.from_args(epsilon=1.0, delta=DELTA)
    return [
        sample_discrete(table, PUBLIC, age_sex, 5, budget, random_state=s, **options).details[key]
        for s in seeds
    ]


@pytest.mark.parametrize(
    ("key", "options"),
    [("gamma", {"gamma_epsilon": 0.5}), ("floor", {"floor_epsilon": 0.5})],
    ids=["gamma-estimate", "private-floor"],
)
def test_private_choices_of_the_discrete_sampler(age_sex, key, options) -> None:
    """The released gamma / floor (they are in the ledger's details) on neighbours that
    differ by a record alone in a cell no public record occupies, fresh seeds per trial:
    the lower bound stays under the step's own epsilon."""
    base = pd.DataFrame({"age": [20, 35, 50, 65, 80] * 4, "sex": ["Male", "Female"] * 10})
    d = pd.concat([base, pd.DataFrame({"age": [90], "sex": ["Female"]})], ignore_index=True)
    d2 = pd.concat([base, pd.DataFrame({"age": [20], "sex": ["Male"]})], ignore_index=True)
    trials = 80
    here = np.asarray(_released(d, age_sex, key, options, range(trials)))
    there = np.asarray(_released(d2, age_sex, key, options, range(trials, 2 * trials)))
    cut = float(np.median(np.concatenate([here, there])))
    lower = eps_lower_bound(
        int((here > cut).sum()), trials, int((there > cut).sum()), trials, DELTA
    )
    assert lower <= 0.5
