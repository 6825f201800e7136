"""Where ``dpevolve synth`` reads PRIVATE from: a file, or a table of one of the
:data:`DATABASES` (a DuckDB or a PostgreSQL table; docs/scale.md), and which reader
opens it. A new kind of private source reaches the command line by one entry there
(docs/architecture.md, "Adding things")."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpevolve.errors import InputError

__all__ = ["DATABASES", "Database", "PrivatePlace", "private_place"]


@dataclass(frozen=True)
class Database:
    """A kind of database table PRIVATE may name.

    ``place`` reads PRIVATE's text: ``(location, file)`` where it names such a table
    (``file``: a local database file the outputs must not overwrite, else ``None``),
    ``None`` where it does not. ``table`` opens the table as a private source
    (:class:`~dpevolve.data.sources.PrivateSource`), validated before anything is spent:
    ``table(location, schema, batch_rows, on_invalid)``.
    """

    place: Callable[[str], tuple[Any, Path | None] | None]
    table: Callable[[Any, Any, int, Any], Any]


def _postgres_place(text: str) -> tuple[Any, Path | None] | None:
    from dpevolve.data.postgres import is_url, parse_url

    return (parse_url(text), None) if is_url(text) else None


def _postgres_table(location: Any, schema: Any, batch_rows: int, on_invalid: Any) -> Any:
    from dpevolve.data.postgres import postgres_table

    return postgres_table(location, schema, batch_rows, on_invalid)


def _duckdb_place(text: str) -> tuple[Any, Path | None] | None:
    from dpevolve.data.duckdb_source import parse_location

    found = parse_location(text)
    return None if found is None else (found, found.path)


def _duckdb_table(location: Any, schema: Any, batch_rows: int, on_invalid: Any) -> Any:
    from dpevolve.data.duckdb_source import duckdb_table

    return duckdb_table(location, schema, batch_rows, on_invalid)


#: The database tables PRIVATE may name, tried in this order (anything else is a file).
#: Each reader imports on first use: ``dpevolve -h`` stays light.
DATABASES: dict[str, Database] = {
    "postgres": Database(_postgres_place, _postgres_table),
    "duckdb": Database(_duckdb_place, _duckdb_table),
}

#: Files DuckDB validates (in SQL) and counts when ``--backend auto`` runs the engine.
_DUCKDB_FILES = (".parquet", ".pq")


@dataclass
class PrivatePlace:
    """PRIVATE as given: ``kind`` (``file`` or a key of :data:`DATABASES`), the file it
    reads (``None`` for a server) and the database location (``None`` for a file)."""

    kind: str
    file: Path | None
    location: Any = None
    #: Set by :meth:`counted_in_duckdb`: DuckDB reads this Parquet file.
    in_duckdb: bool = False

    def counted_in_duckdb(self, backend: str, engine: bool) -> bool:
        """A Parquet or CSV file that DuckDB counts (``--backend auto``, the adaptive
        engine, DuckDB installed): a Parquet file is also validated in DuckDB, a CSV file
        is streamed by the Python reader (outputs are the same either way; docs/scale.md)."""
        if self.kind != "file" or self.file is None or backend != "auto":
            return False
        if not engine or importlib.util.find_spec("duckdb") is None:
            return False
        from dpevolve.data.io import table_suffix

        try:
            table_suffix(self.file)  # a CSV or Parquet file (else the reader says why)
        except InputError:
            return False
        self.in_duckdb = True
        return True

    def open(self, schema: Any, batch_rows: int, on_invalid: Any, stream: bool) -> Any:
        """The private source, opened and validated before anything is spent: a database
        table, a Parquet file DuckDB reads, a file streamed by the Python reader; or
        ``None`` where the Python reader reads the whole file."""
        if self.kind != "file":
            return DATABASES[self.kind].table(self.location, schema, batch_rows, on_invalid)
        assert self.file is not None
        if not stream:
            return None
        from dpevolve.data.identifiers import check_private_id_file

        check_private_id_file(self.file, schema.identifiers)
        if self.in_duckdb and self.file.suffix.lower() in _DUCKDB_FILES:
            from dpevolve.data.duckdb_source import parquet_table

            return parquet_table(self.file, schema, batch_rows, on_invalid)
        from dpevolve.data.streaming import StreamedTable

        return StreamedTable(self.file, schema, batch_rows, on_invalid)


def private_place(text: str, report: Path | None) -> PrivatePlace:
    """PRIVATE's place: a table one of the :data:`DATABASES` names (a ``postgresql://``
    URL, ``PATH.duckdb::TABLE``), or a file.

    Raises
    ------
    InputError
        A malformed URL or table name, or ``--report`` (which reads PRIVATE as a file)
        with a database table.
    """
    for kind, database in DATABASES.items():
        found = database.place(text)
        if found is not None:
            if report is not None:
                raise InputError("--report reads PRIVATE as a file: not with a database table")
            location, file = found
            return PrivatePlace(kind, file, location)
    return PrivatePlace("file", Path(text))
