"""The Markov random field: recovery of a tree-structured table from noiseless marginals,
totals, uniform unmeasured attributes, sampling against ``answer``, warm starts, input
checks."""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.errors import InputError
from dpevolve.estimate import MarkovRandomField
from dpevolve.measurements import Domain, MarginalQuery, Measurement, even_grouping
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


def test_a_coarse_measurement_is_fitted_on_its_groups() -> None:
    """A parity of three 8-cell attributes (above cell 4) is in no marginal of fewer
    than four attributes; one noiseless coarse 4-way (two groups each) recovers it."""
    domain = Domain(("a", "b", "c", "y"), (8, 8, 8, 2))
    rng = np.random.default_rng(3)
    x = rng.integers(0, 8, size=(4000, 3))
    codes = np.column_stack([x, (x >= 4).sum(axis=1) % 2])

    def counts(clique):
        idx = [domain.index(a) for a in clique]
        flat = np.ravel_multi_index(tuple(codes[:, idx].T), domain.shape(clique))
        return np.bincount(flat, minlength=domain.cells(clique)).reshape(domain.shape(clique))

    event = GaussianEvent(np.sqrt(2.0), 1.0, discrete=True)
    two = even_grouping(8, 2)
    query = MarginalQuery(("a", "b", "c", "y"), (two, two, two, None))
    found = [Measurement(MarginalQuery((a,)), counts((a,)), 1.0, event) for a in domain.names]
    found.append(Measurement(query, query.project(counts(query.clique)), 1.0, event))
    model = MarkovRandomField(domain, 4000, iterations=400, tol=0.0).fit(found)
    fitted = query.project(model.answer(query.clique))
    assert fitted.shape == (2, 2, 2, 2)
    assert np.abs(fitted - query.project(counts(query.clique))).sum() / 4000 < 0.01
    rows = model.sample(2000, np.random.default_rng(4))
    assert np.mean((rows[:, :3] >= 4).sum(axis=1) % 2 == rows[:, 3]) > 0.97
    plain = MarkovRandomField(domain, 4000, iterations=400).fit(found[:-1])
    rows = plain.sample(2000, np.random.default_rng(4))
    assert np.mean((rows[:, :3] >= 4).sum(axis=1) % 2 == rows[:, 3]) < 0.6


def test_project_and_expand_are_adjoint() -> None:
    domain = Domain(("a", "b"), (5, 3))
    query = MarginalQuery(("a", "b"), (even_grouping(5, 2), None))
    rng = np.random.default_rng(0)
    fine, coarse = rng.normal(size=(5, 3)), rng.normal(size=(2, 3))
    assert query.shape(domain) == (2, 3)
    assert np.sum(query.project(fine) * coarse) == pytest.approx(
        np.sum(fine * query.expand(coarse))
    )
    shuffled = MarginalQuery(("a", "b"), ((1, 0, 1, 0, 1), None))
    assert np.allclose(shuffled.project(fine)[1], fine[[0, 2, 4]].sum(axis=0))
    with pytest.raises(InputError, match=r"groups must be 0\.\.k-1"):
        MarginalQuery(("a", "b"), ((0, 2, 2, 0, 0), None))


def _counts(sample: np.ndarray, clique: tuple[str, ...]) -> np.ndarray:
    counts = np.zeros(DOMAIN.shape(clique))
    np.add.at(counts, tuple(sample[:, DOMAIN.index(a)] for a in clique), 1)
    return counts


def test_stratified_rows_carry_less_sampling_noise_but_follow_the_model() -> None:
    from dpevolve.estimate import junction_tree
    from dpevolve.estimate.flat import FlatTree
    from dpevolve.estimate.inference import clique_marginal, conditionals
    from dpevolve.estimate.sampling import forward_sample

    tree = junction_tree(DOMAIN, [("a", "b"), ("b", "c", "d")])
    rng = np.random.default_rng(0)
    probs = FlatTree(DOMAIN, tree).beliefs([rng.normal(size=DOMAIN.shape(c)) for c in tree.cliques])
    conds = conditionals(tree, probs)
    rows = 3000
    root = tree.cliques[tree.order[0]]
    expected = clique_marginal(tree, probs, conds, root) * rows
    strat = forward_sample(DOMAIN, tree, probs, rows, np.random.default_rng(1))
    plain = forward_sample(DOMAIN, tree, probs, rows, np.random.default_rng(1), stratified=False)
    # systematic draws: the root clique's counts are its expected counts, rounded
    assert np.all(np.abs(_counts(strat, root) - expected) < 1.0 + 1e-9)
    assert np.abs(_counts(plain, root) - expected).max() > 2.0
    # every row is still a draw from the model: averaged over many small samples
    many = np.concatenate(
        [forward_sample(DOMAIN, tree, probs, 7, np.random.default_rng(s)) for s in range(3000)]
    )
    for clique in [("a", "b"), ("b", "c", "d"), ("a", "d")]:
        p = clique_marginal(tree, probs, conds, clique)
        bound = 5 * np.sqrt(p * (1 - p) / many.shape[0]) + 1e-12
        assert np.all(np.abs(_counts(many, clique) / many.shape[0] - p) <= bound), clique
