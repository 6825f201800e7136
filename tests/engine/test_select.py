"""Selection: the candidate set, the weights, the score and the draw.

Its privacy (the exact loss over every neighbour of a tiny domain, the coarse counts'
sensitivity) is checked in ``tests/privacy/test_selection_exact.py``.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special
from tests.privacy.exact import TINY as SCHEMA

from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.select import (
    ABS_NOISE,
    L1_SENSITIVITY,
    candidates,
    coarse_candidates,
    coarse_pairs,
    draw,
    is_parity,
    parity_candidates,
    parity_neighbours,
    quantile_split,
    query_weight,
    selection_event,
    split_grouping,
    weight,
)
from dpevolve.measurements import Domain, MarginalQuery, even_grouping
from dpevolve.privacy.noise import SeededNoise


def test_candidates_are_pairs_and_triples_grown_from_selected_pairs() -> None:
    domain = Domain(tuple(f"a{i}" for i in range(30)), (2,) * 30)
    base = candidates(domain, (), 3)
    assert len(base) == 30 + math.comb(30, 2)
    grown = candidates(domain, [("a1", "a5"), ("a0", "a1", "a2"), ("a3",)], 3)
    triples = [c for c in grown if len(c) == 3]
    assert len(triples) == 28 and all({"a1", "a5"} <= set(c) for c in triples)
    assert candidates(domain, [("a1", "a5")], 2) == base
    assert candidates(domain, [("a0", "a1", "a2")], 3) == base  # no 4-ways at order 3
    fours = [c for c in candidates(domain, [("a0", "a1", "a2")], 4) if len(c) == 4]
    assert len(fours) == 27 and all({"a0", "a1", "a2"} <= set(c) for c in fours)


def test_weights_favour_the_label() -> None:
    assert weight(("a", "b"), "y", 2.0) == 1.0
    assert weight(("a", "y"), "y", 2.0) == 2.0
    assert weight(("a", "b", "y"), "y", 2.0) == 3.0
    assert weight(("a",), None, 2.0) == 0.5
    event = selection_event(0.4, [0.5, 1.0, 3.0])
    assert event.sensitivity == L1_SENSITIVITY * 3.0 and event.scale == pytest.approx(30.0)
    assert event.rho == pytest.approx(0.02)


def test_the_draw_follows_the_exponential_mechanism() -> None:
    values = np.array([0.0, 3.0, 3.5, -10.0])
    event = selection_event(1.0, [1.0])  # scale 4
    noise = SeededNoise(7)
    counts = Counter(draw(values, event, noise) for _ in range(20_000))
    expected = special.softmax(values / event.scale)
    observed = np.array([counts[i] for i in range(4)]) / 20_000
    assert np.allclose(observed, expected, atol=0.012)


def test_quality_subtracts_the_expected_noise() -> None:
    from dpevolve.engine.select import quality

    exact = np.array([[3.0, 1.0], [0.0, 0.0]])
    model = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert quality(exact, model, 2.0, 1.5) == pytest.approx(1.5 * (4.0 - ABS_NOISE * 2.0 * 4))


def test_split_grouping_cuts_the_range_in_two_at_a_bin_edge() -> None:
    assert split_grouping(8, 8, 0.625) == (0, 0, 0, 0, 0, 1, 1, 1)
    assert split_grouping(9, 8, 0.25) == (0, 0, 1, 1, 1, 1, 1, 1, 2)  # missing cell apart
    assert split_grouping(8, 8, 0.01) is None and split_grouping(8, 8, 0.99) is None
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    splits = coarse_candidates(disc.domain, [], "y", {"x": 4}, (), 4, 0, (0.25, 0.5, 0.75))
    assert [q.groups[0] for q in splits] == [(0, 1, 1, 1), (0, 0, 1, 1), (0, 0, 0, 1)]
    same = coarse_candidates(disc.domain, [], "y", {"x": 4}, (2,), 4, 0, (0.5,))
    assert len(same) == 1  # the midpoint split is the 2-group query: proposed once


@given(
    st.lists(st.floats(0.0, 100.0), min_size=2, max_size=12),
    st.floats(0.01, 0.99),
    st.booleans(),
)
def test_quantile_split_cuts_at_the_edge_nearest_the_released_quantile(
    mass: list[float], at: float, missing: bool
) -> None:
    bins = len(mass)
    cells = np.array([*mass, 7.0] if missing else mass)  # a missing cell's mass apart
    grouping = quantile_split(cells, bins, at)
    total = sum(mass)
    if total <= 0.0:
        assert grouping is None  # nothing released: no cut
        return
    assert grouping is not None and len(grouping) == cells.size
    cut = grouping.index(1)
    assert grouping[:bins] == (0,) * cut + (1,) * (bins - cut)  # contiguous, two groups
    assert grouping[bins:] == ((2,) if missing else ())
    below = np.cumsum(mass)[:-1] / total  # the share below each inner edge
    assert abs(below[cut - 1] - at) <= np.abs(below - at).min() + 1e-12  # the nearest


def test_quantile_split_follows_skewed_mass_not_the_range() -> None:
    assert quantile_split(np.array([8.0, 1.0, 1.0, 0.0]), 4, 0.5) == (0, 1, 1, 1)
    assert quantile_split(np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0]), 6, 0.5) == (0, 0, 0, 0, 1, 1)
    assert split_grouping(6, 6, 0.5) == (0, 0, 0, 1, 1, 1)  # the middle of the range


def test_parity_candidates_cut_each_column_at_its_own_quantiles() -> None:
    names = ("a", "b", "c", "y")
    domain = Domain(names, (6, 6, 7, 2))  # c nullable: a missing cell
    numeric = {"a": 6, "b": 6, "c": 6}
    masses = {
        "a": np.ones(6),  # uniform: thirds at edges 2 and 4
        "b": np.array([0.0, 0.0, 1.0, 1.0, 1.0, 1.0]),  # data in the upper two thirds
        "c": np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0]),
    }
    found = parity_candidates(domain, "y", numeric, masses, (1 / 3, 0.5, 2 / 3), 4, 1)
    assert {q.clique for q in found} == {("a", "b", "c", "y")}
    cuts = {a: {q.groups[i] for q in found} for i, a in enumerate("abc")}
    assert cuts["a"] == {(0, 0, 1, 1, 1, 1), (0, 0, 0, 1, 1, 1), (0, 0, 0, 0, 1, 1)}
    assert (0, 0, 0, 1, 1, 1) in cuts["b"] and (0, 0, 0, 0, 1, 1) in cuts["b"]
    assert all(g[-1] == 2 for g in cuts["c"])  # the missing cell a group of its own
    sizes = [len(cuts[a]) for a in "abc"]
    assert len(found) == math.prod(sizes)  # every combination of one cut per column
    assert all(q.groups[3] is None for q in found)  # the label kept cell by cell
    # the rule of coarse_candidates: only when the all-numeric cliques are few
    assert parity_candidates(domain, "y", numeric, masses, (0.5,), 4, 0) == []
    assert parity_candidates(domain, "y", numeric, masses, (0.5,), 3, 1) == []
    assert parity_candidates(domain, None, numeric, masses, (0.5,), 4, 1) == []
    assert parity_candidates(domain, "y", numeric, masses, (), 4, 1) == []


@given(cuts=st.tuples(*(st.integers(1, 5) for _ in range(3))), groups=st.integers(2, 5))
def test_a_parity_query_cuts_every_other_column_in_two(
    cuts: tuple[int, int, int], groups: int
) -> None:
    """A parity query (weighed apart from the other coarse ones): the label with three
    numerics, each cut in two; not with a column in more groups or cell by cell, nor
    without the label, nor with two numerics only."""
    numeric = {"a": 6, "b": 6, "c": 6}
    grouping = [tuple(int(i >= k) for i in range(6)) for k in cuts]
    query = MarginalQuery(("a", "b", "c", "y"), (*grouping, None))
    assert is_parity(query, numeric, "y")
    assert not is_parity(query, numeric, None)
    assert not is_parity(MarginalQuery(("a", "b", "c", "y")), numeric, "y")
    finer = MarginalQuery(("a", "b", "c", "y"), (*grouping[:2], even_grouping(6, groups), None))
    assert is_parity(finer, numeric, "y") == (groups == 2)
    assert not is_parity(MarginalQuery(("a", "b", "y"), (*grouping[:2], None)), numeric, "y")


def test_a_parity_query_takes_the_parity_weight() -> None:
    numeric = {"a": 6, "b": 6, "c": 6}
    half = (0, 0, 0, 1, 1, 1)
    parity = MarginalQuery(("a", "b", "c", "y"), (half, half, half, None))
    coarse = MarginalQuery(("a", "b", "y"), (half, (0, 0, 1, 1, 2, 2), None))
    fine = MarginalQuery(("a", "b", "c", "y"))
    ways = {"label_weight": 2.0, "coarse_weight": 0.25, "parity_weight": 0.75}
    assert query_weight(parity, "y", numeric, **ways) == weight(parity.clique, "y", 2.0) * 0.75
    assert query_weight(coarse, "y", numeric, **ways) == weight(coarse.clique, "y", 2.0) * 0.25
    assert query_weight(fine, "y", numeric, **ways) == weight(fine.clique, "y", 2.0)


@given(cuts=st.tuples(st.integers(1, 5), st.integers(1, 5)), reach=st.integers(1, 3))
def test_parity_neighbours_move_one_cut_at_a_time(cuts: tuple[int, int], reach: int) -> None:
    """A measured parity query's neighbours: one column's cut moved by 1 to ``reach``
    bin edges (never onto an end of the range), the other cuts, the clique and a
    nullable column's missing group kept; fine or coarser queries have none."""
    bins = 6

    def cut(at: int, cells: int) -> tuple[int, ...]:
        return tuple(int(i >= at) for i in range(bins)) + (2,) * (cells - bins)

    measured = MarginalQuery(("a", "c", "y"), (cut(cuts[0], 6), cut(cuts[1], 7), None))
    numeric = {"a": bins, "c": bins}
    found = parity_neighbours([measured], numeric, reach)
    assert measured not in found
    expected = set()
    for k in range(2):
        for step in range(-reach, reach + 1):
            at = cuts[k] + step
            if step and 0 < at < bins:
                moved = list(cuts)
                moved[k] = at
                expected.add((cut(moved[0], 6), cut(moved[1], 7), None))
    assert {q.groups for q in found} == expected
    assert all(q.clique == measured.clique for q in found)
    assert len(found) == len(set(found))
    even = MarginalQuery(("a", "c", "y"), ((0, 0, 1, 1, 2, 2), cut(3, 7), None))
    assert parity_neighbours([even, MarginalQuery(("a", "c", "y"))], numeric, reach) == []


def test_all_label_cliques_of_the_top_order_when_few() -> None:
    names = ("a", "b", "c", "y")
    domain = Domain(names, (20, 20, 20, 2))
    numeric = {a: 20 for a in "abc"}
    grown = coarse_candidates(domain, [], "y", numeric, (2,), 4, 0)
    assert {len(q.clique) for q in grown} == {3}  # a parity of a, b, c is never reached
    every = coarse_candidates(domain, [], "y", numeric, (2,), 4, 1)
    assert {q.clique for q in every if len(q.clique) == 4} == {("a", "b", "c", "y")}
    assert coarse_candidates(domain, [], "y", numeric, (2,), 3, 1) == grown  # order 3
    mixed = coarse_candidates(domain, [], "y", {"a": 20, "b": 20}, (2,), 4, 1)
    assert {len(q.clique) for q in mixed} == {3}  # only cliques of numerics: no c
    wide = Domain((*(f"a{i}" for i in range(40)), "y"), (20,) * 40 + (2,))
    many = coarse_candidates(wide, [], "y", {f"a{i}": 20 for i in range(12)}, (2,), 4, 120)
    assert {len(q.clique) for q in many} == {3}  # C(12, 3) > 120: grown only


def test_coarse_candidates_group_numerics_and_grow_linearly() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    coarse = coarse_candidates(disc.domain, [("x", "c")], "y", {"x": 4}, (2, 3), 4)
    assert {q.clique for q in coarse} == {("x", "c", "y")}
    assert sorted(q.shape(disc.domain) for q in coarse) == [(2, 4, 2), (3, 4, 2)]
    names = (*(f"a{i}" for i in range(40)), "y")
    domain = Domain(names, (20,) * 40 + (2,))
    numeric = {a: 20 for a in names[::3]}
    wide = coarse_candidates(domain, [("a0", "a1"), ("a2", "a3", "y")], "y", numeric, (2, 4), 4)
    pairs_with_numeric = sum(
        any(a in numeric for a in p) for p in itertools.combinations(names[:-1], 2)
    )
    fours = {q.clique for q in wide if len(q.clique) == 4}
    assert len(fours) == 38 + 38  # two selected cliques, each grown by every other column
    assert len(wide) <= 2 * (pairs_with_numeric + len(fours))
    assert all(len(q.clique) <= 4 and "y" in q.clique and q.coarse for q in wide)


def test_coarse_pairs_are_the_pairs_holding_a_numeric() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    pairs = coarse_pairs(disc.domain, {"x": 4}, (2, 4))
    assert [(q.clique, q.shape(disc.domain)) for q in pairs] == [
        (("x", "c"), (2, 4)),
        (("x", "y"), (2, 2)),
    ]  # 4 groups of 4 bins is the fine pair itself


@given(
    st.lists(st.tuples(*(st.integers(0, k - 1) for k in (6, 6, 7, 2))), min_size=1, max_size=30),
    st.tuples(*(st.integers(0, k - 1) for k in (6, 6, 7, 2))),
    st.integers(0, 29),
)
def test_a_parity_candidate_moves_by_at_most_two_under_a_replacement(
    rows: list[tuple[int, ...]], other: tuple[int, ...], which: int
) -> None:
    """The score's sensitivity (module docstring of select): the cuts are fixed by the
    released masses, so replacing one record moves a candidate's counts by at most 2."""
    domain = Domain(("a", "b", "c", "y"), (6, 6, 7, 2))
    masses = {"a": np.ones(6), "b": np.arange(6.0), "c": np.arange(7.0)[::-1]}
    found = parity_candidates(
        domain, "y", {"a": 6, "b": 6, "c": 6}, masses, (0.25, 0.5, 0.75), 4, 1
    )
    there = list(rows)
    there[which % len(rows)] = other

    def counts(records: list[tuple[int, ...]]) -> np.ndarray:
        table = np.zeros((6, 6, 7, 2))
        for r in records:
            table[r] += 1
        return table

    for q in found:
        moved = np.abs(q.project(counts(rows)) - q.project(counts(there))).sum()
        assert moved <= L1_SENSITIVITY
