"""A private table validated where it lives: DuckDB or PostgreSQL (docs/scale.md).

:class:`DatabaseTable` is a private source (:class:`~dpevolve.data.sources.PrivateSource`)
whose cells the database validates itself, by the Python reader's rules written as SQL
(:mod:`dpevolve.data.sql_cells`). Opening it asks the database for one row of counts
(``n``, the valid rows, each column's problems and clipped cells), which become the
:class:`~dpevolve.data.validation.ValidationReport` (and, under ``on_invalid="error"``,
the error) :meth:`Schema.validate <dpevolve.data.schema.Schema.validate>` gives on the
same table. Each pass then streams only the validated values of the valid rows, which
are encoded here as :func:`~dpevolve.data.encoding.encode` does. Everything that can fail
(the connection, the table, a column, a column's type) fails on opening, before any
budget is spent.

A :class:`Database` is what the source needs of a connection: run a query, stream one,
describe a relation, and load a small table of date texts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np
import pandas as pd

from dpevolve.data.batches import BatchTally, Tally
from dpevolve.data.cells import read_numbers
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.sources import OnePass
from dpevolve.data.sql_cells import (
    PROBLEMS,
    DateTexts,
    Dialect,
    Storage,
    checked_sql,
    problem_text,
    storage_of,
)
from dpevolve.data.types import DateColumn
from dpevolve.data.validation import OnInvalid, ValidationReport, check_columns, check_on_invalid
from dpevolve.errors import InputError

__all__ = ["Database", "DatabaseTable", "KeptRows", "value_records"]


class Database(Protocol):
    """A connection to the database that holds the private table."""

    dialect: Dialect

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        """All rows of a (small) query."""
        ...

    def stream(self, sql: str, rows: int) -> Iterator[np.ndarray]:
        """A query's rows, at most ``rows`` at a time, as float64 arrays (NULL: NaN)."""
        ...

    def columns(self, relation: str) -> list[tuple[str, str]]:
        """Each column of ``relation``: its name and type name (InputError if none)."""
        ...

    def load_dates(self, name: str, texts: Sequence[str], units: np.ndarray) -> None:
        """A temporary table ``name(t text, u float64)`` holding ``texts`` and ``units``."""
        ...

    def execute(self, sql: str) -> None:
        """Run a statement that returns no rows (here: creating a temporary table)."""
        ...

    def close(self) -> None: ...


class KeptRows:
    """A temporary table made once from the valid rows (:meth:`DatabaseTable.keep`), on
    a connection held open until :meth:`close`: queries on it read the table as it was
    then, without validating it again."""

    def __init__(self, db: Database, name: str) -> None:
        self._db = db
        self.name = name

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        """All rows of a (small) query, such as GROUP BY counts of the kept table."""
        return self._db.rows(sql)

    def close(self) -> None:
        """Close the connection (the database drops the temporary table with it)."""
        self._db.close()


def value_records(block: np.ndarray, layout: Layout) -> Records:
    """Validated values as :class:`Records`, as :func:`~dpevolve.data.encoding.encode`
    computes them: ``block`` holds the numeric columns' values (NaN: missing), then the
    categorical columns' codes, in ``layout``'s order."""
    k = len(layout.numeric)
    lo = np.array([c.lo for c in layout.numeric], dtype=np.float64)
    scale = np.array([c.range for c in layout.numeric], dtype=np.float64)
    numeric = (block[:, :k] - lo) / scale
    codes = block[:, k:].astype(np.int32)
    return Records(np.ascontiguousarray(numeric), np.ascontiguousarray(codes))


class DatabaseTable:
    """A private table in a database, validated in the database (see the module).

    Parameters
    ----------
    connect
        Opens a :class:`Database` (raising :class:`InputError` on failure).
    relation
        The table as SQL (quoted), or a table function such as ``read_parquet('f')``.
    schema
        The declared domains (never read from the table).
    batch_rows
        Rows per streamed batch.
    on_invalid
        ``error``, ``drop`` or ``clip``, as in :meth:`Schema.validate`.
    what
        How messages name the table (never with a password).
    order
        An SQL expression of the table's row order (the first bad row an error names).

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
        connect: Callable[[], Database],
        relation: str,
        schema: Schema,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        on_invalid: OnInvalid = "error",
        what: str = "private table",
        order: str | None = None,
    ) -> None:
        check_on_invalid(on_invalid)
        self.schema = schema
        self.batch_rows = int(batch_rows)
        self.on_invalid: OnInvalid = on_invalid
        self.what = what
        self._connect = connect
        self._relation = relation
        self._order = order
        self._layout = Layout.of(schema)
        self.report = self._open()
        self.n = self.report.rows_in
        self.rows = self.report.rows_out

    def __repr__(self) -> str:
        return f"DatabaseTable({self.what!r}, n={self.n})"

    # ------------------------------------------------------------------ opening
    def _open(self) -> ValidationReport:
        db = self._connect()
        try:
            found = db.columns(self._relation)
            check_columns([name for name, _ in found], self.schema, self.what)
            types = dict(found)
            self._storage: list[Storage] = [
                storage_of(types[c.name], c.name, self.what) for c in self.schema.columns
            ]
            self._dates = self._date_texts(db)
            self.dialect = db.dialect
            return self._tally(db).report()
        finally:
            db.close()

    def _date_texts(self, db: Database) -> list[tuple[DateTexts, list[str], np.ndarray]]:
        """Each date column stored as text: its distinct texts, read by the Python reader."""
        out = []
        for j, (column, kind) in enumerate(zip(self.schema.columns, self._storage, strict=True)):
            if not isinstance(column, DateColumn) or kind != "text":
                continue
            name = db.dialect.quote(column.name)
            rows = db.rows(f"SELECT DISTINCT {name} FROM {self._relation} WHERE {name} IS NOT NULL")
            texts = [str(r[0]) for r in rows]
            units, _ = read_numbers(pd.Series(texts, dtype=object), column, ())
            out.append((DateTexts(column.name, f"dpevolve_dates_{j}"), texts, units))
            db.load_dates(f"dpevolve_dates_{j}", texts, units)
        return out

    def _load(self, db: Database) -> None:
        for table, texts, units in self._dates:
            db.load_dates(table.name, texts, units)

    def _checked(self, db: Database, row_number: str | None = None) -> str:
        return checked_sql(
            db.dialect, self._relation, self.schema.columns, self._storage,
            self.schema.na_values, self.on_invalid == "clip", [d[0] for d in self._dates],
            row_number,
        )  # fmt: skip

    def _tally(self, db: Database) -> Tally:
        """One query: the counts the report needs; a second for the first bad rows."""
        columns = self.schema.columns
        valid = " AND ".join(f"p{j} = 0" for j in range(len(columns)))
        counts = ["count(*)", f"count(*) FILTER (WHERE {valid})"]
        keys = [(j, code) for j in range(len(columns)) for code in PROBLEMS]
        counts += [f"count(*) FILTER (WHERE p{j} = {code})" for j, code in keys]
        numeric = [j for j, c in enumerate(columns) if hasattr(c, "lo")]
        counts += [f"count(*) FILTER (WHERE o{j})" for j in numeric]
        row = db.rows(f"SELECT {', '.join(counts)} FROM ({self._checked(db)}) AS c")[0]
        total, good = int(row[0]), int(row[1])  # type: ignore[call-overload]
        found = {key: int(v) for key, v in zip(keys, row[2:], strict=False) if v}  # type: ignore[call-overload]
        clipped = row[2 + len(keys) :]
        firsts = self._first_rows(db, list(found)) if found else {}
        tally = Tally(self.schema, self.on_invalid, self.what)
        problems = tuple(
            (columns[j].name, problem_text(columns[j], code), count, firsts.get((j, code), 0), None)
            for (j, code), count in found.items()
        )
        clips = tuple(
            (columns[j].name, int(v))  # type: ignore[call-overload]
            for j, v in zip(numeric, clipped, strict=True)
            if v and self.on_invalid == "clip"
        )
        tally.add(BatchTally(total, good, problems, clips))
        return tally

    def _first_rows(self, db: Database, keys: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
        """The first row (in the table's order) of each problem: only for an error."""
        if self.on_invalid != "error":
            return {}
        firsts = [f"min(r) FILTER (WHERE p{j} = {code})" for j, code in keys]
        sql = f"SELECT {', '.join(firsts)} FROM ({self._checked(db, self._order or '1')}) AS c"
        row = db.rows(sql)[0]
        return {key: int(v) for key, v in zip(keys, row, strict=True)}  # type: ignore[call-overload]

    # ------------------------------------------------------------------ passes
    def batches(self) -> OnePass:
        """A fresh pass over the encoded valid rows (read when first asked for)."""
        return OnePass(self, self.records)

    def records(self) -> Iterator[Records]:
        """The encoded valid rows, batch by batch (one pass)."""
        layout = self._layout
        where = {c.name: j for j, c in enumerate(self.schema.columns)}
        names = [f"v{where[c.name]}" for c in layout.numeric]
        names += [f"v{where[c.name]}" for c in layout.categorical]
        db = self._connect()
        rows = 0
        try:
            self._load(db)
            sql = f"SELECT {', '.join(names)} FROM {self._valid(db)} AS c"
            for block in db.stream(sql, self.batch_rows):
                rows += len(block)
                if len(block):
                    yield value_records(block, layout)
        finally:
            db.close()
        self._check_rows(rows)

    def _valid(self, db: Database) -> str:
        """The valid rows' validated values (``v0``, ``v1``, ...) as a subquery."""
        valid = " AND ".join(f"p{j} = 0" for j in range(len(self.schema.columns)))
        return f"(SELECT * FROM ({self._checked(db)}) AS c WHERE {valid})"

    def _check_rows(self, rows: int) -> None:
        if rows != self.rows:
            raise InputError(
                f"{self.what} changed while being read: {rows} valid rows now, "
                f"{self.rows} on the first pass"
            )

    def value(self, name: str) -> str:
        """The SQL name of column ``name``'s validated value in the subquery of valid
        rows :meth:`keep` hands over (a float64; a categorical column's value is its
        code; NULL: missing)."""
        return f"v{self.schema.names.index(name)}"

    def keep(self, name: str, sql_of: Callable[[str], str]) -> KeptRows:
        """The rows of ``sql_of(valid)`` written once to the temporary table ``name`` of
        a connection kept open, ``valid`` being a subquery of the valid rows' validated
        values (:meth:`value`): the table is validated once, however many queries then
        read ``name`` (the adaptive engine's cell codes, docs/scale.md). Checks the
        valid rows as :meth:`records` does."""
        db = self._connect()
        try:
            self._load(db)
            db.execute(f"CREATE TEMPORARY TABLE {name} AS {sql_of(self._valid(db))}")
            # Statistics for the planner: without them PostgreSQL guesses a group per
            # row and sorts once per grouping set instead of hashing them in one scan.
            db.execute(f"ANALYZE {name}")
            [(rows,)] = db.rows(f"SELECT count(*) FROM {name}")
            self._check_rows(int(rows))  # type: ignore[call-overload]
        except BaseException:
            db.close()
            raise
        return KeptRows(db, name)

    def checked_rows(self) -> pd.DataFrame:
        """Every row's validated values and problems, in the table's order (for tests
        that hold the database's reading equal to the Python reader's)."""
        db = self._connect()
        try:
            self._load(db)
            sql = f"SELECT * FROM ({self._checked(db, self._order or '1')}) AS c ORDER BY r"
            rows = db.rows(sql)
        finally:
            db.close()
        names = []
        for j, column in enumerate(self.schema.columns):
            names += [f"v{j}", f"p{j}"] + ([f"o{j}"] if hasattr(column, "lo") else [])
        return pd.DataFrame(rows, columns=[*names, "r"])
