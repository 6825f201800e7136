"""The fidelity benchmark's evaluator and table generators (benchmarks/).

The evaluator's TV and distinct-row counts are checked against hand-computed values on a
tiny table; the wide-table generator for determinism and for the structure it declares
(each column independent of its grandparent given its parent's state; the label reads
its four columns only); XOR off the midpoint for where its sign changes.
"""

from __future__ import annotations

import sys
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import fidelity_metrics  # noqa: E402
import tables  # noqa: E402

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema  # noqa: E402

SCHEMA = Schema(
    (CategoricalColumn("a", ("x", "y")), NumericColumn("b", 0.0, 20.0)),
)


def _frame(a: list[str], b: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"a": a, "b": b})


def test_tv_on_a_known_table() -> None:
    # b in 20 bins of width 1 over [0, 20]: 0.5 -> bin 0, 5.5 -> bin 5
    real = _frame(["x", "x", "y", "y"], [0.5, 0.5, 5.5, 5.5])
    synth = _frame(["x", "y", "y", "y"], [0.5, 0.5, 0.5, 5.5])
    codes = fidelity_metrics.codes
    tv = fidelity_metrics.tv_scores(codes(real, SCHEMA), codes(synth, SCHEMA), SCHEMA)
    # 1-way: a (1/2,1/2) vs (1/4,3/4) -> 1/4; b (1/2,1/2) vs (3/4,1/4) -> 1/4
    assert tv["tv1"] == pytest.approx(0.25)
    # 2-way cells (x,0) (y,5) real 1/2 each; synth (x,0) 1/4, (y,0) 1/2, (y,5) 1/4
    # -> 1/2 (1/4 + 1/2 + 1/4) = 1/2
    assert tv["tv2"] == pytest.approx(0.5)
    # tv_all: mean over the two 1-way sets and the one 2-way set
    assert tv["tv_all"] == pytest.approx((0.25 + 0.25 + 0.5) / 3)
    same = fidelity_metrics.tv_scores(codes(real, SCHEMA), codes(real, SCHEMA), SCHEMA)
    assert same["tv_all"] == 0.0


def test_distinct_rows_exact_and_binned() -> None:
    synth = _frame(["x", "x", "x", "y"], [0.5, 0.5, 0.7, 0.5])
    assert fidelity_metrics.distinct_rows(synth) == 3  # (x, .5) twice
    # 0.5 and 0.7 share bin 0: binned, rows 1-3 are one
    assert fidelity_metrics.distinct_coded(fidelity_metrics.codes(synth, SCHEMA)) == 2


def test_score_rates_against_the_bootstrap() -> None:
    rng = np.random.default_rng(0)
    n = 400
    real = _frame(list(rng.choice(["x", "y"], n)), list(rng.integers(0, 20, n) + 0.5))
    real["label"] = (real["b"] > 10).astype(np.int64)
    schema = Schema((*SCHEMA.columns, CategoricalColumn("label", (0, 1))), label="label")
    copies = pd.concat([real.iloc[:10]] * 40, ignore_index=True)  # n rows, <= 10 distinct
    out = fidelity_metrics.score(real, real, copies, schema, "label", seed=3)
    boot = fidelity_metrics.bootstrap(real, n, 3)
    distinct = len(set(real.iloc[:10].itertuples(index=False)))
    assert out["distinct"] == distinct
    assert out["bootstrap_distinct"] == len(set(boot.itertuples(index=False)))
    assert out["bootstrap_distinct"] >= 4 * distinct  # the 40-cell domain, nearly all hit
    assert out["distinct_rate"] == pytest.approx(distinct / out["bootstrap_distinct"])
    assert out["majority"] == pytest.approx(max(real["label"].mean(), 1 - real["label"].mean()))


def test_wide_table_is_deterministic_and_valid() -> None:
    a, schema, _ = tables.make_wide(12, 3000, seed=4)
    b, _, _ = tables.make_wide(12, 3000, seed=4)
    c, _, _ = tables.make_wide(12, 3000, seed=5)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    schema.validate(a, on_invalid="error")
    assert schema.label == "label" and len(schema.names) == 13
    numeric = [n for n in schema.names if isinstance(schema[n], NumericColumn)]
    assert numeric == [f"c{j:02d}" for j in range(2, 12, 3)]
    # the declared point mass of every numeric column (0.2; sd 0.007 at 3,000 rows)
    for name in numeric:
        assert 0.17 < float((a[name] == 0.0).mean()) < 0.23


def _mi(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in mutual information (nats) of two code arrays."""
    joint = pd.crosstab(x, y).to_numpy() / len(x)
    px, py = joint.sum(1, keepdims=True), joint.sum(0, keepdims=True)
    nz = joint > 0
    return float((joint[nz] * np.log(joint[nz] / (px @ py)[nz])).sum())


def _cmi(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> float:
    """Plug-in conditional mutual information I(x; y | z)."""
    return sum(float((z == v).mean()) * _mi(x[z == v], y[z == v]) for v in np.unique(z))


def test_wide_table_has_its_declared_tree() -> None:
    frame, _, structure = tables.make_wide(9, 30_000, seed=0, chain=True)
    assert structure.parents == (-1, 0, 1, 2, 3, 4, 5, 6, 7)
    names = structure.names

    def state(j: int) -> np.ndarray:
        col = frame[names[j]]
        card = structure.cards[j]
        values = col.str[1:].astype(int).to_numpy() if card > 0 else col.to_numpy()
        return tables.states(values, card)

    for child in range(2, 9):
        parent, grand = child - 1, child - 2
        strong = _mi(state(child), state(parent))
        given = _cmi(state(child), state(grand), state(parent))
        # dependent on the parent; independent of the grandparent given the parent
        # (the plug-in estimate's bias at 30,000 rows is well under 0.01 nats here)
        assert strong > 0.02, (child, strong)
        assert given < 0.01, (child, given)


def test_label_reads_its_four_columns_only() -> None:
    structure = tables.make_structure(20, structure_seed=0)
    assert len(structure.label_columns) == 4
    rng = np.random.default_rng(1)
    features = tables.draw_features(structure, 2000, rng)
    p = tables.label_probability(structure, features)
    others = [j for j in range(20) if j not in structure.label_columns]
    scrambled = list(features)
    for j in others:
        scrambled[j] = rng.permutation(features[j])
    np.testing.assert_array_equal(p, tables.label_probability(structure, scrambled))
    for j in structure.label_columns[:1]:
        moved = list(features)
        moved[j] = rng.permutation(features[j])
        assert not np.array_equal(p, tables.label_probability(structure, moved))
    assert 0.3 < float(p.mean()) < 0.5  # about 40% positive, by the intercept


def test_xor_offset_changes_sign_at_the_cut() -> None:
    frame = tables.make_xor_offset(3000, seed=0)
    tables.xor_offset_schema(3).validate(frame, on_invalid="error")
    above = (frame[[f"num_feat_{i}" for i in range(3)]] > tables.XOR_CUT).sum(axis=1)
    np.testing.assert_array_equal(frame["target"], above % 2)
    # the declared midpoint carries nothing: the midpoint-parity agrees only by chance
    mid = (frame[[f"num_feat_{i}" for i in range(3)]] > 0).sum(axis=1) % 2
    assert 0.35 < float((mid == frame["target"]).mean()) < 0.75
    pd.testing.assert_frame_equal(frame, tables.make_xor_offset(3000, seed=0))


def test_wide_structure_of_pairs_is_sparse() -> None:
    """Only tree edges are direct: a column and a non-relative far away are close to
    independent (no hidden dense structure), so marginal methods face a known graph."""
    frame, _, structure = tables.make_wide(12, 20_000, seed=0, chain=True)
    codes = fidelity_metrics.codes(frame, structure.schema())
    far = [(i, j) for i, j in combinations(range(12), 2) if j - i >= 6]
    mis = [_mi(codes[structure.names[i]], codes[structure.names[j]]) for i, j in far]
    assert max(mis) < 0.05
