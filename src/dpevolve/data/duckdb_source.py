"""A table in a DuckDB database, or a Parquet file read by DuckDB, as a private source
(docs/scale.md).

``PATH.duckdb::TABLE`` names table ``TABLE`` (optionally ``schema.table``) of the DuckDB
database file ``PATH.duckdb`` (:func:`parse_location`); the command line takes it where
it takes a private file (``dpevolve synth data.duckdb::people ...``).

:func:`duckdb_table` opens such a table read-only, and :func:`parquet_table` a Parquet
file, as a :class:`~dpevolve.data.database.DatabaseTable`: DuckDB validates every cell
by the Python reader's rules written as SQL (invalid rows dropped, clipped or refused
as configured, ``n`` counting them all), so the records are the ones the same table
read by the Python reader gives (a test holds them equal, cell for cell), and streams
only the valid rows' values.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpevolve.data.database import DatabaseTable
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.sql_cells import Dialect
from dpevolve.data.validation import OnInvalid
from dpevolve.errors import InputError
from dpevolve.extras import require

__all__ = [
    "SEPARATOR", "DuckDBDatabase", "DuckDBLocation", "duckdb_table", "parquet_table",
    "parse_location",
]  # fmt: skip

#: Between a DuckDB database file and a table name: ``data.duckdb::people``.
SEPARATOR = "::"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: DuckDB's memory limit while it reads and validates a private table.
MEMORY_LIMIT = "256MB"


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


class DuckDBDatabase:
    """A DuckDB connection as :class:`~dpevolve.data.database.Database`: a database file
    opened read-only, or (``path=None``) an in-memory one that reads files."""

    dialect = Dialect("duckdb")

    def __init__(self, path: Path | None, what: str, threads: int | None = None) -> None:
        require("duckdb", "reading a table with DuckDB")
        import duckdb

        self.what = what
        try:
            if path is None:
                self._con = duckdb.connect()
            else:
                self._con = duckdb.connect(str(path), read_only=True)
        except duckdb.Error:
            raise InputError(f"{what}: not a readable DuckDB database") from None
        if threads:
            self._con.execute(f"SET threads = {int(threads)}")
        # DuckDB's default (most of the machine's memory) would let a scan of a large
        # table hold its buffers: the run's memory stays bounded in rows (docs/scale.md).
        self._con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self._con.execute(sql).fetchall()

    def stream(self, sql: str, rows: int) -> Iterator[np.ndarray]:
        reader = self._con.sql(sql).to_arrow_reader(rows)
        for batch in reader:
            columns = [
                np.asarray(c.to_numpy(zero_copy_only=False), np.float64) for c in batch.columns
            ]
            yield np.column_stack(columns) if columns else np.empty((batch.num_rows, 0))

    def columns(self, relation: str) -> list[tuple[str, str]]:
        import duckdb

        try:
            found = self._con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
        except duckdb.Error:
            raise InputError(f"{self.what}: no such table, or not readable") from None
        return [(str(r[0]), str(r[1])) for r in found]

    def load_dates(self, name: str, texts: Sequence[str], units: np.ndarray) -> None:
        import pyarrow as pa

        table = pa.table(
            {"t": pa.array(list(texts), pa.string()), "u": pa.array(units, from_pandas=True)}
        )
        self._con.register(name, table)

    def execute(self, sql: str) -> None:
        self._con.execute(sql)

    def close(self) -> None:
        self._con.close()


def duckdb_table(
    location: DuckDBLocation | str,
    schema: Schema,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_invalid: OnInvalid = "error",
    what: str = "private table",
) -> DatabaseTable:
    """Table ``location`` (:func:`parse_location`) of a DuckDB database file, validated
    in DuckDB (see the module).

    Raises
    ------
    InputError
        No such file, not a DuckDB database, no such table, a column missing, undeclared
        or of a type no cell rule reads, or (``on_invalid="error"``) a bad cell.
    """
    found = parse_location(location) if isinstance(location, str) else location
    if found is None:
        raise InputError(f"{location}: name a DuckDB table as PATH{SEPARATOR}TABLE")
    if not found.path.is_file():
        raise InputError(f"{what} database not found: {found.path}")
    name = f"{what} {found}"
    return DatabaseTable(
        lambda: DuckDBDatabase(found.path, name), found.sql(), schema, batch_rows,
        on_invalid, name, order="t.rowid",
    )  # fmt: skip


def parquet_table(
    path: str | os.PathLike[str],
    schema: Schema,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_invalid: OnInvalid = "error",
    what: str = "private table",
) -> DatabaseTable:
    """A Parquet file, a folder of Parquet files (a dataset written in parts, read in
    name order as the Python reader reads it) or a glob of files, read by DuckDB and
    validated in DuckDB."""
    from dpevolve.data.readers import parquet_files

    text = os.fspath(path)
    if "*" in text:
        files = [text]
    elif Path(text).is_file() or Path(text).is_dir():
        files = [str(p) for p in parquet_files(Path(text), what)]
    else:
        raise InputError(f"{what} not found: {text}")
    dialect = Dialect("duckdb")
    relation = f"read_parquet([{', '.join(dialect.text(f) for f in files)}])"
    name = f"{what} {text}"
    return DatabaseTable(
        lambda: DuckDBDatabase(None, name), relation, schema, batch_rows, on_invalid, name
    )
