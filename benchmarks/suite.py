"""The suite benchmark of issue 25: every table, the default and the baselines in one run.

Tables (``suite_data``, :data:`dpevolve.datasets.suite.SUITE`): each cut 40% public /
40% private / 20% test, its schema inferred from the public part. Systems:

* ``engine``: :func:`dpevolve.engine.synthesize`, the shipped default, on the private
  part alone; ``engine_public``: the same with the public part passed (``--public``).
  Replace-one adjacency, (epsilon, delta) accounted by dpevolve.
* ``aim``, ``mst``: SmartNoise Synth's AIM and MST (``suite_external.py``, run in their
  own venv ``$SUITE_BASELINES_VENV``), no time cap, numerics in 20 equal-width bins over
  the declared range, add/remove-one adjacency (sensitivity 1 per marginal) at the same
  (epsilon, delta).
* ``bootstrap``: as many private rows drawn with replacement (not private: the ceiling);
  ``sample1000``: 1,000 private rows drawn without replacement; ``real``: the private
  part itself (its TSTR is the real model's; one seed).

Measures, each against the private part (``score``): SDMetrics 0.32 QualityReport as is
and on the real table's decile bins (``suite_external.py score``); TSTR (HGB trained on
the output, tested on the test part) and the majority class; TV1/TV2 with numerics at
the public part's quantiles; the mean Spearman error over numeric pairs; the share of
rows beyond the private range by more than 10% of its width; TV of P(label | atom) for
every numeric value holding >= 5% of the rows (:mod:`dpevolve.reporting.numeric_fidelity`);
CPU seconds (the worker's and its children's) and peak resident set of each fit.

    DPEVOLVE_DATA=... nice -n 10 python benchmarks/suite.py [--seeds 3]
        [--tables adult fair ...] [--systems engine mst ...] [--out PATH] [--resume PATH]
    python benchmarks/suite_report.py benchmarks/results/suite_*.json

Each (table, system, seed) runs in a fresh worker process; the JSON is rewritten after
every row (``--resume`` skips rows already measured). Writes the JSON and a PNG beside
it; ``suite_report.py --md benchmarks/SUITE.md`` merges result files into the table.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite_data
import suite_report

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.datasets.suite import SUITE

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
ROW_TAG = "SUITE-ROW "
# --seeded-noise: the engine's noise seed is this plus the run's seed.
NOISE_SEED_BASE = 7_000
SYSTEMS = ("engine", "engine_public", "aim", "mst", "bootstrap", "sample1000", "real")
EXTERNAL = ("aim", "mst")
DETERMINISTIC = {"real"}
VENV_ENV = "SUITE_BASELINES_VENV"
MISSING = "__missing__"  # a missing categorical cell in the external tools' CSV


def _venv_python() -> str:
    return str(Path(os.environ.get(VENV_ENV, "/work/venvs/baselines")) / "bin" / "python")


# -------------------------------------------------------------- external tools
def _columns_json(schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in schema.columns:
        if isinstance(column, NumericColumn):
            out[column.name] = {
                "kind": "numeric", "lo": column.lo, "hi": column.hi, "nullable": column.nullable,
            }  # fmt: skip
        else:
            out[column.name] = {"kind": "categorical"}
    return out


def _write(frame: pd.DataFrame, schema: Schema, path: Path) -> None:
    out = frame[schema.names].copy()
    for column in schema.columns:
        if isinstance(column, CategoricalColumn):
            out[column.name] = (
                out[column.name].astype(object).where(out[column.name].notna(), MISSING)
            )
    out.to_csv(path, index=False)


def _read_back(path: Path, schema: Schema) -> pd.DataFrame:
    """An external tool's sample as a table of the schema: categorical cells as text
    (missing restored), numerics rounded where declared whole and kept in range."""
    kinds = {c.name: (str if isinstance(c, CategoricalColumn) else float) for c in schema.columns}
    frame = pd.read_csv(path, dtype=kinds, keep_default_na=False, na_values=[""])
    for column in schema.columns:
        values = frame[column.name]
        if isinstance(column, CategoricalColumn):
            frame[column.name] = values.astype(object).where(values != MISSING, None)
        else:
            x = values.to_numpy(dtype=np.float64)
            x = np.round(x) if column.integer else x
            frame[column.name] = np.clip(x, column.lo, column.hi)
    return frame


def _external(args: list[str]) -> str:
    done = subprocess.run(
        [_venv_python(), str(HERE / "suite_external.py"), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        tail = [ln for ln in done.stderr.strip().splitlines() if ln.strip()][-1:] or ["?"]
        raise RuntimeError(f"suite_external.py {args[0]} failed: {tail[0][:300]}")
    return done.stdout


Output = tuple[pd.DataFrame, dict[str, Any]]


def _smartnoise(
    parts: suite_data.Parts, system: str, eps: float, delta: float, seed: int
) -> Output:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "columns.json").write_text(json.dumps(_columns_json(parts.schema)))
        _write(parts.private, parts.schema, work / "private.csv")
        _external(["fit", system, repr(eps), repr(delta), str(seed), folder])
        synth = _read_back(work / "synth.csv", parts.schema)
    return synth, {"implementation": "smartnoise-synth", "adjacency": "add/remove-one"}


def sdmetrics(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    """SDMetrics' QualityReport, as is and on the real table's decile bins."""
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "columns.json").write_text(json.dumps(_columns_json(schema)))
        _write(real, schema, work / "real.csv")
        _write(synth, schema, work / "synth.csv")
        return json.loads(_external(["score", folder]).strip().splitlines()[-1])


# --------------------------------------------------------------------- systems
def run_system(
    parts: suite_data.Parts, system: str, eps: float, delta: float, seed: int, seeded: bool = False
) -> Output:
    """``system``'s output on ``parts`` and facts about the run; ``seeded`` draws the
    engine's privacy noise from a seed derived from ``seed`` (research only: two
    versions of the engine compared on the same noise, ``--seeded-noise``)."""
    if system in ("engine", "engine_public"):
        from dpevolve.engine import synthesize

        public = parts.public if system == "engine_public" else None
        synth = synthesize(
            parts.private, parts.schema, epsilon=eps, delta=delta,
            rows=len(parts.private), seed=seed, public=public,
            noise_seed=NOISE_SEED_BASE + seed if seeded else None,
        )  # fmt: skip
        return synth, {"adjacency": "replace-one", "public": public is not None, "seeded": seeded}
    if system in EXTERNAL:
        return _smartnoise(parts, system, eps, delta, seed)
    rng = np.random.default_rng(1000 + seed)
    if system == "bootstrap":
        rows = rng.integers(0, len(parts.private), len(parts.private))
    elif system == "sample1000":
        rows = rng.choice(len(parts.private), min(1000, len(parts.private)), replace=False)
    else:
        rows = np.arange(len(parts.private))
    return parts.private.iloc[rows].reset_index(drop=True), {"private": False}


# ---------------------------------------------------------------------- scoring
def score(parts: suite_data.Parts, synth: pd.DataFrame) -> dict[str, Any]:
    """Every measure of ``synth`` against the private part (see the module)."""
    from dpevolve.reporting import numeric_fidelity as nf
    from dpevolve.reporting.tstr import tstr

    schema, label = parts.schema, parts.label
    fake, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    real = parts.private
    numeric = nf.numeric_names(schema)
    report = tstr(fake, parts.test, schema, label)
    atoms = nf.atom_rules(real, fake, numeric, label)
    out: dict[str, Any] = {
        "accuracy": report.accuracy,
        "majority": report.baseline_accuracy,
        **nf.quantile_tv(real, fake, schema, parts.public),
        "spearman_error": nf.spearman_error(real, fake, numeric),
        "beyond_range": nf.beyond_range_share(real, fake, numeric),
        "unreached_range": nf.unreached_share(real, fake, numeric),
        "atoms": atoms,
        "atom_tv_max": max((a["tv"] for a in atoms), default=float("nan")),
        "rows": len(fake),
    }
    out.update(sdmetrics(real, fake, schema))
    return out


def worker(
    key: str, system: str, seed: int, eps: float, delta: float, seeded: bool = False
) -> dict[str, Any]:
    """One system on one table, scored (called in a fresh process)."""
    parts = suite_data.load(key)
    if system.startswith("engine"):
        import dpevolve.engine  # noqa: F401  (imports are not the fit's cost)
    self_cpu, kids = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    synth, facts = run_system(parts, system, eps, delta, seed, seeded)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = (after.ru_utime + after.ru_stime) - (kids.ru_utime + kids.ru_stime)
    peak_self = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak = max(peak_self, after.ru_maxrss / 1024) if system in EXTERNAL else peak_self
    return {
        "status": "ok",
        "seconds": seconds,
        "cpu_seconds": time.process_time() - self_cpu + child_cpu,
        "peak_rss_mb": peak,
        "n_private": len(parts.private),
        "n_public": len(parts.public),
        "n_test": len(parts.test),
        "refused": parts.refused,
        **score(parts, synth),
        "facts": facts,
    }


def worker_main(argv: list[str]) -> None:
    key, system, seed, eps, delta, seeded = argv
    row = worker(key, system, int(seed), float(eps), float(delta), seeded == "seeded")
    print(ROW_TAG + json.dumps(row, default=float), flush=True)


# ----------------------------------------------------------------------- parent
def run_one(key: str, system: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """One worker process; its row (an error costs one row, never the run)."""
    cmd = [sys.executable, __file__, "--worker", key, system, str(seed)]
    cmd += [repr(args.epsilon), repr(args.delta), "seeded" if args.seeded_noise else "secret"]
    begin = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    base = {"table": key, "system": system, "seed": seed, "worker_s": time.perf_counter() - begin}
    for line in done.stdout.splitlines():
        if line.startswith(ROW_TAG):
            return {**base, **json.loads(line[len(ROW_TAG) :])}
    tail = [ln for ln in done.stderr.strip().splitlines() if ln.strip()][-1:] or ["no output"]
    return {**base, "status": "error", "reason": tail[0][:300]}


def write(path: Path, doc: dict[str, Any]) -> None:
    """Atomic rewrite (a killed run keeps the previous complete file)."""
    doc["summary"] = suite_report.summarise(doc["rows"])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    os.replace(tmp, path)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0 .. N-1 (default 3)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--tables", nargs="+", default=list(SUITE), choices=list(SUITE))
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument(
        "--seeded-noise", action="store_true",
        help="the engine's privacy noise from a seed per seed (paired comparisons of two "
        "versions of the engine; research only)",
    )  # fmt: skip
    parser.add_argument("--out", default=None, help="JSON path (default: a timestamped one)")
    parser.add_argument("--resume", default=None, help="JSON of an earlier run to extend")
    return parser.parse_args(argv)


def main(argv: list[str]) -> None:
    args = parse(argv)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    path = Path(args.resume or args.out or RESULTS / f"suite_{stamp}.json")
    doc = json.loads(path.read_text()) if args.resume else {"benchmark": "suite (issue 25)"}
    doc.setdefault("rows", [])
    doc.update({"epsilon": args.epsilon, "delta": args.delta, "updated": stamp})
    done = {(r["table"], r["system"], r["seed"]) for r in doc["rows"] if r["status"] == "ok"}
    path.parent.mkdir(parents=True, exist_ok=True)
    for key in args.tables:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for system in args.systems:
                if (key, system, seed) in done or (system in DETERMINISTIC and seed > 0):
                    continue
                row = run_one(key, system, seed, args)
                doc["rows"] = [
                    r
                    for r in doc["rows"]
                    if (r["table"], r["system"], r["seed"]) != (key, system, seed)
                ] + [row]
                write(path, doc)
                brief = {k: row.get(k) for k in ("status", "accuracy", "tv2", "cpu_seconds")}
                print(f"{key} {system} seed={seed} {json.dumps(brief, default=float)}", flush=True)
    suite_report.plot(doc["rows"], path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2:])
    else:
        main(sys.argv[1:])
