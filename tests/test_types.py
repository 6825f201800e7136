"""Nullable columns, na_values and dates: schema, encoding, distance, variation, a run."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import Layout, Records, decode, encode
from dpevolve.data.schema import MISSING, CategoricalColumn, Hierarchy, NumericColumn, Schema
from dpevolve.data.types import DateColumn
from dpevolve.errors import InputError
from dpevolve.pe.distance import (
    Gower,
    NullableGower,
    NullableTabPEEmbedding,
    TabPEEmbedding,
    make_distance,
)
from dpevolve.pe.variation import MISSING_PRIOR, Variation
from dpevolve.presets import get_method

YAML = """
na_values: ["?"]
label: income
columns:
  age: {type: numeric, lo: 0, hi: 100, integer: true, nullable: true}
  job: {type: categorical, values: [a, b, c], nullable: true}
  joined: {type: date, lo: "2000-01-01", hi: "2000-12-31", nullable: true}
  income: {type: categorical, values: [lo, hi]}
"""


@pytest.fixture
def schema() -> Schema:
    return Schema.from_dict(yaml.safe_load(YAML))


@pytest.fixture
def table() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": [30, np.nan, 55, "?", 99],
            "job": ["a", "?", None, "c", "b"],
            "joined": ["2000-01-01", "2000-06-15", None, "?", "2000-12-31"],
            "income": ["lo", "hi", "lo", "hi", "lo"],
        }
    )


def test_yaml_roundtrip_keeps_nullable_dates_and_na_values(schema: Schema) -> None:
    again = Schema.from_dict(yaml.safe_load(schema.to_yaml()))
    assert again == schema
    job = schema["job"]
    assert isinstance(job, CategoricalColumn)
    assert job.values == ("a", "b", "c", MISSING) and job.declared == ("a", "b", "c")
    assert schema.to_dict()["columns"]["job"]["values"] == ["a", "b", "c"]  # not the sentinel
    joined = schema["joined"]
    assert isinstance(joined, DateColumn) and joined.range == 365  # 2000 is a leap year
    assert schema.to_dict()["columns"]["joined"]["lo"] == "2000-01-01"
    assert schema.na_values == ("?",)


def test_missing_cells_are_values_only_where_declared(schema: Schema, table) -> None:
    frame, report = schema.validate(table)
    assert not report.changed and len(frame) == 5
    assert np.isnan(frame["age"].to_numpy()).tolist() == [False, True, False, True, False]
    assert frame["job"].tolist() == ["a", MISSING, MISSING, "c", "b"]
    strict = Schema.from_dict(yaml.safe_load(YAML.replace(", nullable: true}", "}")))
    with pytest.raises(InputError, match="missing"):
        strict.validate(table)


def test_reserved_category_is_refused_as_a_declared_value() -> None:
    with pytest.raises(InputError, match="reserved"):
        CategoricalColumn("c", ("x", MISSING, "y"), nullable=True)


def test_bad_dates_are_reported_not_guessed(schema: Schema, table) -> None:
    table.loc[0, "joined"] = "01/02/2000"  # not the declared format
    with pytest.raises(InputError, match=r"'joined'.*not dates in the column's format '%Y-%m-%d'"):
        schema.validate(table)
    with pytest.raises(InputError, match="format"):
        Schema.from_dict({"columns": {"d": {"type": "date", "lo": "x", "hi": "2000-01-01"}}})


def test_encode_decode_roundtrip(schema: Schema, table) -> None:
    frame, _ = schema.validate(table)
    records = encode(frame, schema)
    assert np.isnan(records.numeric).sum() == 4  # two ages, two dates
    back = decode(records, schema)
    assert back["age"].dtype == "Int64" and back["age"].isna().tolist() == [0, 1, 0, 1, 0]
    assert back["job"].tolist()[0] == "a" and back["job"].isna().tolist()[1:3] == [True, True]
    joined = back["joined"].fillna("-").tolist()
    assert joined == ["2000-01-01", "2000-06-15", "-", "-", "2000-12-31"]
    again, _ = schema.validate(back)  # a synthetic table reads back under the same schema
    pd.testing.assert_frame_equal(again, frame, check_dtype=False)


def _brute_gower(schema: Schema, x: Records, c: Records) -> np.ndarray:
    layout = Layout.of(schema)
    weights = dict(zip(schema.names, schema.weights, strict=True))
    out = np.zeros((len(x), len(c)))
    for i in range(len(x)):
        for j in range(len(c)):
            total = 0.0
            for k, col in enumerate(layout.numeric):
                a, b = x.numeric[i, k], c.numeric[j, k]
                if np.isnan(a) and np.isnan(b):
                    d = 0.0
                elif np.isnan(a) or np.isnan(b):
                    d = 1.0
                else:
                    d = abs(a - b)
                total += weights[col.name] * d
            for k, cat in enumerate(layout.categorical):
                matrix = cat.distance_matrix()
                total += weights[cat.name] * matrix[x.codes[i, k], c.codes[j, k]]
            out[i, j] = total
    return out


cells = st.one_of(st.just(np.nan), st.floats(0, 1))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(cells, cells, st.integers(0, 3), st.integers(0, 1)), min_size=3, max_size=8)
)
def test_nullable_gower_is_the_missing_aware_metric(rows) -> None:
    schema = Schema.from_dict(yaml.safe_load(YAML))
    numeric = np.array([[r[0], r[1]] for r in rows])
    codes = np.array([[r[2], r[3]] for r in rows], dtype=np.int32)
    records = Records(numeric, codes)
    metric = make_distance("gower", schema)
    assert type(metric) is NullableGower
    d = metric.pairwise(records, records)
    np.testing.assert_allclose(d, _brute_gower(schema, records, records), atol=1e-12)
    assert np.all(np.diag(d) == 0) and np.allclose(d, d.T)
    assert d.max() <= metric.diameter() + 1e-12
    # the triangle inequality, on which every reach bound rests
    assert np.all(d[:, :, None] <= d[:, None, :] + d.T[None, :, :] + 1e-12)
    # with nothing missing it is the plain Gower distance
    full = Records(np.nan_to_num(numeric, nan=0.5), codes)
    np.testing.assert_allclose(metric.pairwise(full, full), Gower(schema).pairwise(full, full))
    # and the embedding distance: 1 per missing/present mismatch, plain elsewhere
    embed = make_distance("tabpe", schema)
    assert type(embed) is NullableTabPEEmbedding
    np.testing.assert_allclose(
        embed.pairwise(full, full), TabPEEmbedding(schema).pairwise(full, full), atol=1e-7
    )
    sq = embed.squared(records, records)
    one_missing = np.isnan(numeric)[:, None, :] ^ np.isnan(numeric)[None, :, :]
    assert np.all(sq + 1e-9 >= one_missing.sum(axis=2))


def test_missing_is_one_from_every_value_in_a_tree() -> None:
    tree = {"x": ["a", "b"], "y": ["c"]}
    col = CategoricalColumn(
        "t", ("a", "b", "c"), Hierarchy.from_nested("t", tree, ["a", "b", "c"]), nullable=True
    )
    matrix = col.distance_matrix()
    assert matrix.shape == (4, 4)
    assert matrix[3, :3].tolist() == [1.0, 1.0, 1.0] and matrix[3, 3] == 0.0
    assert matrix[0, 1] == 0.5  # the tree itself is unchanged


def test_variation_switches_cells_to_and_from_missing(schema: Schema) -> None:
    layout = Layout.of(schema)
    variation = Variation(layout)
    rng = np.random.default_rng(0)
    fresh = variation.random(2000, rng)
    share = np.isnan(fresh.numeric).mean(axis=0)
    # missing with probability MISSING_PRIOR (one cell in 21), not 1/2
    assert np.all(np.abs(share - MISSING_PRIOR) < 0.02)
    present = fresh.numeric[~np.isnan(fresh.numeric)]
    assert present.min() >= 0 and present.max() <= 1
    children = variation.mutate(fresh, 0.5, rng)
    flipped = np.isnan(children.numeric) != np.isnan(fresh.numeric)
    assert flipped.any(axis=0).all()  # both directions happen at a high rate
    assert np.array_equal(
        np.isnan(variation.mutate(fresh, 0.0, rng).numeric), np.isnan(fresh.numeric)
    )
    plain = Variation(Layout.of(Schema((NumericColumn("x", 0, 1),))))
    assert not np.isnan(plain.mutate(plain.random(50, rng), 0.5, rng).numeric).any()


def test_a_run_synthesizes_missing_cells_and_dates(schema: Schema, table) -> None:
    from dpevolve.synthesizer import Synthesizer

    rng = np.random.default_rng(1)
    private = pd.concat([table] * 40, ignore_index=True)
    private["age"] = np.where(rng.random(len(private)) < 0.3, np.nan, rng.integers(0, 100, 200))
    model = Synthesizer(
        schema,
        epsilon=1.0,
        delta=1e-5,
        method=get_method("tabpe", population=60, rounds=2),
        random_state=0,
        noise_seed=0,  # the suite is deterministic
        progress=False,
    ).fit(private)
    out = model.synthetic_
    assert len(out) == 60
    _, report = schema.validate(out)  # the release fits its own schema
    assert not report.changed
    assert out["age"].isna().any() and out["age"].notna().any()
    assert out["joined"].dropna().str.match(r"^2000-\d\d-\d\d$").all()


def test_marginals_measure_missing_numeric_cells_in_their_own_cell() -> None:
    from dpevolve.pe.hybrid.fit import draw_rows
    from dpevolve.pe.hybrid.marginals import Binning, CellIndex, Workload

    schema = Schema((NumericColumn("x", 0, 10, nullable=True), CategoricalColumn("c", ("a", "b"))))
    binning = Binning(schema, bins=5)
    assert binning.sizes == {"x": 6, "c": 2}  # 5 bins and the missing cell
    records = Records(np.array([[0.0], [1.0], [np.nan], [0.5]]), np.zeros((4, 1), np.int32))
    assert binning.codes(records, "x").tolist() == [0, 4, 5, 2]  # missing is not the top bin
    index = CellIndex(schema, Workload((("x",), ("c",)), bins=5))
    rng = np.random.default_rng(0)
    out = draw_rows(records, np.full(4, 0.25), 400, rng, index, numeric="jitter")
    missing = np.isnan(out.numeric[:, 0])
    assert 0 < missing.mean() < 0.5  # missing cells drawn stay missing, the rest present
    assert np.all((out.numeric[~missing, 0] >= 0) & (out.numeric[~missing, 0] <= 1))


def test_a_run_writes_the_declared_decimals() -> None:
    from dpevolve.synthesizer import Synthesizer

    rng = np.random.default_rng(0)
    public = pd.DataFrame(
        {"spend": np.round(rng.gamma(2.0, 30.0, 200), 2), "y": rng.choice(["a", "b"], 200)}
    )
    schema = Schema.infer(public, label="y")
    spend = schema["spend"]
    assert isinstance(spend, NumericColumn) and spend.decimals == 2
    model = Synthesizer(
        schema,
        epsilon=1.0,
        method=get_method("tabpe", population=40, rounds=2),
        random_state=0,
        noise_seed=1,
        progress=False,
    ).fit(public)
    out = model.sample(100)["spend"].to_numpy()
    assert np.array_equal(out, np.round(out, 2))  # no 15-digit floats
    assert out.min() >= spend.lo and out.max() <= spend.hi


def test_validation_is_idempotent_on_dates(schema: Schema, table) -> None:
    # evaluate and report validate a frame a step before them already validated
    once, _ = schema.validate(table)
    twice, report = schema.validate(once)
    pd.testing.assert_frame_equal(once, twice)
    assert not report.changed
