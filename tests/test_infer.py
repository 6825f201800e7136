"""Schema inference from public data: widened, rounded, commented, and complete checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.infer import infer_schema, problems_of, round_outward, schema_yaml
from dpevolve.data.schema import MISSING, CategoricalColumn, NumericColumn, Schema
from dpevolve.data.types import DateColumn


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [((13769, 1366120), None, (0, 1600000)), ((17, 90), None, (0, 100))],
)
def test_round_outward_gives_ranges_a_person_can_check(lo, hi, expected) -> None:
    assert round_outward(*lo, margin=0.1, non_negative=True) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(1e-3, 1e6, allow_nan=False),
    st.floats(0, 0.5),
    st.booleans(),
)
def test_round_outward_contains_the_widened_range(lo, span, margin, non_negative) -> None:
    hi = lo + span
    if non_negative:
        lo, hi = abs(lo), abs(lo) + span
    out_lo, out_hi = round_outward(lo, hi, margin, non_negative)
    assert out_lo <= lo - margin * span + 1e-9 * max(1, abs(lo)) or (non_negative and out_lo >= 0)
    assert out_lo <= lo and out_hi >= hi + margin * span - 1e-9 * max(1, abs(hi))
    assert out_hi - out_lo <= 4 * (hi - lo) * (1 + 2 * margin) + 1e-9 * max(1, abs(hi))
    if non_negative:
        assert out_lo >= 0


def test_a_private_half_fits_the_schema_inferred_from_the_public_half() -> None:
    # The new user's case: Adult's fnlwgt spans [13769, 1366120] in one half, and the
    # other half holds 12285 and 1484705 (the extremes of the whole training file).
    rng = np.random.default_rng(3)
    n = 2000
    middle = rng.integers(13769, 1366120, n)
    public = pd.DataFrame(
        {"fnlwgt": np.r_[13769, 1366120, middle], "kind": rng.choice(["x", "y"], n + 2)}
    )
    private = pd.DataFrame(
        {"fnlwgt": np.r_[12285, 1484705, middle[::-1]], "kind": rng.choice(["x", "y"], n + 2)}
    )
    exact = Schema.infer(public, margin=0)
    assert len(problems_of(exact, private)) == 1  # the public extremes reject 2 private rows
    inferred = infer_schema(public)
    assert problems_of(inferred.schema, private) == []
    weight = inferred.schema["fnlwgt"]
    assert isinstance(weight, NumericColumn) and weight.integer
    assert (weight.lo, weight.hi) == (0, 1600000)
    assert inferred.public_ranges["fnlwgt"] == (13769, 1366120)


def test_yaml_marks_widened_ranges_and_reads_back() -> None:
    public = pd.DataFrame({"x": np.linspace(3, 97, 60), "c": ["a", "b", "c"] * 20})
    inferred = infer_schema(public)
    text = schema_yaml(inferred, source="public.csv")
    assert "# widened: public data spans [3, 97]" in text
    assert "# values seen in the public data" in text
    assert Schema.from_dict(yaml.safe_load(text)) == inferred.schema


def test_missing_cells_na_values_dates_and_the_label() -> None:
    public = pd.DataFrame(
        {
            "when": ["2019-03-01", "2020-07-04", "2021-12-31"] * 10,
            "job": ["a", "?", "b"] * 10,
            "hours": [1.5, np.nan, 40.0] * 10,
            "y": ["0", "1", "0"] * 10,
        }
    )
    inferred = infer_schema(public, label="y", na_values=["?"])
    schema = inferred.schema
    when = schema["when"]
    assert isinstance(when, DateColumn) and when.kind == "date"
    assert when.text(when.lo) <= "2019-01-01" and when.text(when.hi) >= "2021-12-31"
    job = schema["job"]
    assert isinstance(job, CategoricalColumn) and job.nullable and MISSING in job.values
    assert "?" not in job.declared
    assert schema["hours"].nullable and not schema["y"].nullable
    assert schema.na_values == ("?",)
    assert any("nullable" in note for note in inferred.notes)
    frame, report = schema.validate(public)  # the public table fits its own schema
    assert not report.changed and len(frame) == 30


def test_problems_of_lists_every_problem() -> None:
    schema = Schema(
        (NumericColumn("a", 0, 10), CategoricalColumn("b", ("x", "y")), NumericColumn("c", 0, 1))
    )
    table = pd.DataFrame({"a": [1, 50, np.nan], "b": ["x", "q", "y"], "c": [0.5, 0.5, 0.5]})
    lines = problems_of(schema, table)
    assert len(lines) == 3
    assert any("'a'" in s and "outside the declared range" in s for s in lines)
    assert any("'a'" in s and "missing" in s for s in lines)
    assert any("'b'" in s and "outside the declared set" in s for s in lines)
    assert problems_of(schema, table.drop(columns="c").assign(d=1)) == [
        "column 'd' is not declared in the schema",
        "column 'c' declared in the schema is absent",
    ]
