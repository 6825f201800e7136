"""The engine's counts computed in the database (docs/scale.md): the cell codes written as
SQL comparisons (:mod:`dpevolve.backends.sql_codes`) and the GROUP BY counts
(:class:`~dpevolve.backends.postgres.ServerCounts`) give, cell for cell, the integers
the local backend adds up from the Python reader's records, on adversarial tables:
values on bin edges and fine-cell boundaries, the floats beside them, atoms and their
tolerance, declared values, the declared ends, out-of-range values (dropped or
clipped), NaN, infinities and missing cells. DuckDB always; PostgreSQL where
``DPEVOLVE_TEST_POSTGRES`` names a server (``scripts/ci_postgres.sh``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.backends.local import LocalBackend
from dpevolve.backends.postgres import ServerCounts
from dpevolve.backends.sql_codes import code_sql
from dpevolve.data.database import DatabaseTable, KeptRows
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource
from dpevolve.data.sql_cells import Dialect
from dpevolve.engine.discretise import Discretiser, atom_tolerance
from dpevolve.engine.measure import MarginalCounts

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")

SCHEMA = Schema.from_dict(
    {
        "columns": {
            "x": {"type": "numeric", "lo": -3.7, "hi": 11.3},
            "n": {"type": "numeric", "lo": -5, "hi": 100, "nullable": True},
            "i": {"type": "numeric", "lo": 0, "hi": 50, "integer": True},
            "w": {"type": "numeric", "lo": 0, "hi": 100000, "integer": True},
            "d": {"type": "numeric", "lo": 0, "hi": 1.5, "decimals": 2},
            "v": {
                "type": "numeric",
                "lo": 0,
                "hi": 26,
                "decimals": 1,
                "values": [0.5, 2.5, 6, 9, 13, 16.5, 23],
            },
            "c": {"type": "categorical", "values": ["a", "b", "c"], "nullable": True},
        },
    }
)
NUMERIC = ["x", "n", "i", "w", "d", "v"]
TABLE = f"codes_{os.getpid()}"


def _spec(name: str):
    return next(c for c in SCHEMA.columns if c.name == name)


def _discretisers() -> list[Discretiser]:
    return [
        Discretiser(SCHEMA),
        Discretiser(SCHEMA, bins=7, fine_cells=40, atoms={"x": [0.1, 2.0]}),
        Discretiser(SCHEMA, bins=3, fine_cells=8, edges={"x": [-3.7, 0.0, 1e-9, 11.3]}),
    ]


def _special(column: str) -> list[float]:
    """The values where a column's codes change, and the floats beside them."""
    points: set[float] = set()
    spec = _spec(column)
    for d in _discretisers():
        cells = d.fine[column]
        points |= {float(v) for v in d.edges(column)}
        points |= {float(v) for v in cells.lo[np.isfinite(cells.lo)]}
        tol = atom_tolerance(spec)
        points |= {float(a) + s * tol for a in cells.lo[: cells.atoms] for s in (-1, 1)}
    step = 1.0 if spec.integer else 10.0**-2
    points |= {k * step + 0.5 * step for k in range(-3, 12)}
    near = set(points)
    for p in points:
        near |= {float(np.nextafter(p, -np.inf)), float(np.nextafter(p, np.inf))}
    return sorted(near)


def _column(name: str) -> st.SearchStrategy:
    values = st.one_of(
        st.sampled_from(_special(name)),
        st.floats(allow_nan=True, allow_infinity=True),
        st.floats(_spec(name).lo - 1, _spec(name).hi + 1),
        st.none(),
    )
    return values


TABLES = st.integers(1, 40).flatmap(
    lambda rows: st.fixed_dictionaries(
        {
            **{c: st.lists(_column(c), min_size=rows, max_size=rows) for c in NUMERIC},
            "c": st.lists(st.sampled_from(["a", "b", "c", None]), min_size=rows, max_size=rows),
        }
    )
)


def _frame(data: dict) -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(data[c], dtype=float) for c in NUMERIC})
    frame["c"] = pd.Series(data["c"], dtype=object)
    return frame


def _duckdb(frame: pd.DataFrame, folder: Path, on_invalid: str) -> DatabaseTable:
    from dpevolve.data.duckdb_source import parquet_table

    path = folder / "t.parquet"
    frame.to_parquet(path, index=False)
    return parquet_table(path, SCHEMA, on_invalid=on_invalid)  # type: ignore[arg-type]


def _postgres(frame: pd.DataFrame, url: str, on_invalid: str) -> DatabaseTable:
    import psycopg

    from dpevolve.data.postgres import postgres_table

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {TABLE}")  # type: ignore[arg-type]
        body = ", ".join([*(f'"{c}" float8' for c in NUMERIC), '"c" text'])
        con.execute(f"CREATE TABLE {TABLE} ({body})")  # type: ignore[arg-type]
        with con.cursor().copy(f"COPY {TABLE} FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in frame.itertuples(index=False):
                copy.write_row([None if v is None else v for v in row])
    table_url = url + ("&" if "?" in url else "?") + f"table={TABLE}"
    return postgres_table(table_url, SCHEMA, on_invalid=on_invalid)  # type: ignore[arg-type]


def _same_counts(table: DatabaseTable, frame: pd.DataFrame, on_invalid: str) -> None:
    reader = FrameSource(frame, SCHEMA, on_invalid=on_invalid)  # type: ignore[arg-type]
    names = SCHEMA.names
    cliques = [(a,) for a in names] + [(a, b) for a in names for b in names if a < b]
    for discretiser in _discretisers():
        query = MarginalCounts(discretiser, cliques, list(NUMERIC))
        expected = LocalBackend().count(reader.batches(), query)
        found = ServerCounts(LocalBackend()).count(table.batches(), query)
        assert np.array_equal(found, expected)


def _postgres_url() -> str | None:
    url = os.environ.get("DPEVOLVE_TEST_POSTGRES")
    if url:
        pytest.importorskip("psycopg")
    elif os.environ.get("CI") == "true":
        pytest.fail("CI must run the PostgreSQL tests: DPEVOLVE_TEST_POSTGRES is unset")
    return url


def test_codes_restate_the_discretiser() -> None:
    """On every special value and the floats beside it, the SQL's comparisons (evaluated
    here as a database would) give the discretiser's codes."""
    for discretiser in _discretisers():
        codes = code_sql(discretiser, lambda name: f'"{name}"', Dialect("duckdb"))
        assert set(codes) == {*SCHEMA.names, *(f"fine:{c}" for c in NUMERIC)}
        import duckdb

        for name in NUMERIC:
            values = np.array([v for v in _special(name) if np.isfinite(v)])
            relation = pd.DataFrame({name: values})  # noqa: F841 (read by DuckDB)
            sql = f"SELECT {codes[name]}, {codes['fine:' + name]} FROM relation"
            got = np.array(duckdb.sql(sql).fetchall(), dtype=np.int64)
            records_of = _records(name, values)
            assert np.array_equal(
                got[:, 0], discretiser.codes(records_of)[:, SCHEMA.names.index(name)]
            )
            assert np.array_equal(got[:, 1], discretiser.fine_codes(records_of, name))


def _records(name: str, values: np.ndarray):
    from dpevolve.data.database import value_records
    from dpevolve.data.encoding import Layout

    layout = Layout.of(SCHEMA)
    block = np.zeros((values.size, len(SCHEMA.names)))
    block[:, [c.name for c in layout.numeric].index(name)] = values
    return value_records(block, layout)


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=TABLES, on_invalid=st.sampled_from(["drop", "clip"]))
def test_counts_in_the_database_are_the_local_counts(data, on_invalid, tmp_path) -> None:
    """Adversarial tables: DuckDB and PostgreSQL count every clique and fine histogram,
    cell for cell, as the local backend counts the Python reader's records."""
    frame = _frame(data)
    _same_counts(_duckdb(frame, tmp_path, on_invalid), frame, on_invalid)
    url = _postgres_url()
    if url:
        _same_counts(_postgres(frame, url, on_invalid), frame, on_invalid)


def test_synth_counts_in_the_server(small_schema, small_table, tmp_path, capsys, monkeypatch):
    """``dpevolve synth postgresql://...`` computes every marginal count in the server
    (GROUP BY queries over a temporary table of codes, written once per discretiser)
    and writes the file path's bytes and ledger (the refinement's votes read the valid
    rows here, as with any source)."""
    url = _postgres_url()
    if not url:
        pytest.skip("no PostgreSQL server (DPEVOLVE_TEST_POSTGRES unset)")
    import psycopg

    from dpevolve.cli import main

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {TABLE}")  # type: ignore[arg-type]
        con.execute(f"CREATE TABLE {TABLE} (age int8, job text, hours int8, income text)")  # type: ignore[arg-type]
        with con.cursor().copy(f"COPY {TABLE} FROM STDIN") as copy:  # type: ignore[arg-type]
            for row in small_table.itertuples(index=False):
                copy.write_row(list(row))
    from dpevolve.backends.duckdb import DuckDBBackend
    from dpevolve.backends.grouping import CodedCounts

    queries: list[int] = []  # GROUP BY queries on the kept codes
    rows = KeptRows.rows
    monkeypatch.setattr(KeptRows, "rows", lambda self, sql: queries.append(1) or rows(self, sql))
    kept: list[int] = []  # validations of the table for the codes
    keep = DatabaseTable.keep
    monkeypatch.setattr(DatabaseTable, "keep", lambda self, *a: kept.append(1) or keep(self, *a))
    here: list[object] = []  # marginal counts computed on this machine (DuckDB)
    count = DuckDBBackend.count
    monkeypatch.setattr(
        DuckDBBackend, "count",
        lambda self, p, q: here.append(q) if isinstance(q, CodedCounts) else count(self, p, q),
    )  # fmt: skip
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    parquet = tmp_path / "t.parquet"
    small_table.to_parquet(parquet, index=False)
    common = ["-s", schema, "-e", "1", "--seed", "5", "--noise-seed", "6", "-q",
              "--engine-options", "{max_rounds: 4}"]  # fmt: skip
    written = {}
    for name, head in {
        "file": [parquet, "--backend", "local"],
        "postgres": [url + ("&" if "?" in url else "?") + f"table={TABLE}"],
    }.items():
        out = tmp_path / f"{name}.csv"
        assert main([str(a) for a in ["synth", *head, *common, "-o", out]]) == 0, (
            capsys.readouterr().err
        )
        ledger = json.loads(out.with_suffix(".ledger.json").read_text())
        ledger["config"].pop("backend")
        written[name] = (out.read_bytes(), ledger)
    assert queries and not here  # every marginal count in the server
    # The table is validated for its codes once per discretiser (two in a run), not
    # once per pass.
    assert 1 <= len(kept) <= 2 < len(queries)
    assert written["file"] == written["postgres"]
