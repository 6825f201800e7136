"""The engine's counts in DuckDB against the in-process reader: CPU, wall, peak RSS and
the same output.

A generated table (:func:`scale_memory.generate`: ``d`` features and a label) is written
to Parquet and loaded into a DuckDB database; then ``dpevolve synth`` runs the default
engine three ways, each a child process measured by ``os.wait4`` (CPU = user + system
of every thread, DuckDB's included):

* ``file``: the Parquet file streamed (``--stream``), counted in this process
  (``--backend local``, the default engine's counting path);
* ``file-duckdb``: the same file read by the Python reader, counted in DuckDB
  (``--backend duckdb``);
* ``table``: the DuckDB table (``PATH.duckdb::TABLE``), read from DuckDB and counted there.

With ``--seed 0 --noise-seed 0`` (seeded noise: a benchmark only) the three output files
must be identical; the JSON records their SHA-256. Writes
``benchmarks/results/duckdb_counts.json`` (``--out``).

    nice python benchmarks/duckdb_counts.py [--rows 1e6 1e7] [--d 9]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from scale_memory import RESULTS, SCRATCH, synth, table


def duckdb_table(parquet: Path) -> tuple[str, float]:
    """The Parquet file loaded into a DuckDB database; the load's wall seconds."""
    import duckdb

    database = parquet.with_suffix(".duckdb")
    start = time.perf_counter()
    if not database.exists():
        with duckdb.connect(str(database)) as con:
            con.execute(f"CREATE TABLE people AS SELECT * FROM read_parquet('{parquet}')")
    return f"{database}::people", round(time.perf_counter() - start, 2)


def measure(d: int, rows: int) -> list[dict[str, Any]]:
    parquet = table(d, rows)
    location, load_s = duckdb_table(parquet)
    ways: dict[str, tuple[Path | str, tuple, bool]] = {
        "file": (parquet, ("--backend", "local"), True),
        "file-duckdb": (parquet, ("--backend", "duckdb"), True),
        "table": (location, (), False),
    }
    runs = []
    for name, (private, extra, stream) in ways.items():
        out = SCRATCH / f"duck_{name}.parquet"
        run = synth(private, out, 20_000, stream=stream, extra=extra)
        run.update(way=name, rows=rows, output_sha256=hashlib.sha256(out.read_bytes()).hexdigest())
        if name == "table":
            run["duckdb_load_wall_s"] = load_s
        out.unlink()
        runs.append(run)
        print(json.dumps(run), flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="*", default=[1e6])
    parser.add_argument("--d", type=int, default=9)
    parser.add_argument("--out", type=Path, default=RESULTS / "duckdb_counts.json")
    args = parser.parse_args()
    runs = [run for rows in args.rows for run in measure(args.d, int(rows))]
    same = {r["rows"]: len({x["output_sha256"] for x in runs if x["rows"] == r["rows"]}) == 1
            for r in runs}  # fmt: skip
    result = {
        "benchmark": "duckdb_counts.py",
        "d": args.d,
        "written_rows": 20_000,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "same_output": same,
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
