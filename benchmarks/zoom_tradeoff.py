"""The zoom's share and trigger (docs/engine.md, Zoom): what each buys on the suite's
tables where a column zooms, and on the XOR-3 of ``xor_generators.py`` whose features lie
in a small part of the declared range (``xor:mixed_offsets``, declared schema).

For each variant (``zoom_share``, and the trigger :data:`dpevolve.engine.zoom.ZOOM`),
table and seed, the default engine runs at epsilon 1, delta 1e-5 on the private part
with the suite's seeded noise (the same noise for every variant), and the output is
measured as in ``suite.py`` without SDMetrics: the mean Spearman error over numeric
pairs, TSTR, TV2 on public-quantile bins and the share of rows beyond the range.

    DPEVOLVE_DATA=... nice -n 10 python benchmarks/zoom_tradeoff.py [--seeds 2]
        [--tables ...] [--out benchmarks/results/zoom_tradeoff.json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import suite_data
from suite import NOISE_SEED_BASE

HERE = Path(__file__).resolve().parent
#: (zoom_share, ZOOM): no zoom, the share halved and doubled, a zoom only 2x finer.
VARIANTS = ((0.0, 0.25), (0.025, 0.25), (0.05, 0.25), (0.1, 0.25), (0.05, 0.5))
TABLES = ("xor:mixed_offsets", "injury", "bank")


def parts_of(key: str, seed: int) -> suite_data.Parts:
    """A suite table, or ``xor:NAME``: that generator's XOR-3 cut as the suite cuts."""
    if not key.startswith("xor:"):
        return suite_data.load(key)
    import xor_generators as xg

    from dpevolve.datasets.suite import split_rows

    generator = {g.name: g for g in xg.GENERATORS}[key[4:]]
    frame = xg.table(generator, seed)
    cut = split_rows(frame, seed=seed)
    schema = xg.declared_schema(generator, frame)
    return suite_data.Parts(key, cut["public"], cut["private"], cut["test"], schema, xg.LABEL, {})


def run_one(key: str, seed: int, share: float, trigger: float) -> dict[str, Any]:
    """One fit of ``key`` under a variant, and its measures."""
    from dpevolve.engine import EngineSpec, synthesize, zoom
    from dpevolve.reporting import numeric_fidelity as nf
    from dpevolve.reporting.tstr import tstr

    parts = parts_of(key, seed)
    schema = parts.schema
    zoom.ZOOM = trigger  # the trigger is a module constant: set for this variant
    start = time.process_time()
    synth = synthesize(
        parts.private, schema, epsilon=1.0, delta=1e-5, seed=seed,
        noise_seed=NOISE_SEED_BASE + seed, spec=EngineSpec(zoom_share=share),
    )  # fmt: skip
    cpu = time.process_time() - start
    fake, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    numeric = nf.numeric_names(schema)
    real = parts.private
    return {
        "table": key, "seed": seed, "zoom_share": share, "trigger": trigger,
        "spearman_error": nf.spearman_error(real, fake, numeric),
        "accuracy": tstr(fake, parts.test, schema, parts.label).accuracy,
        "tv2": nf.quantile_tv(real, fake, schema, parts.public)["tv2"],
        "beyond_range": nf.beyond_range_share(real, fake, numeric),
        "cpu_seconds": cpu,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--tables", nargs="+", default=list(TABLES))
    parser.add_argument(
        "--variants", nargs="+", default=[f"{a}/{b}" for a, b in VARIANTS],
        help="zoom_share/ZOOM pairs",
    )  # fmt: skip
    parser.add_argument("--out", default=str(HERE / "results" / "zoom_tradeoff.json"))
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for key in args.tables:
        for seed in range(args.seeds):
            for share, trigger in (map(float, v.split("/")) for v in args.variants):
                rows.append(run_one(key, seed, share, trigger))
                Path(args.out).write_text(json.dumps({"rows": rows}, indent=1) + "\n")
                r = rows[-1]
                print(key, seed, share, trigger, round(r["spearman_error"], 4), flush=True)
    summary: dict[str, list[float]] = {}
    for r in rows:
        summary.setdefault(f"{r['zoom_share']} / {r['trigger']}", []).append(r["spearman_error"])
    for name, values in summary.items():
        print(name, "mean Spearman error", round(float(np.mean(values)), 4))


if __name__ == "__main__":
    main()
