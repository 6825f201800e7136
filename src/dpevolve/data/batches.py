"""One batch of a private table at a time: validate, tally and encode it.

The streaming reader (:class:`~dpevolve.data.streaming.StreamedTable`) and the Dask
workers (:mod:`dpevolve.backends.dask_worker`) validate a table batch by batch with
:func:`validate_batch`, which never raises on bad cells: it returns a small
:class:`BatchTally`. A :class:`Tally` adds the batches' tallies in file order and gives
the verdict :meth:`Schema.validate <dpevolve.data.schema.Schema.validate>` gives on the
whole table: the same report and, in ``on_invalid="error"`` mode, the same error
(column, count of bad rows, first bad row counted over the whole table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpevolve.data.cells import NUMBER
from dpevolve.data.columns import NumericColumn
from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.messages import first_at
from dpevolve.data.types import DateColumn
from dpevolve.data.validation import (
    PROBLEM_ORDER,
    OnInvalid,
    ValidationReport,
    check_on_invalid,
    drop_invalid,
)
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from dpevolve.data.schema import Schema


@dataclass(frozen=True)
class BatchTally:
    """What validating one batch found (small: shipped from Dask workers to the driver).

    ``problems`` holds ``(column, problem, count, first row in the batch, example)``.
    """

    rows_in: int
    rows_out: int
    problems: tuple[tuple[str, str, int, int, Any], ...] = ()
    clipped: tuple[tuple[str, int], ...] = ()


def validate_batch(
    frame: pd.DataFrame, schema: Schema, on_invalid: OnInvalid, what: str = "private table"
) -> tuple[pd.DataFrame, BatchTally]:
    """Validate one batch as :meth:`Schema.validate` would, without raising on bad cells.

    Parameters
    ----------
    frame
        One batch of the raw table (any row index).
    schema
        The declared domains.
    on_invalid
        ``error``, ``drop`` or ``clip``. In ``error`` mode bad rows are dropped too; the
        caller raises once it has seen every batch (:class:`Tally`).
    what
        How messages name the table.

    Returns
    -------
    frame : pandas.DataFrame
        The valid rows, in schema column order with canonical dtypes.
    tally : BatchTally
        Row counts, every problem found and the clipped cells.
    """
    check_on_invalid(on_invalid)
    if len(frame) == 0:
        return frame.reindex(columns=schema.names), BatchTally(0, 0)
    clean, found, clipped = schema.check(frame, clip=on_invalid == "clip", what=what)
    problems = [
        (problem.column, problem.problem, problem.count, problem.first_row, problem.example)
        for problem in found
    ]
    clean = drop_invalid(clean, found)
    tally = BatchTally(
        rows_in=len(frame),
        rows_out=len(clean),
        problems=tuple(problems),
        clipped=tuple((k, int(v)) for k, v in clipped.items()),
    )
    return clean, tally


@dataclass
class _Problem:
    count: int
    first_row: int
    example: Any


class Tally:
    """Validation counts added over batches, and the whole-table verdict.

    Batches must be added in file order: the first bad row an error names is counted
    from the start of the table.
    """

    def __init__(
        self,
        schema: Schema,
        on_invalid: OnInvalid,
        what: str = "private table",
        show_values: bool | None = None,
    ) -> None:
        self.schema = schema
        self.on_invalid = on_invalid
        self.what = what
        self.show_values = show_values
        self.rows_in = 0
        self.rows_out = 0
        self.clipped: dict[str, int] = {}
        self.problems: dict[tuple[str, str], _Problem] = {}

    def add(self, batch: BatchTally) -> None:
        """Add the next batch (in file order)."""
        for name, problem, count, first, example in batch.problems:
            seen = self.problems.get((name, problem))
            if seen is None:
                self.problems[(name, problem)] = _Problem(count, self.rows_in + first, example)
            else:
                seen.count += count
        for name, count in batch.clipped:
            self.clipped[name] = self.clipped.get(name, 0) + count
        self.rows_in += batch.rows_in
        self.rows_out += batch.rows_out

    def report(self) -> ValidationReport:
        """The report :meth:`Schema.validate` gives on the whole table.

        Raises
        ------
        InputError
            The in-memory error: an empty table; in ``error`` mode the first bad column
            (schema order) with its count of bad rows and the first bad row (its cell
            only when values may be shown).
        """
        if self.rows_in == 0:
            raise InputError(f"{self.what} is empty (0 rows)")
        order = {name: k for k, name in enumerate(self.schema.names)}

        def rank(key: tuple[str, str]) -> tuple[int, int]:
            name, problem = key
            kinds = [k for k, start in enumerate(PROBLEM_ORDER) if problem.startswith(start)]
            return order.get(name, len(order)), kinds[0] if kinds else len(PROBLEM_ORDER)

        ranked = sorted(self.problems, key=rank)
        if self.on_invalid == "error" and ranked:
            name, problem = ranked[0]
            found = self.problems[ranked[0]]
            where = first_at(found.first_row, found.example, self.show_values)
            raise InputError(
                f"{self.what} column '{name}': {found.count} of {self.rows_in} rows {problem} "
                f"{where}; fix them or use --on-invalid drop|clip"
            )
        # No valid row left is not an error (see Schema.validate): n is public, the
        # release is then noise only.
        dropped: dict[str, int] = {}
        for name, problem in ranked:
            dropped[name] = dropped.get(name, 0) + self.problems[(name, problem)].count
        clipped = {n: self.clipped[n] for n in sorted(self.clipped, key=lambda n: order.get(n, 0))}
        return ValidationReport(self.on_invalid, self.rows_in, self.rows_out, dropped, clipped)


def empty_records(schema: Schema) -> Records:
    """Zero encoded rows with the schema's layout."""
    layout = Layout.of(schema)
    return Records(
        np.empty((0, len(layout.numeric)), dtype=np.float64),
        np.empty((0, len(layout.categorical)), dtype=np.int32),
    )


def encode_batch(
    frame: pd.DataFrame, schema: Schema, on_invalid: OnInvalid, what: str = "private table"
) -> tuple[Records, BatchTally]:
    """:func:`validate_batch` then :func:`~dpevolve.data.encoding.encode`."""
    clean, tally = validate_batch(frame, schema, on_invalid, what)
    if len(clean) == 0:
        return empty_records(schema), tally
    return encode(clean, schema), tally


def encode_clean(table: pa.Table, schema: Schema) -> Records | None:
    """Encode a batch straight from Arrow when every cell is valid; ``None`` otherwise.

    Equals ``encode(schema.validate(frame)[0], schema)`` on such a batch (the tests check
    it) at a fraction of the cost: no Python strings, a hash lookup per category.
    Anything unusual (a missing or out-of-range cell, a category stored as a number)
    returns ``None`` and takes the pandas path, which counts and reports problems.
    Only cells that read alike on both paths (:mod:`dpevolve.data.cells`) are taken
    here: stored numbers when no missing token is a number, and texts equal to a
    declared value that is neither empty nor a missing token.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = Layout.of(schema)
    rows = table.num_rows
    if rows == 0 or any(NUMBER.fullmatch(token) for token in schema.na_values):
        return None
    numeric = np.empty((rows, len(layout.numeric)), dtype=np.float64)
    for j, col in enumerate(layout.numeric):
        cells = table.column(col.name)
        kind = cells.type
        if cells.null_count == 0 and _plain_numbers(cells, col):
            try:
                cells = pc.cast(cells, pa.float64())  # correctly rounded, as float() is
            except pa.ArrowInvalid:  # beyond float64 (1e400): the pandas path says so
                return None
        elif cells.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            return None
        values = cells.to_numpy().astype(np.float64, copy=False)
        if not (np.isfinite(values).all() and values.min() >= col.lo and values.max() <= col.hi):
            return None
        if col.integer and not np.array_equal(values, np.round(values)):
            return None  # a non-integer cell is invalid: let validation count it
        if col.values and not col.is_listed(values).all():
            return None  # a cell at no declared value, likewise
        numeric[:, j] = (values - col.lo) / col.range
    codes = np.empty((rows, len(layout.categorical)), dtype=np.int32)
    for j, cat in enumerate(layout.categorical):
        cells = table.column(cat.name)
        kind = cells.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            return None
        if any(key == "" or key in schema.na_values for key in cat.keys):
            return None  # a declared value that reads as missing
        index = pc.index_in(cells, value_set=pa.array(cat.keys, type=pa.string()))
        if index.null_count:  # a missing cell or a value outside the declared set
            return None
        codes[:, j] = index.to_numpy()
    return Records(numeric, codes)


# A number as a CSV writer writes it: ASCII, no blanks, no sign but "-" (the rest of
# what data/cells.py reads as a number takes the pandas path).
_PLAIN_NUMBER = r"^-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$"


def _plain_numbers(cells: Any, column: NumericColumn) -> bool:
    """Every cell a text writing a plain number, in a column that is not a date."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = cells.type
    if isinstance(column, DateColumn) or not (
        pa.types.is_string(kind) or pa.types.is_large_string(kind)
    ):
        return False
    return bool(pc.all(pc.match_substring_regex(cells, _PLAIN_NUMBER)).as_py())


__all__ = [
    "BatchTally",
    "Tally",
    "empty_records",
    "encode_batch",
    "encode_clean",
    "validate_batch",
]
