"""The label pairs (:mod:`dpevolve.engine.label_pairs`): which columns, how grouped, at
what noise, and a run that leaves no column apart from the label."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.label_pairs import apart, label_queries, pair_sigma
from dpevolve.engine.measure import sigma_for
from dpevolve.measurements import Domain
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

NAMES = ["a", "b", "c", "d", "y"]


@given(st.lists(st.sets(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=8))
def test_apart_is_every_column_without_a_clique_holding_the_label(cliques) -> None:
    ordered = [tuple(a for a in NAMES if a in c) for c in cliques]
    out = apart(NAMES, "y", ordered)
    for a in NAMES[:-1]:
        joined = any("y" in c and a in c for c in ordered)
        assert (a in out) == (not joined)
    assert "y" not in out
    assert out == [a for a in NAMES if a in out]  # schema order


def test_the_label_alone_joins_nothing() -> None:
    assert apart(NAMES, "y", [("y",), ("a", "b")]) == ["a", "b", "c", "d"]


def test_numbers_are_grouped_by_their_released_mass_and_categories_kept() -> None:
    domain = Domain(("x", "k", "y"), (4, 3, 2))
    masses = {"x": np.array([30.0, 30.0, 20.0, 20.0])}
    queries = label_queries(domain, "y", ["x", "k"], masses, bins=4, groups=2)
    assert [q.clique for q in queries] == [("x", "y"), ("k", "y")]
    assert queries[0].groups == ((0, 0, 1, 1), None)  # cut where half the mass is
    assert queries[1].groups is None  # cell by cell


def test_a_nullable_number_keeps_its_missing_cell_apart() -> None:
    domain = Domain(("x", "y"), (5, 2))
    masses = {"x": np.array([25.0, 25.0, 25.0, 25.0, 40.0])}
    (query,) = label_queries(domain, "y", ["x"], masses, bins=4, groups=2)
    assert query.groups == ((0, 0, 1, 1, 2), None)


@settings(deadline=None)
@given(
    st.floats(1.0, 500.0),
    st.integers(1, 60),
    st.floats(1e-6, 1.0),
    st.floats(0.05, 0.95),
)
def test_the_pairs_never_take_more_than_their_share(sigma, pairs, left, share) -> None:
    out = pair_sigma(sigma, pairs, left, share)
    assert out >= sigma
    assert pairs / out**2 <= share * left * (1 + 1e-9)
    if pairs / sigma**2 <= share * left:
        assert out == sigma  # within the share: a tree pair's noise


def test_nothing_left_measures_nothing() -> None:
    assert pair_sigma(50.0, 3, 0.0, 0.5) == np.inf
    assert pair_sigma(50.0, 0, 0.0, 0.5) == 50.0
    assert pair_sigma(10.0, 4, 0.01, 0.5) == sigma_for(0.005 / 4)


#: A label that depends a little on each of six numbers and two categories: the
#: spanning tree joins it to few of them.
SCHEMA = Schema(
    (
        *(NumericColumn(f"m{j}", -4.0, 4.0) for j in range(6)),
        CategoricalColumn("k0", ("p", "q", "r")),
        CategoricalColumn("k1", ("p", "q", "r")),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)


def table(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(rows, 8))
    logit = 0.5 * z.sum(axis=1)
    data = {f"m{j}": np.clip(z[:, j], -4, 4) for j in range(6)}
    for j in (6, 7):
        data[f"k{j - 6}"] = np.array(["p", "q", "r"])[np.digitize(z[:, j], [-0.4, 0.4])]
    data["y"] = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame(data)


SPEC = EngineSpec(pe_share=0.0)


def run(spec: EngineSpec):
    return fit_engine(
        FrameSource(table(3000, 1), SCHEMA), SCHEMA, Budget(epsilon=1.0, delta=1e-5), spec,
        noise=SeededNoise(2), rng=np.random.default_rng(0),
    )  # fmt: skip


def test_after_the_phase_every_column_shares_a_clique_with_the_label() -> None:
    result = run(SPEC)
    paired = [h for h in result.history if h.get("stage") == "label"]
    assert paired  # the tree left some apart
    cliques = result.measurements.cliques()
    assert apart(SCHEMA.names, "y", cliques) == []
    rounds = [h["round"] for h in result.history]
    assert rounds == sorted(rounds) and len(set(rounds)) == len(rounds)
    events = result.ledger.to_dict()["events"]
    for h in paired:
        kinds = [e["kind"] for e in events if e.get("round") == h["round"]]
        assert kinds == ["gaussian"]  # no draw: the columns are public


def test_no_share_no_label_pairs() -> None:
    result = run(dataclasses.replace(SPEC, label_share=0.0))
    assert not [h for h in result.history if h.get("stage") == "label"]
