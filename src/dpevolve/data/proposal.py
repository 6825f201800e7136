"""The columns a schema inferred from **public** data declares (docs/guide.md#schemas).

:func:`propose_columns` reads each public column once and proposes its declaration:

* date and datetime texts (:mod:`dpevolve.data.date_formats`) become ``date`` /
  ``datetime`` columns, widened to whole years;
* numbers become numeric columns on a widened, rounded range
  (:func:`dpevolve.data.ranges.round_outward`), with ``integer: true`` when every public
  value is whole and ``decimals`` otherwise (:func:`dpevolve.data.ranges.decimals_of`;
  ``float32`` where the values were read from single precision:
  :func:`dpevolve.data.ranges.read_from_single`) and ``atoms``, the values holding
  a large share of the public rows (:func:`dpevolve.data.atoms.heavy_values`: a
  bracket's midpoint, a state's tax rate, 0); a column of fractions that takes few
  public values, none rare, lists them as its ``values`` instead
  (:func:`listed_values`: years married coded 0.5, 2.5, 6, ..., 23), and nothing is
  then drawn between them;
  integer columns with at most ``max_categories`` values, text and the label become
  categorical, except a run of whole numbers (more than :data:`CODES` values filling
  at least :data:`COUNT_FILL` of the span between the smallest and the largest: ages
  25-64, counts, weekly hours heaped on round values),
  which stays numeric: its order carries the relations, and 40 categories carry 40
  cells of noise; so does an open count (at least 4 non-negative values filling most of
  their span, the largest rare: children per family), whose next value up is a number,
  not ``(other)``;
* a categorical column other than the label gets ``other: true`` when its public data
  hold a rare value (seen fewer than :data:`RARE` times): a column with a tail of rare
  values likely has values the public data did not show (the Good-Turing estimate of
  their share is the share of values seen once), and a private one maps to the
  reserved ``(other)`` category instead of stopping the run. A column whose every
  value is common (``sex``, ``race``) gets no bucket: one more category costs the
  synthesizers a value to learn is rare;
* a column with missing public cells is declared ``nullable``;
* a column whose public values are all distinct, text or id-like whole numbers, is
  declared an identifier (:func:`dpevolve.data.identifiers.propose_identifier`).

It returns plain columns, not a :class:`~dpevolve.data.schema.Schema`, so the schema
module can use it without importing the modules that use the schema.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from dpevolve.data.atoms import heavy_values, on_grid
from dpevolve.data.cells import COMMA_NUMBER, MISSING_WORDS, NUMBER, read_cells, read_numbers
from dpevolve.data.columns import MOST_VALUES, CategoricalColumn, Column, NumericColumn
from dpevolve.data.date_formats import date_format
from dpevolve.data.identifiers import IdentifierColumn, propose_identifier
from dpevolve.data.messages import plain_cell
from dpevolve.data.ranges import decimals_of, read_from_single, round_outward, tail_spreads
from dpevolve.data.types import DEFAULT_FORMATS, UNITS, DateColumn, to_units
from dpevolve.errors import InputError

#: A public value seen fewer times than this is rare (see the module: ``other``).
RARE = 10

#: A fractional column with at most this many public values, none rare, lists them as
#: its ``values`` (:func:`listed_values`), as many as a column may list: each is a cell
#: of the engine's fine partition, and at most 20 also a bin. A state's legislature
#: index merged into its residents' rows (black_politicians: 45 values, each held by 17
#: or more public rows) is drawn at those values, not at the thousand a range of three
#: decimals holds.
FEW_VALUES = MOST_VALUES


@dataclass(frozen=True)
class Proposal:
    """Proposed columns, the public extremes of each widened range, and notes."""

    columns: tuple[Column | IdentifierColumn, ...]
    label: str | None
    na_values: tuple[str, ...]
    public_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def propose_columns(
    public: pd.DataFrame,
    label: str | None = None,
    max_categories: int = 50,
    categorical: Sequence[str] = (),
    margin: float = 0.1,
    na_values: Sequence[str] = (),
    nullable: bool = False,
    dayfirst: bool | None = None,
    other: bool = True,
) -> Proposal:
    """Propose every column's declaration from a **public** table (see the module).

    Parameters
    ----------
    public
        A public table of the same kind as the private one.
    label
        The label column (declared categorical, never nullable, no ``other``).
    max_categories
        Integer columns with at most this many distinct values are categorical.
    categorical
        Columns to declare categorical whatever their values.
    margin
        The least widening of a numeric bound, as a share of the public range (0: the
        exact public extremes, which a private table will often exceed).
    na_values
        Cell texts that mean "missing" (e.g. ``"?"``); recorded in the schema.
    nullable
        Declare every column nullable; otherwise only columns with missing public cells.
    dayfirst
        Read ``01/02/2020`` as 1 February (``True``) or 2 January (``False``) when the
        public dates do not tell; ``None`` refuses such a column.
    other
        Give categorical columns (the label excepted) an ``other`` bucket where the
        public data hold a rare value (``False``: never).
    """
    if len(public) == 0:
        raise InputError("public table is empty (0 rows); cannot infer a schema")
    if margin < 0:
        raise InputError(f"margin must be >= 0, got {margin}")
    columns: list[Column | IdentifierColumn] = []
    ranges: dict[str, tuple[float, float]] = {}
    notes: list[str] = []
    words = _missing_words(public, na_values, categorical, label)
    if words:
        na_values = (*na_values, *words)
        notes.append(
            f"read {', '.join(repr(w) for w in words)} as missing (added to na_values): "
            "it fills gaps among numbers and no column holds it as a value"
        )
    for name in public.columns:
        key = str(name)
        raw = public_cells(public[name], na_values)
        if key not in categorical and key != label:
            _refuse_comma_numbers(key, raw)
        values = raw.dropna()
        if len(values) == 0:
            raise InputError(f"public column '{key}' has only missing values")
        has_missing = nullable or bool(raw.isna().any())
        if has_missing and not nullable:
            notes.append(f"column '{key}' has missing public cells: declared nullable")
        free = key not in categorical and key != label
        ident = propose_identifier(key, values, len(public)) if free else None
        if ident is not None:
            columns.append(ident)
            notes.append(
                f"column '{key}' has a distinct value in every public row: declared an "
                f"identifier (type: id; nothing is spent on it; {ident.describe()}; "
                "drop: true leaves it out)"
            )
            continue
        date = _date_column(key, values, margin, has_missing, dayfirst) if free else None
        if date is not None:
            columns.append(date)
            notes.append(f"column '{key}' read as {date.kind}s ({date.pattern})")
            continue
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if numeric and free:
            found = _numeric_column(key, values, max_categories, margin, has_missing)
            if found is not None:
                columns.append(found[0])
                ranges[key] = found[1]
                continue
        uniques = sorted(pd.unique(values), key=lambda v: (str(type(v)), v))
        if len(uniques) > max_categories and not numeric and free:
            notes.append(
                f"column '{key}' has {len(uniques)} distinct public values: declared "
                "categorical (check that it is not an identifier or a date)"
            )
        # The label stays non-nullable: a missing class label makes TSTR meaningless.
        columns.append(
            CategoricalColumn(
                key,
                tuple(plain_cell(v) for v in uniques),
                nullable=has_missing and key != label,
                other=other and key != label and int(values.value_counts().min()) < RARE,
            )
        )
    return Proposal(tuple(columns), label, tuple(str(v) for v in na_values), ranges, notes)


def _numeric_column(
    key: str, values: pd.Series, max_categories: int, margin: float, nullable: bool
) -> tuple[NumericColumn, tuple[float, float]] | None:
    """A numeric declaration of public ``values`` and their public range, or ``None``
    when they read as categories (few integral values that are not counts)."""
    as_float = values.to_numpy(dtype=np.float64)
    if not np.isfinite(as_float).all():
        raise InputError(
            f"public column '{key}' holds infinite values: drop them, or declare the column by hand"
        )
    integral = bool(np.all(np.equal(np.round(as_float), as_float)))
    open_top = integral and _open_count(as_float)
    if not (values.nunique() > max_categories or not integral or open_top or _counts(as_float)):
        return None
    lo, hi = float(as_float.min()), float(as_float.max())
    below, above = tail_spreads(as_float)
    if open_top:
        # the top the public rows saw is rare: the private rows likely reach past it
        above = max(above, OPEN_REACH * (hi - lo))
    wide = round_outward(lo, hi, margin, lo >= 0, integral, (below, above), open_top)
    decimals = None if integral else decimals_of(as_float)
    single = not integral and read_from_single(as_float)
    column = NumericColumn(
        key, *wide, integer=integral, nullable=nullable, decimals=decimals, float32=single
    )
    listed = listed_values(as_float, column.step) if not integral else ()
    heavy = heavy_values(as_float, column.step) if not listed else []
    if listed or heavy:
        atoms = tuple(sorted(v for v, _ in heavy))
        column = replace(column, atoms=atoms, values=listed)
    return column, (lo, hi)


def listed_values(values: np.ndarray, step: float | None) -> tuple[float, ...]:
    """The values a public column of fractional numbers takes, when it takes few and
    each is common: at most :data:`FEW_VALUES` distinct values, each seen at least
    :data:`RARE` times (the Good-Turing estimate of the share of values the public rows
    did not show is the share they show once: none here). Bracket midpoints and coded
    answers (years married 0.5, 2.5, 6, 9, 13, 16.5, 23) are such columns; a value
    between two of them is no value of the column. Empty otherwise."""
    found, counts = np.unique(values, return_counts=True)
    if not 1 < found.size <= FEW_VALUES or int(counts.min()) < RARE:
        return ()
    return tuple(float(v) for v in np.unique(on_grid(found, step)))


def _missing_words(
    public: pd.DataFrame,
    na_values: Sequence[str],
    categorical: Sequence[str],
    label: str | None = None,
) -> list[str]:
    """Common missing words (:data:`~dpevolve.data.cells.MISSING_WORDS`) that stand for
    missing in the public table: each fills the gaps of a column whose other cells are
    numbers, and no column holds it among other values. Declared in ``na_values``, they
    read as missing in the private table too (a word not listed is not a number). The
    ``label`` is never missing: a word among its codes (NIST's income deciles: N) is one
    of its values, as in a ``categorical`` column."""
    found: set[str] = set()
    held: set[str] = set()
    kept = {*map(str, categorical), *([str(label)] if label is not None else [])}
    for name in public.columns:
        cells = read_cells(public[name], na_values)
        assert cells.texts is not None
        present = ~cells.missing
        texts = {
            t
            for t in cells.texts[present & np.isnan(cells.numbers)]
            if not COMMA_NUMBER.fullmatch(t)
        }  # numbers with a comma are refused later, by name
        numbers = bool((~np.isnan(cells.numbers[present])).any())
        if texts and texts <= MISSING_WORDS and numbers and str(name) not in kept:
            found |= texts
        else:
            held |= texts
    return sorted(found - held)


def _refuse_comma_numbers(name: str, values: pd.Series) -> None:
    """Stop on a column of numbers written with a comma (``12,5``): the schema would
    declare texts, and a private ``12,6`` would be undeclared."""
    if values.dtype != object:
        return
    texts = values.dropna().astype(str)
    comma = texts.str.fullmatch(COMMA_NUMBER.pattern)
    written = texts.str.fullmatch(NUMBER.pattern, case=False) | texts.str.strip().isin(
        MISSING_WORDS
    )
    if comma.any() and (comma | written).all():
        raise InputError(
            f"public column '{name}' writes numbers with a comma (like 12,5): write them "
            "with a decimal point and no thousands separator (12.5), or declare the column "
            "by hand if they are codes"
        )


def public_cells(values: pd.Series, na_values: Sequence[str] = ()) -> pd.Series:
    """A public column's cells as the schema will read them (:mod:`dpevolve.data.cells`):
    numbers (float) when every present cell is one, texts otherwise; missing as NaN.

    Codes written with a leading zero (``01``, ``007``) stay texts: declared as text
    values, they read back as written, where a number would lose the zero.
    """
    cells = read_cells(values, na_values)
    assert cells.texts is not None
    present = ~cells.missing
    stored = pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(
        values.dtype
    )
    written_texts = pd.Series(cells.texts[present & cells.is_text], dtype=object)
    coded = bool(written_texts.str.fullmatch(r"\s*[+-]?0[0-9]+").any())
    written = present.any() and not np.isnan(cells.numbers[present]).any() and not coded
    if stored or written:  # infinities stay numbers here: inference refuses them
        return pd.Series(np.where(present, cells.numbers, np.nan), index=values.index)
    texts = cells.texts.copy()
    texts[~present] = None
    return pd.Series(texts, index=values.index, dtype=object)


#: Whole-number columns with at most this many public values stay categorical (codes,
#: ratings); more, filling :data:`COUNT_FILL` of their span, are counts or ages and stay
#: numeric.
CODES = 12

#: The least share of the whole numbers between the extremes a count's public values
#: take. A quarter, not half: reported counts heap on round values (cps91's weekly
#: hours take 42 of the 101 values from 0 to 100), while a list of codes spread over
#: hundreds or thousands (occupations 10-9950) takes a few percent.
COUNT_FILL = 0.25


#: An open count's public values fill at least this share of the whole numbers between
#: its extremes (happiness' babies per household take 6 of 0-6; codes such as years of
#: schooling 9, 12, 14, 16, 17, 20 take half).
OPEN_FILL = 0.75

#: An open count's high end widens by at least this share of its public span (the
#: private rows of happiness' teens per household reach 7 where the public ones stop at 4).
OPEN_REACH = 1.0

#: An open count has at least this many values (a 0/1/2 column reads well as categories).
OPEN_VALUES = 4


def _counts(values: np.ndarray) -> bool:
    """Whether whole numbers look like a count or an age: more than :data:`CODES`
    distinct values filling at least :data:`COUNT_FILL` of the span between the
    extremes."""
    distinct = np.unique(values)
    span = float(distinct[-1] - distinct[0]) + 1.0
    return bool(distinct.size > CODES and distinct.size >= COUNT_FILL * span)


def _open_count(values: np.ndarray) -> bool:
    """Whether few whole numbers are a count with an open top: :data:`OPEN_VALUES` to
    :data:`CODES` non-negative values filling :data:`OPEN_FILL` of their span,
    the largest seen fewer than :data:`RARE` times (children per family, family sizes
    1-13). As categories the private table's next value up would be ``(other)``; as a
    number it is a number."""
    distinct, seen = np.unique(values, return_counts=True)
    span = float(distinct[-1] - distinct[0]) + 1.0
    return bool(
        OPEN_VALUES <= distinct.size <= CODES
        and distinct[0] >= 0
        and distinct.size >= OPEN_FILL * span
        and seen[-1] < RARE
    )


def _date_column(
    name: str, values: pd.Series, margin: float, nullable: bool, dayfirst: bool | None
) -> DateColumn | None:
    """A date or datetime column when every public cell is a date (time) in one format."""
    if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
        return None
    found = date_format(name, values.astype(str), dayfirst)
    if found is None:
        return None
    kind, pattern = found
    fmt = None if pattern == DEFAULT_FORMATS[kind] else pattern
    probe = DateColumn(name, 0.0, 1.0, True, kind=kind, fmt=fmt)
    units, _ = read_numbers(values, probe)
    lo, hi = float(units.min()), float(units.max())
    # Widen by the margin, then out to whole years: a range a person checks at a glance.
    span = max(hi - lo, 1.0)
    seconds = UNITS[kind]
    first = pd.Timestamp(round((lo - margin * span) * seconds), unit="s").replace(month=1, day=1)
    last = pd.Timestamp(round((hi + margin * span) * seconds), unit="s").replace(month=12, day=31)
    if kind == "datetime":
        # the last moment the format can write, so the YAML reads back the same
        last = last.replace(hour=23, minute=59, second=59 if "%S" in pattern else 0)
    bounds = to_units(pd.DatetimeIndex([first.normalize(), last]), kind)
    return DateColumn(
        name, float(bounds[0]), float(bounds[1]), True, None, nullable, kind=kind, fmt=fmt
    )


__all__ = ["RARE", "Proposal", "propose_columns"]
