"""Memory bounded in rows: peak RSS and CPU of ``dpevolve synth`` from 10^6 rows up.

Two measurements, each a ``dpevolve synth`` child process measured by ``os.wait4``
(peak RSS of the whole process, CPU = user + system seconds):

* **fit and write** (``--fit-rows``): a generated table of ``N`` rows and ``d + 1``
  columns (:func:`tables.make_wide`: ``d`` features, a third numeric, and a label) is
  written in chunks to a Parquet file in a scratch folder (not the repository), then
  ``dpevolve synth PRIVATE --stream`` fits the default (adaptive) engine (counting in
  DuckDB when it is installed: ``--backend auto``) and writes ``N`` rows (the default
  ``--rows``) to Parquet.
* **fit on a dataset** (``--dataset-rows``): the same table generated as a folder of
  ``--files`` Parquet files (one row group per 500,000 rows), fitted with ``--stream``
  (the files read in name order) and ``--dataset-written`` rows written.
* **write** (``--write-rows``): one fit on a small table (``--base-rows``), then
  ``--rows R`` written to CSV and Parquet; the cost of the write is the run's less the
  same fit writing ``--base-rows`` rows.

Every run uses ``--seed 0 --noise-seed 0`` (the noise seeded for a benchmark only: the
engine's choices, hence its CPU, then repeat). The generated tables are public (seeded,
no person's record). Writes
``benchmarks/results/scale_memory.json`` and ``.png`` (``--out``).

    nice python benchmarks/scale_memory.py [--fit-rows 1e6 1e7] [--write-rows 1e6 1e7]
        [--dataset-rows 1e8 --files 20 --dataset-written 1e6] [--d 9] [--base-rows 1e5]
        [--quick] [--merge]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from tables import LABEL, draw_features, label_probability, make_structure

RESULTS = Path(__file__).resolve().parent / "results"
SCRATCH = Path(tempfile.gettempdir()) / "dpevolve-scale-memory"
CHUNK_ROWS = 500_000
GB = 1024.0


def generate(path: Path, d: int, rows: int, seed: int | tuple[int, int] = 0) -> None:
    """``rows`` rows of the ``d``-feature wide table, written chunk by chunk (one row
    group per chunk), its schema beside it as ``.yaml``."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    structure = make_structure(d)
    rng = np.random.default_rng(seed)
    writer: pq.ParquetWriter | None = None
    done = 0
    while done < rows:
        size = min(CHUNK_ROWS, rows - done)
        features = draw_features(structure, size, rng)
        data: dict[str, Any] = {}
        for name, card, values in zip(structure.names, structure.cards, features, strict=True):
            data[name] = np.array([f"v{i}" for i in range(card)])[values] if card else values
        data[LABEL] = (rng.random(size) < label_probability(structure, features)).astype(int)
        table = pa.Table.from_pandas(pd.DataFrame(data), preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        done += size
    assert writer is not None
    writer.close()
    path.with_suffix(".yaml").write_text(structure.schema().to_yaml())


def generate_dataset(folder: Path, d: int, rows: int, files: int) -> None:
    """A Parquet dataset: a folder of ``files`` files, ``rows`` rows in all (file ``k``
    drawn from seed ``(0, k)``), its schema beside the folder as ``.yaml``."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = np.linspace(0, rows, files + 1).astype(np.int64)
    for k in range(files):
        part = folder / f"part-{k:04d}.parquet"
        if not part.exists():  # written under another name, renamed when whole
            partial = part.with_suffix(".partial")
            generate(partial, d, int(bounds[k + 1] - bounds[k]), seed=(0, k))
            partial.with_suffix(".yaml").replace(folder.with_suffix(".yaml"))
            partial.replace(part)


def synth(
    private: Path | str, out: Path, rows: int | None, stream: bool = True, extra: tuple = ()
) -> dict[str, Any]:
    """One ``dpevolve synth`` child process: its peak RSS (MB), CPU and wall seconds
    (``private``: a Parquet file with its schema beside it, or ``PATH.duckdb::TABLE``)."""
    schema = Path(str(private).split("::")[0]).with_suffix(".yaml")
    argv = [sys.executable, "-m", "dpevolve.cli", "synth", str(private), *map(str, extra),
            "-s", str(schema), "-e", "1", "--seed", "0",
            "-o", str(out), "--force", "-q", "--noise-seed", "0"]  # fmt: skip
    if stream:
        argv.append("--stream")
    if rows is not None:
        argv += ["--rows", str(rows)]
    return {**measured(argv), "output_bytes": out.stat().st_size}


def measured(argv: list[str]) -> dict[str, float]:
    """Run ``argv`` as a child process: its peak RSS (MB), CPU and wall seconds."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    stderr = child.stderr.read().decode() if child.stderr else ""
    if status != 0:
        raise RuntimeError(f"{' '.join(argv[2:5])} failed: {stderr.strip()[-500:]}")
    # ru_maxrss: KiB on Linux, bytes on macOS.
    unit = 2**20 if platform.system() == "Darwin" else 2**10
    return {
        "peak_rss_mb": round(usage.ru_maxrss / unit, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "wall_s": round(wall, 2),
    }


def table(d: int, rows: int) -> Path:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    path = SCRATCH / f"wide_d{d}_{rows}.parquet"
    if not path.exists():
        generate(path, d, rows)
    return path


def fit_and_write(d: int, rows: int) -> dict[str, Any]:
    out = SCRATCH / f"out_{rows}.parquet"
    run = {"kind": "fit_and_write", "rows": rows, **synth(table(d, rows), out, None)}
    out.unlink()
    print(json.dumps(run), flush=True)
    return run


def fit_dataset(d: int, rows: int, files: int, written: int) -> dict[str, Any]:
    """Fit on a Parquet dataset of ``files`` files (``--stream``), writing ``written`` rows."""
    SCRATCH.mkdir(parents=True, exist_ok=True)
    folder = SCRATCH / f"wide_d{d}_{rows}_{files}files.parquet"
    generate_dataset(folder, d, rows, files)
    out = SCRATCH / f"out_{rows}.parquet"
    run = {"kind": "fit_dataset", "rows": rows, "files": files, "rows_written": written}
    run.update(synth(folder, out, written))
    out.unlink()
    print(json.dumps(run), flush=True)
    return run


def write_only(d: int, base_rows: int, rows: list[int], formats: list[str]) -> list[dict[str, Any]]:
    private = table(d, base_rows)
    runs = []
    for suffix in (f".{f}" for f in formats):
        out = SCRATCH / f"written{suffix}"
        base = synth(private, out, base_rows)
        for count in rows:
            run = synth(private, out, count)
            extra = count - base_rows
            run.update(
                kind="write", rows=count, format=suffix[1:], base=base,
                write_cpu_us_per_row=round(1e6 * (run["cpu_s"] - base["cpu_s"]) / extra, 3)
                if extra > 0 else None,
            )  # fmt: skip
            out.unlink()
            runs.append(run)
            print(json.dumps(run), flush=True)
    return runs


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (mem, cpu) = plt.subplots(1, 2, figsize=(10, 4))
    series: dict[str, list[dict[str, Any]]] = {}
    for run in result["runs"]:
        label = {
            "fit_and_write": "fit + write all rows (parquet)",
            "fit_dataset": f"fit on files, {run.get('rows_written', 0):.0e} rows written",
        }.get(run["kind"], f"write from a {result['base_rows']:.0e}-row fit ({run.get('format')})")
        series.setdefault(label, []).append(run)
    for label, runs in series.items():
        if runs[0]["kind"] == "write":  # the same fit writing its base rows first
            runs = [{**runs[0]["base"], "rows": result["base_rows"]}, *runs]
        x = [r["rows"] for r in runs]
        mem.plot(x, [r["peak_rss_mb"] for r in runs], "o-", label=label)
        cpu.plot(x, [r["cpu_s"] for r in runs], "o-", label=label)
    mem.axhline(GB, color="grey", linestyle="--", label="1 GB")
    for ax, what in ((mem, "peak RSS (MB)"), (cpu, "CPU seconds")):
        ax.set_xscale("log")
        ax.set_xlabel("rows")
        ax.set_ylabel(what)
    mem.legend(fontsize=7, loc="center left")
    fig.suptitle(f"dpevolve synth, d = {result['d']} features + label (scale_memory.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit-rows", type=float, nargs="*", default=[1e6, 1e7])
    parser.add_argument("--write-rows", type=float, nargs="*", default=[1e6, 1e7])
    parser.add_argument("--base-rows", type=float, default=1e5)
    parser.add_argument(
        "--dataset-rows",
        type=float,
        nargs="*",
        default=[],
        help="fit on a dataset of --files Parquet files of these rows",
    )
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument(
        "--dataset-written", type=float, default=1e6, help="rows the dataset fits write"
    )
    parser.add_argument(
        "--merge", action="store_true", help="keep the runs already in --out (other kinds or rows)"
    )
    parser.add_argument("--d", type=int, default=9)
    parser.add_argument("--formats", nargs="*", default=["parquet", "csv"])
    parser.add_argument("--quick", action="store_true", help="10^5 rows only")
    parser.add_argument("--out", type=Path, default=RESULTS / "scale_memory.json")
    args = parser.parse_args()
    fit_rows = [int(r) for r in ([1e5] if args.quick else args.fit_rows)]
    write_rows = [int(r) for r in ([3e5] if args.quick else args.write_rows)]
    base_rows = int(args.base_rows)
    runs = [fit_and_write(args.d, rows) for rows in fit_rows]
    runs += write_only(args.d, base_rows, write_rows, args.formats) if write_rows else []
    written = int(args.dataset_written)
    runs += [fit_dataset(args.d, int(r), args.files, written) for r in args.dataset_rows]
    if args.merge and args.out.exists():
        new = {(r["kind"], r["rows"], r.get("format")) for r in runs}
        old = json.loads(args.out.read_text())["runs"]
        runs = [r for r in old if (r["kind"], r["rows"], r.get("format")) not in new] + runs
    result = {
        "benchmark": "scale_memory.py",
        "d": args.d,
        "columns": args.d + 1,
        "base_rows": base_rows,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    plot(result, args.out.with_suffix(".png"))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
