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


@dataclass(frozen=True)
class PrivatePlace:
    """PRIVATE as given: ``kind``, the file it reads (``None`` for a server) and the
    database location (``None`` for a file)."""

    kind: Literal["file", "duckdb", "postgres"]
    file: Path | None
    location: Any = None

    def counted_in_duckdb(self, spec: Any) -> bool:
        """A Parquet or CSV file that DuckDB counts (``--backend auto``, the engine, DuckDB
        installed): a Parquet file is also validated in DuckDB, a CSV file is streamed
        by the Python reader (outputs are the same either way; docs/scale.md)."""
        if self.kind != "file" or self.file is None or spec.backend != "auto":
            return False
        if spec.preset.runs_pe or importlib.util.find_spec("duckdb") is None:
            return False
        from dpevolve.data.io import table_suffix

        try:
            suffix = table_suffix(self.file)
        except InputError:
            return False
        return suffix in (*_DUCKDB_FILES, ".csv", ".csv.gz", ".tsv", ".tsv.gz")

    def open(self, schema: Any, batch_rows: int, on_invalid: Any, in_duckdb: bool) -> Any:
        """The private source a database validates (checked before anything is spent),
        or ``None`` where the Python reader reads the file."""
        if self.kind == "duckdb":
            from dpevolve.data.duckdb_source import duckdb_table

            return duckdb_table(self.location, schema, batch_rows, on_invalid)
        if self.kind == "postgres":
            from dpevolve.data.postgres import postgres_table

            return postgres_table(self.location, schema, batch_rows, on_invalid)
        assert self.file is not None
        if in_duckdb and self.file.suffix.lower() in _DUCKDB_FILES and self.file.is_file():
            from dpevolve.data.duckdb_source import parquet_table
            from dpevolve.data.identifiers import check_private_id_file

            check_private_id_file(self.file, schema.identifiers)
            return parquet_table(self.file, schema, batch_rows, on_invalid)
        return None


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
