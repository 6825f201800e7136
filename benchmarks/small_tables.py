"""The suite's measures on small real tables: the package tables of the pathology scan.

The suite's sixteen tables hold 2,200 private rows or more; a steward's table is often
smaller. This runs the default (no public data, epsilon 1, delta 1e-5, seeded noise:
research only) on every table :mod:`pathologies` scans whose private part holds fewer
than :data:`MAX_PRIVATE` rows, cut and typed as there (40/40/20 by the suite's seed, the
schema ``dpevolve schema infer`` proposes on the public part, the label the most
balanced two-valued column), and scores each output with the suite's measures but
SDMetrics (:func:`suite.score`'s TSTR, TV1/TV2 on the public part's quantiles, mean
Spearman error, rows beyond the private range, real rows past the synthetic range).

    DPEVOLVE_DATA=... python benchmarks/small_tables.py --seeds 3 --out NEW.json
    python benchmarks/small_tables.py --against BASE.json NEW.json --png OUT.png

With ``--against``, two such files (two versions of the engine on the same noise) are
paired by table and seed: the mean difference per measure with a 95% interval, per
table, and a plot of the per-table differences in TV2 and TSTR.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pathologies
from suite import NOISE_SEED_BASE

from dpevolve.datasets.suite import inferred_schema, split_rows
from dpevolve.engine import synthesize
from dpevolve.reporting import numeric_fidelity as nf
from dpevolve.reporting.tstr import tstr

#: Tables whose private part (40% of the rows) holds fewer rows than this.
MAX_PRIVATE = 2000
MEASURES = ("tv1", "tv2", "accuracy", "spearman_error", "beyond_range", "unreached_range")


def run(name: str, frame: Any, seed: int) -> dict[str, Any]:
    """One engine run on ``name`` and its scores (an error is a row too)."""
    label = pathologies.label_of(frame)
    cut = split_rows(frame)
    row: dict[str, Any] = {"table": name, "seed": seed}
    try:
        schema = inferred_schema(cut["public"], label)  # type: ignore[arg-type]
        parts = {k: schema.validate(v, on_invalid="drop", what=name)[0] for k, v in cut.items()}
        real, numeric = parts["private"], nf.numeric_names(schema)
        start = time.process_time()
        fake = synthesize(
            real, schema, epsilon=1.0, delta=1e-5, seed=seed, noise_seed=NOISE_SEED_BASE + seed
        )
        cpu = time.process_time() - start
        # as suite.score reads an output: typed as the private part is
        fake, _ = schema.validate(fake, on_invalid="error", what="synthetic table")
        report = tstr(fake, parts["test"], schema, label)
    except Exception as error:  # a table the flow refuses is a finding too
        return {**row, "status": "error", "error": f"{type(error).__name__}: {error}"[:300]}
    return {
        **row, "status": "ok", "rows": len(real), "cpu_seconds": cpu,
        "accuracy": report.accuracy, "majority": report.baseline_accuracy,
        **nf.quantile_tv(real, fake, schema, parts["public"]),
        "spearman_error": nf.spearman_error(real, fake, numeric),
        "beyond_range": nf.beyond_range_share(real, fake, numeric),
        "unreached_range": nf.unreached_share(real, fake, numeric),
    }  # fmt: skip


def paired(base: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
    """Per measure, the mean of ``new - base`` over the runs both hold, with a 95%
    t-interval half-width (normal approximation), and per table the mean difference."""
    key = lambda r: (r["table"], r["seed"])  # noqa: E731
    a = {key(r): r for r in base if r["status"] == "ok"}
    b = {key(r): r for r in new if r["status"] == "ok"}
    keys = sorted(set(a) & set(b))
    out: dict[str, Any] = {"pairs": len(keys), "measures": {}, "tables": {}}
    for m in MEASURES:
        d = np.array([b[k][m] - a[k][m] for k in keys], dtype=np.float64)
        d = d[np.isfinite(d)]
        half = 1.96 * float(d.std(ddof=1)) / np.sqrt(d.size) if d.size > 1 else 0.0
        out["measures"][m] = {"mean": float(d.mean()), "interval": half, "base": _mean(a, keys, m)}
    for table in sorted({k[0] for k in keys}):
        ks = [k for k in keys if k[0] == table]
        out["tables"][table] = {
            "rows": a[ks[0]]["rows"],
            **{m: float(np.nanmean([b[k][m] - a[k][m] for k in ks])) for m in MEASURES},
        }
    return out


def _mean(rows: dict[Any, dict[str, Any]], keys: list[Any], m: str) -> float:
    return float(np.nanmean([rows[k][m] for k in keys]))


def plot(comparison: dict[str, Any], path: str) -> None:
    """Per table (by private rows), the mean paired difference in TV2 and TSTR."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = sorted(comparison["tables"].items(), key=lambda kv: kv[1]["rows"])
    names = [f"{t.split('.')[-1]} ({v['rows']})" for t, v in tables]
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.3 * len(names) + 1.5), sharey=True)
    panels = (("tv2", "TV2 (lower is better)"), ("accuracy", "TSTR"))
    for ax, (m, title) in zip(axes, panels, strict=True):
        ax.barh(names, [v[m] for _, v in tables], color="tab:blue")
        ax.axvline(0.0, color="black", linewidth=0.8)
        ax.set_title(f"{title}: new - base")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tables", nargs="*", default=None)
    parser.add_argument("--out", default=None, help="JSON of this run's rows")
    parser.add_argument("--against", nargs=2, metavar=("BASE", "NEW"), default=None)
    parser.add_argument("--png", default=None, help="with --against: the per-table plot")
    args = parser.parse_args(argv)
    if args.against:
        base, new = (json.loads(Path(p).read_text())["rows"] for p in args.against)
        comparison = paired(base, new)
        print(json.dumps(comparison, indent=1))
        if args.png:
            plot(comparison, args.png)
        return
    warnings.filterwarnings("ignore")
    tables = {k: v for k, v in pathologies.scanned_tables().items() if 0.4 * len(v) < MAX_PRIVATE}
    if args.tables:
        tables = {k: v for k, v in tables.items() if {k, k.split(".")[1]} & set(args.tables)}
    rows = []
    for name, frame in tables.items():
        for seed in range(args.seeds):
            rows.append(run(name, frame, seed))
            print(json.dumps(rows[-1]), flush=True)
    doc = {"benchmark": "small tables (issue 25)", "epsilon": 1.0, "delta": 1e-5, "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
