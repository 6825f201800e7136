"""DuckDB as a counting engine and a private source (docs/scale.md): the same counts,
records, output and ledger as the local backend and the Python reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.backends.duckdb import DuckDBBackend
from dpevolve.backends.local import LocalBackend
from dpevolve.data.duckdb_source import duckdb_table, parse_location
from dpevolve.data.encoding import Records
from dpevolve.data.sources import FrameSource
from dpevolve.data.streaming import StreamedTable
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import MarginalCounts
from dpevolve.errors import InputError

pytest.importorskip("duckdb")


def test_grouped_counts_are_the_local_counts(small_schema, small_table) -> None:
    """Every clique (any order, repeated column sets, more sets than one query holds) and
    every fine histogram: the same integers as the local backend."""
    import dpevolve.backends.grouping as duck

    source = FrameSource(small_table, small_schema)
    discretiser = Discretiser(small_schema)
    names = small_schema.names
    cliques = [(a,) for a in names] + [(a, b) for a in names for b in names if a != b]
    cliques.append(tuple(names[:3]))
    fine = [c.name for c in discretiser.numeric]
    query = MarginalCounts(discretiser, cliques, fine)
    backend = DuckDBBackend()
    expected = LocalBackend().count(source.batches(), query)
    assert np.array_equal(backend.count(source.batches(), query), expected)
    duck.SETS_PER_QUERY, old = 3, duck.SETS_PER_QUERY
    try:
        assert np.array_equal(backend.count(source.batches(), query), expected)
    finally:
        duck.SETS_PER_QUERY = old
    backend.close()


def test_engine_through_duckdb_is_the_local_engine(small_schema, small_table) -> None:
    """A seeded fit counted in DuckDB gives the local fit's rows and ledger."""

    def fit(backend):
        model = Synthesizer(
            small_schema, epsilon=1.0, random_state=3, noise_seed=4, backend=backend
        )
        return model.fit(small_table)

    local, duck = fit("local"), fit(DuckDBBackend())
    pd.testing.assert_frame_equal(duck.sample(300), local.sample(300))
    a, b = local.ledger_.to_dict(), duck.ledger_.to_dict()
    a["config"].pop("backend"), b["config"].pop("backend")
    assert json.dumps(a, default=str) == json.dumps(b, default=str)


# ------------------------------------------------------------------ the private source

AGES = st.one_of(st.integers(-5, 120), st.none(), st.sampled_from([17.5, 90.0, 1e9]))
JOBS = st.one_of(st.sampled_from(["admin", "manager", "builder", "driver", "retired"]),
                 st.sampled_from(["", "Admin", " admin", "pilot"]), st.none())  # fmt: skip
HOURS = st.one_of(st.integers(0, 100), st.none())
INCOMES = st.one_of(st.sampled_from(["<=50K", ">50K"]), st.sampled_from(["50K", ""]))


def to_duckdb(frame: pd.DataFrame, folder: Path) -> tuple[Path, str]:
    """The frame as a Parquet file and as a table of a DuckDB database made from it."""
    import duckdb

    parquet, database = folder / "t.parquet", folder / "t.duckdb"
    parquet.unlink(missing_ok=True)
    database.unlink(missing_ok=True)
    frame.to_parquet(parquet, index=False)
    with duckdb.connect(str(database)) as con:
        con.execute(f"CREATE TABLE people AS SELECT * FROM read_parquet('{parquet}')")
    return parquet, f"{database}::people"


def outcome(open_source):
    try:
        source = open_source()
    except InputError as exc:
        return "error", str(exc).split(": ", 1)[-1]
    batches = source.batches()
    parts = [batches] if isinstance(batches, Records) else list(batches)
    records = Records.concat(parts) if parts else None
    return source.n, source.report.to_dict(), records


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(AGES, JOBS, HOURS, INCOMES), min_size=1, max_size=30),
    on_invalid=st.sampled_from(["error", "drop", "clip"]),
)
def test_duckdb_table_reads_as_the_python_reader(small_schema, tmp_path, rows, on_invalid):
    """Adversarial cells (out of range, fractional, missing, unknown categories): the
    DuckDB table gives the Python reader's n, validation report and encoded records,
    cell for cell, or the same error."""
    frame = pd.DataFrame(rows, columns=["age", "job", "hours", "income"])
    parquet, location = to_duckdb(frame, tmp_path)
    python = outcome(lambda: StreamedTable(parquet, small_schema, on_invalid=on_invalid))
    duck = outcome(lambda: duckdb_table(location, small_schema, on_invalid=on_invalid))
    assert python[0] == duck[0]
    if python[0] == "error":
        assert duck[1] == python[1]
        return
    assert duck[1] == python[1]
    assert (python[2] is None) == (duck[2] is None)
    if python[2] is not None:
        assert duck[2].equals(python[2])


def test_locations() -> None:
    location = parse_location("data/x.duckdb::main.people")
    assert location is not None and location.table == "main.people"
    assert location.sql() == '"main"."people"'
    assert parse_location("x.parquet") is None
    for bad in ("x.duckdb::", "::t", "x.duckdb::a;drop", "x.duckdb::a.b.c"):
        with pytest.raises(InputError):
            parse_location(bad)


def test_cli_through_duckdb_is_the_file_path(small_schema, small_table, tmp_path, capsys):
    """``dpevolve synth`` with fixed --seed and --noise-seed: the same table and ledger
    from the Parquet file, from the file counted in DuckDB and from a DuckDB table."""
    from dpevolve.cli import main

    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    parquet, location = to_duckdb(small_table, tmp_path)
    common = ["-s", schema, "-e", "1", "--seed", "5", "--noise-seed", "6", "-q",
              "--engine-options", "{max_rounds: 4}", "--on-invalid", "drop"]  # fmt: skip
    runs = {
        "file": [parquet, "--backend", "local"],
        "file-duckdb": [parquet, "--backend", "duckdb"],
        "table": [location],
    }
    written = {}
    for name, head in runs.items():
        out = tmp_path / f"{name}.csv"
        argv = [str(a) for a in ["synth", *head, *common, "-o", out]]
        assert main(argv) == 0, capsys.readouterr().err
        ledger = json.loads(out.with_suffix(".ledger.json").read_text())
        ledger["config"].pop("backend")
        written[name] = (out.read_bytes(), ledger)
    assert written["file"] == written["file-duckdb"] == written["table"]
    bad = ["synth", f"{tmp_path / 't.duckdb'}::nobody", *common, "-o", tmp_path / "x.csv"]
    assert main([str(a) for a in bad]) == 2
    assert "no such table" in capsys.readouterr().err and not (tmp_path / "x.csv").exists()


def test_auto_counts_a_stream_in_duckdb(small_schema, small_table, tmp_path) -> None:
    """``auto`` counts a table read from disk each pass in DuckDB, records in memory here."""
    from dpevolve.backends.duckdb import counts_in_duckdb

    path = tmp_path / "t.parquet"
    small_table.to_parquet(path, index=False)
    assert counts_in_duckdb(FrameSource(small_table, small_schema).batches()) is None
    backend = counts_in_duckdb(StreamedTable(path, small_schema).batches())
    assert isinstance(backend, DuckDBBackend)
    backend.close()


def test_private_evolution_votes_through_duckdb(small_schema, small_table) -> None:
    """DuckDB does not vote: a PE fit with it votes as ``auto`` does, the same rows."""
    from dpevolve.presets import get_method

    def fit(backend):
        method = get_method("tabpe", population=30, rounds=2)
        model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, method=method,
                            random_state=1, noise_seed=2, backend=backend)  # fmt: skip
        return model.fit(small_table).synthetic_

    pd.testing.assert_frame_equal(fit(DuckDBBackend()), fit("local"))


def test_parquet_folder_read_by_duckdb_is_the_python_reader(tmp_path, small_schema) -> None:
    """A folder of Parquet parts read by DuckDB gives the Python reader's records and
    report (files in name order); an empty folder is one named error."""
    from dpevolve.data.duckdb_source import parquet_table

    rng = np.random.default_rng(3)
    frame = pd.DataFrame(
        {
            "age": rng.integers(10, 95, 300),  # some out of range
            "job": rng.choice(["admin", "manager", "builder", "driver", "retired", "x"], 300),
            "hours": rng.integers(1, 99, 300),
            "income": rng.choice(["<=50K", ">50K"], 300),
        }
    )
    folder = tmp_path / "private.parquet"
    folder.mkdir()
    for k, (a, b) in enumerate([(0, 90), (90, 91), (91, 300)]):
        frame.iloc[a:b].to_parquet(folder / f"part-{k:02d}.parquet", index=False)
    duck = parquet_table(folder, small_schema, 50, on_invalid="drop")
    python = StreamedTable(folder, small_schema, 50, on_invalid="drop")
    assert duck.n == python.n == 300 and duck.report == python.report
    assert Records.concat(list(duck.batches())).equals(Records.concat(list(python.batches())))
    empty = tmp_path / "empty.parquet"
    empty.mkdir()
    with pytest.raises(InputError, match=r"holds no \.parquet file"):
        parquet_table(empty, small_schema)
