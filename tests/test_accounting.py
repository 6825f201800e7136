"""Accounting (spec §4, §5): conversions, composition, calibration and the ledger."""

from __future__ import annotations

import itertools
import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaln, xlogy
from scipy.stats import norm

from dpevolve.errors import InputError, PrivacyError
from dpevolve.privacy import (
    METHODS,
    Accountant,
    AccountingResult,
    ApproxDPEvent,
    Budget,
    GaussianEvent,
    Ledger,
    PrivacyLossPairEvent,
    ZeroCostEvent,
    calibrate_gaussian,
    epsilon_from_rho,
    gaussian_delta,
    gaussian_sigma,
    rho_for_epsilon,
)

# ------------------------------------------------------------------ helpers


def log_pmf(probs: list[float] | np.ndarray) -> dict[int, float]:
    return {i: math.log(p) if p > 0 else -math.inf for i, p in enumerate(probs)}


def hockey_stick(p: np.ndarray, q: np.ndarray, eps: float) -> float:
    return float(np.maximum(p - math.exp(eps) * q, 0.0).sum())


def pubmix_pair(
    beta: float, n: int, m: int, z1: float, z2: float
) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], float]]:
    """Spec §5 worst-case pair Mult(m; a, b, rest) vs Mult(m; c, d, rest), log-pmfs."""
    g = (1 - beta) / n
    a, b, c, d = beta * z1 + g, beta * z2, beta * z1, beta * z2 + g
    rest = 1 - beta * (z1 + z2) - g
    lam, mu = np.meshgrid(np.arange(m + 1), np.arange(m + 1), indexing="ij")
    k = np.maximum(m - lam - mu, 0)
    base = gammaln(m + 1) - gammaln(lam + 1) - gammaln(mu + 1) - gammaln(k + 1) + xlogy(k, rest)
    lp = base + xlogy(lam, a) + xlogy(mu, b)
    lq = base + xlogy(lam, c) + xlogy(mu, d)
    keep = (lam + mu <= m) & (np.maximum(lp, lq) > math.log(1e-30))
    cells = list(zip(*np.nonzero(keep), strict=True))
    upper = {(int(i), int(j)): float(lp[i, j]) for i, j in cells}
    lower = {(int(i), int(j)): float(lq[i, j]) for i, j in cells}
    return upper, lower


# ------------------------------------------------------------------ spec §4 conversions

SPEC_TABLE = [
    (0.01, 0.6886, 0.5457, 0.4970),
    (0.1, 2.2460, 1.9142, 1.7601),
    (0.5, 5.2985, 4.7284, 4.3772),
    (1.0, 7.7861, 7.0772, 6.5730),
]


@pytest.mark.parametrize(("rho", "simple", "cks", "exact"), SPEC_TABLE)
def test_spec_section4_table(rho: float, simple: float, cks: float, exact: float) -> None:
    assert epsilon_from_rho(rho, 1e-5, "simple") == pytest.approx(simple, abs=1e-4)
    assert epsilon_from_rho(rho, 1e-5, "cks") == pytest.approx(cks, abs=1e-4)
    assert epsilon_from_rho(rho, 1e-5, "exact") == pytest.approx(exact, abs=1e-4)


@settings(max_examples=150, deadline=None)
@given(
    rho=st.floats(1e-6, 50.0),
    delta=st.floats(1e-12, 0.5),
)
def test_conversion_ordering(rho: float, delta: float) -> None:
    simple = epsilon_from_rho(rho, delta, "simple")
    cks = epsilon_from_rho(rho, delta, "cks")
    exact = epsilon_from_rho(rho, delta, "exact")
    assert 0.0 <= exact <= cks + 1e-12
    assert cks <= simple + 1e-12


def test_cks_is_the_true_minimum() -> None:
    rho, delta = 0.1, 1e-5
    alphas = 1 + np.logspace(-4, 4, 200_001)
    objective = (
        alphas * rho + np.log1p(-1 / alphas) + (math.log(1 / delta) - np.log(alphas)) / (alphas - 1)
    )
    assert epsilon_from_rho(rho, delta, "cks") <= objective.min() + 1e-12
    assert epsilon_from_rho(rho, delta, "cks") >= objective.min() - 1e-6


@pytest.mark.parametrize("method", ["simple", "cks", "exact"])
@pytest.mark.parametrize(("eps", "delta"), [(0.1, 1e-6), (1.0, 1e-5), (8.0, 1e-9)])
def test_rho_for_epsilon_inverts(method: str, eps: float, delta: float) -> None:
    rho = rho_for_epsilon(eps, delta, method)  # type: ignore[arg-type]
    got = epsilon_from_rho(rho, delta, method)  # type: ignore[arg-type]
    assert got <= eps
    assert got == pytest.approx(eps, rel=1e-9)


def test_rho_for_epsilon_order() -> None:
    simple, cks, exact = (rho_for_epsilon(1.0, 1e-5, m) for m in ("simple", "cks", "exact"))
    assert simple < cks < exact


def test_gaussian_delta_matches_direct_formula() -> None:
    for mu in (0.1, 0.5, 1.0, 3.0):
        for eps in (0.0, 0.3, 1.0, 2.0):
            direct = norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
            assert gaussian_delta(mu, eps) == pytest.approx(direct, rel=1e-10, abs=1e-15)


def test_gaussian_delta_in_the_far_tail() -> None:
    # The naive difference cancels to 0 (or goes negative) here; the log route must not.
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    for mu, eps in ((0.5, 10.0), (1.0, 30.0), (0.2, 5.0)):
        a, b = mpmath.mpf(mu) / 2 - eps / mpmath.mpf(mu), -mpmath.mpf(mu) / 2 - eps / mpmath.mpf(mu)
        exact = mpmath.ncdf(a) - mpmath.exp(eps) * mpmath.ncdf(b)
        assert gaussian_delta(mu, eps) == pytest.approx(float(exact), rel=1e-8)
        assert gaussian_delta(mu, eps) > 0


def test_gaussian_delta_edges() -> None:
    assert gaussian_delta(0.0, 1.0) == 0.0
    assert gaussian_delta(math.inf, 1.0) == 1.0
    assert gaussian_delta(1.0, -1.0) == pytest.approx(
        norm.cdf(0.5 + 1) - math.exp(-1) * norm.cdf(-0.5 + 1)
    )
    with pytest.raises(InputError, match="mu must be >= 0"):
        gaussian_delta(-1.0, 1.0)


def test_conversion_rejects_bad_input() -> None:
    with pytest.raises(InputError, match=r"^delta must be in \(0, 1\), got 0$"):
        epsilon_from_rho(0.1, 0)
    with pytest.raises(InputError, match="rho must be >= 0"):
        epsilon_from_rho(-1, 1e-5)
    with pytest.raises(InputError, match="method must be"):
        epsilon_from_rho(0.1, 1e-5, "bogus")  # type: ignore[arg-type]
    assert epsilon_from_rho(0.0, 1e-5) == 0.0


# ------------------------------------------------------------------ budget


def test_budget_validation() -> None:
    assert Budget(1.0, 1e-5).epsilon == 1.0
    assert Budget(rho=0.1).is_zcdp
    assert Budget(rho=0.1, delta=1e-5).delta == 1e-5
    assert Budget.from_args(epsilon=2, delta=1e-6) == Budget(2.0, 1e-6)
    with pytest.raises(InputError, match=r"^epsilon must be > 0 and finite, got -1$"):
        Budget(-1, 1e-5)
    # One budget type: delta left out is resolved for n (the row count is public).
    assert Budget(epsilon=1.0).delta is None and Budget(epsilon=1.0).for_rows(10).delta == 1e-5
    with pytest.raises(InputError, match="not both"):
        Budget(epsilon=1.0, delta=1e-5, rho=0.1)
    with pytest.raises(InputError, match="give a budget: epsilon"):
        Budget()
    with pytest.raises(InputError, match="delta must be in"):
        Budget(1.0, 1.0)
    with pytest.raises(InputError, match="rho must be > 0"):
        Budget(rho=0.0)
    with pytest.raises(InputError, match="epsilon must be > 0"):
        Budget(math.inf, 1e-5)
    with pytest.raises(InputError, match="must be a number"):
        Budget(float("nan"), 1e-5)


# ------------------------------------------------------------------ events


def test_gaussian_event() -> None:
    e = GaussianEvent(sensitivity=math.sqrt(2), sigma=4.0)
    assert e.noise_multiplier == pytest.approx(4 / math.sqrt(2))
    assert e.rho == pytest.approx(2 / 32)
    d = e.to_dict()
    assert d["mechanism"] == "gaussian_histogram"
    json.dumps(d, allow_nan=False)
    zero = GaussianEvent(0.0, 1.0)
    assert zero.noise_multiplier == math.inf
    assert zero.rho == 0.0
    assert zero.to_dict()["noise_multiplier"] is None
    with pytest.raises(InputError, match="sigma must be > 0"):
        GaussianEvent(1.0, 0.0)
    with pytest.raises(InputError, match="sensitivity must be >= 0"):
        GaussianEvent(-1.0, 1.0)


def test_event_dicts_are_json() -> None:
    p, q = log_pmf([0.5, 0.5]), log_pmf([0.9, 0.1])
    events = [
        GaussianEvent(1.0, 2.0),
        PrivacyLossPairEvent(
            p, q, params={"beta": 0.3, "m": 10}, claimed_epsilon=1.0, claimed_delta=1e-6
        ),
        ApproxDPEvent(0.1, 1e-7, "gamma_estimate"),
        ZeroCostEvent("public_pilot", "uses public data only"),
    ]
    for e in events:
        d = e.to_dict()
        assert "mechanism" in d
        json.dumps(d, allow_nan=False)
    pair = events[1].to_dict()
    assert pair["params"] == {"beta": 0.3, "m": 10}
    assert "log_pmf_upper" not in pair


def test_pair_event_validation() -> None:
    p, q = log_pmf([0.5, 0.5]), log_pmf([0.9, 0.1])
    with pytest.raises(InputError, match="or neither"):
        PrivacyLossPairEvent(p, q, reverse_log_pmf_upper=q)
    with pytest.raises(InputError, match="symmetric pair takes no reverse"):
        PrivacyLossPairEvent(p, q, symmetric=True, reverse_log_pmf_upper=q, reverse_log_pmf_lower=p)
    with pytest.raises(InputError, match="must sum to 1"):
        PrivacyLossPairEvent(log_pmf([0.5, 0.3]), q)
    with pytest.raises(InputError, match="log-probability"):
        PrivacyLossPairEvent({0: 0.5}, q)
    with pytest.raises(InputError, match="claimed_delta"):
        PrivacyLossPairEvent(p, q, claimed_epsilon=1.0)
    with pytest.raises(InputError, match="non-empty"):
        PrivacyLossPairEvent({}, q)
    # The event keeps its own copy: later edits by the caller change nothing.
    mutable = dict(p)
    e = PrivacyLossPairEvent(mutable, q)
    mutable[0] = -5.0
    assert e.log_pmf_upper[0] == pytest.approx(math.log(0.5))


# ------------------------------------------------------------------ accountant


def test_accountant_gaussian_methods() -> None:
    events = [GaussianEvent(1.0, 5.0)] * 8 + [ZeroCostEvent("pilot")]
    r = Accountant(1e-5).epsilon(events)
    assert set(r.by_method) == {"gaussian_exact", "pld", "rdp", "zcdp"}
    assert r.method == "gaussian_exact"
    exact = r.by_method["gaussian_exact"]
    # exact Gaussian composition: mu = sqrt(8) / 5
    assert gaussian_delta(math.sqrt(8) / 5, exact) == pytest.approx(1e-5, rel=1e-9)
    assert exact <= r.by_method["pld"] <= exact * 1.01
    assert r.by_method["rdp"] >= exact
    assert r.by_method["zcdp"] >= exact
    assert r.by_method["zcdp"] == pytest.approx(epsilon_from_rho(8 / 50, 1e-5, "cks"))
    assert r.delta == 1e-5


def test_accountant_composition_is_one_gaussian() -> None:
    mixed = [GaussianEvent(1.0, 3.0), GaussianEvent(2.0, 4.0), GaussianEvent(0.5, 1.0)]
    mu = math.sqrt(sum((e.sensitivity / e.sigma) ** 2 for e in mixed))
    acc = Accountant(1e-6, methods=["gaussian_exact"])
    assert acc.epsilon(mixed).epsilon == pytest.approx(epsilon_from_rho(mu**2 / 2, 1e-6))
    assert acc.delta_for_epsilon(mixed, 1.0) == pytest.approx(gaussian_delta(mu, 1.0))


def test_accountant_empty_and_zero_cost() -> None:
    r = Accountant(1e-5).epsilon([ZeroCostEvent("pilot"), GaussianEvent(0.0, 1.0)])
    assert r.epsilon == 0.0
    assert Accountant(1e-5).epsilon([]).epsilon == 0.0


def test_accountant_basic_and_pld() -> None:
    events = [ApproxDPEvent(0.5, 1e-7)] * 4
    r = Accountant(1e-5).epsilon(events)
    assert set(r.by_method) == {"pld", "basic"}
    assert r.by_method["basic"] == pytest.approx(2.0)
    # PLD of (eps, delta) dominating pairs is never worse than basic composition here.
    assert r.by_method["pld"] <= 2.0 + 1e-3
    # basic reports its own delta when it wins
    only_basic = Accountant(1e-5, methods=["basic"]).epsilon(events)
    assert (only_basic.epsilon, only_basic.delta) == (pytest.approx(2.0), pytest.approx(4e-7))


def test_accountant_basic_over_delta() -> None:
    events = [ApproxDPEvent(0.5, 1e-5)] * 4
    r = Accountant(1e-5).epsilon(events)
    assert r.method == "pld"  # basic's 4e-5 exceeds the target: it cannot compete
    only = Accountant(1e-5, methods=["basic"]).epsilon(events)
    assert only.delta == pytest.approx(4e-5)  # reported, with its larger delta


def test_accountant_mixed_gaussian_and_approx() -> None:
    events = [GaussianEvent(1.0, 4.0), ApproxDPEvent(0.2, 1e-8)]
    r = Accountant(1e-5).epsilon(events)
    assert list(r.by_method) == ["pld"]
    alone = Accountant(1e-5, methods=["gaussian_exact"]).epsilon(events[:1]).epsilon
    assert alone < r.epsilon < alone + 0.2 + 1e-3


def test_accountant_no_method() -> None:
    with pytest.raises(PrivacyError, match="no accounting method"):
        Accountant(1e-5, methods=["gaussian_exact"]).epsilon([ApproxDPEvent(1.0, 0.0)])
    with pytest.raises(InputError, match="unknown accounting method"):
        Accountant(1e-5, methods=["magic"])
    assert set(METHODS) == {"gaussian_exact", "pld", "rdp", "zcdp", "basic"}


def test_result_to_dict() -> None:
    r = AccountingResult(1.0, 1e-5, "pld", {"pld": 1.0, "basic": math.inf})
    assert r.to_dict()["by_method"]["basic"] is None
    json.dumps(r.to_dict(), allow_nan=False)


# ------------------------------------------------------------------ calibration


@pytest.mark.parametrize(
    ("rounds", "eps", "delta"),
    [(1, 1.0, 1e-5), (8, 0.5, 1e-5), (29, 1.0, 1 / (32561 * math.log(32561))), (100, 4.0, 1e-9)],
)
def test_calibrate_gaussian_meets_budget(rounds: int, eps: float, delta: float) -> None:
    z = calibrate_gaussian(rounds, Budget(eps, delta))
    events = [GaussianEvent(1.0, z)] * rounds
    r = Accountant(delta, methods=["gaussian_exact", "rdp"]).epsilon(events)
    exact = r.by_method["gaussian_exact"]
    assert exact <= eps
    assert exact >= eps * (1 - 1e-3)
    assert r.by_method["rdp"] >= exact


def test_calibrate_gaussian_against_dp_accounting() -> None:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    rounds, eps, delta = 4, 1.0, 1e-5
    z = calibrate_gaussian(rounds, Budget(eps, delta))
    # PLD (pessimistic discretisation) sees the same noise meeting the budget, barely.
    pld = pld_privacy_accountant.PLDAccountant()
    pld.compose(dp_accounting.GaussianDpEvent(z), rounds)
    pld_eps = pld.get_epsilon(delta)
    assert eps - 1e-6 <= pld_eps <= eps * 1.01

    def event(sigma: float) -> dp_accounting.DpEvent:
        return dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(sigma), rounds)

    z_pld = dp_accounting.calibrate_dp_mechanism(
        pld_privacy_accountant.PLDAccountant,
        event,
        eps,
        delta,
        dp_accounting.LowerEndpointAndGuess(0.5, 2.0),
        tol=1e-4,
    )
    assert z * (1 - 1e-3) <= z_pld <= z * 1.01


def test_calibrate_gaussian_zcdp_and_speed() -> None:
    assert calibrate_gaussian(8, Budget(rho=0.01)) == pytest.approx(math.sqrt(8 / 0.02))
    t0 = time.perf_counter()
    for rounds in (1, 10, 100):
        calibrate_gaussian(rounds, Budget(1.0, 1e-6))
    assert (time.perf_counter() - t0) / 3 < 0.05
    with pytest.raises(InputError, match="rounds must be an integer >= 1"):
        calibrate_gaussian(0, Budget(1.0, 1e-6))


@settings(max_examples=60, deadline=None)
@given(
    sensitivity=st.floats(1e-3, 1e3),
    rho=st.floats(1e-6, 1e2),
)
def test_gaussian_sigma_costs_exactly_rho(sensitivity: float, rho: float) -> None:
    # The one sigma formula, read back through the event the ledger records.
    sigma = gaussian_sigma(sensitivity, rho)
    event = GaussianEvent(sensitivity=sensitivity, sigma=sigma, discrete=True)
    assert event.rho == pytest.approx(rho, rel=1e-12)
    assert gaussian_sigma(2 * sensitivity, rho) == pytest.approx(2 * sigma, rel=1e-12)


def test_gaussian_sigma_refuses_a_free_release() -> None:
    with pytest.raises(InputError, match="rho must be > 0"):
        gaussian_sigma(1.0, 0.0)
    with pytest.raises(InputError, match="sensitivity must be > 0"):
        gaussian_sigma(-1.0, 0.5)


# ------------------------------------------------------------------ privacy-loss pairs


def randomized_response(eps: float) -> tuple[dict[int, float], dict[int, float]]:
    p = [math.exp(eps) / (1 + math.exp(eps)), 1 / (1 + math.exp(eps))]
    return log_pmf(p), log_pmf(p[::-1])


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_pair_randomized_response(eps: float) -> None:
    p, q = randomized_response(eps)
    for event in (PrivacyLossPairEvent(p, q, symmetric=True), PrivacyLossPairEvent(p, q)):
        r = Accountant(1e-12).epsilon([event])
        assert r.method == "pld"
        assert r.epsilon == pytest.approx(eps, abs=2e-4)
        assert r.epsilon >= eps - 1e-11  # pessimistic discretisation


def test_pair_asymmetric_directions() -> None:
    # P vs Q peaks at loss log 5 (outcome 1); the reverse only reaches log 1.8.
    p, q = log_pmf([0.5, 0.5]), log_pmf([0.9, 0.1])
    acc = Accountant(1e-12)
    forward = acc.epsilon([PrivacyLossPairEvent(p, q)]).epsilon
    backward = acc.epsilon([PrivacyLossPairEvent(q, p)]).epsilon
    explicit = acc.epsilon(
        [PrivacyLossPairEvent(q, p, reverse_log_pmf_upper=p, reverse_log_pmf_lower=q)]
    ).epsilon
    fixed = acc.epsilon([PrivacyLossPairEvent(q, p, orientation="fixed")]).epsilon
    for value in (forward, backward, explicit, fixed):
        assert value == pytest.approx(math.log(5), abs=2e-4)
    # One direction only would miss it:
    one_way = acc.epsilon([PrivacyLossPairEvent(q, p, symmetric=True)]).epsilon
    assert one_way == pytest.approx(math.log(1.8), abs=2e-4)

    pa, qa = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    event = PrivacyLossPairEvent(p, q)
    for eps in (0.0, 0.3, 0.7, 1.2):
        want = max(hockey_stick(pa, qa, eps), hockey_stick(qa, pa, eps))
        assert event.hockey_stick(eps)[0] == pytest.approx(want, abs=1e-12)
        got = acc.delta_for_epsilon([event], eps)
        assert want - 1e-12 <= got <= want + 1e-3


def test_pair_orientation_any_covers_alternating_directions() -> None:
    # Under replace-one adjacency the same two tables can face (P, Q) in one round and
    # (Q, P) in the next; composing each direction with itself ("fixed") misses that.
    p = np.array([0.19570239, 0.00737306, 0.79692454])
    q = np.array([0.92436398, 0.04626488, 0.02937114])
    pp, qq, pq, qp = (np.outer(x, y).ravel() for x, y in ((p, p), (q, q), (p, q), (q, p)))
    eps = 2.0
    alternating = hockey_stick(pq, qp, eps)
    same = max(hockey_stick(pp, qq, eps), hockey_stick(qq, pp, eps))
    assert alternating > same + 0.05

    acc = Accountant(0.5)
    any_event = PrivacyLossPairEvent(log_pmf(p), log_pmf(q))
    fixed_event = PrivacyLossPairEvent(log_pmf(p), log_pmf(q), orientation="fixed")
    fixed = acc.delta_for_epsilon([fixed_event] * 2, eps)
    assert fixed == pytest.approx(same, abs=2e-3)
    for e in (-1.0, 0.0, 0.5, 1.0, 2.0, 3.0):
        bound = acc.delta_for_epsilon([any_event] * 2, e)
        worst = max(hockey_stick(a, b, e) for a, b in ((pq, qp), (qp, pq), (pp, qq), (qq, pp)))
        assert bound >= worst - 1e-12


def test_pair_unlisted_mass_is_charged() -> None:
    # 1e-4 of P left out (pruned) may sit anywhere: it must count as infinite loss.
    p = {0: math.log(0.5), 1: math.log(0.5 - 1e-4)}
    q = log_pmf([0.5, 0.5])
    event = PrivacyLossPairEvent(p, q, symmetric=True)
    assert Accountant(0.1).delta_for_epsilon([event], 50.0) >= 1e-4 - 1e-12


@pytest.mark.parametrize(
    ("m", "z", "beta"),
    [(10, 1e-4, 0.048300), (100, 1e-4, 0.338431), (10, 1e-3, 0.005076), (100, 1e-3, 0.060677)],
)
def test_pair_reproduces_spec_section5_beta_min(m: int, z: float, beta: float) -> None:
    # spec §5 table (n = 1200, eps = 5, delta = 1/n): beta_min puts delta(5) at 1/n.
    n = 1200
    upper, lower = pubmix_pair(beta, n, m, z, z)
    event = PrivacyLossPairEvent(upper, lower, symmetric=True, params={"beta": beta})
    assert event.hockey_stick(5.0)[0] * n == pytest.approx(1.0, abs=2e-4)
    r = Accountant(1 / n).epsilon([event])
    assert r.epsilon == pytest.approx(5.0, abs=2e-4)
    smaller = PrivacyLossPairEvent(*pubmix_pair(beta * 0.999, n, m, z, z), symmetric=True)
    assert smaller.hockey_stick(5.0)[0] * n > 1.003


def test_pair_asymmetric_spec_value_and_composition() -> None:
    n = 1200
    upper, lower = pubmix_pair(0.335667, n, 100, 1e-4, 1e-3)
    acc = Accountant(1 / n)
    any_event = PrivacyLossPairEvent(upper, lower)
    assert any_event.hockey_stick(5.0)[0] * n == pytest.approx(1.0, abs=2e-5)
    assert acc.epsilon([any_event]).epsilon == pytest.approx(5.0, abs=2e-4)
    # Composed over rounds: tighter than basic composition (spec §5's practical note),
    # and the orientation-free bound costs little over the fixed one.
    rounds = 4
    fixed_event = PrivacyLossPairEvent(upper, lower, orientation="fixed")
    any_eps = acc.epsilon([any_event] * rounds).epsilon
    fixed_eps = acc.epsilon([fixed_event] * rounds).epsilon
    assert fixed_eps <= any_eps + 1e-9
    assert any_eps <= fixed_eps * 1.02
    assert any_eps < 5.0 * rounds


def test_pair_with_claims_uses_basic_too() -> None:
    p, q = randomized_response(1.0)
    event = PrivacyLossPairEvent(p, q, symmetric=True, claimed_epsilon=1.0, claimed_delta=0.0)
    r = Accountant(1e-6).epsilon([event] * 3)
    assert r.by_method["basic"] == pytest.approx(3.0)
    assert r.by_method["pld"] <= 3.0 + 1e-3


# ------------------------------------------------------------------ ledger


def gaussian_ledger(rounds: int = 5) -> Ledger:
    ledger = Ledger(1e-5, metadata={"schema": "adult", "seed": 7, "preset": "tab-pe"})
    ledger.record(ZeroCostEvent("random_api", "initial population from declared ranges"), round=0)
    z = calibrate_gaussian(rounds, Budget(1.0, 1e-5))
    for t in range(1, rounds + 1):
        ledger.record(GaussianEvent(math.sqrt(2), z * math.sqrt(2)), round=t, candidates=100)
    return ledger


def test_ledger_top_level_and_running_epsilon() -> None:
    ledger = gaussian_ledger()
    d = ledger.to_dict()
    for key in ("epsilon", "delta", "events", "accounting", "schema", "seed", "preset"):
        assert key in d
    assert d["epsilon"] == pytest.approx(1.0, rel=1e-3)
    assert d["epsilon"] <= 1.0
    assert d["delta"] == 1e-5
    assert d["accounting"]["method"] == "gaussian_exact"
    assert set(d["accounting"]["by_method"]) == {"gaussian_exact", "pld", "rdp", "zcdp"}
    events = d["events"]
    assert [e["round"] for e in events] == [0, 1, 2, 3, 4, 5]
    assert events[0]["running_epsilon"] == 0.0
    assert events[1]["mechanism"] == "gaussian_histogram"
    assert events[1]["candidates"] == 100
    assert events[1]["sensitivity"] == pytest.approx(math.sqrt(2))
    running = [e["running_epsilon"] for e in events]
    assert all(b >= a for a, b in itertools.pairwise(running))
    assert running[-1] == pytest.approx(d["epsilon"])


def test_ledger_mixed_events_running_epsilon() -> None:
    ledger = Ledger(1e-5)
    p, q = randomized_response(0.5)
    for t in range(1, 4):
        ledger.record(GaussianEvent(1.0, 6.0), round=t)
        ledger.record(PrivacyLossPairEvent(p, q, symmetric=True, params={"beta": 0.5}), round=t)
    ledger.record(ApproxDPEvent(0.05, 0.0, "gamma_estimate"))
    d = ledger.to_dict()
    running = [e["running_epsilon"] for e in d["events"]]
    assert all(v is not None for v in running)
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(running))
    assert running[-1] == pytest.approx(d["epsilon"])
    assert d["events"][-1]["round"] == 4
    assert d["accounting"]["method"] == "pld"


def test_ledger_many_events_only_final() -> None:
    ledger = Ledger(1e-5)
    ledger.record(GaussianEvent(1.0, 50.0))
    for _ in range(70):
        ledger.record(ApproxDPEvent(0.001, 0.0))
    running = ledger.running_epsilons()
    assert running[0] is not None  # Gaussian prefix, known on record
    assert running[1:-1] == [None] * 69
    assert running[-1] == pytest.approx(ledger.result().epsilon)


def test_ledger_json_round_trip_and_atomic_write(tmp_path: Path) -> None:
    ledger = gaussian_ledger()
    ledger.note("on_invalid=drop removed 3 rows")
    ledger.add_metadata(version="0.1.0", policy={"age": {"threshold": 7}})
    path = tmp_path / "ledger.json"
    path.write_text("old contents")
    ledger.write(path)
    loaded = json.loads(path.read_text())
    assert loaded == ledger.to_dict()
    assert loaded["notes"] == ["on_invalid=drop removed 3 rows"]
    assert loaded["policy"] == {"age": {"threshold": 7}}
    assert os.listdir(tmp_path) == ["ledger.json"]  # no temporary left behind


def test_ledger_write_failure_keeps_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.json"
    path.write_text("old contents")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        gaussian_ledger().write(path)
    assert path.read_text() == "old contents"
    assert os.listdir(tmp_path) == ["ledger.json"]


def test_ledger_rejects_bad_input(tmp_path: Path) -> None:
    ledger = Ledger(1e-5)
    with pytest.raises(InputError, match="reserved"):
        ledger.add_metadata(epsilon=3)
    with pytest.raises(InputError, match="may not override"):
        ledger.record(GaussianEvent(1.0, 1.0), sigma=3)
    with pytest.raises(TypeError, match="JSON"):
        ledger.record(GaussianEvent(1.0, 1.0), thing=object())
    with pytest.raises(TypeError, match="not a privacy event"):
        ledger.record("gaussian")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="folder does not exist"):
        ledger.write(tmp_path / "missing" / "ledger.json")
    assert ledger.events == ()
    ledger.record(GaussianEvent(1.0, 1.0), info=np.float64(2.5))
    assert ledger.to_dict()["events"][0]["info"] == 2.5


def test_ex_post_epsilon_is_reported_apart_from_the_guarantee() -> None:
    """Rounds a search found cheap change ``ex_post_epsilon`` only: the top-level
    epsilon composes the events as charged (the bound fixed before the run)."""
    charged = Ledger(1e-5)
    plain = Ledger(1e-5)
    for t, exact in enumerate((0.0, 2**0.5, 0.0), start=1):
        charged.record(GaussianEvent(2**0.5, 5.0), round=t, exact_sensitivity=exact)
        plain.record(GaussianEvent(2**0.5, 5.0), round=t)
    out = charged.to_dict()
    assert out["epsilon"] == plain.to_dict()["epsilon"]
    assert "ex_post_epsilon" not in plain.to_dict()
    one_round = Ledger(1e-5)
    one_round.record(GaussianEvent(2**0.5, 5.0))
    assert out["ex_post_epsilon"]["epsilon"] == pytest.approx(one_round.result().epsilon)
    assert "not a guarantee" in out["ex_post_epsilon"]["note"]
    assert "ex_post_epsilon" in charged.shareable_dict()
