"""beta_min, h1/h2 and the zero-floor closed form against spec §5."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.errors import InputError
from dpevolve.pe.pubmix import (
    beta_min,
    beta_min_zero_floor,
    h1,
    h1_by_sum,
    h2,
    pubmix_delta,
)

N = 1200
EPS = 5.0
DELTA = 1.0 / N

# spec §5: beta_min for n = 1200, eps = 5, delta = 1/n, z1 = z2 = N_min.
TABLE = {
    10: (0.048300, 0.010095, 0.005076),
    100: (0.338431, 0.112131, 0.060677),
    1000: (0.651367, 0.394182, 0.288189),
    5000: (0.825689, 0.656220, 0.558899),
}
N_MIN = (1e-4, 5e-4, 1e-3)


@pytest.mark.parametrize(
    ("m", "z", "expected"),
    [(m, z, v) for m, row in TABLE.items() for z, v in zip(N_MIN, row, strict=True)],
)
def test_beta_min_table(m: int, z: float, expected: float) -> None:
    assert beta_min(n=N, m=m, epsilon=EPS, delta=DELTA, z1=z) == pytest.approx(expected, abs=5e-7)


def test_beta_min_asymmetric() -> None:
    got = beta_min(n=N, m=100, epsilon=EPS, delta=DELTA, z1=1e-4, z2=1e-3)
    assert got == pytest.approx(0.335667, abs=5e-7)
    assert beta_min(n=N, m=100, epsilon=EPS, delta=DELTA, z1=1e-3, z2=1e-4) == got


def test_beta_min_is_tight() -> None:
    beta = beta_min(n=N, m=1000, epsilon=EPS, delta=DELTA, z1=5e-4)
    assert pubmix_delta(beta, N, 1000, EPS, 5e-4, 5e-4) <= DELTA
    assert pubmix_delta(beta - 1e-9, N, 1000, EPS, 5e-4, 5e-4) > DELTA


@pytest.mark.parametrize("m", [1, 10, 100, 1000, 5000])
@pytest.mark.parametrize(("n", "delta"), [(1200, 1 / 1200), (50, 1e-5), (10_000, 1e-8)])
def test_zero_floor_closed_form(n: int, m: int, delta: float) -> None:
    by_bisection = beta_min(n=n, m=m, epsilon=1.0, delta=delta, z1=0.0)
    assert by_bisection == pytest.approx(beta_min_zero_floor(n, m, delta), abs=1e-9)


def test_zero_floor_h_is_eps_free() -> None:
    # With z1 = z2 = 0 the two outputs have disjoint supports apart from (0, 0).
    for eps in (0.1, 1.0, 10.0):
        g = (1 - 0.3) / N
        assert h1(0.3, n=N, m=50, epsilon=eps, z1=0.0, z2=0.0) == pytest.approx(
            -math.expm1(50 * math.log1p(-g)), rel=1e-12
        )


masses = st.one_of(st.just(0.0), st.floats(1e-7, 0.3))


@settings(max_examples=150, deadline=None)
@given(
    beta=st.floats(0.0, 1.0),
    n=st.integers(1, 3000),
    m=st.integers(1, 1500),
    eps=st.floats(0.05, 8.0),
    z1=masses,
    z2=masses,
)
def test_h1_equals_conditional_route(
    beta: float, n: int, m: int, eps: float, z1: float, z2: float
) -> None:
    grid = h1(beta, n=n, m=m, epsilon=eps, z1=z1, z2=z2)
    by_sum = h1_by_sum(beta, n=n, m=m, epsilon=eps, z1=z1, z2=z2)
    # Pruning adds at most ~1e-28 (bounded tails); the rest is floating point.
    assert abs(grid - by_sum) <= 1e-8 * max(grid, by_sum) + 1e-25


@settings(max_examples=100, deadline=None)
@given(
    b1=st.floats(0.0, 1.0),
    b2=st.floats(0.0, 1.0),
    n=st.integers(1, 3000),
    m=st.integers(1, 1000),
    eps=st.floats(0.05, 8.0),
    z1=masses,
    z2=masses,
)
def test_delta_non_increasing_in_beta(
    b1: float, b2: float, n: int, m: int, eps: float, z1: float, z2: float
) -> None:
    lo, hi = sorted((b1, b2))
    d_lo = pubmix_delta(lo, n, m, eps, z1, z2)
    d_hi = pubmix_delta(hi, n, m, eps, z1, z2)
    assert d_hi <= d_lo * (1 + 1e-9) + 1e-28


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3000),
    m=st.integers(1, 500),
    eps=st.floats(0.1, 8.0),
    log_delta=st.floats(-10.0, -1.0),
    z1=masses,
    z2=masses,
)
def test_beta_min_is_the_boundary(
    n: int, m: int, eps: float, log_delta: float, z1: float, z2: float
) -> None:
    delta = 10.0**log_delta
    beta = beta_min(n=n, m=m, epsilon=eps, delta=delta, z1=z1, z2=z2)
    assert 0.0 <= beta <= 1.0
    assert (
        max(
            h1(beta, n=n, m=m, epsilon=eps, z1=z1, z2=z2),
            h2(beta, n=n, m=m, epsilon=eps, z1=z1, z2=z2),
        )
        <= delta
    )
    if beta > 1e-9:
        assert pubmix_delta(beta - 1e-9, n, m, eps, z1, z2) > delta


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3000),
    m=st.integers(1, 500),
    eps=st.floats(0.1, 8.0),
    log_delta=st.floats(-10.0, -1.0),
    z1=st.floats(0.0, 0.05),
    grow=st.floats(1.0, 5.0),
    extra=st.floats(0.0, 1e-3),
)
def test_beta_min_non_increasing_in_z2(
    n: int, m: int, eps: float, log_delta: float, z1: float, grow: float, extra: float
) -> None:
    # choose_floor relies on this: beta_min(N1, z2) <= beta_min(N1, N1) for z2 >= N1.
    delta = 10.0**log_delta
    z2 = z1 * grow + extra  # z1 + z2 <= 0.3: two smallest masses of d >= 3 bins
    base = beta_min(n=n, m=m, epsilon=eps, delta=delta, z1=z1)
    assert beta_min(n=n, m=m, epsilon=eps, delta=delta, z1=z1, z2=z2) <= base + 1e-11


def test_h2_swaps_bins() -> None:
    def f(fn: Callable[..., float], z1: float, z2: float) -> float:
        return float(fn(0.4, n=30, m=20, epsilon=1.0, z1=z1, z2=z2))

    assert f(h2, 0.01, 0.2) == f(h1, 0.2, 0.01)
    assert pubmix_delta(0.4, 30, 20, 1.0, 0.01, 0.2) == max(f(h1, 0.01, 0.2), f(h2, 0.01, 0.2))


def test_beta_min_cached() -> None:
    a = beta_min(n=N, m=777, epsilon=EPS, delta=DELTA, z1=3e-4)
    b = beta_min(N, 777, EPS, DELTA, 3e-4, 3e-4)
    assert a == b


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"epsilon": math.inf},
        {"delta": 0.0},
        {"delta": 1.0},
        {"n": 0},
        {"m": 0},
        {"m": 2.5},
        {"z1": -1e-3},
        {"z1": 0.6, "z2": 0.6},
    ],
)
def test_beta_min_rejects_bad_arguments(kwargs: dict[str, float]) -> None:
    args: dict[str, float | None] = {
        "n": 100,
        "m": 10,
        "epsilon": 1.0,
        "delta": 1e-3,
        "z1": 1e-3,
        "z2": None,
    }
    args.update(kwargs)
    with pytest.raises(InputError):
        beta_min(**args)  # type: ignore[arg-type]


def test_h1_rejects_bad_beta() -> None:
    with pytest.raises(InputError):
        h1(1.5, n=10, m=10, epsilon=1.0, z1=0.1, z2=0.1)
