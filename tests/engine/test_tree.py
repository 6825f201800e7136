"""The spanning-tree phase (docs/engine.md, "Selection: a spanning tree first")."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.plan import Plan
from dpevolve.engine.relations import quantile_grouping
from dpevolve.engine.tree import Forest, coarse_pairs, independent, joined, tree_picks
from dpevolve.measurements import Clique, Domain, MarginalQuery, Measurement, even_grouping
from dpevolve.privacy import Budget, zcdp_budget
from dpevolve.privacy.noise import SeededNoise


class OneWays:
    """A stand-in estimator for wide tests: the product of the released 1-ways."""

    def __init__(self, domain: Domain, total: int) -> None:
        self.domain = domain
        self.total = float(total)
        self.p = {
            a: np.full(domain.shape((a,))[0], 1.0 / domain.shape((a,))[0]) for a in domain.names
        }
        self.iterations = 1

    def fit(self, measurements: Sequence[Measurement]) -> OneWays:
        for m in measurements:
            if len(m.clique) == 1 and not m.query.coarse:
                share = np.maximum(np.asarray(m.noisy, dtype=float).ravel(), 1e-9)
                self.p[m.clique[0]] = share / share.sum()
        return self

    def answer(self, clique: Clique) -> np.ndarray:
        out = np.ones(())
        for a in clique:
            out = np.multiply.outer(out, self.p[a])
        return self.total * out


def _wide(d: int, n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2, n)
    columns = {
        f"c{j}": np.where(rng.random(n) < 0.8, base, rng.integers(0, 2, n)).astype(str)
        for j in range(d - 1)
    }
    columns["y"] = base.astype(str)
    schema = Schema(tuple(CategoricalColumn(a, ("0", "1")) for a in columns), label="y")
    return pd.DataFrame(columns), schema


def _fit(d: int, seed: int, spec: EngineSpec):
    table, schema = _wide(d, 400, seed)
    return fit_engine(
        FrameSource(table, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        spec,
        noise=SeededNoise(seed),
        rng=np.random.default_rng(seed),
        estimator=lambda domain, total, _: OneWays(domain, total),
        model_size=lambda domain, cliques: 0.0,
    )


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**16), groups=st.sampled_from([0, 5]))
def test_every_column_is_in_a_measured_pair_at_d_40(seed: int, groups: int) -> None:
    """A spanning tree of measured pairs; with ``tree_label_groups`` (a table of at
    least ``tree_label_columns`` columns) a tree of the other columns, each pair
    measured with the label."""
    d = 40
    spec = EngineSpec(
        rounds=80, max_candidates=100, tree_label_groups=groups, tree_label_columns=20
    )
    result = _fit(d, seed, spec)
    cliques = result.measurements.cliques()
    covered = {a for c in cliques if len(c) > 1 for a in c}
    assert covered == set(result.schema.names)
    label = "y" if groups else None
    others = [a for a in result.schema.names if a != label]
    entries = [h for h in result.history if h.get("stage") == "tree"]
    assert len(entries) == len(others) - 1
    assert all((label in h["clique"]) == bool(groups) for h in entries)
    forest = Forest(others)
    for h in entries:  # each pair joins two components: a spanning tree
        pair = tuple(a for a in h["clique"] if a != label)
        assert forest.open_mask([pair])[0]
        forest.join(pair)
    assert forest.joined()
    # the ledger composes to exactly the budget, and records each tree pick
    events = result.ledger.to_dict()["events"]
    assert sum(1 for e in events if e.get("stage") == "tree") == len(others) - 1
    total = sum(e.rho for e in result.events)
    assert total == pytest.approx(zcdp_budget(Budget(epsilon=1.0, delta=1e-5)), rel=1e-8)


def test_narrow_tables_keep_the_fine_pairs() -> None:
    result = _fit(10, 3, EngineSpec(rounds=20, max_candidates=100))
    entries = [h for h in result.history if h.get("stage") == "tree"]
    assert len(entries) == 9 and all(len(h["clique"]) == 2 for h in entries)


def test_the_label_tree_groups_numerics_and_keeps_the_others() -> None:
    domain = Domain(("a", "b", "y", "c"), (21, 3, 2, 20))
    query = joined(domain, ("a", "c"), "y", {"a": 20, "c": 20}, 5)
    assert query.clique == ("a", "y", "c")
    assert query.groups is not None and query.groups[1] is None
    assert query.groups[0] == (*even_grouping(20, 5), 5)  # the missing cell a group
    assert query.groups[2] == even_grouping(20, 5)
    fine = joined(domain, ("a", "b"), "y", {"a": 4}, 5)  # 5 groups of 4 bins: as fine
    assert fine == MarginalQuery(("a", "b", "y"))
    assert joined(domain, ("a", "b"), None, {"a": 20}, 5) == MarginalQuery(("a", "b"))


def test_the_label_tree_cuts_numerics_at_the_released_quantiles() -> None:
    """With the released 1-ways' mass, each numeric's groups hold about equal mass
    (:func:`quantile_grouping`), the missing cell a group of its own; a column whose
    mass leaves every bin its own group is kept cell by cell."""
    domain = Domain(("a", "b", "y", "c"), (21, 3, 2, 20))
    skewed = np.r_[np.full(4, 100.0), np.ones(16), 5.0]  # the mass in the first 4 bins
    masses = {"a": skewed, "c": np.ones(20)}
    query = joined(domain, ("a", "c"), "y", {"a": 20, "c": 20}, 5, masses)
    assert query.groups is not None
    assert query.groups[0] == quantile_grouping(skewed, 20, 5)
    assert query.groups[0] != (*even_grouping(20, 5), 5)  # not the equal-width cut
    assert query.groups[0][-1] == max(query.groups[0]) and query.groups[0][-2] < query.groups[0][-1]
    assert query.groups[2] == even_grouping(20, 5)  # flat mass: equal-width again
    few = joined(domain, ("a", "b"), "y", {"a": 20}, 30, {"a": skewed})
    assert few == MarginalQuery(("a", "b", "y"))


def test_without_the_tree_phase_a_wide_run_may_leave_columns_alone() -> None:
    """The tree (and the label pairs, which join every column to a label) is what
    connects every column: ``tree_share = 0`` and ``label_share = 0`` keep the old
    rounds (the check that the property above can fail)."""
    spec = EngineSpec(rounds=10, max_candidates=100, tree_share=0.0, label_share=0.0)
    result = _fit(40, 1, spec)
    assert not any(h.get("stage") == "tree" for h in result.history)
    covered = {a for c in result.measurements.cliques() if len(c) > 1 for a in c}
    assert covered != set(result.schema.names)


@settings(max_examples=30, deadline=None)
@given(columns=st.integers(1, 300), share=st.sampled_from([0.0, 0.1, 0.5, 0.9]))
def test_the_plan_states_the_tree_and_keeps_the_rounds_noise(columns: int, share: float) -> None:
    spec = EngineSpec(tree_share=share, relation_share=0.0)  # the relations: test_relations
    plan = Plan.of(Budget(epsilon=1.0, delta=1e-5), spec, columns, columns // 2)
    parts = plan.fine + plan.oneway + plan.relations + plan.tree + plan.rounds + plan.pe
    assert parts == pytest.approx(plan.total, rel=1e-12)
    before = Plan.of(
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(tree_share=0.0, relation_share=0.0),
        columns,
        columns // 2,
    )
    per_round = before.rounds / before.planned_rounds
    assert plan.tree <= share * before.rounds * (1 + 1e-12)
    assert plan.tree <= (columns - 1) * per_round * (1 + 1e-12)
    assert plan.tree_edges == (columns - 1 if share > 0 else 0)
    if plan.tree_edges:
        sigma, _ = plan.tree_round()
        first_sigma, _ = before.first_round()
        assert sigma >= first_sigma * (1 - 1e-9)  # a pair costs at most a planned round
    assert plan.rounds / plan.planned_rounds >= per_round * (1 - 1e-9) or plan.planned_rounds == 1


@given(
    pairs=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 7)).filter(lambda p: p[0] != p[1]), max_size=20
    )
)
def test_the_forest_joins_as_a_union_find(pairs: list[tuple[int, int]]) -> None:
    names = [f"x{i}" for i in range(8)]
    forest = Forest(names)
    groups = [{a} for a in names]
    every = [(a, b) for a in names for b in names if a < b]
    ends = forest.ends(every)  # made once, as a phase makes them
    for i, j in pairs:
        pair = (names[i], names[j])
        apart = not any(names[i] in g and names[j] in g for g in groups)
        assert bool(forest.open_mask([pair])[0]) == apart
        assert np.array_equal(forest.open_mask(every, ends), forest.open_mask(every))
        forest.join(pair)
        merged = set().union(*(g for g in groups if names[i] in g or names[j] in g))
        groups = [g for g in groups if not g & merged] + [merged]
    assert forest.joined() == (len(groups) == 1)


def test_independent_is_the_outer_product_over_n() -> None:
    first, second = np.array([30.0, 70.0]), np.array([50.0, 25.0, 25.0])
    pair = independent(first, second, 100)
    assert pair.shape == (2, 3) and pair.sum() == pytest.approx(100.0)
    assert pair[1, 0] == pytest.approx(35.0)


def test_coarse_pairs_group_the_number_of_every_pair_with_a_category() -> None:
    """Each pair of a numeric and a categorical column, the numeric at the released
    quantiles; a pair of two categories or two numbers (the relations phase's), one of
    at most ``most_cells`` cells, or a numeric whose groups would keep every bin, is
    left out."""
    domain = Domain(("a", "b", "c", "d", "e"), (21, 3, 4, 20, 30))
    skewed = np.r_[np.full(4, 100.0), np.ones(16), 5.0]
    masses = {"a": skewed, "c": np.ones(4), "d": np.ones(20)}
    numeric = {"a": 20, "c": 4, "d": 20}
    pairs = coarse_pairs(domain, domain.names, numeric, 6, masses)
    by = {q.clique: q.groups for q in pairs}
    assert list(by) == [("a", "b"), ("a", "e"), ("b", "d"), ("d", "e")]
    assert by[("a", "b")] == (quantile_grouping(skewed, 20, 6), None)
    assert by[("d", "e")] == (quantile_grouping(np.ones(20), 20, 6), None)
    wide = coarse_pairs(domain, domain.names, numeric, 6, masses, most_cells=100)
    assert [q.clique for q in wide] == [("a", "e"), ("d", "e")]  # 63 and 60 cells: fine


def _decile_table(seed: int, n: int = 2000, flags: int = 12) -> tuple[pd.DataFrame, Schema]:
    """An income, its decile (ten categories) and weakly related flags."""
    rng = np.random.default_rng(seed)
    x = np.round(rng.lognormal(3, 1, n).clip(0, 999), 1)
    cuts = np.quantile(x, np.linspace(0.1, 0.9, 9))
    columns = {"x": x, "dec": np.searchsorted(cuts, x, side="right").astype(str)}
    base = rng.integers(0, 2, n)
    for j in range(flags):
        columns[f"f{j}"] = np.where(rng.random(n) < 0.3, base, rng.integers(0, 2, n)).astype(str)
    schema = Schema(
        (
            NumericColumn("x", 0.0, 1000.0),
            CategoricalColumn("dec", tuple(str(i) for i in range(10))),
            *(CategoricalColumn(f"f{j}", ("0", "1")) for j in range(flags)),
        )
    )
    return pd.DataFrame(columns), schema


@pytest.mark.parametrize("groups", [0, 6])
def test_the_tree_finds_a_number_and_its_decile_coarse(groups: int) -> None:
    """At a wide table's noise the fine pair of a number and its decile (200 cells)
    scores below pairs of two flags and is never drawn; scored on quantile groups
    (``tree_groups``), it is drawn on most noise draws, and released coarse."""
    drawn = 0
    for seed in range(4):
        frame, schema = _decile_table(seed)
        result = fit_engine(
            FrameSource(frame, schema), schema, Budget(epsilon=0.5, delta=1e-5),
            EngineSpec(tree_groups=groups, rounds=4, pe_share=0.0),
            noise=SeededNoise(seed), rng=np.random.default_rng(seed),
        )  # fmt: skip
        tree = [h for h in result.history if h.get("stage") == "tree"]
        picked = [h for h in tree if set(h["clique"]) == {"x", "dec"}]
        drawn += bool(picked)
        assert all(h["groups"] is not None for h in picked)
    assert drawn >= 3 if groups else drawn == 0


def test_the_label_tree_scores_each_pair_in_the_groups_it_releases() -> None:
    """The label tree's candidates are the pairs as its releases hold them: a number in
    the released quantile groups, a category cell by cell."""
    domain = Domain(("a", "b", "y", "c"), (21, 3, 2, 20))
    masses = {"a": np.r_[np.full(4, 100.0), np.ones(16), 5.0], "c": np.ones(20)}
    numeric = {"a": 20, "c": 20}
    names, pairs, released = tree_picks(domain, "y", numeric, 3, 3, masses)
    assert names == ["a", "b", "c"] and released is not None
    for pair in pairs:
        triple = released(pair)
        assert pair.groups is not None
        assert pair.groups == tuple(
            triple.groups[triple.clique.index(a)] if triple.groups else None for a in pair.clique
        )
    assert {q.clique: q.groups for q in pairs}[("a", "b")] == (
        quantile_grouping(masses["a"], 20, 3),
        None,
    )


def _numbers_and_flags(seed: int, n: int = 2000, flags: int = 14) -> tuple[pd.DataFrame, Schema]:
    """Two closely related numbers, a label that follows the first, and weak flags."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    columns: dict[str, np.ndarray] = {
        "x": np.round(50 + 15 * x, 1).clip(0, 100),
        "z": np.round(50 + 15 * (0.9 * x + 0.44 * rng.normal(size=n)), 1).clip(0, 100),
        "y": np.where(x + rng.normal(size=n) > 0, "1", "0"),
    }
    base = rng.integers(0, 2, n)
    for j in range(flags):
        columns[f"f{j}"] = np.where(rng.random(n) < 0.3, base, rng.integers(0, 2, n)).astype(str)
    schema = Schema(
        (
            NumericColumn("x", 0.0, 100.0, decimals=1),
            NumericColumn("z", 0.0, 100.0, decimals=1),
            CategoricalColumn("y", ("0", "1")),
            *(CategoricalColumn(f"f{j}", ("0", "1")) for j in range(flags)),
        ),
        label="y",
    )
    return pd.DataFrame(columns), schema


def test_the_label_tree_draws_a_strong_pair_of_numbers() -> None:
    """Scored cell by cell, a pair of numbers is 400 cells of noise and the label tree
    drew pairs of flags in its place on every noise draw (the wide tables' numbers left
    related only through categories); scored in its released groups it is drawn."""
    drawn = 0
    for seed in range(4):
        frame, schema = _numbers_and_flags(seed)
        result = fit_engine(
            FrameSource(frame, schema), schema, Budget(epsilon=0.5, delta=1e-5),
            EngineSpec(tree_label_columns=10, relation_share=0.0, rounds=4, pe_share=0.0),
            noise=SeededNoise(seed), rng=np.random.default_rng(seed),
        )  # fmt: skip
        tree = [h for h in result.history if h.get("stage") == "tree"]
        assert tree and all("y" in h["clique"] for h in tree)
        drawn += any({"x", "z"} <= set(h["clique"]) for h in tree)
    assert drawn >= 3


def test_the_tree_keeps_the_model_within_its_size_limit() -> None:
    """Sixteen related numbers and no label (benefits' shape): the relations phase
    joins them by a spanning tree of coarse pairs and, with more numbers than triangles
    are closed for, the tree phase picks among the same columns again. A pick that
    closes a cycle is taken only where the model stays within four times
    ``max_model_mb`` (``TREE_HEADROOM``): the
    two spanning trees together had made a model of 520 MB (cliques of five or six
    numbers at 20 bins each) and a fit of tens of minutes."""
    from dpevolve.engine.loop import default_model_size
    from dpevolve.engine.tree import TREE_HEADROOM

    seed = 0
    rng = np.random.default_rng(seed)
    n, factor = 1500, rng.normal(size=1500)
    frame = pd.DataFrame(
        {
            f"x{k}": (50 + 15 * (factor + rng.normal(size=n))).clip(0, 100).round(1)
            for k in range(16)
        }
    )
    schema = Schema(tuple(NumericColumn(f"x{k}", 0.0, 100.0, decimals=1) for k in range(16)))
    spec = EngineSpec()
    result = fit_engine(
        FrameSource(frame, schema), schema, Budget(epsilon=1.0, delta=1e-5), spec,
        noise=SeededNoise(seed), rng=np.random.default_rng(seed),
    )  # fmt: skip
    cliques = [m.clique for m in result.measurements.marginals()]
    assert (
        default_model_size(result.discretiser.domain, cliques) <= TREE_HEADROOM * spec.max_model_mb
    )
    assert any(h.get("stage") == "tree" for h in result.history)


class _Held:
    """A run holding ``cliques`` whose size checks are recorded (for ``bounded``)."""

    def __init__(self, cliques: Sequence[Clique]) -> None:
        self.cliques = list(cliques)
        self.tested: list[Clique] = []

    def fitted(self) -> list[SimpleNamespace]:
        return [SimpleNamespace(clique=c) for c in self.cliques]

    def fits(self, cliques: Sequence[Clique], headroom: float = 1.0) -> bool:
        self.tested.append(tuple(cliques[-1]))
        return True


def test_the_label_tree_tests_only_cycles_among_its_columns() -> None:
    """The label is in every clique the label tree releases; linked through it alone,
    no pick closes a cycle of the other columns (a forest plus one column joined to all
    of it has treewidth two), so no size check runs: counted through the label, every
    pair of its columns was checked, thousands a pick at d = 100. A link between two
    columns outside the label is a cycle to check."""
    from dpevolve.engine.tree import Picks, bounded

    names = ["a", "b", "c", "d"]
    pairs = [MarginalQuery(p) for p in itertools.combinations(names, 2)]
    picks = Picks(
        pairs, np.ones(len(pairs)), names, 1.0, 1.0, 0, "tree",
        released=lambda q: MarginalQuery((*q.clique, "y")),
    )  # fmt: skip
    ends = Forest(names).ends([q.clique for q in pairs])
    picked = [("a", "b", "y"), ("c", "d", "y")]
    across = np.array(
        [i for i, q in enumerate(pairs) if set(q.clique) not in ({"a", "b"}, {"c", "d"})]
    )
    ones = [(a,) for a in [*names, "y"]]
    run = _Held(ones)
    assert bounded(run, picks, across, picked, ends).all()
    assert run.tested == []
    run = _Held([*ones, ("a", "c")])  # a and c related outside the label
    bounded(run, picks, across, picked, ends)
    assert ("b", "d", "y") in run.tested
