from __future__ import annotations

import ast
import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.atoms import MOST_ATOMS
from dpevolve.data.columns import MOST_VALUES
from dpevolve.data.encoding import Records, decode, encode
from dpevolve.data.schema import (
    MISSING,
    OTHER,
    CategoricalColumn,
    Hierarchy,
    NumericColumn,
    Schema,
)
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


# ------------------------------------------------------------------- the other bucket
OTHER_YAML = """
label: y
columns:
  country: {type: categorical, values: [US, MX], other: true, nullable: true}
  y: {type: categorical, values: [a, b]}
"""


def test_other_bucket_reads_back_and_reserves_its_name() -> None:
    schema = Schema.from_dict(yaml.safe_load(OTHER_YAML))
    country = schema["country"]
    assert isinstance(country, CategoricalColumn)
    assert country.values == ("US", "MX", OTHER, MISSING) and country.declared == ("US", "MX")
    assert schema.to_dict()["columns"]["country"] == {
        "type": "categorical",
        "values": ["US", "MX"],
        "other": True,
        "nullable": True,
    }
    assert Schema.from_dict(yaml.safe_load(schema.to_yaml())) == schema
    with pytest.raises(InputError, match=r"'\(other\)' is reserved for other"):
        CategoricalColumn("c", ("(other)", "x"), other=True)
    with pytest.raises(InputError, match="'other' is only for categorical columns"):
        Schema.from_dict({"columns": {"x": {"type": "numeric", "lo": 0, "hi": 1, "other": True}}})
    with pytest.raises(InputError, match="'other' must be true or false"):
        Schema.from_dict({"columns": {"x": {"type": "categorical", "values": [1], "other": 1}}})


def test_undeclared_values_map_to_other_with_no_problem_and_no_count() -> None:
    schema = Schema.from_dict(yaml.safe_load(OTHER_YAML))
    table = pd.DataFrame({"country": ["US", "NL", None, "MX", "ZZ"], "y": ["a"] * 5})
    frame, report = schema.validate(table)
    assert list(frame["country"]) == ["US", OTHER, MISSING, "MX", OTHER]
    # nothing about the mapped cells is counted: the report is that of a clean table
    assert not report.changed and report.to_dict()["dropped_by_column"] == {}
    _, problems, _ = schema.check(table)
    assert problems == []
    records = encode(frame, schema)
    again = decode(records, schema)
    assert list(again["country"].fillna("NA")) == ["US", OTHER, "NA", "MX", OTHER]
    assert schema.validate(again)[1].rows_out == 5  # the output fits its schema
    # without the bucket the same cells are undeclared, as before
    closed = Schema.from_dict(yaml.safe_load(OTHER_YAML.replace("other: true, ", "")))
    with pytest.raises(InputError, match="2 of 5 rows hold values outside the declared set"):
        closed.validate(table)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["US", "MX", "NL", "DE", "(other)", "us", "1"]), min_size=1),
    st.lists(st.sampled_from(["US", "MX", "NL", "FR", "2"]), min_size=1),
)
def test_the_other_mapping_depends_on_each_cell_and_the_schema_only(left, right) -> None:
    schema = Schema((CategoricalColumn("c", ("US", "MX", "1"), other=True),))
    both, _ = schema.validate(pd.DataFrame({"c": left + right}))
    alone, _ = schema.validate(pd.DataFrame({"c": left}))
    # a cell maps the same whatever the other rows hold: data-independent
    assert list(both["c"][: len(left)]) == list(alone["c"])
    declared = {"US", "MX", "1", OTHER}
    assert [v if v in declared else OTHER for v in left] == list(alone["c"])


def test_other_is_one_from_every_value_in_a_tree() -> None:
    column = CategoricalColumn(
        "c",
        ("a", "b", "c"),
        Hierarchy.from_nested("c", {"ab": ["a", "b"], "cc": ["c"]}, ["a", "b", "c"]),
        other=True,
        nullable=True,
    )
    d = column.distance_matrix()
    assert d.shape == (5, 5) and np.array_equal(np.diag(d), np.zeros(5))
    assert np.all(d[3, :3] == 1) and np.all(d[4, :4] == 1) and d[0, 1] < 1


# ---------------------------------------------------------------------------- decimals
@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 6),
    st.floats(-1e4, 1e4, allow_nan=False),
    st.floats(1, 1e5, allow_nan=False),  # at least one whole step: a grid point lies inside
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=20),
)
def test_decode_rounds_to_the_declared_decimals_within_the_range(decimals, lo, span, units):
    column = NumericColumn("x", lo, lo + span, decimals=decimals)
    schema = Schema((column,))
    out = decode(Records(np.array(units)[:, None], np.empty((len(units), 0), np.int32)), schema)
    values = out["x"].to_numpy()
    # every value is written with at most `decimals` decimals, and stays declared
    assert np.array_equal(values, np.round(values, decimals))
    assert values.min() >= column.lo and values.max() <= column.hi
    with pytest.raises(InputError, match="no number with 0 decimals lies in"):
        NumericColumn("y", 1.25, 1.75, decimals=0)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-1e4, 1e4, allow_nan=False),
    st.floats(1e-3, 1e5, allow_nan=False),
    st.lists(st.floats(-0.5, 1.5, allow_nan=False), min_size=1, max_size=20),
    st.none() | st.integers(0, 6),
)
def test_a_float32_column_writes_single_precision_values_within_its_range(
    lo, span, units, decimals
):
    hi = lo + span
    if decimals is not None and math.ceil(lo * 10**decimals) > math.floor(hi * 10**decimals):
        return  # no number with these decimals in the range (the column refuses it)
    column = NumericColumn("x", lo, hi, decimals=decimals, float32=True)
    out = column.format(np.clip(lo + np.array(units) * span, lo, hi))
    assert np.array_equal(out.astype(np.float32).astype(np.float64), out)
    assert out.min() >= lo and out.max() <= hi
    plain = NumericColumn("x", lo, hi, decimals=decimals).format(
        np.clip(lo + np.array(units) * span, lo, hi)
    )
    # the same value, as single precision writes it (or the nearest single inside)
    assert np.all(np.abs(out - plain) <= 2 * np.spacing(np.abs(plain).astype(np.float32)))


def test_float32_is_declared_and_checked() -> None:
    decl = {"type": "numeric", "lo": 0, "hi": 10, "decimals": 2, "float32": True}
    column = Schema.from_dict({"columns": {"x": decl}})["x"]
    assert isinstance(column, NumericColumn) and column.float32
    assert column.to_dict()["float32"] is True
    for bad, message in (
        ({**decl, "float32": "yes"}, "'float32' must be true or false"),
        ({"type": "numeric", "lo": 0, "hi": 9, "integer": True, "float32": True}, "no 'float32'"),
        ({"type": "categorical", "values": [1], "float32": True}, "only for numeric"),
    ):
        with pytest.raises(InputError, match=message):
            Schema.from_dict({"columns": {"x": bad}})


def test_decimals_are_declared_checked_and_inferred() -> None:
    decl = {"type": "numeric", "lo": 0, "hi": 10, "decimals": 2}
    column = Schema.from_dict({"columns": {"x": decl}})["x"]
    assert isinstance(column, NumericColumn) and column.decimals == 2
    assert column.to_dict()["decimals"] == 2
    for bad, message in (
        ({**decl, "decimals": -1}, "whole number from 0 to 12"),
        ({**decl, "decimals": True}, "whole number from 0 to 12"),
        ({**decl, "integer": True}, "an integer column has no 'decimals'"),
        ({"type": "categorical", "values": [1], "decimals": 1}, "only for numeric"),
    ):
        with pytest.raises(InputError, match=message):
            Schema.from_dict({"columns": {"x": bad}})
    public = pd.DataFrame({"spend": [1.25, 3.5, 100.0, 7.99] * 20, "k": list(range(80))})
    inferred = Schema.infer(public)
    spend, k = inferred["spend"], inferred["k"]
    assert isinstance(spend, NumericColumn) and spend.decimals == 2 and not spend.integer
    assert isinstance(k, NumericColumn) and k.integer and k.decimals is None


@settings(max_examples=200, deadline=None)
@given(
    lo=st.integers(-1000, 1000),
    span=st.integers(1, 10_000),
    decimals=st.sampled_from([None, 0, 1, 3, 6]),
    picks=st.lists(st.floats(0.0, 1.0), max_size=MOST_ATOMS, unique=True),
)
def test_atoms_on_the_grid_inside_the_range_are_declared_and_read_back(
    lo: int, span: int, decimals: int | None, picks: list[float]
) -> None:
    integer = decimals == 0
    scale = 1 if integer else 10
    column = NumericColumn("x", lo / scale, (lo + span) / scale, integer=integer)
    if not integer and decimals is not None:
        column = dataclasses.replace(column, decimals=decimals)
    step = column.step
    raw = [column.lo + p * column.range for p in picks]
    on_grid = [v if step is None else round(round(v / step) * step, 6) for v in raw]
    atoms = sorted({v for v in on_grid if column.lo <= v <= column.hi})
    decl = {**column.to_dict(), "atoms": atoms}
    read = Schema.from_dict({"columns": {"x": decl}})["x"]
    assert isinstance(read, NumericColumn) and read.atoms == tuple(atoms)
    assert Schema.from_dict({"columns": {"x": read.to_dict()}})["x"] == read


@pytest.mark.parametrize("value", [25243.550781, 99999.999999, -87654.000001])
def test_an_atom_far_from_zero_on_a_fine_grid_is_on_it(value: float) -> None:
    """A value of six decimals near 25,000 is 25 billion steps from zero: its ratio to
    the step is a few millionths off a whole number in floating point. It is on the
    grid (`schema infer` had proposed cps_mixtape's heavy earnings, 25,243.550781, and
    the schema it wrote was refused); half a step off is not."""
    decl = {"type": "float", "lo": -100000.0, "hi": 100000.0, "decimals": 6}
    read = Schema.from_dict({"columns": {"x": {**decl, "atoms": [value]}}})["x"]
    assert isinstance(read, NumericColumn) and read.atoms == (value,)
    with pytest.raises(InputError, match="is not a number of 6 decimals"):
        Schema.from_dict({"columns": {"x": {**decl, "atoms": [value + 5e-7]}}})


def test_atoms_are_checked_and_named() -> None:
    decl = {"type": "numeric", "lo": 0, "hi": 10, "decimals": 2}
    assert Schema.from_dict({"columns": {"x": decl}})["x"].atoms == ()
    assert Schema.from_dict({"columns": {"x": {**decl, "atoms": []}}})["x"].atoms == ()
    for bad, message in (
        ({**decl, "atoms": [11]}, "atom 11.0 lies outside"),
        ({**decl, "atoms": [1.255]}, "atom 1.255 is not a number of 2 decimals"),
        ({**decl, "atoms": [1, 1.0]}, "an atom is listed twice"),
        ({**decl, "atoms": 1}, "'atoms' must be a list of numbers"),
        ({**decl, "atoms": ["a"]}, "'atoms' must be a number"),
        ({**decl, "atoms": list(range(MOST_ATOMS + 1))}, f"at most {MOST_ATOMS} 'atoms'"),
        ({"type": "integer", "lo": 0, "hi": 9, "atoms": [0.5]}, "is not whole"),
        ({"type": "categorical", "values": [1], "atoms": [1]}, "only for numeric"),
        ({"type": "date", "lo": "2000-01-01", "hi": "2001-01-01", "atoms": [1]}, "only for"),
    ):
        with pytest.raises(InputError, match=message):
            Schema.from_dict({"columns": {"x": bad}})


def test_numeric_values_are_checked_and_named() -> None:
    decl = {"type": "numeric", "lo": 0, "hi": 26, "decimals": 1}
    read = Schema.from_dict({"columns": {"x": {**decl, "values": [13, 0.5, 2.5]}}})["x"]
    assert isinstance(read, NumericColumn) and read.values == (0.5, 2.5, 13.0)
    assert Schema.from_dict({"columns": {"x": read.to_dict()}})["x"] == read
    for bad, message in (
        ({**decl, "values": [27]}, "value 27.0 lies outside"),
        ({**decl, "values": [1.25]}, "value 1.25 is not a number of 1 decimals"),
        ({**decl, "values": [1, 1.0]}, "'values' must be listed once each"),
        ({**decl, "values": 1}, "'values' must be a list of numbers"),
        ({**decl, "values": list(range(MOST_VALUES + 1))}, f"at most {MOST_VALUES} 'values'"),
        ({**decl, "values": [1, 2], "atoms": [3]}, "every atom must be one of its 'values'"),
        ({"type": "integer", "lo": 0, "hi": 9, "values": [0.5]}, "is not whole"),
        ({"type": "date", "lo": "2000-01-01", "hi": "2001-01-01", "values": [1]}, "only for"),
    ):
        with pytest.raises(InputError, match=message):
            Schema.from_dict({"columns": {"x": bad}})


LISTED = Schema.from_dict(
    {"columns": {"years": {"type": "numeric", "lo": 0, "hi": 26, "decimals": 1,
                           "values": [0.5, 2.5, 6, 9, 13, 16.5, 23]}}}
)  # fmt: skip


def test_a_number_at_none_of_the_values_is_invalid_never_moved() -> None:
    """As a fraction in an integer column: refused by name (the value not shown),
    dropped with ``drop``; ``clip`` moves only a number outside the range, to the
    nearest end value."""
    table = pd.DataFrame({"years": [0.5, 3.0, 23.0, 30.0]})
    with pytest.raises(InputError, match=r"'years'.*not among the column's declared values"):
        LISTED.validate(table.iloc[:3], on_invalid="error", what="private")
    kept, report = LISTED.validate(table, on_invalid="drop", what="private")
    assert kept["years"].tolist() == [0.5, 23.0] and report.dropped == {"years": 2}
    kept, _ = LISTED.validate(table, on_invalid="clip", what="private")
    assert kept["years"].tolist() == [0.5, 23.0, 23.0]


@settings(max_examples=100, deadline=None)
@given(numbers=st.lists(st.floats(0.0, 26.0), min_size=1, max_size=50))
def test_output_lands_on_the_nearest_declared_value(numbers: list[float]) -> None:
    column = LISTED["years"]
    assert isinstance(column, NumericColumn)
    out = np.asarray(column.format(np.array(numbers)))
    listed = np.array(column.values)
    assert set(out.tolist()) <= set(column.values)
    gaps = np.abs(np.array(numbers)[:, None] - listed[None, :])
    assert np.allclose(np.abs(out - np.array(numbers)), gaps.min(axis=1))


# ---------------------------------------------------------------------- import circles
def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):  # function-level ones too
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_data_and_datasets_packages_have_no_import_circle() -> None:
    import dpevolve

    root = Path(dpevolve.__file__).parent
    modules = {}
    for package in ("data", "datasets"):
        for path in (root / package).glob("*.py"):
            name = f"dpevolve.{package}" + ("" if path.stem == "__init__" else f".{path.stem}")
            modules[name] = path
    graph = {name: _imports(path) & set(modules) for name, path in modules.items()}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(graph[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(graph[node])
        return seen

    circles = sorted(name for name in graph if name in reach(name))
    assert circles == []
