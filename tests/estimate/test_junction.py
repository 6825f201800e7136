"""The junction tree: running intersection, coverage of every measured clique, and the
model size it reports."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.errors import InputError
from dpevolve.estimate import junction_tree, model_size_mb
from dpevolve.estimate.junction import tree_cells
from dpevolve.measurements import Domain


@st.composite
def domains_and_cliques(draw: st.DrawFn) -> tuple[Domain, list[tuple[str, ...]]]:
    d = draw(st.integers(1, 9))
    names = tuple(f"x{i}" for i in range(d))
    sizes = tuple(draw(st.lists(st.integers(1, 4), min_size=d, max_size=d)))
    domain = Domain(names, sizes)
    subsets = st.lists(st.sampled_from(names), min_size=1, max_size=min(3, d), unique=True)
    cliques = [domain.canonical(c) for c in draw(st.lists(subsets, max_size=10))]
    return domain, cliques


@settings(max_examples=150, deadline=None)
@given(domains_and_cliques())
def test_tree_covers_every_clique_and_has_running_intersection(case) -> None:
    domain, cliques = case
    tree = junction_tree(domain, cliques)
    sets = [set(c) for c in tree.cliques]
    # Every measured clique and every attribute lives inside one tree clique.
    for clique in cliques:
        assert any(set(clique) <= s for s in sets)
    assert set().union(*sets) == set(domain.names)
    # Maximal: no tree clique inside another.
    for i, a in enumerate(sets):
        assert not any(i != j and a <= b for j, b in enumerate(sets))
    # A tree: one root, parents listed before their children, separators are intersections.
    assert sorted(tree.order) == list(range(len(sets)))
    assert [tree.parent[i] for i in tree.order].count(-1) == 1
    seen: set[int] = set()
    for i in tree.order:
        assert tree.parent[i] == -1 or tree.parent[i] in seen
        seen.add(i)
        if tree.parent[i] >= 0:
            assert set(tree.separator[i]) == sets[i] & sets[tree.parent[i]]
    # Running intersection: the cliques holding an attribute form a connected subtree,
    # i.e. exactly one of them has its parent outside the set.
    for name in domain.names:
        holders = {i for i, s in enumerate(sets) if name in s}
        tops = [i for i in holders if tree.parent[i] not in holders]
        assert len(tops) == 1
    # The model size is the tree's cells, 8 bytes each.
    assert model_size_mb(domain, cliques) == tree_cells(domain, tree) * 8 / 2**20


@settings(max_examples=150, deadline=None)
@given(domains_and_cliques(), st.data())
def test_the_clique_containing_a_query_is_the_smallest_first_holder(case, data) -> None:
    """``containing`` looks only among the cliques holding one of the query's attributes
    and finds what a scan of every clique finds: the smallest holder, the first on ties."""
    domain, cliques = case
    tree = junction_tree(domain, cliques)
    query = data.draw(st.lists(st.sampled_from(domain.names), max_size=4, unique=True))
    holders = [i for i, c in enumerate(tree.cliques) if set(query) <= set(c)]
    scan = min(holders, key=lambda i: len(tree.cliques[i]), default=None)
    assert tree.containing(query) == scan


def test_chain_gives_its_edges_and_the_model_size_counts_their_cells() -> None:
    domain = Domain(("a", "b", "c", "d"), (3, 4, 5, 6))
    cliques = [("a", "b"), ("b", "c"), ("c", "d")]
    tree = junction_tree(domain, cliques)
    assert sorted(tree.cliques) == sorted(cliques)
    assert model_size_mb(domain, cliques) == (12 + 20 + 30) * 8 / 2**20


def test_a_cycle_is_triangulated() -> None:
    domain = Domain(("a", "b", "c", "d"), (2, 2, 2, 2))
    cycle = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d")]
    tree = junction_tree(domain, cycle)
    # A 4-cycle needs one chord: two triangles.
    assert sorted(len(c) for c in tree.cliques) == [3, 3]
    assert model_size_mb(domain, cycle) == 16 * 8 / 2**20


def test_unmeasured_attributes_are_singletons() -> None:
    domain = Domain(("a", "b", "c"), (2, 3, 4))
    tree = junction_tree(domain, [("a", "c")])
    assert sorted(tree.cliques) == [("a", "c"), ("b",)]


def test_unknown_attributes_are_refused() -> None:
    domain = Domain(("a", "b"), (2, 2))
    with pytest.raises(InputError, match="unknown attributes"):
        model_size_mb(domain, [("a", "z")])
