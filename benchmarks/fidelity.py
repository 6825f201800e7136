"""Fidelity benchmark of issue 18: every system, every table, one evaluator.

Systems (``fidelity_systems``): the dpevolve engine (when ``dpevolve.engine`` is
importable, else the row says "not available"), the ``tabpe`` and ``hybrid`` presets,
AIM and MST on private-pgm's ``mbi`` (``experiments/mbi_baselines.py``; ``mbi`` and jax
from ``EXPERIMENTS_EXTRA_PATH``), a real bootstrap of n rows and the real training table
itself. Tables (``fidelity_data``): Adult-9, Bank-5, Person Activity A (with person B as
public data and without), XOR-3, XOR-3 with its sign at 2.5, Adult-15 and generated
tables of d = 10, 40, 100 columns (``tables.make_wide``). Metrics (``fidelity_metrics``):
tv1, tv2, tv_all, TSTR, the majority class rate, the distinct-row rate of n output rows
against a real bootstrap's, wall and CPU seconds of the fit + sample, peak RSS.

Each (table, system, seed) runs in its own worker process, so peak memory is the
worker's resident set (``resource.getrusage``'s ``ru_maxrss``: data, imports and fit;
``fit_rss_mb`` is the rise over the resident set just before the fit), a run past
``--timeout`` seconds or ``--max-rss-mb`` is stopped and recorded as such, and a crash
costs one row. The JSON is rewritten after every row, so a killed run keeps what it
measured (``--resume PATH`` skips the rows PATH already holds).

    DPEVOLVE_DATA=... EXPERIMENTS_EXTRA_PATH=... nice -n 10 python benchmarks/fidelity.py
        [--seeds 3] [--datasets adult bank ...] [--systems tabpe aim ...] [--quick]
        [--epsilon 1] [--delta 1e-5] [--timeout 900] [--out PATH] [--resume PATH]
    python benchmarks/fidelity_report.py benchmarks/results/fidelity_*.json

Writes benchmarks/results/fidelity_<UTC time>.json (default) and a PNG beside it, and
prints the markdown table and issue 18's targets.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_data
import fidelity_report
import fidelity_systems

RESULTS = Path(__file__).resolve().parent / "results"
ROW_TAG = "FIDELITY-ROW "
DEFAULT_DATASETS = list(fidelity_data.LOADERS)
DEFAULT_SYSTEMS = list(fidelity_systems.SYSTEMS)
QUICK = {"datasets": ["adult", "xor3"], "systems": ["tabpe", "hybrid", "mst", "bootstrap"]}


# ------------------------------------------------------------------ one worker
def _rss_mb() -> float:
    """Current resident set of this process, MiB (Linux ``/proc``)."""
    with open("/proc/self/statm", encoding="ascii") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(key: str, system: str, seed: int, epsilon: float, delta: float) -> dict[str, Any]:
    """Run one system on one table and score it (called in a fresh process)."""
    import fidelity_metrics

    split = fidelity_data.load(key)
    prepare = fidelity_systems.PREPARE.get(system)
    if prepare is not None:
        prepare()  # imports (jax, the engine) before the clock and the memory baseline
    before = _rss_mb()
    start, cpu = time.perf_counter(), time.process_time()
    synth, facts = fidelity_systems.SYSTEMS[system](split, epsilon, delta, seed)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    metrics = fidelity_metrics.score(
        split.train, split.test, synth, split.schema, split.label, seed
    )
    return {
        "status": "ok",
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_rss_mb": peak,
        "fit_rss_mb": max(0.0, peak - before),
        "n_train": len(split.train),
        "n_test": len(split.test),
        **metrics,
        "facts": facts,
    }


def worker_main(argv: list[str]) -> None:
    key, system, seed, epsilon, delta = argv
    try:
        row = worker(key, system, int(seed), float(epsilon), float(delta))
    except fidelity_systems.NotAvailable as exc:
        row = {"status": "not available", "reason": str(exc)}
    print(ROW_TAG + json.dumps(row, default=float), flush=True)


# --------------------------------------------------------------------- parent
def _child_rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) a running child has used, from ``/proc``."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(key: str, system: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One worker, watched for time and memory; its row (never raises)."""
    cmd = [sys.executable, __file__, "--worker", key, system, str(seed)]
    cmd += [repr(args.epsilon), repr(args.delta)]
    begin = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stopped, peak, cpu = None, 0.0, None
    while proc.poll() is None:
        peak = max(peak, _child_rss_mb(proc.pid))
        elapsed = time.perf_counter() - begin
        if elapsed > args.timeout:
            stopped = f"did not finish in {args.timeout:.0f} s (stopped)"
        elif peak > args.max_rss_mb:
            stopped = f"resident set passed {args.max_rss_mb:.0f} MiB (stopped)"
        if stopped:
            cpu = _child_cpu_s(proc.pid)
            proc.kill()
            break
        time.sleep(0.5)
    out, err = proc.communicate()
    elapsed = time.perf_counter() - begin
    base = {"dataset": key, "system": system, "seed": seed, "worker_s": elapsed}
    if stopped:
        return {
            **base,
            "status": "stopped",
            "reason": stopped,
            "peak_rss_mb": peak,
            "cpu_seconds_at_stop": cpu,
        }
    for line in out.splitlines():
        if line.startswith(ROW_TAG):
            return {**base, **json.loads(line[len(ROW_TAG) :])}
    tail = [ln for ln in err.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return {**base, "status": "error", "reason": tail[0][:300], "returncode": proc.returncode}


def _git_commit() -> str | None:
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parent,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def write(path: Path, doc: dict[str, Any]) -> None:
    """Atomic rewrite (a killed run leaves the previous complete file)."""
    doc["summary"] = fidelity_report.summarise(doc["rows"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    os.replace(tmp, path)


def skip(key: str, system: str, seed: int) -> bool:
    """Rows that would repeat another: the real table is one row (seed 0); systems that
    ignore public data run on the table without it only."""
    if system in fidelity_systems.DETERMINISTIC and seed > 0:
        return True
    return key in fidelity_data.WITH_PUBLIC and system not in fidelity_systems.USES_PUBLIC


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 (default 3)")
    parser.add_argument("--datasets", nargs="+", default=DEFAULT_DATASETS, choices=DEFAULT_DATASETS)
    parser.add_argument("--systems", nargs="+", default=DEFAULT_SYSTEMS, choices=DEFAULT_SYSTEMS)
    parser.add_argument(
        "--quick", action="store_true", help="1 seed, adult and xor3, tabpe hybrid mst bootstrap"
    )
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per worker")
    parser.add_argument(
        "--max-rss-mb",
        type=float,
        default=6000.0,
        help="stop a worker whose resident set passes this (shared machine)",
    )
    parser.add_argument("--out", default=None, help="JSON path (default: a timestamped one)")
    parser.add_argument("--resume", default=None, help="JSON of an earlier run to extend")
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.datasets, args.systems = 1, QUICK["datasets"], QUICK["systems"]
    return args


def main(argv: list[str]) -> None:
    args = parse(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    if args.resume:
        path = Path(args.resume)
        doc = json.loads(path.read_text())
    else:
        path = Path(args.out) if args.out else RESULTS / f"fidelity_{stamp}.json"
        doc = {"benchmark": "fidelity (issue 18)", "rows": []}
    doc.update(
        {
            "epsilon": args.epsilon,
            "delta": args.delta,
            "updated": stamp,
            "git_commit": _git_commit(),
            "settings": {
                "timeout_s": args.timeout,
                "max_rss_mb": args.max_rss_mb,
                "aim_cap_s": fidelity_systems.AIM_CAP_S,
                "memory": "peak RSS of the worker process (resource.getrusage ru_maxrss)",
                "load_average": os.getloadavg()[0],
            },
        }
    )
    done = {(r["dataset"], r["system"], r["seed"]) for r in doc["rows"] if r["status"] == "ok"}
    path.parent.mkdir(parents=True, exist_ok=True)
    for key in args.datasets:
        for seed in range(args.seeds):
            for system in args.systems:
                if (key, system, seed) in done or skip(key, system, seed):
                    continue
                row = run_one(key, system, seed, args)
                doc["rows"] = [
                    r
                    for r in doc["rows"]
                    if (r["dataset"], r["system"], r["seed"]) != (key, system, seed)
                ] + [row]
                write(path, doc)
                brief = {k: row.get(k) for k in ("status", "tv_all", "accuracy", "seconds")}
                print(f"{key} {system} seed={seed} {json.dumps(brief, default=float)}", flush=True)
    fidelity_report.plot(doc, path.with_suffix(".png"))
    print(f"wrote {path}")
    print(fidelity_report.markdown([doc]))
    print(fidelity_report.targets_markdown([doc]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
    else:
        main(sys.argv[1:])
