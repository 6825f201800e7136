"""The database readers against the in-process reader: CPU, wall and the same output.

A generated table (:func:`scale_memory.table`: ``d`` features and a label, in Parquet
under the system's temporary folder) is synthesized by ``dpevolve synth`` (the default
engine, 20,000 rows written) in child processes measured by ``os.wait4`` (CPU = user +
system of every thread; a PostgreSQL server's own CPU is not the child's, and is
reported apart):

* ``python``: the Python reader validates the streamed Parquet file (``--stream
  --backend duckdb``: counted in DuckDB);
* ``duckdb``: the default with DuckDB installed: DuckDB validates the Parquet file by
  the Python reader's rules in SQL and counts it;
* ``postgres``: the same rows in a PostgreSQL table (``DPEVOLVE_TEST_POSTGRES``, e.g.
  from ``scripts/ci_postgres.sh``), validated and counted in the server (GROUP BY
  queries over cell codes computed in SQL); the server's CPU is reported apart
  (``server_cpu_s``: its processes' user + system seconds, read from ``/proc`` when the
  server runs on this machine);
* ``local`` (``--local``): the file streamed and counted in this process (``--backend
  local``), the reference path (slow: every round rereads the file).

With ``--seed 0 --noise-seed 0`` (seeded noise: a benchmark only) every way must write
the same bytes and ledger; the JSON records their SHA-256. Writes
``benchmarks/results/database_counts.json`` and ``.png``.

    nice python benchmarks/database_counts.py [--rows 1e6 1e7] [--d 9] [--local]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from scale_memory import RESULTS, SCRATCH, measured, table


def run(private: str, schema: Path, out: Path, extra: tuple[str, ...]) -> dict[str, Any]:
    """One ``dpevolve synth`` child process: CPU and wall seconds, peak RSS, hashes."""
    argv = [sys.executable, "-m", "dpevolve.cli", "synth", private, *extra, "-s", str(schema),
            "-e", "1", "--seed", "0", "--noise-seed", "0", "--rows", "20000", "-o", str(out),
            "--force", "-q"]  # fmt: skip
    usage = measured(argv)
    ledger_path = out.with_suffix(".ledger.json")
    ledger = json.loads(ledger_path.read_text())
    ledger["config"].pop("backend", None)  # the one line that names the counting
    result = {
        **usage,
        "output_sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "ledger_sha256": hashlib.sha256(json.dumps(ledger, sort_keys=True).encode()).hexdigest(),
    }
    out.unlink()
    ledger_path.unlink()
    return result


def server_cpu(url: str) -> float | None:
    """CPU seconds the local PostgreSQL server has used (the postmaster, its live
    processes and those it reaped), or ``None`` if it is not on this machine."""
    import psycopg

    try:
        with psycopg.connect(url) as con:
            row = con.execute("SHOW data_directory").fetchone()
        pid = int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0])  # type: ignore[index]
        tick = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(proc.name) == pid:  # utime, stime, cutime, cstime
                total += sum(int(f) for f in fields[11:15]) / tick
            elif int(fields[1]) == pid:  # a live backend: its own time
                total += sum(int(f) for f in fields[11:13]) / tick
        return round(total, 2)
    except (OSError, ValueError, psycopg.Error):
        return None


def to_postgres(parquet: Path, url: str, name: str) -> float:
    """The Parquet file copied into table ``name``; the load's wall seconds."""
    import psycopg
    import pyarrow.parquet as pq

    start = time.perf_counter()
    data = pq.ParquetFile(parquet)
    kinds = {"int64": "int8", "double": "float8", "string": "text", "large_string": "text"}
    body = ", ".join(f'"{f.name}" {kinds[str(f.type)]}' for f in data.schema_arrow)
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {name}")  # type: ignore[arg-type]
        con.execute(f"CREATE TABLE {name} ({body})")  # type: ignore[arg-type]
        with con.cursor().copy(f"COPY {name} FROM STDIN") as copy:  # type: ignore[arg-type]
            for batch in data.iter_batches(200_000):
                for row in zip(*(c.to_pylist() for c in batch.columns), strict=True):
                    copy.write_row(row)
        con.execute(f"ANALYZE {name}")  # type: ignore[arg-type]
    return round(time.perf_counter() - start, 2)


def measure(
    d: int, rows: int, local: bool, postgres: str | None, only: list[str] | None = None
) -> list[dict[str, Any]]:
    parquet = table(d, rows)
    schema = parquet.with_suffix(".yaml")
    ways: dict[str, tuple[str, tuple[str, ...]]] = {
        "python": (str(parquet), ("--stream", "--backend", "duckdb")),
        "duckdb": (str(parquet), ()),
    }
    load_s = None
    if postgres:
        name = f"bench_{rows}"
        load_s = to_postgres(parquet, postgres, name)
        url = postgres + ("&" if "?" in postgres else "?") + f"table={name}"
        ways["postgres"] = (url, ())
        ways["postgres_duckdb"] = (url, ("--backend", "duckdb"))
    if local:
        ways["local"] = (str(parquet), ("--stream", "--backend", "local"))
    runs = []
    for way, (private, extra) in ways.items():
        if only and way not in only:
            continue
        server = way.startswith("postgres") and postgres
        before = server_cpu(postgres) if server else None
        found = run(private, schema, SCRATCH / f"db_{way}.parquet", extra)
        found.update(way=way, rows=rows)
        if server:
            found["postgres_load_wall_s"] = load_s
            after = server_cpu(postgres)
            if before is not None and after is not None:
                found["server_cpu_s"] = round(after - before, 2)
        runs.append(found)
        print(json.dumps(found), flush=True)
    return runs


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    ways = list(dict.fromkeys(r["way"] for r in result["runs"]))
    sizes = sorted({r["rows"] for r in result["runs"]})
    width = 0.8 / len(ways)
    for k, way in enumerate(ways):
        for ax, key in zip(axes, ("cpu_s", "wall_s"), strict=True):
            xs = [i + k * width for i, n in enumerate(sizes)
                  if any(r["way"] == way and r["rows"] == n for r in result["runs"])]  # fmt: skip
            ys = [
                r[key] for n in sizes for r in result["runs"] if r["way"] == way and r["rows"] == n
            ]
            ax.bar(xs, ys, width, label=way)
    for ax, title in zip(axes, ("CPU s (child process)", "wall s (shared machine)"), strict=True):
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(sizes))], [f"{n:.0e}" for n in sizes])
        ax.set_title(title)
        ax.set_xlabel("private rows")
    axes[0].legend()
    fig.suptitle(f"dpevolve synth, d = {result['d']}: who reads and validates the table")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, nargs="*", default=[1e6])
    parser.add_argument("--d", type=int, default=9)
    parser.add_argument("--local", action="store_true", help="also the in-process counting")
    parser.add_argument(
        "--ways", nargs="*", help="only these (python, duckdb, postgres, postgres_duckdb, local)"
    )
    parser.add_argument("--merge", action="store_true", help="keep --out's other runs")
    parser.add_argument("--out", type=Path, default=RESULTS / "database_counts.json")
    args = parser.parse_args()
    postgres = os.environ.get("DPEVOLVE_TEST_POSTGRES")
    runs: list[dict[str, Any]] = []
    kept = json.loads(args.out.read_text())["runs"] if args.merge and args.out.exists() else []
    for rows in args.rows:
        new = measure(
            args.d, int(rows), args.local and rows <= 1e6, postgres if rows <= 1e6 else None,
            args.ways,
        )  # fmt: skip
        done = {(r["way"], r["rows"]) for r in new}
        kept = [r for r in kept if (r["way"], r["rows"]) not in done]
        runs = [r for r in runs if (r["way"], r["rows"]) not in done] + new
        runs = kept + runs
        kept = []
        hashes = [(r["rows"], r["output_sha256"], r["ledger_sha256"]) for r in runs]
        # (runs kept from --out were measured on earlier code: same bytes expected)
        same = {n: len({h[1:] for h in hashes if h[0] == n}) == 1 for n, *_ in hashes}
        result = {
            "benchmark": "database_counts.py",
            "d": args.d,
            "written_rows": 20_000,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared, loaded)",
            "same_output_and_ledger": {str(k): v for k, v in same.items()},
            "runs": runs,
        }
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        plot(result, args.out.with_suffix(".png"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
