"""Validation: every cell checked against the declared domains before it is encoded.

:func:`check_table` finds every bad cell of a table without acting on it;
:func:`validate_table` acts on them as ``on_invalid`` says (``error``, ``drop`` or
``clip``) and returns a :class:`ValidationReport`. :meth:`Schema.check
<dpevolve.data.schema.Schema.check>` and :meth:`Schema.validate
<dpevolve.data.schema.Schema.validate>` are the public doors to both; the streaming
reader (:mod:`dpevolve.data.batches`) validates batch by batch with the same checks
and the same problem texts, so a streamed error matches the in-memory one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd

from dpevolve.data.cells import odd_texts, read_keys, read_numbers
from dpevolve.data.columns import MISSING, OTHER, Column, NumericColumn
from dpevolve.data.messages import first_at, plain_cell
from dpevolve.data.types import DateColumn
from dpevolve.errors import InputError


class SchemaLike(Protocol):
    """What validation reads of a :class:`~dpevolve.data.schema.Schema` (a protocol, so
    this module needs no import of the schema module, which imports it)."""

    @property
    def columns(self) -> tuple[Column, ...]: ...

    @property
    def na_values(self) -> tuple[str, ...]: ...

    @property
    def names(self) -> list[str]: ...

    @property
    def identifier_names(self) -> list[str]: ...

    def __contains__(self, name: object) -> bool: ...


OnInvalid = Literal["error", "drop", "clip"]

# What each check says about the bad cells of one column. PROBLEM_ORDER is the order
# check_table finds them in: the error names the first problem of the first bad column,
# so a streamed error ranks its problems the same way (a message starts with its text).
NOT_NUMBERS = "are not numbers"
COMMA_NUMBERS = "are numbers written with a comma (like 12,5): write 12.5, no thousands separator"
UNLISTED_MISSING = "hold texts such as NA, null or ? that the schema's na_values do not list"
NOT_DATES = "are not dates"
MISSING_CELLS = "are missing (NaN)"
OUTSIDE_RANGE = "lie outside the declared range"
NOT_WHOLE = "are not whole numbers (integer column)"
NOT_LISTED = "are not among the column's declared values"
UNDECLARED = "hold values outside the declared set"
PROBLEM_ORDER = (
    NOT_NUMBERS, COMMA_NUMBERS, UNLISTED_MISSING, NOT_DATES, MISSING_CELLS, OUTSIDE_RANGE,
    NOT_WHOLE, NOT_LISTED, UNDECLARED,
)  # fmt: skip


@dataclass(frozen=True)
class ValidationReport:
    """What validation changed: invalid rows and clipped cells, per column.

    ``rows_in`` is the table's row count ``n``, public under replace-one adjacency;
    ``rows_out`` counts the valid rows, the ones that vote (an invalid row casts an
    empty vote). Every count but ``rows_in`` is computed from the private table and is
    not privatised: the report belongs in the data steward's ledger, which stays with
    the data, never in anything shared.
    """

    mode: str
    rows_in: int
    rows_out: int
    dropped: Mapping[str, int]
    clipped: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "on_invalid": self.mode,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "dropped_by_column": dict(self.dropped),
            "clipped_by_column": dict(self.clipped),
        }

    @property
    def changed(self) -> bool:
        return self.rows_in != self.rows_out or any(self.clipped.values())


@dataclass(frozen=True, eq=False)
class CellProblem:
    """Cells of one column that break the schema in one way (see :func:`check_table`)."""

    column: str
    problem: str
    mask: np.ndarray
    first_row: int
    example: Any

    @property
    def count(self) -> int:
        return int(self.mask.sum())


def check_on_invalid(on_invalid: str) -> None:
    """Refuse an ``on_invalid`` mode other than ``error``, ``drop`` or ``clip``."""
    if on_invalid not in ("error", "drop", "clip"):
        raise InputError(f"on_invalid must be error, drop or clip, got '{on_invalid}'")


def check_columns(labels: Sequence[Any], schema: SchemaLike, what: str) -> None:
    """The table's columns are the schema's: none twice, none undeclared, none lacking.

    ``labels`` are a table's column labels, or a file's header alone (the streaming
    reader checks it before reading a row).
    """
    names = [str(c) for c in labels]
    twice = [c for i, c in enumerate(names) if c in names[:i]]
    if twice:
        raise InputError(f"{what} has column '{twice[0]}' twice (duplicate header)")
    # Identifier columns may be there (or not): validation drops them, nothing models them.
    unknown = [c for c in names if c not in schema and c not in schema.identifier_names]
    if unknown:
        raise InputError(
            f"{what} has column '{unknown[0]}' that the schema does not declare "
            "(drop it or add it to the schema)"
        )
    missing = [n for n in schema.names if n not in labels]
    if missing:
        raise InputError(f"{what} lacks column '{missing[0]}' declared in the schema")


def drop_invalid(frame: pd.DataFrame, problems: Sequence[CellProblem]) -> pd.DataFrame:
    """``frame`` without the rows any problem marks, re-indexed from 0."""
    bad = np.zeros(len(frame), dtype=bool)
    for problem in problems:
        bad |= problem.mask
    if bad.any():
        frame = frame.loc[~bad]
    return frame.reset_index(drop=True)


def validate_table(
    schema: SchemaLike,
    table: pd.DataFrame,
    on_invalid: OnInvalid = "error",
    what: str = "table",
    show_values: bool | None = None,
) -> tuple[pd.DataFrame, ValidationReport]:
    """:meth:`Schema.validate <dpevolve.data.schema.Schema.validate>` (see there)."""
    check_on_invalid(on_invalid)
    if len(table) == 0 and isinstance(table, pd.DataFrame):
        check_columns(list(table.columns), schema, what)
        raise InputError(f"{what} is empty (0 rows)")
    frame, problems, clipped = check_table(schema, table, clip=on_invalid == "clip", what=what)
    if problems and on_invalid == "error":
        first = problems[0]
        raise InputError(
            f"{what} column '{first.column}': {first.count} of {len(table)} rows "
            f"{first.problem} {first_at(first.first_row, first.example, show_values)}; "
            "fix them or use --on-invalid drop|clip"
        )
    dropped: dict[str, int] = {}
    for problem in problems:
        dropped[problem.column] = dropped.get(problem.column, 0) + problem.count
    # No valid row left is not an error: whether a run goes ahead must not depend on
    # one private row (the release is then noise only; the ledger notes the counts).
    frame = drop_invalid(frame, problems)
    report = ValidationReport(on_invalid, len(table), len(frame), dropped, clipped)
    return frame, report


def check_table(
    schema: SchemaLike, table: pd.DataFrame, clip: bool = False, what: str = "table"
) -> tuple[pd.DataFrame, list[CellProblem], dict[str, int]]:
    """:meth:`Schema.check <dpevolve.data.schema.Schema.check>` (see there)."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
    check_columns(list(table.columns), schema, what)
    problems: list[CellProblem] = []
    clipped: dict[str, int] = {}
    out: dict[str, Any] = {}

    def note(column: str, mask: np.ndarray, problem: str, values: pd.Series) -> None:
        if mask.any():
            first = int(np.flatnonzero(mask)[0])
            problems.append(CellProblem(column, problem, mask, first, values.iloc[first]))

    # Each cell is read on its own, from its content and the schema alone (cells.py).
    for column in schema.columns:
        values = table[column.name]
        if isinstance(column, NumericColumn):
            numeric, nan = read_numbers(values, column, schema.na_values)
            unreadable = NOT_NUMBERS
            if isinstance(column, DateColumn):
                unreadable = f"{NOT_DATES} in the column's format {column.pattern!r}"
            bad = np.isnan(numeric) & ~nan
            if bad.any() and not isinstance(column, DateColumn):
                # Say why when it is plain: a decimal comma, a missing word not listed.
                comma, word = odd_texts(values, bad)
                note(column.name, comma, COMMA_NUMBERS, values)
                note(column.name, word, UNLISTED_MISSING, values)
                bad &= ~comma & ~word
            note(column.name, bad, unreadable, values)
            if not column.nullable:
                note(column.name, nan, MISSING_CELLS, values)
            finite = np.isfinite(numeric)
            outside = ~finite & ~np.isnan(numeric) | (
                finite & ((numeric < column.lo) | (numeric > column.hi))
            )
            if clip and outside.any():
                clipped[column.name] = int(outside.sum())
                numeric = np.where(outside, np.clip(numeric, *column.whole_range), numeric)
            elif not clip:
                declared = f"[{plain_cell(column.lo)}, {plain_cell(column.hi)}]"
                note(column.name, outside, f"{OUTSIDE_RANGE} {declared}", values)
            if column.integer:
                # Never rounded: see NumericColumn. Out-of-range cells are judged above.
                inside = np.isfinite(numeric) & ~outside
                fraction = inside & (numeric != np.round(numeric))
                note(column.name, fraction, NOT_WHOLE, values)
            if column.values:
                # Never moved to the nearest value, as a fraction is never rounded (a
                # fraction in an integer column is noted once, above).
                inside = np.isfinite(numeric) & ~outside
                if column.integer:
                    inside &= numeric == np.round(numeric)
                note(column.name, inside & ~column.is_listed(numeric), NOT_LISTED, values)
            out[column.name] = numeric
        else:
            keys, nan = read_keys(values, column, schema.na_values)
            if not column.nullable:
                note(column.name, nan, MISSING_CELLS, values)
            else:
                keys[nan] = MISSING
            undeclared = ~np.isin(keys, np.array(column.keys, dtype=object)) & ~nan
            if column.other:
                # Decided by the declared values alone (no private count is kept or
                # reported): the mapping is data-independent and costs no budget.
                keys[undeclared] = OTHER
            else:
                note(column.name, undeclared, UNDECLARED, values)
            out[column.name] = keys
    return pd.DataFrame(out, index=table.index), problems, clipped


__all__ = [
    "PROBLEM_ORDER",
    "CellProblem",
    "OnInvalid",
    "ValidationReport",
    "check_columns",
    "check_on_invalid",
    "check_table",
    "drop_invalid",
    "validate_table",
]
