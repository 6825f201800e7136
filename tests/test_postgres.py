"""A PostgreSQL table as the private table (docs/scale.md, "PostgreSQL"): the same output
and ledger as the file, every failure before any budget is spent, no password shown.

The server is ``DPEVOLVE_TEST_POSTGRES`` (``scripts/ci_postgres.sh`` starts one; CI
always does, and these tests fail there without it). URL parsing needs no server.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpevolve.data.postgres import parse_url, redact
from dpevolve.errors import InputError

TABLE = f"people_{os.getpid()}"


def _server() -> str:
    url = os.environ.get("DPEVOLVE_TEST_POSTGRES")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must run the PostgreSQL tests: DPEVOLVE_TEST_POSTGRES is unset")
        pytest.skip("no PostgreSQL server (DPEVOLVE_TEST_POSTGRES unset)")
    pytest.importorskip("psycopg")
    pytest.importorskip("duckdb")
    return url


def _with_table(url: str, table: str) -> str:
    return url + ("&" if "?" in url else "?") + f"table={table}"


def _load(
    url: str, frame: pd.DataFrame, table: str = TABLE, types: dict[str, str] | None = None
) -> None:
    import psycopg

    kinds = {
        "int64": "int8",
        "float64": "float8",
        "object": "text",
        "str": "text",
        "string": "text",
        "bool": "bool",
    }
    columns = {c: (types or {}).get(c, kinds[str(frame[c].dtype)]) for c in frame.columns}
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {table}")  # type: ignore[arg-type]
        body = ", ".join(f'"{c}" {t}' for c, t in columns.items())
        con.execute(f"CREATE TABLE {table} ({body})")  # type: ignore[arg-type]
        with con.cursor().copy(f"COPY {table} FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in frame.itertuples(index=False):
                copy.write_row([None if pd.isna(v) else v for v in row])


def test_urls() -> None:
    """The table in the path or as ?table=, other parameters kept, the password never shown."""
    a = parse_url("postgresql://ann:s3cr%2Ft@db.example:5433/shop/sales.people?sslmode=require")
    assert a.table == "sales.people" and a.sql() == '"sales"."people"'
    assert a.conninfo == "postgresql://ann:s3cr%2Ft@db.example:5433/shop?sslmode=require"
    assert "s3cr" not in str(a) and "***" in str(a)
    b = parse_url("postgres://ann@/shop?host=/run/postgresql&table=people")
    assert b.table == "people" and b.conninfo == "postgres://ann@/shop?host=%2Frun%2Fpostgresql"
    for bad in ("postgresql://h/db", "postgresql://h/", "postgresql://h/db/a/b",
                "postgresql://h/db/t?table=u", "postgresql://h/db/a;drop",
                "postgresql://u:hunter2@h/db/a.b.c"):  # fmt: skip
        with pytest.raises(InputError) as caught:
            parse_url(bad)
        assert "hunter2" not in str(caught.value)
    assert redact("x://u:p%40ss@h", "p@ss") == "x://u:***@h"


def test_cli_through_postgres_is_the_file_path(small_schema, small_table, tmp_path, capsys):
    """``dpevolve synth postgresql://...`` with fixed --seed and --noise-seed writes the
    bytes and ledger the Parquet file gives (read by pandas here, by DuckDB by default)."""
    from dpevolve.cli import main

    url = _server()
    _load(url, small_table)
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    parquet = tmp_path / "t.parquet"
    small_table.to_parquet(parquet, index=False)
    common = ["-s", schema, "-e", "1", "--seed", "5", "--noise-seed", "6", "-q",
              "--engine-options", "{max_rounds: 4}", "--on-invalid", "drop"]  # fmt: skip
    runs = {
        "file": [parquet, "--backend", "local"],
        "file-auto": [parquet],
        "postgres": [_with_table(url, TABLE)],
    }
    written = {}
    for name, head in runs.items():
        out = tmp_path / f"{name}.csv"
        argv = [str(a) for a in ["synth", *head, *common, "-o", out]]
        assert main(argv) == 0, capsys.readouterr().err
        ledger = json.loads(out.with_suffix(".ledger.json").read_text())
        ledger["config"].pop("backend")
        written[name] = (out.read_bytes(), ledger)
    assert written["file"] == written["file-auto"] == written["postgres"]


def _fails(argv: list[Any], out: Path, capsys) -> str:
    from dpevolve.cli import main

    assert main([str(a) for a in [*argv, "-o", out]]) == 2
    err = capsys.readouterr().err.strip()
    assert not out.exists() and not out.with_suffix(".ledger.json").exists()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_failures_before_any_budget(small_schema, small_table, tmp_path, capsys) -> None:
    """A wrong password, a missing table, a missing or undeclared column and a column of
    a type no cell rule reads: one line naming the table and column, exit 2, no output,
    no password."""
    url = _server()
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    common = ["-s", schema, "-e", "1", "-q"]
    out = tmp_path / "x.csv"
    err = _fails(["synth", _with_table(url, "nobody_here"), *common], out, capsys)
    assert "no such table" in err and "nobody_here" in err
    lacking = small_table.drop(columns=["hours"])
    _load(url, lacking, f"{TABLE}_lacking")
    err = _fails(["synth", _with_table(url, f"{TABLE}_lacking"), *common], out, capsys)
    assert "lacks column 'hours'" in err
    extra = small_table.assign(secret=1)
    _load(url, extra, f"{TABLE}_extra")
    err = _fails(["synth", _with_table(url, f"{TABLE}_extra"), *common], out, capsys)
    assert "'secret'" in err
    _load(url, small_table, f"{TABLE}_typed", types={"age": "bytea"})
    err = _fails(["synth", _with_table(url, f"{TABLE}_typed"), *common], out, capsys)
    assert "column 'age'" in err and "stored as" in err
    # A wrong password on a server that asks for none still fails only if it cannot
    # connect: point at a port nobody listens on.
    bad = "postgresql://ann:hunter2@127.0.0.1:1/db/people"
    err = _fails(["synth", bad, *common], out, capsys)
    assert "cannot connect" in err and "hunter2" not in err and "***" in err
