"""The Python reader's cell rules as SQL: validation inside the database (docs/scale.md).

:mod:`dpevolve.data.cells` and :func:`~dpevolve.data.validation.check_table` read every
cell from its own content and the schema alone. This module writes the same rules as
SQL expressions over one table, for DuckDB and PostgreSQL (:class:`Dialect`), so that a
database validates its own rows and hands back only the validated values of the valid
rows, and one row of counts for the report. A test holds the two readers equal cell for
cell on adversarial tables (``tests/test_database_cells.py``).

What a cell is depends on how the table stores its column (:data:`STORAGE`): a text
column holds texts (as a CSV does), the others numbers, booleans or timestamps, each
read as :mod:`dpevolve.data.cells` reads a cell of that Python type. Date texts are the
one rule SQL does not restate: each distinct date text is parsed by the Python reader
itself (:func:`~dpevolve.data.cells.read_numbers`) and the database joins the result
(:class:`DateTexts`), so the two readers cannot disagree on a format's corners.

Each column ``j`` gives ``v{j}`` (the validated value: a number on the declared scale,
clipped when asked; a categorical column's index into :attr:`CategoricalColumn.keys`)
and ``p{j}`` (the cell's problem, :data:`PROBLEMS`; 0 when valid), plus ``o{j}`` (the cell
lay outside the declared range) for numeric columns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Literal

import numpy as np

from dpevolve.data.cells import MISSING_WORDS, text_numbers
from dpevolve.data.columns import MISSING, OTHER, CategoricalColumn, Column, NumericColumn
from dpevolve.data.messages import plain_cell
from dpevolve.data.types import UNITS, DateColumn
from dpevolve.data.validation import (
    COMMA_NUMBERS,
    MISSING_CELLS,
    NOT_DATES,
    NOT_LISTED,
    NOT_NUMBERS,
    NOT_WHOLE,
    OUTSIDE_RANGE,
    UNDECLARED,
    UNLISTED_MISSING,
)
from dpevolve.errors import InputError

__all__ = [
    "PROBLEMS",
    "STORAGE",
    "DateTexts",
    "Dialect",
    "Storage",
    "checked_sql",
    "problem_text",
    "storage_of",
]

Storage = Literal["text", "integer", "float", "boolean", "timestamp"]

#: How a database type name (lower case, without its size) is stored, as a cell reads.
STORAGE: dict[str, Storage] = {
    **dict.fromkeys(
        ["varchar", "text", "character varying", "character", "char", "bpchar", "string",
         "name", "citext", "null", '"null"'], "text"),
    **dict.fromkeys(
        ["tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint",
         "uinteger", "ubigint", "uhugeint", "int2", "int4", "int8", "int", "serial",
         "bigserial"], "integer"),
    **dict.fromkeys(
        ["float", "double", "real", "float4", "float8", "double precision", "decimal",
         "numeric"], "float"),
    **dict.fromkeys(["boolean", "bool"], "boolean"),
    **dict.fromkeys(
        ["date", "timestamp", "timestamp without time zone", "timestamp with time zone",
         "timestamptz", "timestamp_s", "timestamp_ms", "timestamp_ns", "datetime"],
        "timestamp"),
}  # fmt: skip

#: Problem codes, in the order :func:`~dpevolve.data.validation.check_table` notes them.
PROBLEMS = {1: COMMA_NUMBERS, 2: UNLISTED_MISSING, 3: NOT_NUMBERS, 4: MISSING_CELLS,
            5: OUTSIDE_RANGE, 6: NOT_WHOLE, 7: UNDECLARED, 8: NOT_LISTED}  # fmt: skip

# Python's str.strip() whitespace (what odd_texts strips) and the ASCII blanks a
# number may carry (cells.NUMBER's \s under re.ASCII).
_STRIP = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)
_BLANK = "[\t\n\x0b\x0c\r ]"
_NUMBER = rf"{_BLANK}*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity){_BLANK}*"
_INFINITY = rf"{_BLANK}*[+-]?(inf|infinity){_BLANK}*"
_COMMA = rf"{_BLANK}*[+-]?[0-9]+(,[0-9]+)+{_BLANK}*"
_BOOLEAN_WORDS = {True: ("True", "TRUE", "true"), False: ("False", "FALSE", "false")}


def storage_of(type_name: str, column: str, what: str) -> Storage:
    """How a database column of type ``type_name`` stores its cells.

    Raises
    ------
    InputError
        A type no cell rule reads (a list, a struct, a blob), naming the column.
    """
    base = type_name.lower().split("(")[0].strip()
    if base.endswith("[]") or base not in STORAGE:
        raise InputError(
            f"{what} column '{column}' is stored as {type_name}: store it as text, a number, "
            "a boolean, a date or a timestamp"
        )
    return STORAGE[base]


def _big(text: str) -> str:
    """The exact decimal ``text`` as an SQL numeric literal (PostgreSQL)."""
    return f"CAST('{text}' AS numeric)"


def _halfway(exponent: int) -> str:
    """``2**exponent`` exactly, in decimal (the rounding thresholds of float8)."""
    with localcontext() as context:
        context.prec = 1200
        return format(Decimal(2) ** exponent, "f")


# A decimal text rounds to infinity from half an ulp above the largest double on, and to
# zero at half the smallest subnormal or below (ties to even).
_OVERFLOW = format(Decimal(2) ** 1024 - Decimal(2) ** 970, "f")
_UNDERFLOW = _halfway(-1075)


@dataclass(frozen=True)
class Dialect:
    """The SQL of one database: ``duckdb`` or ``postgres``."""

    name: Literal["duckdb", "postgres"]

    def quote(self, identifier: str) -> str:
        return '"' + identifier.replace('"', '""') + '"'

    def text(self, value: str) -> str:
        """A string literal."""
        return "'" + value.replace("'", "''") + "'"

    def double(self, value: float) -> str:
        """A float64 literal, exact (its shortest text read back)."""
        if math.isnan(value):
            return "CAST('NaN' AS DOUBLE PRECISION)"
        if math.isinf(value):
            return f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE PRECISION)"
        return f"CAST('{value!r}' AS DOUBLE PRECISION)"

    def matches(self, expr: str, pattern: str, case: bool = True) -> str:
        """``expr`` is wholly written by the regular expression ``pattern``."""
        if self.name == "duckdb":
            flags = "" if case else ", 'i'"
            return f"regexp_full_match({expr}, {self.text(pattern)}{flags})"
        return f"({expr} {'~' if case else '~*'} {self.text('^(' + pattern + ')$')})"

    def is_nan(self, expr: str) -> str:
        if self.name == "duckdb":
            return f"isnan({expr})"
        return f"({expr} = CAST('NaN' AS DOUBLE PRECISION))"

    def is_infinite(self, expr: str) -> str:
        if self.name == "duckdb":
            return f"isinf({expr})"
        return f"({expr} IN ('Infinity'::float8, '-Infinity'::float8))"

    def strip(self, expr: str) -> str:
        """``expr`` without Python's str.strip() whitespace at either end."""
        function = "trim" if self.name == "duckdb" else "btrim"
        return f"{function}({expr}, {self.text(_STRIP)})"

    def number(self, expr: str) -> str:
        """The float64 a text matching cells.NUMBER writes, correctly rounded as Python's
        float() reads it (beyond float64: infinity; below its least subnormal: zero)."""
        blank = self.text("\t\n\x0b\x0c\r ")
        trimmed = f"{'trim' if self.name == 'duckdb' else 'btrim'}({expr}, {blank})"
        if self.name == "duckdb":  # DuckDB reads these as Python does (a test holds it)
            return f"CAST({trimmed} AS DOUBLE)"
        sign = f"(CASE WHEN left({trimmed}, 1) = '-' THEN -1.0 ELSE 1.0 END)::float8"
        big = f"abs(CAST({trimmed} AS numeric))"
        return (
            f"(CASE WHEN {self.matches(expr, _INFINITY, case=False)} "
            f"THEN {sign} * 'Infinity'::float8 "
            f"WHEN {big} >= {_big(_OVERFLOW)} THEN {sign} * 'Infinity'::float8 "
            f"WHEN {big} <= {_big(_UNDERFLOW)} THEN {sign} * 0.0::float8 "
            f"ELSE CAST({trimmed} AS float8) END)"
        )

    def seconds(self, expr: str) -> str:
        """Whole seconds since 1970-01-01 (UTC) of a date or timestamp."""
        if self.name == "duckdb":
            return f"floor(epoch(CAST({expr} AS TIMESTAMP)))"
        return f"floor(extract(epoch from {expr})::float8)"


@dataclass(frozen=True)
class DateTexts:
    """A temporary table ``name(t, u)``: each distinct date text of a column and its
    units as the Python reader reads it (NULL: not a date)."""

    column: str
    name: str


def problem_text(column: Column, code: int) -> str:
    """The problem text :func:`~dpevolve.data.validation.check_table` gives ``code``."""
    if code == 3 and isinstance(column, DateColumn):
        return f"{NOT_DATES} in the column's format {column.pattern!r}"
    if code == 5 and isinstance(column, NumericColumn):
        return f"{OUTSIDE_RANGE} [{plain_cell(column.lo)}, {plain_cell(column.hi)}]"
    return PROBLEMS[code]


@dataclass(frozen=True)
class _Cell:
    """One column's cells: ``missing`` (SQL boolean), ``number`` (float64 or NULL), and
    for texts ``comma``/``word`` (why a text is not a number)."""

    missing: str
    number: str
    comma: str = "FALSE"
    word: str = "FALSE"


def _tokens(sql: Dialect, na_values: Sequence[str]) -> tuple[list[str], list[float]]:
    numbers = text_numbers(np.array(list(na_values), dtype=object))
    return [sql.text(t) for t in na_values], [float(x) for x in numbers if not math.isnan(x)]


def _in(expr: str, items: Sequence[str]) -> str:
    """``expr`` is one of ``items``: TRUE or FALSE, never NULL (a NULL ``expr`` is in none)."""
    return f"COALESCE({expr} IN ({', '.join(items)}), FALSE)" if items else "FALSE"


def _cell(
    sql: Dialect, x: str, storage: Storage, na_values: Sequence[str], date: DateColumn | None,
    dates: DateTexts | None,
) -> _Cell:  # fmt: skip
    """What :func:`~dpevolve.data.cells.read_cells` (and ``read_numbers``) read."""
    texts, numbers = _tokens(sql, na_values)
    token_numbers = [sql.double(v) for v in numbers]
    if storage == "text":
        written = sql.matches(x, _NUMBER, case=False)
        value = f"(CASE WHEN {written} THEN {sql.number(x)} END)"
        missing = f"({x} IS NULL OR {x} = '' OR {_in(x, texts)} OR {_in(value, token_numbers)})"
        if date is not None:
            assert dates is not None
            value = f"{dates.name}.u"
            return _Cell(missing, value)
        comma = sql.matches(x, _COMMA)
        word = _in(sql.strip(x), [sql.text(w) for w in sorted(MISSING_WORDS)])
        return _Cell(missing, value, comma, word)
    if storage in ("integer", "float"):
        value = f"CAST({x} AS DOUBLE PRECISION)"
        nan = sql.is_nan(value) if storage == "float" else "FALSE"
        missing = f"({x} IS NULL OR {nan} OR {_in(value, token_numbers)})"
        return _Cell(missing, value)
    if storage == "boolean":
        spelled = f"(CASE WHEN {x} THEN 'True' ELSE 'False' END)"
        return _Cell(f"({x} IS NULL OR {_in(spelled, texts)})", "NULL")
    if date is None:  # a timestamp is not a number
        return _Cell(f"({x} IS NULL)", "NULL")
    return _Cell(f"({x} IS NULL)", f"floor({sql.seconds(x)} / {UNITS[date.kind]})")


def _numeric(sql: Dialect, j: int, column: NumericColumn, cell: _Cell, clip: bool) -> list[str]:
    """``v``, ``p`` and ``o`` of a numeric column (see ``check_table``)."""
    m, x = cell.missing, cell.number
    lo, hi = sql.double(column.lo), sql.double(column.hi)
    outside = (
        f"(NOT {m} AND {x} IS NOT NULL AND ({sql.is_infinite(x)} OR {x} < {lo} OR {x} > {hi}))"
    )
    value = f"(CASE WHEN {m} THEN NULL ELSE {x} END)"
    if clip:
        low, high = (sql.double(v) for v in column.whole_range)
        value = f"(CASE WHEN {outside} THEN LEAST(GREATEST({x}, {low}), {high}) ELSE {value} END)"
    bad = (
        f"WHEN NOT {m} AND {x} IS NULL THEN "
        f"(CASE WHEN {cell.comma} THEN 1 WHEN {cell.word} THEN 2 ELSE 3 END)"
    )
    whole = f"WHEN {x} <> floor({x}) THEN 6 " if column.integer else ""
    if column.values:
        whole += f"WHEN NOT ({_listed(sql, x, column)}) THEN 8 "
    problem = (
        f"(CASE {bad} WHEN {m} THEN {0 if column.nullable else 4} "
        f"WHEN {outside} THEN {0 if clip else 5} {whole}ELSE 0 END)"
    )
    return [f"{value} AS v{j}", f"{problem} AS p{j}", f"{outside} AS o{j}"]


def _listed(sql: Dialect, x: str, column: NumericColumn) -> str:
    """Whether number ``x`` is one of the column's declared ``values``, as
    :meth:`~dpevolve.data.columns.NumericColumn.is_listed` says: equal to one, or for a
    ``float32`` column rounding to one in single precision. No cast to single: where a
    double is past its range PostgreSQL refuses the query (DuckDB rounds); each value
    takes the doubles between the midpoints to its single neighbours instead, the
    midpoints themselves where its last bit is even (ties to even)."""
    if not column.float32:
        return f"{x} IN ({', '.join(sql.double(v) for v in column.values)})"
    spans = []
    for value in np.asarray(column.values, dtype=np.float32):
        below = float(np.nextafter(value, np.float32(-np.inf)))
        above = float(np.nextafter(value, np.float32(np.inf)))
        lo, hi = (below + float(value)) / 2, (float(value) + above) / 2
        edge = ">=" if int(value.view(np.uint32)) % 2 == 0 else ">"
        top = "<=" if edge == ">=" else "<"
        spans.append(f"({x} {edge} {sql.double(lo)} AND {x} {top} {sql.double(hi)})")
    return " OR ".join(spans)


def _declared_numbers(column: CategoricalColumn) -> dict[float, int]:
    """Each finite declared number and the key index it reads as (the first declared)."""
    keys = list(column.keys)
    out: dict[float, int] = {}
    for v in column.declared:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out.setdefault(float(v), keys.index(str(v)))
    return out


def _key_matches(sql: Dialect, x: str, storage: Storage, column: CategoricalColumn) -> list[str]:
    """``WHEN ... THEN index`` for a cell equal to a key's text, by its stored type."""
    out = []
    for k, key in enumerate(column.keys):
        if storage == "text":
            out.append(f"WHEN {x} = {sql.text(key)} THEN {k}")
        elif storage == "boolean" and key in ("True", "False"):
            out.append(f"WHEN {x} = {key.upper()} THEN {k}")
        elif storage == "integer" and key == str(_integer(key)):
            out.append(f"WHEN {x} = {key} THEN {k}")  # exact, beyond 2**53 too
        elif storage == "float":
            number = float(text_numbers(np.array([key], dtype=object))[0])
            # the stored float whose text (cells._float_text) is the key
            whole = math.isfinite(number) and number.is_integer()
            if not math.isnan(number) and (str(int(number)) if whole else repr(number)) == key:
                out.append(f"WHEN CAST({x} AS DOUBLE PRECISION) = {sql.double(number)} THEN {k}")
    return out


def _integer(key: str) -> int | None:
    """The integer a key's text writes in decimal digits, if it does."""
    return int(key) if key.lstrip("-").isdigit() and key.isascii() else None


def _categorical(
    sql: Dialect, j: int, x: str, column: CategoricalColumn, cell: _Cell, storage: Storage
) -> list[str]:
    """``v`` and ``p`` of a categorical column (see ``read_keys`` and ``check_table``)."""
    whens = _key_matches(sql, x, storage, column)
    if storage in ("text", "integer", "float"):
        number = cell.number
        whens += [
            f"WHEN {number} = {sql.double(f)} THEN {k}"
            for f, k in _declared_numbers(column).items()
        ]
    if storage == "text":
        keys = list(column.keys)
        for flag in (v for v in column.declared if isinstance(v, bool)):
            words = [sql.text(w) for w in _BOOLEAN_WORDS[flag]]
            whens.append(f"WHEN {_in(x, words)} THEN {keys.index(str(flag))}")
    if storage == "timestamp":
        raise InputError(
            f"column '{column.name}' is categorical but stored as a timestamp: store it as text"
        )
    keys = list(column.keys)
    missing = keys.index(MISSING) if column.nullable else -2
    other = keys.index(OTHER) if column.other else -1
    index = f"(CASE WHEN {cell.missing} THEN {missing} {' '.join(whens)} ELSE {other} END)"
    problem = (
        f"(CASE WHEN {cell.missing} THEN {0 if column.nullable else 4} "
        f"WHEN {index} = -1 THEN 7 ELSE 0 END)"
    )
    return [f"{index} AS v{j}", f"{problem} AS p{j}"]


def checked_sql(
    sql: Dialect,
    relation: str,
    columns: Sequence[Column],
    storage: Sequence[Storage],
    na_values: Sequence[str],
    clip: bool,
    dates: Sequence[DateTexts] = (),
    row_number: str | None = None,
) -> str:
    """``SELECT v0, p0, o0, v1, p1, ... FROM relation``: every row, checked.

    Parameters
    ----------
    sql
        The database's dialect.
    relation
        The table (or a table function) to read, as SQL.
    columns, storage
        The schema's columns in order, and how the relation stores each.
    na_values
        The schema's missing tokens.
    clip
        Clip out-of-range cells (``on_invalid="clip"``) instead of marking them.
    dates
        The date-text tables of the date columns stored as text.
    row_number
        Also select ``row_number`` (0-based, in this order) as ``r``: for the first bad row.
    """
    by_column = {d.column: d for d in dates}
    selects: list[str] = []
    joins: list[str] = []
    for j, (column, kind) in enumerate(zip(columns, storage, strict=True)):
        x = f"t.{sql.quote(column.name)}"
        date = column if isinstance(column, DateColumn) else None
        table = by_column.get(column.name)
        if date is not None and kind == "text":
            assert table is not None, column.name
            joins.append(f"LEFT JOIN {table.name} ON {table.name}.t = {x}")
        cell = _cell(sql, x, kind, na_values, date, table)
        if isinstance(column, NumericColumn):
            selects += _numeric(sql, j, column, cell, clip)
        else:
            assert isinstance(column, CategoricalColumn)
            selects += _categorical(sql, j, x, column, cell, kind)
    if row_number is not None:
        selects.append(f"row_number() OVER (ORDER BY {row_number}) - 1 AS r")
    return f"SELECT {', '.join(selects)} FROM {relation} AS t {' '.join(joins)}"
