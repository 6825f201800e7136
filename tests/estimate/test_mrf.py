"""The Markov random field: recovery of a tree-structured table from noiseless marginals,
totals, uniform unmeasured attributes, sampling against ``answer``, warm starts, input
checks."""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.errors import InputError
from dpevolve.estimate import MarkovRandomField
from dpevolve.measurements import Domain, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

TOTAL = 1000.0
EVENT = GaussianEvent(sensitivity=np.sqrt(2.0), sigma=1.0)
DOMAIN = Domain(("a", "b", "c", "d", "e"), (3, 4, 2, 5, 3))
CHAIN = [("a", "b"), ("b", "c"), ("c", "d")]


def _chain_joint(seed: int = 0) -> np.ndarray:
    """A distribution over (a, b, c, d) that factorises along the chain a - b - c - d."""
    rng = np.random.default_rng(seed)
    alpha = 2.0
    pa = rng.dirichlet(alpha * np.ones(3))
    pba = rng.dirichlet(alpha * np.ones(4), 3)
    pcb = rng.dirichlet(alpha * np.ones(2), 4)
    pdc = rng.dirichlet(alpha * np.ones(5), 2)
    return np.einsum("a,ab,bc,cd->abcd", pa, pba, pcb, pdc)


def _marginal(joint: np.ndarray, clique: tuple[str, ...]) -> np.ndarray:
    axes = tuple(i for i, n in enumerate("abcd") if n not in clique)
    return TOTAL * joint.sum(axis=axes)


def _measure(joint: np.ndarray, cliques, sigma: float = 1.0) -> list[Measurement]:
    return [Measurement(MarginalQuery(c), _marginal(joint, c), sigma, EVENT) for c in cliques]


@pytest.fixture(scope="module")
def fitted() -> tuple[MarkovRandomField, np.ndarray]:
    joint = _chain_joint()
    mrf = MarkovRandomField(DOMAIN, TOTAL, iterations=3000, tol=1e-12, patience=20)
    return mrf.fit(_measure(joint, CHAIN)), joint


def test_noiseless_tree_marginals_and_joint_are_recovered(fitted) -> None:
    mrf, joint = fitted
    for clique in CHAIN:
        np.testing.assert_allclose(mrf.answer(clique), _marginal(joint, clique), atol=1e-3 * TOTAL)
    # The maximum-entropy completion of a chain's edges is the chain itself.
    full = mrf.answer(("a", "b", "c", "d"))
    np.testing.assert_allclose(full, TOTAL * joint, atol=2e-3 * TOTAL)
    assert mrf.stats.losses[-1] < 1e-3 * mrf.stats.losses[0]


def test_answers_sum_to_total_and_unmeasured_attributes_are_uniform(fitted) -> None:
    mrf, _ = fitted
    for clique in [("a",), ("a", "d"), ("b", "d", "e"), ("a", "b", "c", "d", "e")]:
        counts = mrf.answer(clique)
        assert counts.shape == DOMAIN.shape(clique)
        assert np.isclose(counts.sum(), TOTAL)
        assert np.all(counts >= 0)
    np.testing.assert_allclose(mrf.answer(("e",)), np.full(3, TOTAL / 3))
    # e is independent of everything measured.
    ae = mrf.answer(("a", "e"))
    np.testing.assert_allclose(ae, np.outer(mrf.answer(("a",)), np.full(3, 1 / 3)), atol=1e-9)


def test_an_unfitted_model_is_uniform() -> None:
    mrf = MarkovRandomField(DOMAIN, TOTAL)
    np.testing.assert_allclose(mrf.answer(("b", "d")), np.full((4, 5), TOTAL / 20))


def test_sampled_rows_follow_the_model(fitted) -> None:
    mrf, _ = fitted
    rows = 40_000
    sample = mrf.sample(rows, np.random.default_rng(7))
    assert sample.shape == (rows, 5) and sample.dtype == np.int64
    assert np.all(sample >= 0) and np.all(sample < np.array(DOMAIN.sizes))
    for clique in [("a", "b"), ("a", "d"), ("b", "c", "d"), ("d", "e")]:
        idx = tuple(sample[:, DOMAIN.index(a)] for a in clique)
        counts = np.zeros(DOMAIN.shape(clique))
        np.add.at(counts, idx, 1)
        expected = mrf.answer(clique) / TOTAL
        # Five binomial standard deviations per cell.
        bound = 5 * np.sqrt(expected * (1 - expected) / rows) + 1e-12
        assert np.all(np.abs(counts / rows - expected) <= bound), clique


def test_sampling_is_reproducible_with_the_seed(fitted) -> None:
    mrf, _ = fitted
    a = mrf.sample(500, np.random.default_rng(3))
    b = mrf.sample(500, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert mrf.sample(0, np.random.default_rng(3)).shape == (0, 5)


def test_warm_start_reaches_the_same_optimum_faster() -> None:
    joint = _chain_joint(seed=1)
    rng = np.random.default_rng(5)
    noisy = [
        Measurement(
            MarginalQuery(c),
            _marginal(joint, c) + 5 * rng.standard_normal(DOMAIN.shape(c)),
            5.0,
            EVENT,
        )
        for c in [("a",), ("b",), ("c",), ("d",), *CHAIN]
    ]
    settings = {"iterations": 3000, "tol": 1e-7, "patience": 10}
    warm = MarkovRandomField(DOMAIN, TOTAL, **settings)
    warm.fit(noisy[:5])
    warm.fit(noisy)
    cold = MarkovRandomField(DOMAIN, TOTAL, **settings).fit(noisy)
    assert warm.stats.evaluations < cold.stats.evaluations
    assert warm.stats.losses[-1] == pytest.approx(cold.stats.losses[-1], rel=1e-3)
    for clique in CHAIN:
        np.testing.assert_allclose(warm.answer(clique), cold.answer(clique), atol=0.5)


def test_repeated_measurements_pool_by_precision() -> None:
    domain = Domain(("a",), (2,))
    low = Measurement(MarginalQuery(("a",)), np.array([20.0, 80.0]), 1.0, EVENT)
    high = Measurement(MarginalQuery(("a",)), np.array([60.0, 40.0]), 1.0, EVENT, weight=2.0)
    mrf = MarkovRandomField(domain, 100.0, iterations=500).fit([low, high])
    # Precisions 1 and 4: the fit sits at the weighted mean (20 + 4 * 60) / 5 = 52.
    np.testing.assert_allclose(mrf.answer(("a",)), [52.0, 48.0], atol=1e-3)


def test_bad_measurements_are_refused_with_the_clique_named() -> None:
    mrf = MarkovRandomField(DOMAIN, TOTAL)
    wrong_shape = Measurement(MarginalQuery(("a", "b")), np.zeros((3, 3)), 1.0, EVENT)
    with pytest.raises(InputError, match=r"\['a', 'b'\].*shape"):
        mrf.fit([wrong_shape])
    unordered = Measurement(MarginalQuery(("b", "a")), np.zeros((4, 3)), 1.0, EVENT)
    with pytest.raises(InputError, match="domain order"):
        mrf.fit([unordered])
    with pytest.raises(InputError, match="sigma"):
        mrf.fit([Measurement(MarginalQuery(("a",)), np.zeros(3), 0.0, EVENT)])
