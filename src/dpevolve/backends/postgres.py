"""Counting in the database that holds the table: PostgreSQL (docs/scale.md).

For a private table in PostgreSQL (:func:`dpevolve.data.postgres.postgres_table`),
:class:`ServerCounts` sends the adaptive engine's marginal counts to the server. The
first pass with a discretiser writes the valid rows' cell codes, computed in the server
(:mod:`dpevolve.backends.sql_codes`) from the values the server validates
(:class:`~dpevolve.data.database.DatabaseTable`), to a temporary table of the
session (:meth:`~dpevolve.data.database.DatabaseTable.keep`, validated once); each
count is then one ``GROUP BY GROUPING SETS`` query (:mod:`dpevolve.backends.grouping`,
the SQL the DuckDB backend runs over its codes table) over that table. No record
crosses the connection: only the cells' counts come back. The codes are the
discretiser's own (a test holds the counts equal to the local backend's on adversarial
tables), so the release, the ledger and the output are the same as the file's.

A discretiser whose codes the comparisons cannot restate (none known) is counted in
DuckDB on this machine instead, as before this backend: the same integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dpevolve.backends.base import CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.grouping import (
    Answer,
    CodedCounts,
    Part,
    answer_of_rows,
    grouped_sql,
    stacked_counts,
    used_columns,
)
from dpevolve.data.database import DatabaseTable, KeptRows
from dpevolve.data.encoding import Records

__all__ = ["ServerCounts", "counts_where_stored"]


class ServerCounts:
    """The engine's marginal counts computed by the database of a
    :class:`~dpevolve.data.database.DatabaseTable` (see the module); votes and other
    counts by ``fallback`` (DuckDB's backend, which reads the table's valid rows)."""

    def __init__(self, fallback: Any) -> None:
        self._fallback = fallback
        # The discretiser the code SQL was written for, and that SQL (or None: refused).
        self._held: tuple[Any, dict[str, str] | None] | None = None
        # The discretiser and table whose codes the server keeps, and where.
        self._kept: tuple[Any, DatabaseTable, KeptRows] | None = None

    def close(self) -> None:
        """Drop the kept codes (the server's temporary table) and close the fallback."""
        self._drop_kept()
        close = getattr(self._fallback, "close", None)
        if close is not None:
            close()

    def __del__(self) -> None:
        self._drop_kept()

    def _drop_kept(self) -> None:
        kept, self._kept = getattr(self, "_kept", None), None
        if kept is not None:
            kept[2].close()

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram, by the fallback backend: a database does not vote."""
        return np.asarray(self._fallback.vote(private, population, distance, vote))

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        """``query``'s exact counts: GROUP BY queries in the server for the engine's
        marginal counts, the fallback backend for anything else."""
        table = getattr(private, "table", None)
        if not isinstance(query, CodedCounts) or not isinstance(table, DatabaseTable):
            return np.asarray(self._fallback.count(private, query))
        codes = self._codes(table, query.discretiser)
        if codes is None:
            return np.asarray(self._fallback.count(private, query))
        columns = {attr: f"k{i}" for i, attr in enumerate(codes)}
        kept = self._kept_codes(table, query.discretiser, codes, columns)

        def run(parts: Sequence[Part]) -> Answer:
            used = used_columns(parts, columns)
            rows = kept.rows(grouped_sql(kept.name, parts, columns))
            return answer_of_rows(rows, used)

        return stacked_counts(query, columns, run)

    def _kept_codes(
        self, table: DatabaseTable, discretiser: Any, codes: dict[str, str], columns: dict[str, str]
    ) -> KeptRows:
        """The server's table of every valid row's codes under ``discretiser``: written
        on its first pass (the one validation of the table for this discretiser), read by
        every later one. The codes are small integers (SMALLINT where they fit)."""
        if self._kept is not None and self._kept[0] is discretiser and self._kept[1] is table:
            return self._kept[2]
        self._drop_kept()
        domain = discretiser.domain
        sizes = dict(zip(domain.names, domain.sizes, strict=True))
        sizes |= {f"fine:{name}": cells.size for name, cells in discretiser.fine.items()}
        relation = ", ".join(
            f"CAST({sql} AS {'SMALLINT' if sizes[attr] <= 2**15 else 'INTEGER'}) AS {columns[attr]}"
            for attr, sql in codes.items()
        )
        kept = table.keep("dpevolve_codes", lambda valid: f"SELECT {relation} FROM {valid} AS c")
        self._kept = (discretiser, table, kept)
        return kept

    def _codes(self, table: DatabaseTable, discretiser: Any) -> dict[str, str] | None:
        if self._held is None or self._held[0] is not discretiser:
            from dpevolve.backends.sql_codes import code_sql

            try:
                codes: dict[str, str] | None = code_sql(discretiser, table.value, table.dialect)
            except ValueError:
                codes = None
            self._held = (discretiser, codes)
        return self._held[1]


def counts_where_stored(private: object) -> Any:
    """The backend ``auto`` counts the adaptive engine's marginals with: in the server
    for a PostgreSQL table (:class:`ServerCounts`), else
    :func:`~dpevolve.backends.duckdb.counts_in_duckdb` (DuckDB for a table read from
    disk each pass, ``None``: this process, for records in memory)."""
    from dpevolve.backends.duckdb import counts_in_duckdb

    fallback = counts_in_duckdb(private)
    table = getattr(private, "table", None)
    if isinstance(table, DatabaseTable) and table.dialect.name == "postgres":
        from dpevolve.backends.local import LocalBackend

        return ServerCounts(fallback if fallback is not None else LocalBackend())
    return fallback
