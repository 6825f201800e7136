"""A table in a PostgreSQL database as a private source (docs/scale.md, "PostgreSQL").

``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE/TABLE`` names table ``TABLE``
(optionally ``schema.table``) of ``DATABASE``; the table may instead be given as the
query parameter ``?table=TABLE``, and every other query parameter goes to libpq as it
is (``?host=/run/postgresql`` for a unix socket, ``sslmode=require``...). A password is
better left to libpq's ``PGPASSWORD`` or ``~/.pgpass``; one written in the URL is never
shown: :meth:`PostgresLocation.__str__` (what messages and ledgers say) writes ``***``.

:func:`postgres_table` opens the table as a
:class:`~dpevolve.data.database.DatabaseTable`: PostgreSQL validates every cell by the
Python reader's rules written as SQL and streams only the valid rows' values (needs
``pip install 'dpevolve[postgres]'``: psycopg 3).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import numpy as np

from dpevolve.data.database import DatabaseTable
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.sql_cells import Dialect
from dpevolve.data.validation import OnInvalid
from dpevolve.errors import InputError
from dpevolve.extras import require

__all__ = ["SCHEMES", "PostgresDatabase", "PostgresLocation", "parse_url", "postgres_table"]

#: The URL schemes that name a PostgreSQL table.
SCHEMES = ("postgresql", "postgres")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


@dataclass(frozen=True)
class PostgresLocation:
    """A table (``name`` or ``schema.name``) and the libpq URL of its database."""

    conninfo: str
    table: str
    password: str | None = None

    def sql(self) -> str:
        """The table's name quoted for SQL."""
        return ".".join(Dialect("postgres").quote(part) for part in self.table.split("."))

    def __str__(self) -> str:
        return redact(self.conninfo, self.password) + f" table {self.table}"


def is_url(text: str) -> bool:
    """``text`` names a PostgreSQL table (a ``postgresql://`` URL)."""
    return any(text.startswith(f"{scheme}://") for scheme in SCHEMES)


def redact(text: str, password: str | None) -> str:
    """``text`` with ``password`` (as written, and URL-quoted) replaced by ``***``."""
    if not password:
        return text
    for form in (quote(password, safe=""), password):
        text = text.replace(form, "***")
    return text


def parse_url(text: str) -> PostgresLocation:
    """A ``postgresql://`` URL as a :class:`PostgresLocation` (see the module).

    Raises
    ------
    InputError
        No database, no table, a table given twice, or a table name that is not one or
        two plain identifiers; the message never holds the password.
    """
    parts = urlsplit(text)
    password = parts.password
    shown = redact(text, password)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = [v for k, v in query if k == "table"]
    rest = [(k, v) for k, v in query if k != "table"]
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise InputError(f"{shown}: give the database and table (postgresql://HOST/DATABASE/TABLE)")
    database, inside = path[0], path[1:]
    if len(inside) > 1 or len(given) > 1 or (inside and given):
        raise InputError(f"{shown}: give one table, in the path or as ?table=, not both")
    table = (inside or given or [""])[0]
    if not table:
        raise InputError(f"{shown}: give the table (postgresql://HOST/DATABASE/TABLE or ?table=)")
    names = table.split(".")
    if len(names) > 2 or not all(_NAME.fullmatch(n) for n in names):
        raise InputError(
            f"{shown}: the table must be a name (letters, digits, '_'; optionally schema.table)"
        )
    conninfo = f"{parts.scheme}://{parts.netloc}/{database}"
    if rest:
        conninfo += "?" + urlencode(rest)
    return PostgresLocation(conninfo, table, password)


class PostgresDatabase:
    """A psycopg connection as :class:`~dpevolve.data.database.Database`."""

    dialect = Dialect("postgres")

    def __init__(self, location: PostgresLocation, what: str) -> None:
        require("psycopg", "reading a PostgreSQL table (pip install 'dpevolve[postgres]')")
        import psycopg

        self.what = what
        self._location = location
        try:
            self._con = psycopg.connect(location.conninfo, connect_timeout=20)
        except psycopg.Error as exc:
            raise InputError(f"{what}: cannot connect ({self._said(exc)})") from None

    def _said(self, exc: BaseException) -> str:
        """The first line of a driver's message, without the password."""
        lines = str(exc).strip().splitlines()
        return redact(lines[0] if lines else type(exc).__name__, self._location.password)

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        import psycopg

        try:
            return self._con.execute(sql).fetchall()
        except psycopg.Error as exc:
            self._con.rollback()
            raise InputError(
                f"{self.what}: the database refused a query ({self._said(exc)})"
            ) from None

    def execute(self, sql: str) -> None:
        import psycopg

        try:
            self._con.execute(sql)
        except psycopg.Error as exc:
            self._con.rollback()
            raise InputError(
                f"{self.what}: the database refused a query ({self._said(exc)})"
            ) from None

    def stream(self, sql: str, rows: int) -> Iterator[np.ndarray]:
        with self._con.cursor(name="dpevolve_rows") as cursor:
            cursor.itersize = rows
            cursor.execute(sql)
            width = len(cursor.description or ())
            while block := cursor.fetchmany(rows):
                yield np.array(block, dtype=np.float64).reshape(len(block), width)

    def columns(self, relation: str) -> list[tuple[str, str]]:
        import psycopg

        try:
            cursor = self._con.execute(f"SELECT * FROM {relation} LIMIT 0")
            found = [(c.name, int(c.type_code)) for c in cursor.description or ()]
            oids = sorted({oid for _, oid in found})
            named: dict[int, str] = dict(
                self._con.execute(
                    "SELECT oid::int, typname FROM pg_type WHERE oid = ANY(%s)", (oids,)
                ).fetchall()
            )
        except psycopg.errors.UndefinedTable:
            self._con.rollback()
            raise InputError(f"{self.what}: no such table") from None
        except psycopg.Error as exc:
            self._con.rollback()
            raise InputError(f"{self.what}: cannot read the table ({self._said(exc)})") from None
        return [(name, str(named.get(oid, oid))) for name, oid in found]

    def load_dates(self, name: str, texts: Sequence[str], units: np.ndarray) -> None:
        # A temporary table: this session's own, dropped with it; the table read is never
        # written.
        self._con.execute(f"CREATE TEMP TABLE IF NOT EXISTS {name} (t text, u float8)")
        self._con.execute(f"TRUNCATE {name}")
        with self._con.cursor().copy(f"COPY {name} (t, u) FROM STDIN") as copy:
            for text, unit in zip(texts, units, strict=True):
                copy.write_row((text, None if np.isnan(unit) else float(unit)))

    def close(self) -> None:
        self._con.close()


def postgres_table(
    location: PostgresLocation | str,
    schema: Schema,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_invalid: OnInvalid = "error",
    what: str = "private table",
) -> DatabaseTable:
    """Table ``location`` (a URL: :func:`parse_url`) of a PostgreSQL database,
    validated in PostgreSQL (see the module).

    Raises
    ------
    InputError
        A bad URL, no connection, no such table, a column missing, undeclared or of a
        type no cell rule reads, or (``on_invalid="error"``) a bad cell; never with the
        password.
    """
    found = parse_url(location) if isinstance(location, str) else location
    name = f"{what} {found}"
    return DatabaseTable(
        lambda: PostgresDatabase(found, name), found.sql(), schema, batch_rows, on_invalid,
        name, order="t.ctid",
    )  # fmt: skip
