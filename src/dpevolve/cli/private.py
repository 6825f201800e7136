"""Where ``dpevolve synth`` reads PRIVATE from: a file, a DuckDB table or a PostgreSQL
table (docs/scale.md), and which reader opens it."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dpevolve.errors import InputError

__all__ = ["PrivatePlace", "private_place"]

#: Files DuckDB validates (in SQL) and counts when ``--backend auto`` runs the engine.
_DUCKDB_FILES = (".parquet", ".pq")


@dataclass
class PrivatePlace:
    """PRIVATE as given: ``kind``, the file it reads (``None`` for a server) and the
    database location (``None`` for a file)."""

    kind: Literal["file", "duckdb", "postgres"]
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
        if self.kind == "duckdb":
            from dpevolve.data.duckdb_source import duckdb_table

            return duckdb_table(self.location, schema, batch_rows, on_invalid)
        if self.kind == "postgres":
            from dpevolve.data.postgres import postgres_table

            return postgres_table(self.location, schema, batch_rows, on_invalid)
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
    """PRIVATE's place: a ``postgresql://`` URL, ``PATH.duckdb::TABLE``, or a file.

    Raises
    ------
    InputError
        A malformed URL or table name, or ``--report`` (which reads PRIVATE as a file)
        with a database table.
    """
    from dpevolve.data.duckdb_source import parse_location
    from dpevolve.data.postgres import is_url, parse_url

    if is_url(text):
        place = PrivatePlace("postgres", None, parse_url(text))
    else:
        found = parse_location(text)
        if found is None:
            return PrivatePlace("file", Path(text))
        place = PrivatePlace("duckdb", found.path, found)
    if report is not None:
        raise InputError("--report reads PRIVATE as a file: not with a database table")
    return place
