"""Schema inference from public data: widened, rounded, commented, and complete checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.infer import infer_schema, problems_of, schema_yaml
from dpevolve.data.ranges import MAX_INFERRED_DECIMALS, decimals_of, is_natural_bound, round_outward
from dpevolve.data.schema import MISSING, CategoricalColumn, NumericColumn, Schema
from dpevolve.data.types import DateColumn


@pytest.mark.parametrize(
    ("public", "integer", "expected"),
    [
        ((13769, 1366120), True, (0, 1600000)),  # Adult's fnlwgt
        ((17, 90), True, (5, 100)),  # Adult's age
        ((0, 100), False, (0, 100)),  # an index that reaches its natural bounds
        ((3, 97), False, (0, 110)),  # one that does not show them
        ((0.12, 0.87), False, (0, 1)),  # a share
        ((-5.2, 40.3), False, (-10, 45)),
        ((3, 5), True, (2, 6)),
    ],
)
def test_round_outward_gives_ranges_a_person_can_check(public, integer, expected) -> None:
    assert round_outward(*public, margin=0.1, non_negative=public[0] >= 0, integer=integer) == (
        expected
    )


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(1e-3, 1e6, allow_nan=False),
    st.floats(1e-3, 0.5),
    st.booleans(),
    st.booleans(),
)
def test_round_outward_widens_by_the_margin_and_at_most_twice_it(
    lo, span, margin, non_negative, integer
) -> None:
    if integer:
        lo, span = float(round(lo)), float(max(1, round(span)))
    if non_negative:
        lo = abs(lo)
    hi = lo + span
    out_lo, out_hi = round_outward(lo, hi, margin, non_negative, integer)
    slack = 1e-9 * max(1.0, abs(lo), abs(hi)) + (1.0 if integer else 0.0)
    # never narrower than the public data, never wider than the rule's window
    assert out_lo <= lo and out_hi >= hi
    assert out_lo >= lo - 2 * margin * span - slack
    assert out_hi <= hi + 2 * margin * span + slack
    # a bound moves by at least the margin unless it is natural (or held at 0)
    if not is_natural_bound(hi, span):
        assert out_hi >= hi + margin * span - 1e-9 * max(1.0, abs(hi))
    if not is_natural_bound(lo, span) and not (non_negative and out_lo == 0):
        assert out_lo <= lo - margin * span + 1e-9 * max(1.0, abs(lo))
    if non_negative:
        assert out_lo >= 0
    if integer:
        assert out_lo == round(out_lo) and out_hi == round(out_hi)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-(10**8), 10**8), min_size=1, max_size=30),
    st.integers(0, MAX_INFERRED_DECIMALS),
)
def test_decimals_of_finds_the_decimals_values_are_written_with(units, decimals) -> None:
    values = np.array([float(f"{u / 10**decimals:.{decimals}f}") for u in units])
    found = decimals_of(values)
    assert found is not None and found <= decimals
    assert np.array_equal(np.round(values, found), values)


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
