"""A private table far larger than a batch: streamed from Parquet, synthesized, measured.

Generates an Adult-like private table (the shipped ``adult`` schema, all 15 columns,
with correlated columns) in chunks straight to a Parquet file in a scratch folder (not
the repository), then runs the ``bfsoft`` preset (hard votes, 8 rounds, population 512)
on it with :func:`dpevolve.data.streaming.fit_file`, which reads the file once per round in
batches. Reports wall time and peak memory: ``ru_maxrss`` (whole process, including
pyarrow's buffers) and the tracemalloc peak (Python heap and NumPy arrays).

The table is generated in a child process so the measured process never held it.

    python benchmarks/large_table.py [--rows 10000000 | --quick] [--batch-rows 250000]
                                     [--backend fused|local] [--in-memory] [--keep]

``--quick`` is 10^6 rows. ``--backend fused`` (default) votes with the numba kernels when
numba is installed (else with the reference ``LocalBackend``, about 40x slower).
``--in-memory`` also fits the same table read whole with pandas (in a child process) for
comparison. Writes ``benchmarks/results/large_table.json`` (or ``--out``), one entry per
table size under ``runs``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from dpevolve.backends import make_backend
from dpevolve.data.schema import Schema

RESULTS = Path(__file__).resolve().parent / "results"
SCRATCH = Path(tempfile.gettempdir()) / "dpevolve-large-table"
CHUNK_ROWS = 500_000

EDUCATION = {  # value -> education-num, as in UCI Adult
    "Preschool": 1, "1st-4th": 2, "5th-6th": 3, "7th-8th": 4, "9th": 5, "10th": 6,
    "11th": 7, "12th": 8, "HS-grad": 9, "Some-college": 10, "Assoc-voc": 11,
    "Assoc-acdm": 12, "Bachelors": 13, "Masters": 14, "Prof-school": 15, "Doctorate": 16,
}  # fmt: skip
EDUCATION_P = [0.002, 0.005, 0.01, 0.02, 0.016, 0.029, 0.036, 0.013, 0.322, 0.224, 0.042,
               0.033, 0.164, 0.053, 0.018, 0.013]  # fmt: skip


def _weights(n: int, head: float) -> np.ndarray:
    """``head`` on the first value, the rest decaying geometrically (a long tail)."""
    tail = 0.6 ** np.arange(1, n)
    return np.concatenate([[head], (1 - head) * tail / tail.sum()])


def generate_chunk(rng: np.random.Generator, rows: int) -> dict[str, np.ndarray]:
    """Adult-like rows: education drives income, age drives marital status, sex drives
    relationship; every cell inside the shipped ``adult`` schema."""
    from dpevolve import datasets

    schema = datasets.schema("adult")
    values = {c.name: list(getattr(c, "values", ())) for c in schema.columns}

    def pick(name: str, p: np.ndarray | list[float]) -> np.ndarray:
        p = np.asarray(p, dtype=np.float64)
        return np.array(values[name], dtype=object)[rng.choice(len(p), rows, p=p / p.sum())]

    age = np.clip(np.round(rng.normal(38.6, 13.6, rows)), 17, 90)
    education_names = np.array(list(EDUCATION), dtype=object)
    edu_index = rng.choice(len(EDUCATION), rows, p=np.array(EDUCATION_P) / sum(EDUCATION_P))
    education = education_names[edu_index]
    education_num = edu_index + 1.0
    sex = np.where(rng.random(rows) < 0.67, "Male", "Female").astype(object)
    married = rng.random(rows) < np.clip((age - 18) / 30, 0.05, 0.65)
    marital = np.where(
        married, "Married-civ-spouse", pick("marital-status", [0, 0.3, 0.6, 0.06, 0.06, 0.03, 0.01])
    )
    relationship = np.where(
        married,
        np.where(sex == "Male", "Husband", "Wife"),
        pick("relationship", [0, 0.3, 0, 0.45, 0.05, 0.2]),
    )
    hours = np.clip(np.round(rng.normal(40, 12, rows) + 3 * (sex == "Male")), 1, 99)
    gain = np.where(
        rng.random(rows) < 0.08, np.clip(np.round(rng.lognormal(8.5, 1.0, rows)), 0, 99999), 0.0
    )
    loss = np.where(
        rng.random(rows) < 0.05, np.clip(np.round(rng.normal(1870, 380, rows)), 0, 4356), 0.0
    )
    logit = (-8.5 + 0.35 * education_num + 0.04 * np.minimum(age, 60) + 0.03 * hours
             + 0.8 * (sex == "Male") + 1.2 * married + 2.0 * (gain > 5000))  # fmt: skip
    income = np.where(rng.random(rows) < 1 / (1 + np.exp(-logit)), ">50K", "<=50K").astype(object)
    return {
        "age": age.astype(np.int64),
        "workclass": pick("workclass", _weights(8, 0.74)),
        "fnlwgt": np.clip(np.round(rng.lognormal(12.0, 0.45, rows)), 0, 1_500_000).astype(np.int64),
        "education": education,
        "education-num": education_num.astype(np.int64),
        "marital-status": marital.astype(object),
        "occupation": pick("occupation", np.full(14, 1.0) - 0.06 * np.arange(14)),
        "relationship": relationship.astype(object),
        "race": pick("race", [0.855, 0.031, 0.01, 0.008, 0.096]),
        "sex": sex,
        "capital-gain": gain.astype(np.int64),
        "capital-loss": loss.astype(np.int64),
        "hours-per-week": hours.astype(np.int64),
        "native-country": pick("native-country", _weights(41, 0.9)),
        "income": income,
    }


def generate(path: Path, rows: int, seed: int) -> None:
    """Write ``rows`` rows to ``path`` in chunks (one Parquet row group each)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    tmp = path.with_suffix(".partial")
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(0, rows, CHUNK_ROWS):
            chunk = pa.table(generate_chunk(rng, min(CHUNK_ROWS, rows - start)))
            if writer is None:
                writer = pq.ParquetWriter(tmp, chunk.schema)
            writer.write_table(chunk)
    finally:
        if writer is not None:
            writer.close()
    os.replace(tmp, path)


def peak_rss_mb() -> float:
    """Peak resident set of this process (Linux reports kilobytes)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def model(args: argparse.Namespace) -> Any:
    from dpevolve import Synthesizer, datasets
    from dpevolve.presets import get_method

    return Synthesizer(
        datasets.schema("adult"),
        epsilon=args.epsilon,
        method=get_method("bfsoft", vote="hard"),
        random_state=args.seed,
        backend=make_backend("auto" if args.backend == "fused" else args.backend),
    )


def run_streamed(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    from dpevolve.data.encoding import Layout
    from dpevolve.data.streaming import StreamedTable

    synthesizer = model(args)
    warmup = getattr(synthesizer.backend, "warmup", None)
    compiled = time.perf_counter()
    if warmup is not None:  # numba compiles (or loads its cache) outside the timings
        warmup()
    compile_s = time.perf_counter() - compiled
    baseline_rss = peak_rss_mb()  # imports and compiled kernels, before any private row
    tracemalloc.start()
    start = time.perf_counter()
    schema = Schema.of(synthesizer.schema)
    table = StreamedTable(path, schema, batch_rows=args.batch_rows)
    scanned = time.perf_counter()
    marks: list[float] = []

    class TimedSource:
        """The file source, marking when each round's pass starts."""

        n = table.n
        report = table.report

        def batches(self) -> Any:
            marks.append(time.perf_counter())
            return table.batches()

    synthesizer.fit_source(TimedSource())
    end = time.perf_counter()
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    marks.append(end)
    ledger = synthesizer.ledger_.to_dict()
    layout = Layout.of(schema)
    encoded_mb = table.rows * (8 * len(layout.numeric) + 4 * len(layout.categorical)) / 2**20
    return {
        "rows": table.rows,
        "batch_rows": args.batch_rows,
        "backend": type(synthesizer.backend).__name__,
        "backend_warmup_s": round(compile_s, 2),
        "first_pass_s": round(scanned - start, 2),
        "fit_s": round(end - scanned, 2),
        "total_s": round(end - start, 2),
        "round_s": [round(b - a, 2) for a, b in pairwise(marks)],
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "rss_before_fit_mb": round(baseline_rss, 1),
        "tracemalloc_peak_mb": round(heap_peak / 2**20, 1),
        "encoded_table_mb": round(encoded_mb, 1),
        "epsilon": ledger["epsilon"],
        "sigma": ledger["sigma"],
        "synthetic_rows": len(synthesizer.synthetic_),
    }


def run_in_memory(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    import pandas as pd

    synthesizer = model(args)
    warmup = getattr(synthesizer.backend, "warmup", None)
    if warmup is not None:
        warmup()
    tracemalloc.start()
    start = time.perf_counter()
    synthesizer.fit(pd.read_parquet(path))
    end = time.perf_counter()
    _, heap_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "rows": synthesizer.n_private_,
        "total_s": round(end - start, 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "tracemalloc_peak_mb": round(heap_peak / 2**20, 1),
    }


def in_child(function: Callable[..., Any], *call_args: Any) -> None:
    """Run ``function`` in a fresh process, so this one's peak memory never sees it."""
    context = multiprocessing.get_context("spawn")
    child = context.Process(target=function, args=call_args)
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"child process failed with exit code {child.exitcode}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="10^6 rows")
    parser.add_argument("--batch-rows", type=int, default=250_000)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backend", choices=("local", "fused"), default="fused")
    parser.add_argument("--scratch", type=Path, default=SCRATCH)
    parser.add_argument("--keep", action="store_true", help="keep the generated table")
    parser.add_argument(
        "--in-memory",
        action="store_true",
        help="also fit the table read whole with pandas (child process)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "large_table.json")
    parser.add_argument("--child-in-memory", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows = 1_000_000 if args.quick else args.rows

    if args.child_in_memory is not None:  # the --in-memory comparison, in its own process
        print(json.dumps(run_in_memory(args.child_in_memory, args)))
        return

    args.scratch.mkdir(parents=True, exist_ok=True)
    path = args.scratch / f"adult_like_{rows}_seed{args.seed}.parquet"
    generated_s = None
    if not path.exists():
        start = time.perf_counter()
        in_child(generate, path, rows, args.seed)
        generated_s = round(time.perf_counter() - start, 2)

    result: dict[str, Any] = {
        "table": {
            "rows": rows,
            "columns": 15,
            "file_mb": round(path.stat().st_size / 2**20, 1),
            "generated_s": generated_s,
            "schema": "adult (shipped, all 15 columns)",
        },
        "preset": "bfsoft (hard votes, 8 rounds, population 512, Gower)",
        "streamed": run_streamed(path, args),
    }
    if args.in_memory:
        command = [sys.executable, __file__, "--child-in-memory", str(path),
                   "--epsilon", str(args.epsilon), "--seed", str(args.seed),
                   "--backend", args.backend]  # fmt: skip
        output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        result["in_memory"] = json.loads(output.strip().splitlines()[-1])
    result["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    # One entry per table size: a --quick run does not erase the 10^7 numbers.
    runs: dict[str, Any] = {}
    if args.out.exists():
        try:
            runs = dict(json.loads(args.out.read_text()).get("runs", {}))
        except (ValueError, AttributeError):
            runs = {}
    runs[str(rows)] = result
    summary = {"benchmark": "benchmarks/large_table.py", "runs": runs}
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    if not args.keep:
        path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
