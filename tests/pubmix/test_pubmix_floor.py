"""Floor raising (WF, MIFR) against spec §5."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.optimize import minimize

from dpevolve.errors import InputError
from dpevolve.pe.pubmix import (
    FEASIBILITY_RTOL,
    deficit,
    invariant_mass,
    max_invariance_donors,
    max_invariance_fill,
    water_fill,
)

# spec §5's greedy counterexamples (t = 0.01): smallest-first keeps 0.887 (optimum 0.95),
# largest-first keeps 0.12 (optimum 0.98).  The counts reproduce A exactly.
SMALLEST_FIRST_FAILS = (np.array([0, 100, 21, 21, 21, 21, 21, 21, 1774]), 0.95)
LARGEST_FIRST_FAILS = (np.array([0, 2, 88, 10]), 0.98)


def tv(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    return 0.5 * float(np.abs(a - b).sum())


def best_invariant_mass(A: NDArray[np.float64], t: float) -> float:
    """Exhaustive search over donor subsets."""
    need = deficit(A, t)
    cand = np.flatnonzero(A > t)
    best = np.inf
    for r in range(cand.size + 1):
        for subset in itertools.combinations(cand.tolist(), r):
            s = list(subset)
            if (A[s] - t).sum() >= need * (1.0 - FEASIBILITY_RTOL):
                best = min(best, float(A[s].sum()))
    return float(1.0 - A[A < t].sum() - best)


def check_floor_raising(A: NDArray[np.float64], B: NDArray[np.float64], t: float) -> None:
    assert B.min() >= t
    assert B.sum() == pytest.approx(1.0, abs=1e-12)
    assert tv(A, B) == pytest.approx(deficit(A, t), abs=1e-12)
    # Nothing below the floor is lowered, nothing above it is raised.
    assert np.all(B[A < t] == t)
    assert np.all(B[A >= t] <= A[A >= t])


@st.composite
def histogram_and_floor(draw: st.DrawFn, max_d: int = 10) -> tuple[NDArray[np.float64], float]:
    d = draw(st.integers(3, max_d))
    weights = draw(st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1.0)), min_size=d, max_size=d))
    w = np.asarray(weights)
    assume(w.sum() > 0)
    A = w / w.sum()
    # Floors far below float resolution of A would leave donors bit-for-bit unchanged.
    t = draw(st.one_of(st.just(0.0), st.just(1.0 / d), st.floats(1e-9, 1.0 / d)))
    return A, t


@st.composite
def counts_and_floor(draw: st.DrawFn, max_d: int = 10) -> tuple[NDArray[np.int64], float]:
    d = draw(st.integers(3, max_d))
    c = np.asarray(draw(st.lists(st.integers(0, 30), min_size=d, max_size=d)), dtype=np.int64)
    assume(c.sum() > 0)
    total = int(c.sum())
    # Floors on a count (c_i = N t) are the knife edges of the integer DP.
    on_count = st.integers(0, total // d).map(lambda k: k / total)
    t = draw(st.one_of(st.just(1.0 / d), on_count, st.floats(1e-9, 1.0 / d)))
    return c, min(t, 1.0 / d)


# --- water filling -------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(histogram_and_floor(max_d=30))
def test_water_fill_is_a_floor_raising(case: tuple[NDArray[np.float64], float]) -> None:
    A, t = case
    check_floor_raising(A, water_fill(A, t), t)


@settings(max_examples=300, deadline=None)
@given(histogram_and_floor(max_d=30))
def test_water_fill_satisfies_projection_kkt(case: tuple[NDArray[np.float64], float]) -> None:
    # Projection onto {B >= t, sum B = 1}: A - B = s - nu with nu >= 0, nu_i (B_i - t) = 0,
    # i.e. A_i - B_i = s wherever B_i > t and A_i - t <= s wherever B_i = t.
    A, t = case
    B = water_fill(A, t)
    free = B > t
    if free.any():
        s = float(np.mean(A[free] - B[free]))
        assert np.allclose(A[free] - B[free], s, atol=1e-12)
        assert np.all(A[~free] - t <= s + 1e-12)
    assert B.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_water_fill_matches_generic_qp(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 9))
    A = rng.dirichlet(np.full(d, 0.4))
    t = float(rng.uniform(0, 1 / d))
    res = minimize(
        lambda b: 0.5 * np.sum((b - A) ** 2),
        x0=np.full(d, 1 / d),
        jac=lambda b: b - A,
        bounds=[(t, None)] * d,
        constraints=[{"type": "eq", "fun": lambda b: b.sum() - 1.0}],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert res.success
    assert np.allclose(water_fill(A, t), res.x, atol=1e-7)


def test_water_fill_edge_floors() -> None:
    A = np.array([0.0, 0.1, 0.2, 0.7])
    assert np.array_equal(water_fill(A, 0.0), A)
    assert np.allclose(water_fill(A, 0.25), 0.25)
    B = water_fill(A, 0.05)
    assert B[0] == 0.05 and np.allclose(B[1:], A[1:] - 0.05 / 3)


# --- maximum invariance --------------------------------------------------------------


@pytest.mark.parametrize("solver", ["auto", "bnb", "milp"])
@pytest.mark.parametrize("case", [SMALLEST_FIRST_FAILS, LARGEST_FIRST_FAILS])
def test_greedy_counterexamples(solver: str, case: tuple[NDArray[np.int64], float]) -> None:
    counts, optimum = case
    A = counts / counts.sum()
    B = max_invariance_fill(A, 0.01, solver=solver)  # type: ignore[arg-type]
    assert invariant_mass(A, B) == pytest.approx(optimum, abs=1e-12)
    check_floor_raising(A, B, 0.01)


@pytest.mark.parametrize("case", [SMALLEST_FIRST_FAILS, LARGEST_FIRST_FAILS])
def test_greedy_counterexamples_integer_dp(case: tuple[NDArray[np.int64], float]) -> None:
    counts, optimum = case
    A = counts / counts.sum()
    choice = max_invariance_donors(A, 0.01, counts=counts, solver="dp")
    assert choice.solver == "dp"
    assert 1.0 - choice.donated_mass == pytest.approx(optimum, abs=1e-12)
    B = max_invariance_fill(A, 0.01, counts=counts)
    assert invariant_mass(A, B) == pytest.approx(optimum, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(histogram_and_floor())
def test_mifr_is_optimal_real_histograms(case: tuple[NDArray[np.float64], float]) -> None:
    A, t = case
    # A deficit below a float's resolution (hypothesis found 1e-18) leaves the donor's
    # mass unchanged in float64, so "invariant" (B_i == A_i) cannot see the donation.
    assume(deficit(A, t) == 0.0 or deficit(A, t) > 1e-12)
    B = max_invariance_fill(A, t, solver="bnb")
    check_floor_raising(A, B, t)
    assert invariant_mass(A, B) == pytest.approx(best_invariant_mass(A, t), abs=1e-12)
    assert invariant_mass(A, B) >= invariant_mass(A, water_fill(A, t)) - 1e-12


@settings(max_examples=300, deadline=None)
@given(counts_and_floor())
def test_mifr_is_optimal_integer_dp(case: tuple[NDArray[np.int64], float]) -> None:
    c, t = case
    A = c / c.sum()
    B = max_invariance_fill(A, t, counts=c, solver="dp")
    check_floor_raising(A, B, t)
    optimum = best_invariant_mass(A, t)
    assert invariant_mass(A, B) == pytest.approx(optimum, abs=1e-12)
    # The same histogram as floats: "auto" recognises c / N and agrees.
    auto = max_invariance_donors(A, t)
    assert 1.0 - A[A < t].sum() - auto.donated_mass == pytest.approx(optimum, abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_mifr_milp_matches_exhaustive(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 11))
    A = rng.dirichlet(np.full(d, 0.3))
    A[rng.random(d) < 0.3] = 0.0
    if A.sum() == 0:
        A[0] = 1.0
    A /= A.sum()
    t = float(rng.uniform(0, 1 / d))
    B = max_invariance_fill(A, t, solver="milp")
    check_floor_raising(A, B, t)
    assert invariant_mass(A, B) == pytest.approx(best_invariant_mass(A, t), abs=1e-9)


def test_mifr_splits_in_proportion_to_spare_capacity() -> None:
    A = np.array([0.0, 0.0, 0.3, 0.3, 0.4])
    t = 0.1
    choice = max_invariance_donors(A, t)
    B = max_invariance_fill(A, t)
    donors = list(choice.donors)
    assert choice.capacity >= deficit(A, t) * (1.0 - FEASIBILITY_RTOL)
    lost = A[donors] - B[donors]
    assert np.allclose(lost / (A[donors] - t), deficit(A, t) / choice.capacity)


def test_mifr_without_deficit_is_identity() -> None:
    A = np.array([0.2, 0.3, 0.5])
    assert np.array_equal(max_invariance_fill(A, 0.1), A)
    assert max_invariance_donors(A, 0.1).donors == ()


def test_mifr_dp_needs_counts() -> None:
    A = np.array([0.0, np.pi / 10, 1 - np.pi / 10])
    with pytest.raises(InputError):
        max_invariance_donors(A, 0.1, solver="dp")


@pytest.mark.parametrize(
    ("A", "t"),
    [
        (np.array([0.2, 0.2, 0.2]), 0.1),  # does not sum to 1
        (np.array([-0.1, 0.6, 0.5]), 0.1),
        (np.array([0.2, 0.3, 0.5]), 0.34),  # t > 1/d
        (np.array([0.2, 0.3, 0.5]), -0.01),
        (np.array([[0.5, 0.5]]), 0.1),
    ],
)
def test_floor_raising_rejects_bad_input(A: NDArray[np.float64], t: float) -> None:
    with pytest.raises(InputError):
        water_fill(A, t)
    with pytest.raises(InputError):
        max_invariance_fill(A, t)


def test_counts_must_match_histogram() -> None:
    with pytest.raises(InputError):
        max_invariance_fill(np.array([0.0, 0.5, 0.5]), 0.1, counts=np.array([0, 1, 2]))
