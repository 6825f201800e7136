"""Where the default draws a numeric column's values against where the data are.

Research only (seeded noise, as ``suite.py --seeded-noise``): per suite table and seed,
the default engine's output on the private part, and per numeric column the gap between
the real and the synthetic 1st, 5th, 50th, 95th and 99th percentiles, as a share of the
real range. A tail drawn inward (the released histograms too noisy to show how far the
data reach) shows as a large gap at 1% or 99%; a value drawn where the data are not, as
a large gap at 5% or 95% (session 40's note and benchmarks/SUITE.md).

    DPEVOLVE_DATA=... python benchmarks/quantile_scan.py black_politicians,cps91 0,1
        [--public] [--out benchmarks/results/quantile_scan.json]

``--public`` passes the table's public part (the default with ``--public``).

Writes the JSON (one row per table, seed and column) and a PNG beside it: each column's
worst gap, mean over the seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite_data
from suite import NOISE_SEED_BASE

from dpevolve.reporting.numeric_fidelity import numeric_names

HERE = Path(__file__).resolve().parent
QUANTILES = (0.01, 0.05, 0.5, 0.95, 0.99)


def gaps(real: np.ndarray, synth: np.ndarray) -> list[float]:
    """``|q_real - q_synth| / (max - min of real)`` at each of :data:`QUANTILES`."""
    width = float(real.max() - real.min()) or 1.0
    points = np.array(QUANTILES)
    found = np.abs(np.quantile(real, points) - np.quantile(synth, points)) / width
    return [float(g) for g in found]


def scan(table: str, seed: int, public: bool = False) -> list[dict[str, Any]]:
    """One seeded fit of ``table``'s private part (with its public part where
    ``public``) and its columns' quantile gaps."""
    from dpevolve.engine import synthesize

    parts = suite_data.load(table)
    synth = synthesize(
        parts.private, parts.schema, epsilon=1.0, delta=1e-5, rows=len(parts.private),
        seed=seed, noise_seed=NOISE_SEED_BASE + seed,
        public=parts.public if public else None,
    )  # fmt: skip
    rows = []
    for name in numeric_names(parts.schema):
        real = parts.private[name].astype(float).dropna().to_numpy()
        fake = synth[name].astype(float).dropna().to_numpy()
        if real.size and fake.size:
            found = gaps(real, fake)
            rows.append({"table": table, "seed": seed, "public": public, "column": name,
                         "gaps": found, "worst": max(found),
                         "at": QUANTILES[int(np.argmax(found))]})  # fmt: skip
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worst: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        worst[f"{r['table']}.{r['column']}"].append(r["worst"])
    names = sorted(worst, key=lambda k: -float(np.mean(worst[k])))
    fig, ax = plt.subplots(figsize=(8, 0.25 * len(names) + 1))
    ax.barh(names[::-1], [float(np.mean(worst[k])) for k in names[::-1]])
    ax.set_xlabel("worst quantile gap / real range (mean over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tables", help="comma-separated suite tables")
    parser.add_argument("seeds", help="comma-separated seeds")
    parser.add_argument("--public", action="store_true", help="pass the public part")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "quantile_scan.json")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for table in args.tables.split(","):
        for seed in (int(s) for s in args.seeds.split(",")):
            for row in scan(table, seed, args.public):
                print(json.dumps(row), flush=True)
                rows.append(row)
    args.out.write_text(json.dumps({"quantiles": QUANTILES, "rows": rows}, indent=1) + "\n")
    plot(rows, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main(sys.argv[1:])
