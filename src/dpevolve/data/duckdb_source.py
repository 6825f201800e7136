"""A table in a DuckDB database as a private source (docs/scale.md).

``PATH.duckdb::TABLE`` names table ``TABLE`` (optionally ``schema.table``) of the DuckDB
database file ``PATH.duckdb`` (:func:`parse_location`); the command line takes it where
it takes a private file (``dpevolve synth data.duckdb::people ...``).

:class:`DuckDBTable` reads the table read-only, in Arrow batches of ``batch_rows`` rows,
and validates and encodes every batch with the rules of the Python reader
(:func:`~dpevolve.data.batches.encode_batch`: invalid rows dropped, clipped or refused
as configured, ``n`` counting them all), so the records are the ones the same table
read from a Parquet file gives (a test holds them equal, cell for cell). Opening reads
the table once (its row count and validation report); each round then makes one more
pass, unless the counts run in DuckDB itself
(:class:`~dpevolve.backends.duckdb.DuckDBBackend`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dpevolve.data.batches import BatchTally, Tally, encode_batch
from dpevolve.data.encoding import Records
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.validation import OnInvalid, ValidationReport, check_on_invalid
from dpevolve.errors import InputError
from dpevolve.extras import require

__all__ = ["SEPARATOR", "DuckDBLocation", "DuckDBTable", "parse_location"]

#: Between a DuckDB database file and a table name: ``data.duckdb::people``.
SEPARATOR = "::"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class DuckDBLocation:
    """A table (``name``, optionally ``schema.name``) in the database file ``path``."""

    path: Path
    table: str

    def sql(self) -> str:
        """The table's name quoted for SQL."""
        return ".".join(f'"{part}"' for part in self.table.split("."))

    def __str__(self) -> str:
        return f"{self.path}{SEPARATOR}{self.table}"


def parse_location(text: str | os.PathLike[str]) -> DuckDBLocation | None:
    """``PATH::TABLE`` as a :class:`DuckDBLocation`; ``None`` for a plain file path.

    Raises
    ------
    InputError
        A table name that is not one or two plain identifiers (``people``,
        ``main.people``), or no database file before ``::``.
    """
    raw = os.fspath(text)
    if SEPARATOR not in raw:
        return None
    path, table = raw.rsplit(SEPARATOR, 1)
    if not path:
        raise InputError(f"{raw}: give the DuckDB database file before '{SEPARATOR}'")
    parts = table.split(".")
    if len(parts) > 2 or not all(_NAME.fullmatch(p) for p in parts):
        raise InputError(
            f"{raw}: after '{SEPARATOR}' give a table name (letters, digits, '_'; "
            "optionally schema.table)"
        )
    return DuckDBLocation(Path(path), table)


class DuckDBTable:
    """A private table in a DuckDB database, validated and encoded in batches.

    Parameters
    ----------
    location
        The database file and table (:func:`parse_location`), or its text.
    schema
        The declared domains (never read from the table).
    batch_rows
        Rows per batch (memory of a pass).
    on_invalid
        ``error``, ``drop`` or ``clip``, as in :meth:`Schema.validate`.
    what
        How error messages name the table.

    Attributes
    ----------
    n : int
        Rows in the table, valid or not (public under replace-one).
    rows : int
        Valid rows (private: integrity checks only).
    report : ValidationReport
        Invalid-row and clip counts (private).
    """

    def __init__(
        self,
        location: DuckDBLocation | str,
        schema: Schema,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        on_invalid: OnInvalid = "error",
        what: str = "private table",
    ) -> None:
        require("duckdb", "reading a DuckDB table")
        check_on_invalid(on_invalid)
        found = parse_location(location) if isinstance(location, str) else location
        if found is None:
            raise InputError(f"{location}: name a DuckDB table as PATH{SEPARATOR}TABLE")
        if not found.path.is_file():
            raise InputError(f"{what} database not found: {found.path}")
        self.location = found
        self.schema = schema
        self.batch_rows = int(batch_rows)
        self.on_invalid: OnInvalid = on_invalid
        self.what = f"{what} {found}"
        self.report = self._scan()
        self.n = self.report.rows_in
        self.rows = self.report.rows_out

    def __repr__(self) -> str:
        return f"DuckDBTable({str(self.location)!r}, n={self.n})"

    def batches(self) -> DuckDBStream:
        """A fresh pass over the encoded valid rows (read when first asked for)."""
        return DuckDBStream(self)

    def records(self) -> Iterator[Records]:
        """The encoded valid rows, batch by batch (one pass)."""
        rows = 0
        for records, _ in self._encoded():
            rows += len(records)
            if len(records):
                yield records
        if rows != self.rows:
            raise InputError(
                f"{self.what} changed while being read: {rows} valid rows now, "
                f"{self.rows} on the first pass"
            )

    def _scan(self) -> ValidationReport:
        tally = Tally(self.schema, self.on_invalid, self.what)
        for _, batch in self._encoded():
            tally.add(batch)
        return tally.report()

    def _encoded(self) -> Iterator[tuple[Records, BatchTally]]:
        import duckdb

        try:
            con = duckdb.connect(str(self.location.path), read_only=True)
        except duckdb.Error:
            raise InputError(f"{self.what}: not a readable DuckDB database") from None
        try:
            try:
                # insertion order kept (DuckDB's default): the first bad row is the
                # Python reader's.
                reader = con.sql(f"SELECT * FROM {self.location.sql()}").to_arrow_reader(
                    self.batch_rows
                )
            except duckdb.Error:
                raise InputError(f"{self.what}: no such table") from None
            for batch in reader:
                frame = batch.to_pandas()
                yield encode_batch(frame, self.schema, self.on_invalid, self.what)
        finally:
            con.close()


class DuckDBStream(Iterator[Records]):
    """One pass over a :class:`DuckDBTable`; ``table`` lets a backend recognise it."""

    def __init__(self, table: DuckDBTable) -> None:
        self.table = table
        self._records: Iterator[Records] | None = None

    def __iter__(self) -> DuckDBStream:
        return self

    def __next__(self) -> Records:
        if self._records is None:
            self._records = self.table.records()
        return next(self._records)
