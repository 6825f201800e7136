"""The relations phase (:mod:`dpevolve.engine.relations`): quantile groups of the
released 1-ways, the plan's share, and a run that joins the numeric columns."""

from __future__ import annotations

from itertools import combinations, permutations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.plan import Plan
from dpevolve.engine.relations import (
    closing_pairs,
    quantile_grouping,
    relation_queries,
    width_two,
)
from dpevolve.engine.tree import Forest
from dpevolve.errors import InputError
from dpevolve.measurements import Domain
from dpevolve.privacy import Budget, zcdp_budget
from dpevolve.privacy.noise import SeededNoise


def test_quantile_groups_cut_the_cumulative_mass() -> None:
    # equal mass: 8 bins in 4 groups of 2
    assert quantile_grouping(np.ones(8), 8, 4) == (0, 0, 1, 1, 2, 2, 3, 3)
    # an atom holding 60% takes the first group; the next starts past 1/3, the last past 2/3
    mass = np.array([60.0, 10, 10, 10, 10])
    assert quantile_grouping(mass, 5, 3) == (0, 1, 2, 2, 2)
    # a nullable column's missing cell is a group of its own
    assert quantile_grouping(np.array([1.0, 1, 1, 1, 5]), 4, 2) == (0, 0, 1, 1, 2)
    # negative (noisy) mass counts as none; nothing at all: equal-width
    assert quantile_grouping(np.array([-3.0, 1, 1, -2]), 4, 2) == (0, 0, 1, 1)
    assert quantile_grouping(np.zeros(6), 6, 3) == (0, 0, 1, 1, 2, 2)


@settings(max_examples=60, deadline=None)
@given(
    mass=st.lists(st.floats(-5, 100, allow_nan=False), min_size=2, max_size=30),
    groups=st.integers(2, 8),
    nullable=st.booleans(),
)
def test_quantile_groups_are_contiguous_and_numbered(mass, groups, nullable) -> None:
    bins = len(mass) - int(nullable)
    if bins < 1:
        return
    grouping = quantile_grouping(np.array(mass), bins, groups)
    values = np.array(grouping[:bins])
    assert len(grouping) == len(mass)
    assert values[0] == 0 and np.all(np.diff(values) >= 0) and np.all(np.diff(values) <= 1)
    assert values.max() < groups
    if nullable:
        assert grouping[-1] == values.max() + 1
    # no group but the first starts before its share of the mass has passed
    share = np.cumsum(np.clip(mass[:bins], 0, None))
    if share[-1] > 0:
        starts = np.flatnonzero(np.diff(values)) + 1
        before = share[starts - 1] / share[-1]
        assert np.all(before >= np.arange(1, starts.size + 1) / groups - 1e-6)


def test_relation_queries_pair_the_numbers_coarse() -> None:
    domain = Domain(("a", "y", "b", "c"), (8, 2, 8, 2))
    masses = {"a": np.ones(8), "b": np.ones(8), "c": np.ones(2)}
    queries = relation_queries(domain, ["c", "a", "b"], masses, 8, 4)
    assert [q.clique for q in queries] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert queries[0].groups == ((0, 0, 1, 1, 2, 2, 3, 3),) * 2
    # a pair no coarser than its fine cells is the fine pair's business
    two = {"a": np.ones(2), "c": np.ones(2)}
    assert relation_queries(Domain(("a", "c"), (2, 2)), ["a", "c"], two, 2, 4) == []


@settings(max_examples=30, deadline=None)
@given(
    columns=st.integers(1, 200),
    numeric=st.integers(0, 200),
    share=st.sampled_from([0.0, 0.15, 0.5]),
    widest=st.sampled_from([2, 16, 200]),
    width=st.sampled_from([1, 2]),
)
def test_the_plan_states_the_relations_share(
    columns: int, numeric: int, share: float, widest: int, width: int
) -> None:
    numeric = min(numeric, columns)
    spec = EngineSpec(relation_share=share, relation_max_numeric=widest, relation_width=width)
    plan = Plan.of(Budget(epsilon=1.0, delta=1e-5), spec, columns, numeric)
    parts = plan.fine + plan.oneway + plan.relations + plan.tree + plan.rounds + plan.pe
    assert parts == pytest.approx(plan.total, rel=1e-12)
    before = Plan.of(
        Budget(epsilon=1.0, delta=1e-5), EngineSpec(relation_share=0.0), columns, numeric
    )
    runs = share > 0 and 2 <= numeric <= widest
    # a spanning tree's k - 1 edges, or a 2-tree's 2k - 3 (k - 2 triangles closed) on
    # tables of at most relation_close_max_numeric numbers
    closes = width == 2 and numeric <= spec.relation_close_max_numeric
    edges = 2 * numeric - 3 if closes else numeric - 1
    assert plan.relation_edges == (edges if runs else 0)
    whole = plan.total - plan.fine - plan.oneway - plan.pe  # what the rounds had
    assert plan.relations == pytest.approx(share * whole if runs else 0.0, rel=1e-12)
    if runs:
        sigma, epsilon = plan.relation_round()
        rho = plan.relations / plan.relation_edges
        assert 1.0 / sigma**2 + epsilon**2 / 8 == pytest.approx(rho, rel=1e-9)
    assert (
        plan.rounds / plan.planned_rounds >= (before.rounds / before.planned_rounds * (1 - 1e-9))
        or plan.planned_rounds == 1
    )


def _numbers(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "u": np.clip(50 + 10 * base + rng.normal(size=n), 0, 100),
            "v": np.clip(50 + 10 * base + rng.normal(size=n), 0, 100),
            "w": np.clip(50 + 10 * rng.normal(size=n), 0, 100),
            "y": (rng.random(n) < 0.5).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            NumericColumn("u", 0, 100),
            NumericColumn("v", 0, 100),
            NumericColumn("w", 0, 100),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    return frame, schema


def _fit(spec: EngineSpec, seed: int = 0):
    frame, schema = _numbers(3000, seed)
    return fit_engine(
        FrameSource(frame, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        spec,
        noise=SeededNoise(seed),
        rng=np.random.default_rng(seed),
    ), frame


def test_a_run_joins_the_numbers_on_recorded_coarse_pairs() -> None:
    spec = EngineSpec(rounds=6, pe_share=0.0, final_iters=100, relation_width=1)
    result, _ = _fit(spec)
    picked = [h for h in result.history if h.get("stage") == "relations"]
    assert len(picked) == 2  # k - 1 for the 3 numeric columns
    forest = Forest(["u", "v", "w"])
    for h in picked:
        assert forest.open_mask([h["clique"]])[0]
        forest.join(h["clique"])
        assert h["groups"] == [spec.relation_groups] * 2
    assert forest.joined()
    events = result.ledger.to_dict()["events"]
    chosen = [e for e in events if e.get("stage") == "relations"]
    assert len(chosen) == 2 and all(e["grouping"] for e in chosen)
    measured = [
        m
        for m in result.measurements.marginals()
        if m.query.coarse and set(m.clique) <= {"u", "v", "w"}
    ]
    assert len(measured) >= 2
    total = sum(e.rho for e in result.events)
    assert total == pytest.approx(zcdp_budget(Budget(epsilon=1.0, delta=1e-5)), rel=1e-8)
    # the strong pair is kept: its rank correlation survives
    rows = result.sample(3000, np.random.default_rng(1))
    assert rows["u"].corr(rows["v"], method="spearman") > 0.6


@pytest.mark.parametrize(
    "off", [{"relation_share": 0.0}, {"relation_max_numeric": 2}], ids=["share", "width"]
)
def test_without_the_phase_nothing_is_recorded_for_it(off: dict[str, float]) -> None:
    """``relation_share = 0``, or more numeric columns (3) than ``relation_max_numeric``:
    no relations stage (the check that the test above can fail)."""
    result, _ = _fit(EngineSpec(rounds=6, pe_share=0.0, final_iters=100, **off))
    assert not any(h.get("stage") == "relations" for h in result.history)
    events = result.ledger.to_dict()["events"]
    assert not any(e.get("stage") == "relations" for e in events)
    total = sum(e.rho for e in result.events)  # the share went to the other stages
    assert total == pytest.approx(zcdp_budget(Budget(epsilon=1.0, delta=1e-5)), rel=1e-8)


def test_the_default_gates_the_phase_on_the_numeric_columns() -> None:
    spec = EngineSpec()
    assert spec.runs_relations(9)  # cps91, the suite's most numeric table
    assert spec.runs_relations(23)  # the d = 40 wide table
    assert not spec.runs_relations(57)  # the d = 100 wide table
    assert not spec.runs_relations(1)  # no pair
    assert not EngineSpec(relation_share=0.0).runs_relations(9)
    with pytest.raises(InputError, match="relation_max_numeric"):
        EngineSpec(relation_max_numeric=1)


def test_the_closing_picks_make_a_triangle_and_the_tree_does_not_pair_them_again() -> None:
    """``relation_width`` 2 on three numbers: the two joining picks, then the third pair
    closing the triangle, each drawn, recorded and released coarse; the tree phase
    starts from their component, so none of its picks pairs two of them."""
    spec = EngineSpec(rounds=6, pe_share=0.0, final_iters=100)
    result, _ = _fit(spec)
    picked = [frozenset(h["clique"]) for h in result.history if h.get("stage") == "relations"]
    assert len(picked) == 3 and set(picked) == {frozenset(p) for p in combinations("uvw", 2)}
    events = result.ledger.to_dict()["events"]
    draws = [e for e in events if e.get("stage") == "relations"]
    assert [e["kind"] for e in draws] == ["exponential"] * 3
    rounds = {e["round"] for e in draws}
    released = [e for e in events if e["round"] in rounds and e["kind"] == "gaussian"]
    assert len(released) == 3
    tree = [h["clique"] for h in result.history if h.get("stage") == "tree"]
    assert tree and not any(set(c) <= {"u", "v", "w"} for c in tree)
    total = sum(e.rho for e in result.events)  # the tree's unused picks: the rounds'
    assert total == pytest.approx(zcdp_budget(Budget(epsilon=1.0, delta=1e-5)), rel=1e-8)


def test_beyond_the_close_gate_the_phase_builds_a_tree_and_the_tree_starts_afresh() -> None:
    """Three numbers, triangles closed up to two (``relation_close_max_numeric``): the
    phase picks the ``k - 1`` joining pairs only, and the spanning tree starts from
    every column apart, as before closing existed (so it may pair two numbers)."""
    spec = EngineSpec(rounds=6, pe_share=0.0, final_iters=100, relation_close_max_numeric=2)
    assert spec.relation_width_for(2) == 2 and spec.relation_width_for(3) == 1
    result, _ = _fit(spec)
    picked = [h for h in result.history if h.get("stage") == "relations"]
    assert len(picked) == 2
    tree = [h["clique"] for h in result.history if h.get("stage") == "tree"]
    assert len(tree) == 3  # d - 1 for the four columns: the relations joined none of them


def test_the_phases_run_together_with_the_label_tree() -> None:
    """The relations phase then the label tree (``tree_label_columns`` 3): the tree
    joins the columns the relations did not (here a category ``c``) and releases each
    pick with the label, after its draws."""
    spec = EngineSpec(rounds=6, pe_share=0.0, final_iters=100, tree_label_columns=3)
    frame, schema = _numbers(3000, 0)
    frame["c"] = np.random.default_rng(2).choice(["a", "b", "c"], size=len(frame))
    schema = Schema((*schema.columns, CategoricalColumn("c", ("a", "b", "c"))), label="y")
    result = fit_engine(
        FrameSource(frame, schema), schema, Budget(epsilon=1.0, delta=1e-5), spec,
        noise=SeededNoise(0), rng=np.random.default_rng(0),
    )  # fmt: skip
    stages = [h.get("stage") for h in result.history]
    assert stages[:4] == ["relations", "relations", "relations", "tree"]
    tree = [h for h in result.history if h.get("stage") == "tree"]
    assert len(tree) == 1 and {"c", "y"} < set(tree[0]["clique"])
    assert len(tree[0]["clique"]) == 3  # the pair joining c, with the label
    groups = spec.tree_label_groups  # its number in the label tree's groups
    assert sorted(tree[0]["groups"], key=str) == [groups, None, None]
    events = result.ledger.to_dict()["events"]
    draws = [e for e in events if e.get("stage") == "tree"]
    assert [len(e["clique"]) for e in draws] == [2]  # the pair scored and drawn
    # the draw comes before the tree's release (one counting pass after the picks)
    last_draw = max(i for i, e in enumerate(events) if e.get("stage") == "tree")
    released = [
        i for i, e in enumerate(events) if e["round"] == draws[0]["round"] and "stage" not in e
    ]
    assert len(released) == 1 and min(released) > last_draw


def _treewidth(vertices: list[int], edges: set[frozenset[int]]) -> int:
    """The treewidth by brute force: the best elimination order's widest neighbourhood."""
    best = len(vertices)
    for order in permutations(vertices):
        graph = {v: {u for e in edges if v in e for u in e if u != v} for v in vertices}
        width = 0
        for v in order:
            near = graph.pop(v)
            width = max(width, len(near))
            for u in near:
                graph[u] |= near - {u}
                graph[u].discard(v)
        best = min(best, width)
    return best


@settings(max_examples=60, deadline=None)
@given(
    vertices=st.integers(1, 6),
    edges=st.sets(st.tuples(st.integers(0, 5), st.integers(0, 5)), max_size=15),
)
def test_width_two_is_treewidth_at_most_two(vertices: int, edges: set) -> None:
    kept = {frozenset(e) for e in edges if e[0] != e[1] and max(e) < vertices}
    assert width_two([tuple(e) for e in kept]) == (_treewidth(list(range(vertices)), kept) <= 2)


def test_closing_pairs_close_triangles_and_never_make_four_a_clique() -> None:
    path = [("a", "b"), ("b", "c"), ("c", "d")]
    every = list(combinations("abcd", 2))
    # a-c and b-d close a triangle; a-d is three steps off; picked pairs are out
    assert [every[i] for i in closing_pairs(path, every)] == [("a", "c"), ("b", "d")]
    # a-b-c and b-c-d closed: a-d would make the four one clique of treewidth three
    closed = [*path, ("a", "c"), ("b", "d")]
    assert closing_pairs(closed, every) == []
    assert width_two(closed) and not width_two([*closed, ("a", "d")])


def test_the_spec_takes_a_relation_width_of_one_or_two() -> None:
    for bad in (0, 3, True, 2.0):
        with pytest.raises(InputError, match="relation_width"):
            EngineSpec(relation_width=bad)
