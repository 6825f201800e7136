"""The worst-case pair and its privacy loss distribution (spec §5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from dpevolve.pe.pubmix import (
    TAIL_P,
    TAIL_Q,
    beta_min,
    meets_over_rounds,
    pubmix_delta,
    worst_case_pair,
    worst_case_pld,
)

N = 1200
DELTA = 1.0 / N
INTERVAL = 1e-4

CASES = [
    (100, 5.0, 5e-4, 5e-4),
    (100, 5.0, 1e-4, 1e-3),
    (1000, 5.0, 1e-3, 1e-3),
    (1000, 1.0, 2e-4, 5e-4),
    (50, 2.0, 0.0, 0.0),
    (50, 2.0, 0.0, 1e-3),
]


@pytest.mark.parametrize(("m", "eps", "z1", "z2"), CASES)
def test_pair_is_two_distributions(m: int, eps: float, z1: float, z2: float) -> None:
    beta = beta_min(N, m, eps, DELTA, z1, z2)
    pair = worst_case_pair(N, m, beta, z1, z2)
    # Each sums to 1 up to the pessimistic tail bound (<= ~1e-29 above 1).
    assert logsumexp(list(pair.log_p.values())) == pytest.approx(0.0, abs=1e-12)
    assert logsumexp(list(pair.log_q.values())) == pytest.approx(0.0, abs=1e-12)
    assert TAIL_P not in pair.log_q and TAIL_Q not in pair.log_p
    assert pair.tail_p < 1e-25 and pair.tail_q < 1e-25


@pytest.mark.parametrize(("m", "eps", "z1", "z2"), CASES)
def test_one_release_pld_gives_max_h1_h2(m: int, eps: float, z1: float, z2: float) -> None:
    beta = beta_min(N, m, eps, DELTA, z1, z2)
    pld = worst_case_pld(N, m, beta, z1, z2, value_discretization_interval=INTERVAL)
    for e in (eps, 0.5 * eps, 1.5 * eps):
        got = pld.get_delta_for_epsilon(e)
        # Pessimistic rounding moves each loss up by at most one interval.
        assert pubmix_delta(beta, N, m, e, z1, z2) - 1e-15 <= got
        assert got <= pubmix_delta(beta, N, m, e - INTERVAL, z1, z2) + 1e-15
    assert pld.get_delta_for_epsilon(eps) == pytest.approx(DELTA, rel=2e-3)


def test_pld_directions_are_h1_and_h2() -> None:
    from dpevolve.pe.pubmix import h1, h2

    m, eps, z1, z2, beta = 200, 1.0, 1e-4, 2e-3, 0.3
    pld = worst_case_pld(N, m, beta, z1, z2, value_discretization_interval=1e-5)
    remove = pld._pmf_remove.get_delta_for_epsilon(eps)
    add = pld._pmf_add.get_delta_for_epsilon(eps)
    assert remove == pytest.approx(h1(beta, n=N, m=m, epsilon=eps, z1=z1, z2=z2), rel=1e-3)
    assert add == pytest.approx(h2(beta, n=N, m=m, epsilon=eps, z1=z1, z2=z2), rel=1e-3)


def test_composition_is_at_least_single_release() -> None:
    m, eps, z = 100, 1.0, 5e-4
    beta = beta_min(N, m, eps, DELTA, z, z)
    pld = worst_case_pld(N, m, beta, z, z)
    composed = pld.self_compose(4)
    assert composed.get_delta_for_epsilon(4 * eps) >= 0.0
    assert composed.get_delta_for_epsilon(eps) >= pld.get_delta_for_epsilon(eps)
    # Basic composition bounds the 4-fold release.
    assert composed.get_delta_for_epsilon(4 * eps) <= 4 * pld.get_delta_for_epsilon(eps) + 1e-12


def test_pair_cells() -> None:
    m, beta, z1, z2 = 5, 0.4, 0.1, 0.2
    pair = worst_case_pair(7, m, beta, z1, z2)
    g = (1 - beta) / 7
    a, b, c, d = beta * z1 + g, beta * z2, beta * z1, beta * z2 + g
    rest = 1 - a - b
    lam, mu = 2, 1
    coef = np.log(120 / (2 * 1 * 2))
    assert pair.log_p[(lam, mu)] == pytest.approx(
        coef + lam * np.log(a) + mu * np.log(b) + 2 * np.log(rest), rel=1e-12
    )
    assert pair.log_q[(lam, mu)] == pytest.approx(
        coef + lam * np.log(c) + mu * np.log(d) + 2 * np.log(rest), rel=1e-12
    )


def test_tight_calibration_at_a_zero_floor_with_few_rows() -> None:
    # 400 private rows, tabpe's 1000 parents over 29 rounds, a zero floor: the pair shares
    # one outcome, and below beta ~0.5 its mass composed over the rounds fell under
    # dp_accounting's tail truncation (an IndexError inside self_compose).
    n, m, rounds, eps, delta = 400, 1000, 29, 1.0, 1e-5
    assert not meets_over_rounds(n, m, 0.5, 0.0, rounds, eps, delta)
    # At z = 0 the composed delta is exactly 1 - (1 - g)^(m T), g = (1 - beta) / n.
    edge = 1.0 - n * -np.expm1(np.log1p(-delta) / (m * rounds))
    assert meets_over_rounds(n, m, min(1.0, edge + 1e-9), 0.0, rounds, eps, delta)
    assert not meets_over_rounds(n, m, edge - 1e-6, 0.0, rounds, eps, delta)


@pytest.mark.parametrize("beta", [0.3, 0.9, 0.999])
def test_meets_over_rounds_is_the_composed_pld(beta: float) -> None:
    n, m, z, rounds, eps, delta = N, 50, 1e-3, 5, 1.0, 1e-5
    composed = worst_case_pld(n, m, beta, z, z).self_compose(rounds)
    expected = composed.get_delta_for_epsilon(eps) <= delta
    assert meets_over_rounds(n, m, beta, z, rounds, eps, delta) == expected
