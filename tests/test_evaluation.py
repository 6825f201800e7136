"""Tests of the spec §7 evaluation measures (marginal TV, TSTR, evaluate, reports)."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.reporting.evaluation import (
    NUMERIC_BINS,
    MarginalReport,
    TSTRReport,
    baseline,
    evaluate,
    format_report,
    marginal_tv,
    tstr,
)
from dpevolve.reporting.figures import plot_marginals

# --------------------------------------------------------------- fixtures


def small_schema() -> Schema:
    return Schema(
        (
            NumericColumn("x", 0.0, 10.0),
            NumericColumn("age", 17, 90, integer=True),
            CategoricalColumn("color", ("red", "green", "blue")),
            CategoricalColumn("flag", (0, 1)),
        )
    )


def random_table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "age": rng.integers(17, 91, n),
            "color": rng.choice(["red", "green", "blue"], n),
            "flag": rng.integers(0, 2, n),
        }
    )


# ------------------------------------------------------------ brute force


def brute_force_tv(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, k: int) -> dict:
    """TV per k-set from pandas.cut and groupby counts, written independently."""

    def binned(frame: pd.DataFrame) -> pd.DataFrame:
        out = {}
        for col in schema.columns:
            if isinstance(col, NumericColumn):
                edges = np.linspace(col.lo, col.hi, NUMERIC_BINS + 1)
                x = frame[col.name].astype(float)
                b = pd.cut(x, edges, right=False, labels=False)
                b[x == col.hi] = NUMERIC_BINS - 1  # the closed top edge
                out[col.name] = b.astype(int)
            else:
                out[col.name] = frame[col.name].astype(str)
        return pd.DataFrame(out)

    r, s = binned(real), binned(synth)
    result = {}
    for subset in combinations(schema.names, k):
        p = r.groupby(list(subset)).size() / len(r)
        q = s.groupby(list(subset)).size() / len(s)
        p, q = p.align(q, fill_value=0.0)
        result[subset] = 0.5 * float((p - q).abs().sum())
    return result


@st.composite
def schema_and_tables(draw: st.DrawFn) -> tuple[Schema, pd.DataFrame, pd.DataFrame]:
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    columns: list[NumericColumn | CategoricalColumn] = []
    values: dict[str, st.SearchStrategy] = {}
    for i in range(n_num):
        lo = draw(st.floats(-100, 100, allow_nan=False, allow_infinity=False))
        width = draw(st.floats(0.5, 200, allow_nan=False, allow_infinity=False))
        hi = lo + width
        edges = np.linspace(lo, hi, NUMERIC_BINS + 1)
        name = f"n{i}"
        columns.append(NumericColumn(name, lo, hi))
        # Hit lo, hi and the interior bin edges exactly, besides values in between.
        values[name] = st.one_of(
            st.sampled_from([float(e) for e in edges]),
            st.floats(lo, hi, allow_nan=False, allow_infinity=False),
        )
    for i in range(n_cat):
        size = draw(st.integers(1, 4))
        name = f"c{i}"
        keys = tuple(f"v{j}" for j in range(size))
        columns.append(CategoricalColumn(name, keys))
        values[name] = st.sampled_from(keys)
    schema = Schema(tuple(columns))

    def table(n: int) -> pd.DataFrame:
        rows = draw(st.lists(st.fixed_dictionaries(values), min_size=n, max_size=n))
        return pd.DataFrame(rows, columns=schema.names)

    n_real = draw(st.integers(1, 30))
    n_synth = draw(st.integers(1, 30))
    return schema, table(n_real), table(n_synth)


# --------------------------------------------------------------- marginals


def test_identical_tables_have_zero_tv() -> None:
    schema = small_schema()
    real = random_table(np.random.default_rng(0), 500)
    for k in (1, 2, 3, 4):
        report = marginal_tv(real, real, schema, k)
        assert report.mean == 0.0 and report.max == 0.0
        assert len(report.per_set) == math.comb(4, k)
    # Row order is irrelevant to a contingency table.
    shuffled = real.sample(frac=1, random_state=3)
    assert marginal_tv(real, shuffled, schema, 3).max == 0.0


def test_structured_vs_random_tables_differ() -> None:
    rng = np.random.default_rng(1)
    schema = small_schema()
    real = random_table(rng, 2000)
    # Strong structure: colour follows x, flag follows age.
    real["color"] = np.where(real["x"] < 3.3, "red", np.where(real["x"] < 6.6, "green", "blue"))
    real["flag"] = (real["age"] > 50).astype(int)
    # Same 1-way marginals (each column permuted on its own), structure destroyed.
    synth = pd.DataFrame(
        {c: real[c].sample(frac=1, random_state=i).to_numpy() for i, c in enumerate(real)}
    )
    assert marginal_tv(real, synth, schema, 1).max == pytest.approx(0.0, abs=1e-12)
    two = marginal_tv(real, synth, schema, 2)
    assert two.per_set[("x", "color")] > 0.5
    assert two.per_set[("age", "flag")] > 0.3
    assert marginal_tv(real, synth, schema, 3).mean > 0.1


def test_disjoint_supports_have_tv_one() -> None:
    schema = small_schema()
    rng = np.random.default_rng(2)
    real = random_table(rng, 100).assign(color="red", x=0.0)
    synth = random_table(rng, 50).assign(color="blue", x=10.0)
    assert marginal_tv(real, synth, schema, 1).per_set[("color",)] == 1.0
    assert marginal_tv(real, synth, schema, 1).per_set[("x",)] == 1.0
    assert marginal_tv(real, synth, schema, 2).max == 1.0


def test_numeric_bins_use_declared_range_not_data_range() -> None:
    schema = Schema((NumericColumn("x", 0.0, 100.0),))
    # Data-range binning would spread these over all 20 bins; declared bins put all of
    # real in bin 0 and all of synth in bin 1 (width 5).
    real = pd.DataFrame({"x": np.linspace(0.0, 4.9, 50)})
    synth = pd.DataFrame({"x": np.linspace(5.0, 9.9, 50)})
    assert marginal_tv(real, synth, schema, 1).mean == 1.0
    # hi goes into the last bin together with its neighbours.
    top = pd.DataFrame({"x": [100.0, 96.0]})
    near_top = pd.DataFrame({"x": [95.0, 99.99]})
    assert marginal_tv(top, near_top, schema, 1).mean == 0.0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema_and_tables())
def test_tv_matches_brute_force_crosstab(case: tuple[Schema, pd.DataFrame, pd.DataFrame]) -> None:
    schema, real, synth = case
    for k in range(1, len(schema) + 1):
        report = marginal_tv(real, synth, schema, k)
        expected = brute_force_tv(real, synth, schema, k)
        assert report.per_set.keys() == expected.keys()
        for subset, tv in expected.items():
            assert report.per_set[subset] == pytest.approx(tv, abs=1e-12)
        # Bounds and symmetry.
        assert all(0.0 <= v <= 1.0 for v in report.per_set.values())
        assert 0.0 <= report.mean <= report.max <= 1.0
        swapped = marginal_tv(synth, real, schema, k)
        for subset, tv in report.per_set.items():
            assert swapped.per_set[subset] == pytest.approx(tv, abs=1e-12)


def test_large_mixed_radix_is_compacted_correctly() -> None:
    # 3 columns x 300 values = 27e6 cells: past the dense limit, so the index is compacted.
    values = tuple(f"v{i}" for i in range(300))
    schema = Schema(tuple(CategoricalColumn(c, values) for c in "abc"))
    rng = np.random.default_rng(4)
    real = pd.DataFrame({c: rng.choice(values[:20], 400) for c in "abc"})
    synth = pd.DataFrame({c: rng.choice(values[:25], 300) for c in "abc"})
    report = marginal_tv(real, synth, schema, 3)
    expected = brute_force_tv(real, synth, schema, 3)
    assert report.per_set[("a", "b", "c")] == pytest.approx(expected[("a", "b", "c")])


def test_marginal_columns_subset_and_errors() -> None:
    schema = small_schema()
    real = random_table(np.random.default_rng(5), 200)
    report = marginal_tv(real, real, schema, 2, columns=["color", "x"])
    assert isinstance(report, MarginalReport)
    assert list(report.per_set) == [("color", "x")]
    with pytest.raises(InputError, match="unknown column 'nope'"):
        marginal_tv(real, real, schema, 1, columns=["nope"])
    with pytest.raises(InputError, match="k must be between 1"):
        marginal_tv(real, real, schema, 5)
    with pytest.raises(InputError, match="k must be between 1"):
        marginal_tv(real, real, schema, 0)
    bad = real.assign(x=real["x"] + 100)
    with pytest.raises(InputError, match="synthetic table column 'x'"):
        marginal_tv(real, bad, schema, 1)


# -------------------------------------------------------------------- TSTR


def separable(rng: np.random.Generator, n: int, classes: int = 2) -> pd.DataFrame:
    x = rng.uniform(0, 1, n)
    label = np.minimum((x * classes).astype(int), classes - 1)
    return pd.DataFrame(
        {
            "x": x,
            "noise": rng.uniform(0, 1, n),
            "cat": rng.choice(["a", "b", "c"], n),
            "y": np.array([f"k{i}" for i in range(classes)])[label],
        }
    )


def separable_schema(classes: int = 2) -> Schema:
    return Schema(
        (
            NumericColumn("x", 0.0, 1.0),
            NumericColumn("noise", 0.0, 1.0),
            CategoricalColumn("cat", ("a", "b", "c")),
            CategoricalColumn("y", tuple(f"k{i}" for i in range(classes))),
        ),
        label="y",
    )


def test_tstr_on_separable_problem_is_accurate() -> None:
    rng = np.random.default_rng(6)
    schema = separable_schema()
    report = tstr(separable(rng, 600), separable(rng, 400), schema, "y")
    assert isinstance(report, TSTRReport)
    assert report.accuracy > 0.9
    assert report.macro_f1 > 0.9
    assert report.auc > 0.95
    assert (report.n_train, report.n_test) == (600, 400)
    assert report.classes == ("k0", "k1")
    assert report.note is None


def test_tstr_with_shuffled_labels_is_near_chance() -> None:
    rng = np.random.default_rng(7)
    schema = separable_schema()
    train = separable(rng, 600)
    train["y"] = rng.permutation(train["y"].to_numpy())
    test = separable(rng, 1000)
    report = tstr(train, test, schema, "y")
    assert 0.4 < report.accuracy < 0.6
    assert 0.4 < report.auc < 0.6
    assert report.baseline_accuracy == pytest.approx(baseline(test, schema, "y"))


def test_tstr_multiclass_auc() -> None:
    rng = np.random.default_rng(8)
    schema = separable_schema(classes=4)
    report = tstr(separable(rng, 800, 4), separable(rng, 400, 4), schema, "y")
    assert report.classes == ("k0", "k1", "k2", "k3")
    assert report.accuracy > 0.85
    assert 0.95 < report.auc <= 1.0


def test_tstr_multiclass_when_class_sets_differ() -> None:
    rng = np.random.default_rng(9)
    schema = separable_schema(classes=4)
    train = separable(rng, 800, 4)
    train = train[train["y"] != "k3"]  # the model never sees k3
    test = separable(rng, 400, 4)
    test = test[test["y"] != "k0"]  # the test split lacks k0
    report = tstr(train, test, schema, "y")
    assert report.classes == ("k1", "k2", "k3")
    assert math.isfinite(report.auc) and 0.0 <= report.auc <= 1.0
    assert report.accuracy < 0.8  # every k3 row is necessarily wrong


def test_tstr_single_class_synthetic() -> None:
    rng = np.random.default_rng(10)
    schema = separable_schema()
    train = separable(rng, 200).assign(y="k1")
    test = separable(rng, 300)
    report = tstr(train, test, schema, "y")
    assert math.isnan(report.auc)
    assert report.note is not None and "single" in report.note
    assert report.accuracy == pytest.approx(float((test["y"] == "k1").mean()))
    assert report.to_dict()["auc"] is None


def test_tstr_with_a_column_the_synthetic_table_leaves_all_missing() -> None:
    """The engine decodes a column missing throughout where the releases cannot show its
    values (docs/engine.md, a column the noise hides): the model leaves it out, says so,
    and still learns from the others (the classifier had failed on the empty column)."""
    rng = np.random.default_rng(12)
    schema = Schema(
        (
            NumericColumn("x", 0.0, 1.0),
            NumericColumn("noise", 0.0, 1.0, nullable=True),
            CategoricalColumn("cat", ("a", "b", "c")),
            CategoricalColumn("y", ("k0", "k1")),
        ),
        label="y",
    )
    train = separable(rng, 600).assign(noise=np.nan)
    report = tstr(train, separable(rng, 400), schema, "y")
    assert report.accuracy > 0.85
    assert report.note is not None and "'noise' holds no value" in report.note


def test_tstr_errors() -> None:
    rng = np.random.default_rng(11)
    schema = separable_schema()
    data = separable(rng, 100)
    with pytest.raises(InputError, match="label 'income' is not a schema column"):
        tstr(data, data, schema, "income")
    with pytest.raises(InputError, match="must be a categorical column"):
        tstr(data, data, schema, "x")
    with pytest.raises(InputError, match="unknown TSTR model"):
        tstr(data, data, schema, "y", model="svm")
    with pytest.raises(InputError, match="real test table column 'cat'"):
        tstr(data, data.assign(cat="zzz"), schema, "y")


def test_baseline_is_majority_share() -> None:
    schema = separable_schema()
    rng = np.random.default_rng(12)
    test = separable(rng, 100)
    test["y"] = ["k0"] * 70 + ["k1"] * 30
    assert baseline(test, schema, "y") == pytest.approx(0.7)


# --------------------------------------------------------- evaluate & report


def test_evaluate_is_json_ready_and_complete() -> None:
    rng = np.random.default_rng(13)
    schema = separable_schema()
    real, synth, test = separable(rng, 500), separable(rng, 400), separable(rng, 300)
    result = evaluate(real, synth, schema, label="y", test=test)
    json.dumps(result, allow_nan=False)
    assert result["rows"] == {
        "real": 500, "synthetic": 400, "distinct": 400, "duplicated": 0, "copied": 0
    }  # fmt: skip
    assert set(result["marginals"]) == {"1", "2", "3"}
    assert result["marginals"]["3"]["sets"] == 4
    direct = marginal_tv(real, synth, schema, 2)
    assert result["marginals"]["2"]["mean"] == pytest.approx(direct.mean)
    assert result["marginals"]["2"]["max"] == pytest.approx(direct.max)
    assert result["tstr"]["n_test"] == 300
    assert result["tstr"]["accuracy"] > 0.9
    assert result["tstr"]["test"] == "held-out"
    # The real table's own model, tested on the same held-out rows.
    assert result["tstr"]["real"]["n_train"] == 500
    assert result["tstr"]["real"]["accuracy"] > 0.9
    assert result["dcr"]["held_out"]["rows"] == 300

    text = format_report(result)
    assert text.startswith("A model trained on the synthetic table predicts 'y'")
    assert "the real table's model" in text and "majority class" in text
    assert "k-way marginal TV" in text and "TSTR" in text and "accuracy" in text


def test_evaluate_defaults() -> None:
    rng = np.random.default_rng(14)
    schema = separable_schema()
    real, synth = separable(rng, 300), separable(rng, 300)
    no_label = evaluate(real, synth, schema, ks=(1, 2, 3, 7))
    assert "tstr" not in no_label
    assert set(no_label["marginals"]) == {"1", "2", "3"}  # k = 7 > 4 columns is skipped
    own = evaluate(real, synth, schema, label="y", ks=(1,))
    # Without --test, a seeded fifth of the private rows is held out from the real
    # model's training; the synthetic score on them is labelled optimistic.
    assert 30 < own["tstr"]["n_test"] < 90
    assert own["tstr"]["real"]["n_train"] == 300 - own["tstr"]["n_test"]
    assert own["tstr"]["test"] == "private"
    assert "optimistic" in own["tstr"]["note"]
    assert "held_out" not in own["dcr"]
    json.dumps(own, allow_nan=False)
    assert "note:" in format_report(own)


def test_evaluate_single_class_is_json_ready() -> None:
    rng = np.random.default_rng(15)
    schema = separable_schema()
    result = evaluate(separable(rng, 200), separable(rng, 100).assign(y="k0"), schema, label="y")
    json.dumps(result, allow_nan=False)
    assert result["tstr"]["auc"] is None
    assert "n/a" in format_report(result)


def test_evaluate_errors() -> None:
    rng = np.random.default_rng(16)
    schema = separable_schema()
    real = separable(rng, 100)
    with pytest.raises(InputError, match="label 'nope' is not a schema column"):
        evaluate(real, real, schema, label="nope")
    with pytest.raises(InputError, match="synthetic table"):
        evaluate(real, real.assign(x=-1.0), schema)
    with pytest.raises(InputError, match="real table"):
        evaluate(real.drop(columns="cat"), real, schema)


def test_plot_marginals_writes_png_atomically(tmp_path: Path) -> None:
    rng = np.random.default_rng(17)
    schema = small_schema()
    target = tmp_path / "report" / "marginals.png"
    out = plot_marginals(random_table(rng, 300), random_table(rng, 200), schema, target)
    assert out == target
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in target.parent.iterdir()] == ["marginals.png"]  # no temp left over
