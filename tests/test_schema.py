from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import decode, encode
from dpevolve.data.schema import CategoricalColumn, Hierarchy, NumericColumn, Schema
from dpevolve.errors import InputError


def test_yaml_round_trip(small_schema: Schema) -> None:
    again = Schema.from_dict(__import__("yaml").safe_load(small_schema.to_yaml()))
    assert again.names == small_schema.names
    assert again.label == "income"
    assert np.allclose(again["job"].distance_matrix(), small_schema["job"].distance_matrix())


def test_two_level_tree_gives_siblings_half_and_cousins_one(small_schema: Schema) -> None:
    job = small_schema["job"]
    assert isinstance(job, CategoricalColumn)
    d = job.distance_matrix()
    admin, manager, builder = 0, 1, 2
    assert d[admin, manager] == 0.5
    assert d[admin, builder] == 1.0
    assert d[admin, admin] == 0.0


def test_default_weights_are_one_over_k_and_explicit_ones_kept() -> None:
    schema = Schema((NumericColumn("a", 0, 1), NumericColumn("b", 0, 1, weight=0.7)))
    assert schema.weights.tolist() == [0.5, 0.7]


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t.assign(extra=1), "column 'extra'"),
        (lambda t: t.drop(columns="age"), "lacks column 'age'"),
        (lambda t: t.iloc[:0], "empty"),
        (lambda t: t.assign(age=t["age"].where(t.index != 3, 200)), "outside the declared range"),
        (lambda t: t.assign(job=t["job"].where(t.index != 5, "pilot")), "outside the declared set"),
        (lambda t: t.assign(hours=t["hours"].astype(float).where(t.index != 2)), "NaN"),
        (lambda t: t.assign(age=t["age"].astype(object).where(t.index != 1, "old")), "not numbers"),
    ],
)
def test_bad_tables_give_one_line_errors(small_schema, small_table, edit, needle) -> None:
    with pytest.raises(InputError) as info:
        small_schema.validate(edit(small_table))
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


def test_drop_and_clip_repair_and_count(small_schema, small_table) -> None:
    bad = small_table.copy()
    bad.loc[3, "age"] = 200
    bad.loc[5, "job"] = "pilot"
    dropped, report = small_schema.validate(bad, on_invalid="drop")
    assert len(dropped) == len(bad) - 2
    assert report.dropped == {"age": 1, "job": 1}
    clipped, report = small_schema.validate(bad, on_invalid="clip")
    assert len(clipped) == len(bad) - 1  # the undeclared category cannot be clipped
    assert clipped["age"].max() == 90
    assert report.clipped == {"age": 1}


def test_bad_schemas_are_named() -> None:
    cases = [
        ({"columns": {"a": {"type": "numeric", "lo": 5, "hi": 1}}}, "hi must be greater"),
        ({"columns": {"a": {"type": "numeric", "lo": 0}}}, "'hi'"),
        ({"columns": {"a": {"type": "weird"}}}, "type must be"),
        ({"columns": {"a": {"type": "categorical", "values": []}}}, "non-empty"),
        ({"columns": {"a": {"type": "categorical", "values": ["x"]}}, "label": "b"}, "label 'b'"),
        ({"columns": {"a": {"type": "numeric", "lo": 0, "hi": 1, "weight": -1}}}, "weight"),
        ({"nothing": 1}, "'columns'"),
    ]
    for spec, needle in cases:
        with pytest.raises(InputError, match=needle):
            Schema.from_dict(spec)


def test_hierarchy_must_cover_values() -> None:
    with pytest.raises(InputError, match="hierarchy leaves"):
        Hierarchy.from_nested("job", {"g": ["a"]}, ["a", "b"])


def test_infer_uses_public_data_only_and_roundtrips() -> None:
    public = pd.DataFrame({"x": np.linspace(0, 10, 100), "c": ["a", "b"] * 50, "k": [1, 2] * 50})
    schema = Schema.infer(public, margin=0)
    x = schema["x"]
    assert isinstance(x, NumericColumn) and (x.lo, x.hi) == (0.0, 10.0)
    # default: 0 and 10 are natural bounds (kept); 9.5 is not (widened by the margin)
    widened = Schema.infer(public)["x"]
    assert isinstance(widened, NumericColumn) and (widened.lo, widened.hi) == (0.0, 10.0)
    short = Schema.infer(public.assign(x=np.linspace(0, 9.5, 100)))["x"]
    assert isinstance(short, NumericColumn) and short.hi >= 9.5 * 1.1
    assert isinstance(schema["c"], CategoricalColumn)
    assert isinstance(schema["k"], CategoricalColumn)
    frame, _ = schema.validate(public)
    assert len(frame) == 100


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(17, 90),
            st.sampled_from(["admin", "driver", "retired"]),
            st.integers(1, 99),
            st.sampled_from(["<=50K", ">50K"]),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_encode_decode_round_trip(rows) -> None:
    schema = Schema(
        (
            NumericColumn("age", 17, 90, integer=True),
            CategoricalColumn("job", ("admin", "driver", "retired")),
            NumericColumn("hours", 1, 99, integer=True),
            CategoricalColumn("income", ("<=50K", ">50K")),
        )
    )
    table = pd.DataFrame(rows, columns=["age", "job", "hours", "income"])
    frame, _ = schema.validate(table)
    back = decode(encode(frame, schema), schema)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)


def test_integer_coded_categories_match_floats_and_strings() -> None:
    schema = Schema((CategoricalColumn("v", (1, 2, 3)),))
    for column in ([1, 2, 3], [1.0, 2.0, 3.0], ["1", "2", "3"]):
        frame, _ = schema.validate(pd.DataFrame({"v": column}))
        assert frame["v"].tolist() == ["1", "2", "3"]
    assert decode(encode(frame, schema), schema)["v"].tolist() == [1, 2, 3]


def test_names_moved_out_of_schema_and_streaming_keep_their_old_import_paths() -> None:
    # schema.py and streaming.py were split by concept; users' imports must not break.
    import dpevolve.data.batches as batches
    import dpevolve.data.columns as columns
    import dpevolve.data.schema as schema
    import dpevolve.data.streaming as streaming
    import dpevolve.data.validation as validation

    for name in columns.__all__:
        assert getattr(schema, name) is getattr(columns, name)
    for name in ("ValidationReport", "CellProblem"):
        assert getattr(schema, name) is getattr(validation, name)
    for name in batches.__all__:
        assert getattr(streaming, name) is getattr(batches, name)
    assert streaming.check_columns is validation.check_columns
    assert set(streaming.__all__) >= {"StreamedTable", "TableStream", "fit_file", "Tally"}
