"""Paired differences (after - before, same table and seed) with 95% t-intervals.

python experiments/numbers/compare.py results/base.jsonl results/atoms.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy import stats

METRICS = ("tv_all", "tv2", "accuracy", "spearman", "beyond", "atom")


def _rows(path: str) -> dict[tuple[str, int], dict]:
    lines = Path(path).read_text().splitlines()
    return {(r["key"], r["seed"]): r for r in map(json.loads, lines)}


def main() -> None:
    before, after = _rows(sys.argv[1]), _rows(sys.argv[2])
    for key in sorted({k for k, _ in before}):
        seeds = sorted(s for k, s in before if k == key and (k, s) in after)
        parts = []
        for m in METRICS:
            a = np.array([before[(key, s)][m] for s in seeds], dtype=float)
            b = np.array([after[(key, s)][m] for s in seeds], dtype=float)
            d = b - a
            half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
            parts.append(f"{m} {a.mean():.4f}->{b.mean():.4f} ({d.mean():+.4f}±{half:.4f})")
        print(f"{key} [{len(seeds)} seeds]: " + "; ".join(parts))


if __name__ == "__main__":
    main()
