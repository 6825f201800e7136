"""Private tables larger than memory: validate and encode them batch by batch.

A :class:`StreamedTable` is a private table on disk (``.csv``, ``.csv.gz`` or
``.parquet``) read with pyarrow in batches of at most ``batch_rows`` rows. Every batch is
validated against the schema and encoded to :class:`~dpevolve.data.encoding.Records`, so the
memory a pass needs is bounded by the batch size, not by the table.

The first pass (run when the table is opened) reads the whole file once: it counts the
rows ``n`` (public under replace-one adjacency; invalid rows count too, they cast an
empty vote) and validates every batch, adding the invalid-row and clip counts of all
batches into one
:class:`~dpevolve.data.schema.ValidationReport`. :meth:`StreamedTable.batches` then returns
a fresh iterator over the encoded batches each call, so the method itself is the
zero-argument callable :meth:`dpevolve.core.evolution.Evolution.run` reads once per round::

    from dpevolve import Synthesizer
    from dpevolve.data.streaming import fit_file

    model = fit_file(Synthesizer("schema.yaml", epsilon=1.0, random_state=0),
                     "private.parquet", batch_rows=250_000)
    model.sample()

Streaming gives what :meth:`Synthesizer.fit <dpevolve.synthesizer.Synthesizer.fit>` on
the table read by pandas gives: the same encoded records, the same validation report
and, in ``on_invalid="error"`` mode, the same error (column, count of bad rows, first
bad row counted over the whole file). CSV columns are read with types forced from the
schema (categorical as text, numeric as float64) because a streaming reader that
guessed types from the first block would fail on a later one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.io import table_suffix
from dpevolve.data.messages import first_at, reader_error
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema, ValidationReport
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from dpevolve.synthesizer import Synthesizer

OnInvalid = Literal["error", "drop", "clip"]

DEFAULT_BATCH_ROWS = 250_000

# pandas' default missing-value markers (``pandas.read_csv``), so a streamed CSV has the
# same missing cells as the same file read whole with pandas.
_NA_VALUES = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
]  # fmt: skip

# The order in which Schema.check finds problems in one column: the in-memory error names
# the first problem of the first bad column, so a streamed error must rank them the same.
_PROBLEM_RANK = (
    "are not numbers",
    "are missing (NaN)",
    "lie outside the declared range",
    "are not whole numbers",
    "hold values outside the declared set",
)

_CSV_CONVERSION = re.compile(r"In CSV column #(\d+): .*CSV conversion error")


# --------------------------------------------------------------------------- validation
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
    if on_invalid not in ("error", "drop", "clip"):
        raise InputError(f"on_invalid must be error, drop or clip, got '{on_invalid}'")
    if len(frame) == 0:
        return frame.reindex(columns=schema.names), BatchTally(0, 0)
    clean, found, clipped = schema.check(frame, clip=on_invalid == "clip", what=what)
    bad = np.zeros(len(clean), dtype=bool)
    problems = []
    for problem in found:
        bad |= problem.mask
        problems.append(
            (problem.column, problem.problem, problem.count, problem.first_row, problem.example)
        )
    clean = clean.loc[~bad].reset_index(drop=True)
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
            kinds = [k for k, start in enumerate(_PROBLEM_RANK) if problem.startswith(start)]
            return order.get(name, len(order)), kinds[0] if kinds else len(_PROBLEM_RANK)

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


def check_columns(names: Sequence[str], schema: Schema, what: str) -> None:
    """The in-memory column checks, from a file's header alone."""
    twice = [c for i, c in enumerate(names) if c in names[:i]]
    if twice:
        raise InputError(f"{what} has column '{twice[0]}' twice (duplicate header)")
    unknown = [c for c in names if c not in schema]
    if unknown:
        raise InputError(
            f"{what} has column '{unknown[0]}' that the schema does not declare "
            "(drop it or add it to the schema)"
        )
    missing = [n for n in schema.names if n not in names]
    if missing:
        raise InputError(f"{what} lacks column '{missing[0]}' declared in the schema")


# ------------------------------------------------------------------------------ reading
class _TextNumeric(Exception):
    """A numeric CSV column holds text: re-read it as text and let validation judge it."""

    def __init__(self, column: str) -> None:
        super().__init__(column)
        self.column = column


def _rebatch(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Re-cut record batches of any size into tables of exactly ``rows`` (the last less)."""
    import pyarrow as pa

    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending)


def encode_clean(table: pa.Table, schema: Schema) -> Records | None:
    """Encode a batch straight from Arrow when every cell is valid; ``None`` otherwise.

    Equals ``encode(schema.validate(frame)[0], schema)`` on such a batch (the tests check
    it) at a fraction of the cost: no Python strings, a hash lookup per category.
    Anything unusual (a missing or out-of-range cell, a category stored as a number)
    returns ``None`` and takes the pandas path, which counts and reports problems.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    layout = Layout.of(schema)
    rows = table.num_rows
    if rows == 0:
        return None
    numeric = np.empty((rows, len(layout.numeric)), dtype=np.float64)
    for j, col in enumerate(layout.numeric):
        cells = table.column(col.name)
        kind = cells.type
        if cells.null_count or not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            return None
        values = cells.to_numpy().astype(np.float64, copy=False)
        if not (np.isfinite(values).all() and values.min() >= col.lo and values.max() <= col.hi):
            return None
        if col.integer and not np.array_equal(values, np.round(values)):
            return None  # a non-integer cell is invalid: let validation count it
        numeric[:, j] = (values - col.lo) / col.range
    codes = np.empty((rows, len(layout.categorical)), dtype=np.int32)
    for j, cat in enumerate(layout.categorical):
        cells = table.column(cat.name)
        kind = cells.type
        if pa.types.is_dictionary(kind):
            kind = kind.value_type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
            return None
        index = pc.index_in(cells, value_set=pa.array(cat.keys, type=pa.string()))
        if index.null_count:  # a missing cell or a value outside the declared set
            return None
        codes[:, j] = index.to_numpy()
    return Records(numeric, codes)


def _canonical_keys(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Read CSV category text the way pandas' type inference would have.

    pandas reads a column of numbers as numbers, so ``1.0`` (how pandas writes an integer
    column with gaps) matches the declared value ``1``; a text reader sees ``"1.0"``.
    Only cells outside the declared set are looked at, so clean tables pay nothing.
    """
    for column in schema.columns:
        if not isinstance(column, CategoricalColumn):
            continue
        values = frame[column.name]
        outside = values.notna() & ~values.isin(column.keys)
        if not outside.any():
            continue
        number = pd.to_numeric(values[outside], errors="coerce")
        number = number[np.isfinite(number.to_numpy(dtype=np.float64))]
        if len(number) == 0:
            continue
        as_key = [str(int(v)) if float(v).is_integer() else str(float(v)) for v in number]
        declared = set(column.keys)
        fixed = pd.Series(as_key, index=number.index, dtype=object)
        fixed = fixed[fixed.isin(declared)]
        if len(fixed):
            values = values.astype(object)
            values.loc[fixed.index] = fixed
            frame[column.name] = values
    return frame


class StreamedTable:
    """A private table on disk, validated and encoded in batches of ``batch_rows``.

    Opening the table reads it once: it counts the rows, validates every batch and
    raises the error :meth:`Schema.validate` would raise on the whole table.

    Parameters
    ----------
    path
        A ``.csv``, ``.csv.gz`` or ``.parquet`` file.
    schema
        The declared domains (never inferred from the private table).
    batch_rows
        Rows per batch: the memory of a pass is a few batches (for Parquet, also
        about one row group of the file, which the reader decompresses at once).
    on_invalid
        ``error``, ``drop`` or ``clip``, as in :meth:`Schema.validate`.
    what
        How error messages name the table.
    show_values
        Let error messages quote a cell; ``None`` follows
        :func:`dpevolve.data.messages.show_values` (off by default).

    Attributes
    ----------
    n : int
        Rows in the file, valid or not: the public row count the run uses.
    rows : int
        Valid rows, the ones that vote (private: for integrity checks only).
    report : ValidationReport
        Invalid-row and clip counts over the whole table (private).

    Raises
    ------
    InputError
        Missing or unreadable file, a column the schema does not declare (or lacks), an
        empty table, or (``on_invalid="error"``) cells outside the schema, naming the
        column and how many rows.
    """

    def __init__(
        self,
        path: str | Path,
        schema: Schema,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        on_invalid: OnInvalid = "error",
        what: str = "private table",
        show_values: bool | None = None,
    ) -> None:
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)):
            raise InputError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        if batch_rows < 1:
            raise InputError(f"batch_rows must be a positive integer, got {batch_rows}")
        if on_invalid not in ("error", "drop", "clip"):
            raise InputError(f"on_invalid must be error, drop or clip, got '{on_invalid}'")
        self.path = Path(path)
        self.schema = schema
        self.batch_rows = int(batch_rows)
        self.on_invalid: OnInvalid = on_invalid
        self.what = what
        self.show_values = show_values
        self.format = "parquet" if table_suffix(self.path) in (".parquet", ".pq") else "csv"
        if not self.path.is_file():
            raise InputError(f"{what} file not found: {self.path}")
        # Numeric CSV columns found to hold text: read as text so validation can count
        # the non-numbers exactly as pandas would (instead of the reader failing).
        self._text_columns: set[str] = set()
        self._stamp = self._file_stamp()
        self.report = self._scan()
        self.rows = self.report.rows_out
        self.n = self.report.rows_in

    def __repr__(self) -> str:
        return (
            f"StreamedTable({str(self.path)!r}, n={self.n}, batch_rows={self.batch_rows}, "
            f"on_invalid={self.on_invalid!r})"
        )

    def __len__(self) -> int:
        return self.rows

    # ------------------------------------------------------------------ passes
    def batches(self) -> TableStream:
        """A fresh pass over the encoded valid rows, one :class:`Records` per batch.

        Nothing is read until the first batch is asked for. Pass the bound method
        (``table.batches``) where a zero-argument callable is wanted.

        Raises
        ------
        InputError
            The file changed since it was first read (its row count and validation
            report, which the run's budget and ledger use, would be stale).
        """
        return TableStream(self)

    def _records(self) -> Iterator[Records]:
        self._check_unchanged()
        rows = 0
        try:
            for records, _ in self._encoded():
                if len(records):
                    rows += len(records)
                    yield records
        except _TextNumeric:
            rows = -1
        if rows != self.rows:
            raise InputError(
                f"{self.what} {self.path} changed while being read: {rows} valid rows now, "
                f"{self.rows} on the first pass"
            )

    def _scan(self) -> ValidationReport:
        while True:
            tally = Tally(self.schema, self.on_invalid, self.what, self.show_values)
            try:
                for _, batch in self._encoded():
                    tally.add(batch)
            except _TextNumeric as retry:
                self._text_columns.add(retry.column)
                continue
            return tally.report()

    def _encoded(self) -> Iterator[tuple[Records, BatchTally]]:
        for table in _rebatch(self._arrow_batches(), self.batch_rows):
            records = encode_clean(table, self.schema)
            if records is not None:
                yield records, BatchTally(len(records), len(records))
                continue
            frame = table.to_pandas()
            if self.format == "csv":
                frame = _canonical_keys(frame, self.schema)
            yield encode_batch(frame, self.schema, self.on_invalid, self.what)

    # ----------------------------------------------------------------- readers
    def _arrow_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        try:
            if self.format == "parquet":
                yield from self._parquet_batches()
            else:
                yield from self._csv_batches()
        except (pa.ArrowException, OSError) as exc:
            message = reader_error(exc, self.show_values)
            raise InputError(f"{self.what} {self.path} could not be read: {message}") from None

    def _parquet_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path) as source:
            # pandas stores a non-default index as extra columns: not part of the table.
            names = [n for n in source.schema_arrow.names if not n.startswith("__index_level_")]
            check_columns(names, self.schema, self.what)
            yield from source.iter_batches(batch_size=self.batch_rows, columns=self.schema.names)

    def _csv_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {
            c.name: pa.float64()
            if isinstance(c, NumericColumn) and c.name not in self._text_columns
            else pa.string()
            for c in self.schema.columns
        }
        # Blocks of about one batch keep the reader's buffers proportional to batch_rows.
        block = int(min(max(self.batch_rows * 128, 1 << 20), 64 << 20))
        try:
            reader = pcsv.open_csv(
                self.path,
                read_options=pcsv.ReadOptions(block_size=block),
                convert_options=pcsv.ConvertOptions(
                    column_types=types,
                    null_values=_NA_VALUES,
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=True,
                ),
            )
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):
                raise InputError(f"{self.what} {self.path} is empty") from None
            self._raise_text_numeric(exc, self._header())
            raise
        names = reader.schema.names
        check_columns(names, self.schema, self.what)
        try:
            with reader:
                yield from reader
        except pa.ArrowInvalid as exc:
            self._raise_text_numeric(exc, names)
            raise

    def _header(self) -> list[str]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {c.name: pa.string() for c in self.schema.columns}
        probe = pcsv.open_csv(
            self.path,
            read_options=pcsv.ReadOptions(block_size=1 << 20),
            convert_options=pcsv.ConvertOptions(column_types=types),
        )
        with probe:
            names = list(probe.schema.names)
        check_columns(names, self.schema, self.what)
        return names

    def _raise_text_numeric(self, exc: Exception, names: Sequence[str]) -> None:
        match = _CSV_CONVERSION.search(str(exc))
        if match is None:
            return
        index = int(match.group(1))
        if index < len(names) and names[index] not in self._text_columns:
            raise _TextNumeric(names[index]) from None

    # -------------------------------------------------------------- integrity
    def _file_stamp(self) -> tuple[int, int]:
        stat = os.stat(self.path)
        return stat.st_size, stat.st_mtime_ns

    def _check_unchanged(self) -> None:
        try:
            stamp = self._file_stamp()
        except OSError:
            raise InputError(f"{self.what} file disappeared: {self.path}") from None
        if stamp != self._stamp:
            raise InputError(
                f"{self.what} {self.path} changed since it was first read; "
                "its row count and validation report are stale (start the run again)"
            )


class TableStream(Iterator[Records]):
    """One pass over a :class:`StreamedTable`; the file is opened on the first ``next``.

    ``table`` lets a distributed backend recognise the source and ship it to its
    workers once instead of once per round.
    """

    def __init__(self, table: StreamedTable) -> None:
        self.table = table
        self._records: Iterator[Records] | None = None

    def __iter__(self) -> TableStream:
        return self

    def __next__(self) -> Records:
        if self._records is None:
            self._records = self.table._records()
        return next(self._records)


# ------------------------------------------------------------------------------ fitting
def fit_file(
    model: Synthesizer,
    path: str | Path,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Synthesizer:
    """Deprecated: use :meth:`Synthesizer.fit_file <dpevolve.synthesizer.Synthesizer.fit_file>`."""
    return model.fit_file(path, batch_rows)


__all__ = [
    "DEFAULT_BATCH_ROWS",
    "BatchTally",
    "StreamedTable",
    "TableStream",
    "Tally",
    "check_columns",
    "empty_records",
    "encode_batch",
    "encode_clean",
    "fit_file",
    "validate_batch",
]
