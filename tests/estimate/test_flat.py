"""The flat tree's layout and the incidence map against the per-clique array algebra."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.estimate import junction_tree
from dpevolve.estimate.factor import broadcast_shape, sum_to
from dpevolve.estimate.flat import FlatTree, Incidence, cell_index
from dpevolve.measurements import Domain, MarginalQuery


@st.composite
def trees_and_queries(draw: st.DrawFn):
    """A domain, its junction tree, and measured queries (some coarse) in tree cliques."""
    d = draw(st.integers(1, 6))
    names = tuple(string.ascii_lowercase[:d])
    domain = Domain(names, tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d))))
    subsets = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
    cliques = [domain.canonical(c) for c in draw(st.lists(subsets, min_size=1, max_size=6))]
    tree = junction_tree(domain, cliques)
    queries = []
    for clique in cliques:
        groups = tuple(
            draw(st.none() | st.lists(st.integers(0, 1), min_size=n, max_size=n).map(_renumber))
            for n in domain.shape(clique)
        )
        queries.append(MarginalQuery(clique, groups))
    # 0: every clique large (broadcasts and sums), 4: a mix, 512: every clique batched
    return domain, tree, queries, draw(st.integers(0, 2**31)), draw(st.sampled_from([0, 4, 512]))


def _renumber(groups: list[int]) -> tuple[int, ...]:
    seen = {g: k for k, g in enumerate(dict.fromkeys(groups))}
    return tuple(seen[g] for g in groups)


def _incidence(domain, tree, queries, batch):
    flat = FlatTree(domain, tree, batch)
    shapes = [q.shape(domain) for q in queries]
    starts = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
    homes = [tree.containing(q.clique) for q in queries]
    return flat, shapes, starts, Incidence(flat, queries, shapes, starts[:-1], homes, starts[-1])


@settings(max_examples=80, deadline=None)
@given(trees_and_queries())
def test_incidence_adds_expanded_potentials_and_its_adjoint_sums_marginals(case) -> None:
    domain, tree, queries, seed, batch = case
    flat, shapes, starts, incidence = _incidence(domain, tree, queries, batch)
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(int(starts[-1]))
    beliefs = rng.random(flat.size)
    expected = [np.zeros(s) for s in flat.shapes]
    want = np.zeros(int(starts[-1]))
    for q, shape, start in zip(queries, shapes, starts[:-1], strict=True):
        home = tree.containing(q.clique)
        part = theta[start : start + int(np.prod(shape))].reshape(shape)
        expected[home] = expected[home] + broadcast_shape(
            q.expand(part), q.clique, tree.cliques[home]
        )
        summed = sum_to(flat.views(beliefs)[home], tree.cliques[home], q.clique)
        want[start : start + part.size] = q.project(summed).ravel()
    np.testing.assert_allclose(incidence.potentials(theta), flat.flatten(expected), atol=1e-12)
    np.testing.assert_allclose(incidence.marginals(beliefs), want, atol=1e-12)
    # adjoint: <A theta, b> = <theta, A^T b>
    np.testing.assert_allclose(
        incidence.potentials(theta) @ beliefs, theta @ incidence.marginals(beliefs), rtol=1e-9
    )


@settings(max_examples=40, deadline=None)
@given(trees_and_queries())
def test_small_cliques_lie_by_level_before_the_large_and_views_round_trip(case) -> None:
    domain, tree, _, seed, batch = case
    flat = FlatTree(domain, tree, batch)
    arrays = [np.random.default_rng(seed).random(s) for s in flat.shapes]
    for got, want in zip(flat.views(flat.flatten(arrays)), arrays, strict=True):
        np.testing.assert_array_equal(got, want)
    depth = np.full(flat.size, -1)  # each small clique's cells: its depth
    for i, o in enumerate(flat.offset):
        size = int(np.prod(flat.shapes[i]))
        assert (o + size <= flat.small) != flat.large(i)
        if not flat.large(i):
            depth[o : o + size] = tree.depth[i]
    assert np.all(np.diff(depth[: flat.small]) >= 0) and np.all(depth[flat.small :] == -1)
    for k, level in enumerate(flat.levels):
        assert np.all(depth[level.start : level.stop] == k)
        assert all(tree.depth[i] == k and flat.large(i) for i in level.large)


def test_cell_index_is_the_projection_of_each_cell() -> None:
    shape, attrs = (2, 3, 4), ("a", "b", "c")
    index = cell_index(shape, attrs, ("c", "a"))  # a part given in any order: attrs' order
    cells = np.indices(shape).reshape(3, -1)
    np.testing.assert_array_equal(index, cells[0] * 4 + cells[2])
    np.testing.assert_array_equal(cell_index(shape, attrs, ()), np.zeros(24, dtype=int))


@pytest.mark.parametrize("batch", [0, 512])
def test_a_level_whose_separator_masses_underflow_is_redone_per_value(batch: int) -> None:
    # one separator value of b holds e^-3000 of the clique-wide mass: its conditional
    # survives only with its own shift
    domain = Domain(("a", "b", "c"), (2, 2, 2))
    tree = junction_tree(domain, [("a", "b"), ("b", "c")])
    pots = {("a", "b"): np.array([[0.0, -3000.0], [0.0, -3000.0]]),
            ("b", "c"): np.array([[0.0, 0.0], [0.0, 3000.0]])}  # fmt: skip
    probs = FlatTree(domain, tree, batch).beliefs([pots[c] for c in tree.cliques])
    by = dict(zip(tree.cliques, probs, strict=True))
    # b = 1 weighs e^-3000 (from ab) times about e^3000 (from bc): about half the mass
    b = by[("b", "c")].sum(axis=1)
    np.testing.assert_allclose(b, [2 / 3, 1 / 3], rtol=1e-9)
    np.testing.assert_allclose(by[("a", "b")].sum(axis=0), b, rtol=1e-9)
