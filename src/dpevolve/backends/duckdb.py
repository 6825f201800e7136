"""Counting in DuckDB: the engine's marginal counts as GROUP BY queries (docs/scale.md).

The adaptive engine's measurements are counts of cell codes: every marginal (a clique of
coarse codes) and every fine histogram of a numeric column. The codes of a record never
change during a run (the discretiser is fixed from public facts before the first
count), so :class:`DuckDBBackend` writes them once, on the first count, to a table of
small integers in a temporary DuckDB database on disk (one column per coarse code and
per fine code), and answers every count after that with one ``GROUP BY GROUPING SETS``
query per :data:`~dpevolve.backends.grouping.SETS_PER_QUERY` cliques
(:mod:`dpevolve.backends.grouping`, the SQL PostgreSQL runs too): DuckDB scans the codes
in parallel, out of core, and only the cell counts come back. The integers are the
ones the local backend adds up (a test holds them equal), so the release, the ledger
and the output are the same.

Votes (Private Evolution) go to ``auto``'s backend and other counts to the local one,
on the same records.

The records reach the codes table through the run's private source, which validates
them (a :class:`~dpevolve.data.database.DatabaseTable` in its database: DuckDB or
PostgreSQL; a CSV file by the Python reader): one pass, in batches, memory bounded.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpevolve.backends.base import CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.grouping import Answer, CodedCounts, Part, grouped_sql, stacked_counts
from dpevolve.backends.local import LocalBackend, chunks
from dpevolve.data.encoding import Records
from dpevolve.extras import require

__all__ = ["DuckDBBackend", "counts_in_duckdb"]

#: Rows of codes written at once while the codes table is built.
_WRITE_ROWS = 1 << 18


class DuckDBBackend:
    """Counts in DuckDB, votes in this process (see the module docstring).

    Parameters
    ----------
    memory_limit
        DuckDB's memory limit (it spills to its temporary folder beyond it).
    threads
        DuckDB's threads (default: the machine's cores).
    folder
        Where the temporary database lives (default: the system's temporary folder);
        removed when the backend is closed or collected.
    """

    def __init__(
        self, memory_limit: str = "256MB", threads: int | None = None, folder: str | None = None
    ) -> None:
        require("duckdb", "the duckdb backend")
        import duckdb

        self._folder = Path(tempfile.mkdtemp(prefix="dpevolve-duckdb-", dir=folder))
        self._con = duckdb.connect(str(self._folder / "codes.duckdb"))
        self._con.execute(f"SET memory_limit = '{memory_limit}'")
        self._con.execute(f"SET threads = {int(threads or os.cpu_count() or 1)}")
        self._con.execute(f"SET temp_directory = '{self._folder / 'spill'}'")
        self._local = LocalBackend()
        self._voter: Any = None
        # The source and discretiser the codes table holds (one table at a time).
        self._held: tuple[Any, Any] | None = None

    def close(self) -> None:
        """Drop the temporary database."""
        con = self.__dict__.pop("_con", None)
        if con is not None:
            con.close()
        folder = self.__dict__.get("_folder")
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def __del__(self) -> None:
        self.close()

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram, by ``auto``'s backend (the fused kernels when numba is
        installed): DuckDB does not vote."""
        if self._voter is None:
            from dpevolve.backends.fused import FusedBackend, fused_available

            self._voter = FusedBackend() if fused_available() else self._local
        return np.asarray(self._voter.vote(private, population, distance, vote))

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        """``query``'s exact counts: GROUP BY queries over the codes for the engine's
        marginal counts, the local backend's slices for anything else."""
        if not isinstance(query, CodedCounts):
            return self._local.count(private, query)
        # A source hands out a fresh pass each round: the table it came from is the key.
        key = getattr(private, "table", private)
        if self._held is None or self._held[0] is not key or self._held[1] is not query.discretiser:
            self._write_codes(private, query.discretiser)
            self._held = (key, query.discretiser)
        return stacked_counts(query, self._columns, self._query)

    # ------------------------------------------------------------------ the codes
    def _write_codes(self, private: PrivateData, discretiser: Any) -> None:
        import pyarrow as pa

        names = list(discretiser.domain.names)
        fine = list(discretiser.fine)
        sizes = [*discretiser.domain.shape(tuple(names)), *(discretiser.fine[f].size for f in fine)]
        types = [_sql_type(size) for size in sizes]
        columns = [f"c{j}" for j in range(len(names))] + [f"f{j}" for j in range(len(fine))]
        self._con.execute("DROP TABLE IF EXISTS codes")
        body = ", ".join(f"{c} {t}" for c, t in zip(columns, types, strict=True))
        self._con.execute(f"CREATE TABLE codes ({body})")
        self._columns = dict(zip([*names, *(f"fine:{f}" for f in fine)], columns, strict=True))
        for batch in chunks(private, _WRITE_ROWS):
            coarse = discretiser.codes(batch)
            arrays = [coarse[:, j] for j in range(len(names))]
            arrays += [discretiser.fine_codes(batch, f) for f in fine]
            arrow = pa.table(
                {c: pa.array(_narrow(a, t)) for c, a, t in zip(columns, arrays, types, strict=True)}
            )
            self._con.register("batch_codes", arrow)
            self._con.execute("INSERT INTO codes SELECT * FROM batch_codes")
            self._con.unregister("batch_codes")

    def _query(self, parts: Sequence[Part]) -> Answer:
        """One scan of the codes table for ``parts``."""
        table = self._con.sql(grouped_sql("codes", parts, self._columns)).to_arrow_table()
        used = table.column_names[:-1]
        present = {c: ~table[c].is_null().to_numpy(zero_copy_only=False) for c in used}
        values = {c: table[c].fill_null(0).to_numpy().astype(np.int64) for c in used}
        return present, values, table["n"].to_numpy().astype(np.int64)


def _sql_type(size: int) -> str:
    if size <= 1 << 8:
        return "UTINYINT"
    if size <= 1 << 16:
        return "USMALLINT"
    return "UINTEGER"


def _narrow(codes: np.ndarray, sql_type: str) -> np.ndarray:
    dtype = {"UTINYINT": np.uint8, "USMALLINT": np.uint16, "UINTEGER": np.uint32}[sql_type]
    return np.asarray(codes).astype(dtype)


def counts_in_duckdb(private: object) -> DuckDBBackend | None:
    """The backend ``auto`` counts the adaptive engine's marginals with: DuckDB when it
    is installed and ``private`` (a source's :meth:`batches`) is read from disk every
    pass (a file stream, a database table), since its codes are then read once instead of
    once a pass (docs/scale.md); ``None`` (this process) for records in memory."""
    if isinstance(private, Records) or importlib.util.find_spec("duckdb") is None:
        return None
    return DuckDBBackend()
