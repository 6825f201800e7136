"""The database reads every cell as the Python reader does (docs/scale.md).

Adversarial tables (any text; numbers such as nan, inf, 1e400, 1e-400, '3.0', ' 3', a
decimal comma; empty cells, missing tokens, out-of-range and boundary values; every
column kind of the schema, stored as text and as typed columns) are loaded into DuckDB
and PostgreSQL. For every row and column, the cell's problem (none, not a number, a
decimal comma, an unlisted missing word, missing, outside the range, not whole, at
none of a numeric column's declared values, undeclared) and its validated value are
those of :meth:`Schema.check` on the same cells in pandas, under ``clip`` and not; the
report and the error of :meth:`Schema.validate` are the database source's, word for
word.

PostgreSQL runs where ``DPEVOLVE_TEST_POSTGRES`` names a server (``scripts/ci_postgres.sh``
starts one; CI always does, and fails here without it).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dpevolve.data.batches import Tally, validate_batch
from dpevolve.data.database import DatabaseTable
from dpevolve.data.schema import Schema
from dpevolve.data.sql_cells import PROBLEMS, problem_text
from dpevolve.errors import InputError

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "na_values": ["?", "99"],
        "columns": {
            "num": {"type": "numeric", "lo": -5, "hi": 100, "nullable": True},
            "int": {"type": "numeric", "lo": 0, "hi": 50, "integer": True},
            "dec": {"type": "numeric", "lo": 0, "hi": 1.5, "decimals": 2},
            "lvl": {"type": "numeric", "lo": 0, "hi": 3, "decimals": 1, "values": [0.5, 1, 2.5]},
            "l32": {
                "type": "numeric",
                "lo": 0,
                "hi": 5,
                "decimals": 1,
                "float32": True,
                "values": [0.1, 4.2],
            },
            "day": {"type": "date", "lo": "20000101", "hi": "20301231", "format": "%Y%m%d"},
            "at": {"type": "datetime", "lo": "2000-01-01 00:00:00", "hi": "2030-12-31 00:00:00"},
            "code": {"type": "categorical", "values": [1, 2, 3]},
            "zero": {"type": "categorical", "values": ["01", "02", "True"]},
            "flt": {"type": "categorical", "values": [1.0, 2.5, "x"]},
            "flag": {"type": "categorical", "values": [True, False]},
            "word": {"type": "categorical", "values": ["a", "b"], "other": True, "nullable": True},
        },
    }
)
NAMES = SCHEMA.names
# One table per test process: test files run side by side on one server.
TABLE = f"cells_{os.getpid()}"

# How the typed table stores each column (the text table stores every column as text).
TYPED = {"num": "float", "int": "integer", "dec": "float", "lvl": "float", "l32": "float",
         "day": "text", "at": "timestamp",
         "code": "integer", "zero": "text", "flt": "float", "flag": "boolean",
         "word": "text"}  # fmt: skip

_TEXT = st.characters(
    blacklist_categories=("Cs",), blacklist_characters="\x00", max_codepoint=0x3000
)
NUMBER_TEXTS = [
    "nan", "NaN", "inf", "-Infinity", "+inf", "1e400", "-1e400", "1e-400", "4.9e-324",
    "3.0", " 3", "3 ", "\t3\n", "+3", "-0", ".5", "5.", "1e20", "1E2", "0x10", "1_000",
    "12,5", "1,000", "", " ", "?", "99", "99.0", "NA", "null", " NA ", "N/A", "01", "1",
    "2.5", "2.50", "0.5", "4.2", "0.1", "50", "50.5", "-5", "100", "100.0000001", "1.5",
    "1.51", "True", "true",
    "FALSE", "a", "b", "c", "(other)", "(missing)", "x", "20000101", "20301231", "20310101",
    "2020-01-01", "20200231", "2000-01-01 00:00:00", "2030-12-31 00:00:01", "١٢", "３",
]  # fmt: skip
TEXT_CELL = st.one_of(st.sampled_from(NUMBER_TEXTS), st.text(_TEXT, max_size=5), st.none())
FLOATS = st.one_of(
    st.sampled_from(
        [
            -5.0,
            100.0,
            1.5,
            0.0,
            -0.0,
            2.5,
            1.0,
            3.0,
            99.0,
            50.0,
            1e20,
            0.1,
            0.5,
            4.2,
            4.199999809265137,
            4.2000001,
            4.2000002,
            2.2e-311,
            3.5e38,
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)
INTEGERS = st.one_of(
    st.sampled_from([0, 1, 2, 3, 50, 51, -1, 99, 2**53 + 1]),
    st.integers(-(2**63), 2**63 - 1),
    st.none(),
)
STAMPS = st.one_of(
    st.datetimes(dt.datetime(1990, 1, 1), dt.datetime(2040, 1, 1)),
    st.sampled_from([dt.datetime(2000, 1, 1), dt.datetime(2030, 12, 31, 0, 0, 1)]),
    st.none(),
)
TYPED_CELLS = {"text": TEXT_CELL, "float": FLOATS, "integer": INTEGERS,
               "boolean": st.one_of(st.booleans(), st.none()), "timestamp": STAMPS}  # fmt: skip


def _postgres_url() -> str | None:
    url = os.environ.get("DPEVOLVE_TEST_POSTGRES")
    if not url and os.environ.get("CI") == "true":
        pytest.fail("CI must run the PostgreSQL tests: DPEVOLVE_TEST_POSTGRES is unset")
    return url or None


def _frame(rows: list[list[Any]], storage: dict[str, str]) -> pd.DataFrame:
    """The cells as pandas holds them when a reader hands over these stored types."""
    dtypes = {"text": object, "float": "float64", "integer": "Int64", "boolean": "boolean",
              "timestamp": "datetime64[us]"}  # fmt: skip
    columns = {}
    for k, name in enumerate(NAMES):
        cells = [row[k] for row in rows]
        kind = storage[name]
        if kind == "float":
            cells = [np.nan if c is None else c for c in cells]
        columns[name] = pd.Series(cells, dtype=dtypes[kind])
    return pd.DataFrame(columns)


def _to_duckdb(rows: list[list[Any]], storage: dict[str, str], path: Path) -> Callable[[], Any]:
    import duckdb

    from dpevolve.data.duckdb_source import DuckDBDatabase

    types = {"text": "VARCHAR", "float": "DOUBLE", "integer": "BIGINT", "boolean": "BOOLEAN",
             "timestamp": "TIMESTAMP"}  # fmt: skip
    path.unlink(missing_ok=True)
    with duckdb.connect(str(path)) as con:
        body = ", ".join(f'"{n}" {types[storage[n]]}' for n in NAMES)
        con.execute(f"CREATE TABLE {TABLE} ({body})")
        if rows:
            marks = ", ".join("?" for _ in NAMES)
            con.executemany(f"INSERT INTO {TABLE} VALUES ({marks})", rows)
    return lambda: DuckDBDatabase(path, "table")


def _to_postgres(rows: list[list[Any]], storage: dict[str, str], url: str) -> Callable[[], Any]:
    import psycopg

    from dpevolve.data.postgres import PostgresDatabase, parse_url

    types = {"text": "text", "float": "float8", "integer": "int8", "boolean": "bool",
             "timestamp": "timestamp"}  # fmt: skip
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {TABLE}")  # type: ignore[arg-type]
        body = ", ".join(f'"{n}" {types[storage[n]]}' for n in NAMES)
        con.execute(f"CREATE TABLE {TABLE} ({body})")  # type: ignore[arg-type]
        with con.cursor().copy(f"COPY {TABLE} FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in rows:
                copy.write_row(row)
    location = parse_url(url + ("&" if "?" in url else "?") + f"table={TABLE}")
    return lambda: PostgresDatabase(location, "table")


def _python_cells(frame: pd.DataFrame, clip: bool) -> tuple[np.ndarray, dict[str, list[Any]]]:
    """Each cell's problem code and value, by the Python reader."""
    checked, problems, _ = SCHEMA.check(frame, clip=clip)
    codes = np.zeros((len(frame), len(NAMES)), dtype=int)
    for problem in problems:
        j = NAMES.index(problem.column)
        column = SCHEMA.columns[j]
        code = next(c for c in PROBLEMS if problem.problem == problem_text(column, c))
        assert not codes[problem.mask, j].any(), "one problem per cell"
        codes[problem.mask, j] = code
    return codes, {name: list(checked[name]) for name in NAMES}


def _database_cells(table: DatabaseTable) -> tuple[np.ndarray, dict[str, list[Any]]]:
    rows = table.checked_rows()
    codes = np.column_stack([rows[f"p{j}"].to_numpy(dtype=int) for j in range(len(NAMES))])
    values: dict[str, list[Any]] = {}
    for j, column in enumerate(SCHEMA.columns):
        cells = rows[f"v{j}"].to_numpy(dtype=object)
        if hasattr(column, "keys"):
            keys = list(column.keys)
            values[column.name] = [None if v is None or v < 0 else keys[int(v)] for v in cells]
        else:
            values[column.name] = [np.nan if v is None else float(v) for v in cells]
    return codes, values


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def _outcome(read: Callable[[], Any]) -> Any:
    try:
        return read()
    except InputError as exc:
        return f"error: {exc}"


def _verdict(frame: pd.DataFrame, on_invalid: Any) -> Any:
    """The Python reader's report or error on the whole table (as the streaming reader
    ranks the problems: :class:`~dpevolve.data.batches.Tally`)."""
    tally = Tally(SCHEMA, on_invalid, "table")
    tally.add(validate_batch(frame, SCHEMA, on_invalid, "table")[1])
    return tally.report()


def _agree(connect: Callable[[], Any], frame: pd.DataFrame, where: str, order: str) -> None:
    for on_invalid in ("error", "drop", "clip"):
        table = _outcome(
            lambda: DatabaseTable(connect, TABLE, SCHEMA, 3, on_invalid, "table", order)  # noqa: B023
        )
        python = _outcome(lambda: _verdict(frame, on_invalid))  # noqa: B023
        if isinstance(python, str):
            assert table == python, f"{where} {on_invalid}"
            continue
        assert not isinstance(table, str), f"{where} {on_invalid}: {table}"
        assert table.report == python, f"{where} {on_invalid}"
        if len(frame) == 0:
            continue
        expected, values = _python_cells(frame, on_invalid == "clip")
        got, read = _database_cells(table)
        for i in range(len(frame)):
            for j, name in enumerate(NAMES):
                cell = f"{where} {on_invalid} row {i} column {name} ({frame[name].iloc[i]!r})"
                assert got[i, j] == expected[i, j], cell
                if expected[i, j] == 0:
                    assert _same(read[name][i], values[name][i]), cell


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[list[Any]], dict[str, str]]:
    storage = draw(st.sampled_from([dict.fromkeys(NAMES, "text"), TYPED]))
    n = draw(st.integers(1, 6))
    rows = [[draw(TYPED_CELLS[storage[name]]) for name in NAMES] for _ in range(n)]
    return rows, storage


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # a failure prints as found
)
@given(data=tables())
def test_duckdb_reads_every_cell_as_python(tmp_path: Path, data) -> None:
    rows, storage = data
    connect = _to_duckdb(rows, storage, tmp_path / "t.duckdb")
    _agree(connect, _frame(rows, storage), "duckdb", "t.rowid")


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),  # a failure prints as found
)
@given(data=tables())
def test_postgres_reads_every_cell_as_python(data) -> None:
    url = _postgres_url()
    if url is None:
        pytest.skip("no PostgreSQL server (DPEVOLVE_TEST_POSTGRES unset)")
    pytest.importorskip("psycopg")
    rows, storage = data
    connect = _to_postgres(rows, storage, url)
    _agree(connect, _frame(rows, storage), "postgres", "t.ctid")
