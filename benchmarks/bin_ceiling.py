"""The TSTR ceiling of a binned model: the real rows, each numeric value redrawn
uniformly within its bin (a perfect model of the bins that knows nothing inside one).

No privacy is involved: this measures what any model holding ``bins`` equal-width bins
over the declared range can reach at best, e.g. XOR-3 whose sign changes at 2.5, inside
a bin of 20 over [-10, 10].

    DPEVOLVE_DATA=... python benchmarks/bin_ceiling.py [--datasets xor3_off xor3] [--bins 20 40]

Writes benchmarks/results/bin_ceiling.json and prints one line per (table, bins, seed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_data
import fidelity_metrics

from dpevolve.data.schema import NumericColumn

RESULTS = Path(__file__).resolve().parent / "results"


def within_bins(frame: pd.DataFrame, schema, bins: int, rng: np.random.Generator) -> pd.DataFrame:
    """``frame`` with every numeric value redrawn uniformly inside its equal-width bin."""
    out = frame.copy()
    for column in schema.columns:
        if not isinstance(column, NumericColumn):
            continue
        width = (column.hi - column.lo) / bins
        cell = np.clip(np.floor((out[column.name] - column.lo) / width), 0, bins - 1)
        out[column.name] = column.lo + (cell + rng.random(len(out))) * width
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["xor3_off", "xor3"])
    parser.add_argument("--bins", nargs="+", type=int, default=[20, 40])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "bin_ceiling.json")
    args = parser.parse_args()
    rows = []
    for key in args.datasets:
        split = fidelity_data.load(key)
        real = fidelity_metrics.tstr(split.train, split.test, split.schema, split.label)
        rows.append({"dataset": key, "bins": None, "seed": None, "tstr": real.accuracy})
        for bins in args.bins:
            for seed in range(args.seeds):
                binned = within_bins(split.train, split.schema, bins, np.random.default_rng(seed))
                score = fidelity_metrics.tstr(binned, split.test, split.schema, split.label)
                rows.append({"dataset": key, "bins": bins, "seed": seed, "tstr": score.accuracy})
                print(json.dumps(rows[-1]), flush=True)
    args.out.write_text(json.dumps({"benchmark": "bin_ceiling", "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
