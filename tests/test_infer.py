"""Schema inference from public data: widened, rounded, commented, and complete checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.infer import infer_schema, problems_of, schema_yaml
from dpevolve.data.proposal import FEW_VALUES, RARE
from dpevolve.data.ranges import (
    MAX_INFERRED_DECIMALS,
    TAIL_RANK,
    decimals_of,
    is_natural_bound,
    read_from_single,
    round_outward,
    tail_spreads,
)
from dpevolve.data.schema import MISSING, OTHER, CategoricalColumn, NumericColumn, Schema
from dpevolve.data.types import DateColumn
from dpevolve.errors import InputError


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
        ((-158.84, -0.21), False, (-180, 0)),  # a loss: never above 0
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
    if not is_natural_bound(hi, span) and not (hi < 0 and out_hi == 0):
        assert out_hi >= hi + margin * span - 1e-9 * max(1.0, abs(hi))
    if hi < 0:
        assert out_hi <= 0
    if not is_natural_bound(lo, span) and not (non_negative and out_lo == 0):
        assert out_lo <= lo - margin * span + 1e-9 * max(1.0, abs(lo))
    if non_negative:
        assert out_lo >= 0
    if integer:
        assert out_lo == round(out_lo) and out_hi == round(out_hi)


def test_single_precision_values_keep_the_decimals_they_were_written_with() -> None:
    """A float32 column (Stata, Parquet): 4.2 arrives as 4.19999980926514."""
    written = np.array([4.2, 5.3, 0.446, 12.0, 1.73238])
    assert decimals_of(written.astype(np.float32).astype(np.float64)) == 5
    assert decimals_of(np.array([4.2, 5.3]).astype(np.float32).astype(np.float64)) == 1
    assert decimals_of(np.array([4.2, 5.3])) == 1
    # not single precision (nor a short decimal): no decimals
    assert decimals_of(np.array([np.pi, np.e])) is None


def test_single_precision_values_are_declared_float32_and_written_back_as_read() -> None:
    """The output of a float32 column equals its input value for value: 0.045 read from
    single precision is 0.04500000178813934, and a synthetic 0.045 must be the same."""
    written = np.array([0.045, 0.075, 0.124, 2.5, 1.0] * 20)
    read = written.astype(np.float32).astype(np.float64)
    assert read_from_single(read)
    assert not read_from_single(written)  # short decimals: a double column
    assert not read_from_single(np.array([2.5, 1.0, 0.0]))  # exact in both: says nothing
    assert not read_from_single(np.array([np.pi]))  # not single precision
    schema = Schema.infer(pd.DataFrame({"tax": read, "plain": written}))
    tax, plain = schema["tax"], schema["plain"]
    assert isinstance(tax, NumericColumn) and tax.float32 and tax.decimals == 3
    assert isinstance(plain, NumericColumn) and not plain.float32
    assert "float32: true" in schema_yaml(infer_schema(pd.DataFrame({"tax": read})), "public.csv")
    out = tax.format(written[:5])
    np.testing.assert_array_equal(out, read[:5])
    assert Schema.from_dict(schema.to_dict())["tax"] == tax


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


# ----------------------------------------------------------------------------- dates
@pytest.mark.parametrize(
    ("texts", "kind", "fmt"),
    [
        (["2020/01/31", "2021/12/01"], "date", "%Y/%m/%d"),
        (["31/01/2020", "01/12/2021"], "date", "%d/%m/%Y"),  # a first field above 12
        (["01/31/2020", "12/01/2021"], "date", "%m/%d/%Y"),  # a second field above 12
        (["31.01.2020", "1.2.2021"], "date", "%d.%m.%Y"),
        (["31-01-2020", "02-03-2021"], "date", "%d-%m-%Y"),
        (["31 Jan 2020", "2 Mar 2021"], "date", "%d %b %Y"),
        (["Jan 31, 2020", "Mar 2, 2021"], "date", "%b %d, %Y"),
        (["2020-01-31 10:00", "2021-12-01 23:59"], "datetime", "%Y-%m-%d %H:%M"),
        (["31/01/2020 10:00:05", "01/12/2021 23:59:00"], "datetime", "%d/%m/%Y %H:%M:%S"),
        (["2020-01-31T10:00:05", "2021-12-01T23:59:00"], "datetime", "%Y-%m-%dT%H:%M:%S"),
    ],
)
def test_common_date_formats_are_read_as_dates(texts, kind, fmt) -> None:
    public = pd.DataFrame({"when": texts * 40})
    column = Schema.infer(public)["when"]
    assert isinstance(column, DateColumn) and column.kind == kind and column.pattern == fmt
    # the YAML reads back, and the public cells fit it
    again = Schema.from_dict(yaml.safe_load(Schema((column,)).to_yaml()))
    assert again["when"] == column
    frame, report = again.validate(public)
    assert not report.changed and len(frame) == 80


def test_ambiguous_day_month_is_refused_unless_told() -> None:
    public = pd.DataFrame({"when": ["01/02/2020", "03/04/2021", "12/11/2019"] * 10})
    with pytest.raises(InputError, match=r"'when'.*day/month or month/day.*--dayfirst"):
        Schema.infer(public)
    day = Schema.infer(public, dayfirst=True)["when"]
    month = Schema.infer(public, dayfirst=False)["when"]
    assert isinstance(day, DateColumn) and day.pattern == "%d/%m/%Y"
    assert isinstance(month, DateColumn) and month.pattern == "%m/%d/%Y"


@pytest.mark.parametrize(
    "texts",
    [
        ["13/01/2020", "01/13/2020"],  # no one order reads both
        ["2020/01/31", "2020-02-01"],  # two separators
        ["01/02/20", "03/04/21"],  # two-digit years: no safe reading
        ["2020/13/01", "2020/01/01"],  # month 13
        ["2020-01-01", "2020-01-01 10:00"],  # a date and a datetime
    ],
)
def test_texts_that_are_not_one_date_format_stay_categorical(texts) -> None:
    column = Schema.infer(pd.DataFrame({"when": texts * 5}))["when"]
    assert isinstance(column, CategoricalColumn)


def test_many_distinct_texts_get_a_note() -> None:
    public = pd.DataFrame({"name": [f"p{i % 70}" for i in range(80)], "x": [1, 2] * 40})
    notes = infer_schema(public).notes
    assert any("70 distinct public values" in n and "identifier or a date" in n for n in notes)


def test_all_distinct_texts_are_declared_an_identifier() -> None:
    public = pd.DataFrame({"id": [f"p{i}" for i in range(80)], "x": [1, 2] * 40})
    inferred = infer_schema(public)
    assert inferred.schema.identifier_names == ["id"] and inferred.schema.names == ["x"]
    assert any("'id' has a distinct value in every public row" in n for n in inferred.notes)


# ------------------------------------------------------------------------------ other
def test_other_is_proposed_where_public_values_are_rare_never_on_the_label() -> None:
    rng = np.random.default_rng(0)
    n = 400
    public = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "country": ["US"] * (n - 12) + ["NL", "FR", "DE"] * 4,  # rare values: a tail
            "y": ["a"] * (n - 3) + ["b"] * 3,  # a rare class, but the label
        }
    )
    inferred = infer_schema(public, label="y")
    schema = inferred.schema
    assert [c.name for c in schema.columns if isinstance(c, CategoricalColumn) and c.other] == [
        "country"
    ]
    assert not any(
        isinstance(c, CategoricalColumn) and c.other
        for c in infer_schema(public, label="y", other=False).schema.columns
    )
    text = schema_yaml(inferred, "public.csv")
    assert "any other becomes '(other)'" in text and "add any others" in text
    private = pd.DataFrame({"sex": ["F"], "country": ["JP"], "y": ["a"]})
    assert problems_of(schema, private) == []
    assert schema.validate(private)[0]["country"].tolist() == [OTHER]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1e4, allow_nan=False), min_size=TAIL_RANK, max_size=60))
def test_the_inferred_range_fits_the_public_data_and_the_rule(values) -> None:
    public = pd.DataFrame({"x": np.array(values) + 0.5})  # never all whole
    inferred = infer_schema(public)
    column = inferred.schema["x"]
    assert isinstance(column, NumericColumn)
    lo, hi = inferred.public_ranges["x"]
    tail_lo, tail_hi = tail_spreads(public["x"].to_numpy())
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    assert column.lo <= lo and column.hi >= hi
    assert column.hi <= hi + 2 * max(0.1 * span, tail_hi) + 1e-9 * max(1.0, hi)
    assert column.lo >= lo - 2 * max(0.1 * span, tail_lo) - 1e-9 * max(1.0, hi)
    assert not inferred.schema.validate(public)[1].changed


@settings(max_examples=60, deadline=None)
@given(st.data(), st.integers(13, 50), st.integers(-1000, 1000), st.integers(2, 40))
def test_whole_numbers_are_a_count_exactly_when_they_fill_a_quarter_of_their_span(
    data, size, shift, repeat
) -> None:
    width = data.draw(st.integers(size, 4 * size + 8))  # fills from a fifth to all
    inner = data.draw(st.sets(st.integers(1, width - 2), min_size=size - 2, max_size=size - 2))
    values = np.array(sorted({0, width - 1} | inner)) + shift
    public = pd.DataFrame({"x": np.repeat(values, repeat), "y": "a"})
    column = infer_schema(public, label="y").schema["x"]
    fill = values.size / (values[-1] - values[0] + 1)
    assert isinstance(column, NumericColumn) == (fill >= 0.25)
    if isinstance(column, NumericColumn):
        assert column.integer


def test_heaped_weekly_hours_stay_numeric_and_few_codes_categorical() -> None:
    hours = [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 14, 15, 16, 18, 20, 21, 24, 25, 27, 28, 30]
    hours += [32, 33, 35, 36, 39, 40, 42, 44, 45, 48, 49, 50, 54, 55, 56, 60, 66, 70, 72, 77]
    hours += [100]  # 42 of the 101 values from 0 to 100, as cps91's
    public = pd.DataFrame({"hours": hours * 3, "rating": ([1, 2, 3, 4, 5] * 26)[:126]})
    schema = infer_schema(public).schema
    assert isinstance(schema["hours"], NumericColumn) and schema["hours"].integer
    assert isinstance(schema["rating"], CategoricalColumn)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 3),
    st.lists(st.integers(1, 400), min_size=2, max_size=11),
    st.integers(1, 30),
    st.sampled_from([0, 1, 2]),
)
def test_few_whole_numbers_with_a_rare_top_are_an_open_count(low, seen, top, gaps) -> None:
    """Children per family, family sizes: 4-12 values from 0 up with every (or nearly
    every) whole number between and the largest seen fewer than 10 times read as a
    number, widened past the top by at least the public span; codes whose top is
    common, or that skip most whole numbers, stay categories."""
    counts = [*seen, top]
    values = low + np.arange(len(counts)) * (1 + gaps)
    public = pd.DataFrame({"x": np.repeat(values, counts), "y": "a"})
    column = infer_schema(public, label="y").schema["x"]
    fill = len(counts) / (values[-1] - values[0] + 1)
    open_count = len(counts) >= 4 and fill >= 0.75 and top < 10
    assert isinstance(column, NumericColumn) == open_count
    if open_count:
        assert isinstance(column, NumericColumn) and column.integer and column.lo <= low
        assert column.hi >= values[-1] + (values[-1] - values[0])


def test_a_private_count_past_the_public_top_is_a_number_not_other() -> None:
    # teens per household in happiness: 0-4 in public rows, a 7 among the private ones
    teens = np.repeat([0, 1, 2, 3, 4], [600, 70, 20, 15, 3])
    public = pd.DataFrame({"teens": teens, "y": ["a", "b"] * (teens.size // 2)})
    schema = infer_schema(public, label="y").schema
    assert isinstance(schema["teens"], NumericColumn)
    private = pd.DataFrame({"teens": [7, 0], "y": ["a", "b"]})
    frame, report = schema.validate(private)
    assert frame["teens"].tolist() == [7, 0] and not report.changed


def test_values_holding_a_large_share_of_the_public_rows_are_declared_atoms() -> None:
    """Bracket midpoints (each 9-36% of the rows, the rest reported exactly), weekly
    hours heaped at 40 and a spend of 0: atoms, read back from the YAML; a continuous
    column and an even run of whole numbers: none (``atoms`` absent)."""
    rng = np.random.default_rng(0)
    n = 2000
    brackets = np.array([9.433484, 9.769957, 10.02127, 10.65726])
    exact = rng.uniform(9.0, 11.0, n).round(6)
    public = pd.DataFrame(
        {
            "income": np.where(
                rng.random(n) < 0.9, rng.choice(brackets, n, p=[0.1, 0.2, 0.3, 0.4]), exact
            ),
            "hours": np.where(rng.random(n) < 0.4, 40, rng.integers(1, 80, n)),
            "spend": np.where(rng.random(n) < 0.3, 0.0, rng.uniform(1, 500, n).round(2)),
            "x": rng.normal(size=n).round(4),
            "age": rng.integers(20, 70, n),
        }
    )
    inferred = infer_schema(public)
    atoms = {c.name: c.atoms for c in inferred.schema.columns if isinstance(c, NumericColumn)}
    assert atoms == {
        "income": tuple(brackets),
        "hours": (40.0,),
        "spend": (0.0,),
        "x": (),
        "age": (),
    }
    text = schema_yaml(inferred, source="public.csv")
    assert "'atoms' lists the values holding 5%" in text
    assert Schema.from_dict(yaml.safe_load(text)) == inferred.schema


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(0, 30), min_size=20, max_size=200),
    scale=st.sampled_from([1.0, 0.25, 0.001]),
)
def test_every_declared_atom_holds_its_share_of_the_public_rows(
    values: list[int], scale: float
) -> None:
    column = pd.Series(np.array(values) * scale)
    declared = infer_schema(pd.DataFrame({"v": column}), max_categories=0).schema["v"]
    assert isinstance(declared, NumericColumn)
    for atom in declared.atoms:
        assert (np.isclose(column, atom)).mean() >= ATOM_SHARE


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.integers(1, 60), min_size=1, max_size=30),
    step=st.sampled_from([0.5, 0.1, 0.25]),
    offset=st.sampled_from([0.0, 0.5, 1.25]),
)
def test_fractions_taking_few_common_values_are_listed_and_read_back(
    counts: list[int], step: float, offset: float
) -> None:
    """A fractional column lists its public values exactly when they are few (at most
    ``FEW_VALUES``) and none is rare (each seen ``RARE`` times or more); then it has
    no atoms, every value the schema takes is one of them, and the YAML reads back."""
    levels = offset + step * np.arange(1, len(counts) + 1) + 0.05
    column = pd.Series(np.repeat(levels, counts).round(2))
    inferred = infer_schema(pd.DataFrame({"v": column}))
    declared = inferred.schema["v"]
    assert isinstance(declared, NumericColumn)
    seen = np.unique(column)
    listed = 1 < seen.size <= FEW_VALUES and min(counts) >= RARE
    text = schema_yaml(inferred, source="public.csv")
    if listed:
        assert declared.values == tuple(seen) and declared.atoms == ()
        assert set(declared.format(np.linspace(declared.lo, declared.hi, 50))) <= set(seen)
        assert "its values are those seen" in text
    else:
        assert declared.values == () and "its values are those seen" not in text
    assert Schema.from_dict(yaml.safe_load(text)) == inferred.schema


@pytest.mark.parametrize(
    ("seen", "times", "listed"),
    [(45, RARE + 7, True), (FEW_VALUES, RARE, True), (FEW_VALUES + 1, RARE, False)],
)
def test_a_state_level_index_of_many_common_values_is_listed(
    seen: int, times: int, listed: bool
) -> None:
    """A state's index merged into its residents' rows (black_politicians' legislature
    index: 45 values of three decimals, each held by 17 public rows or more) lists its
    values, up to as many as a column may list; one more and the column is a range."""
    levels = np.round(0.027 + 0.013 * np.arange(seen), 3)
    public = pd.DataFrame({"index": np.repeat(levels, times)})
    declared = infer_schema(public).schema["index"]
    assert isinstance(declared, NumericColumn)
    assert declared.values == (tuple(float(v) for v in levels) if listed else ())


def test_whole_numbers_are_never_listed() -> None:
    """Whole numbers stay a count or a category (their own rules above), never a list."""
    public = pd.DataFrame({"kids": np.repeat([0, 1, 2, 3, 4, 5, 6], 40)})
    declared = infer_schema(public, max_categories=0).schema["kids"]
    assert isinstance(declared, NumericColumn) and declared.values == ()
