"""Two runs of the suite (``benchmarks/suite.py``) paired by table, system and seed.

    python benchmarks/suite_compare.py BEFORE.json AFTER.json

Prints each pair's TSTR, TV2, Spearman error, share of rows beyond the private range,
worst rule at an atom and SDMetrics (on the real table's bins), before -> after, then per
system the mean difference with a 95% interval over the pairs (normal approximation).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from typing import Any

Row = dict[str, Any]

MEASURES: dict[str, Callable[[Row], float | None]] = {
    "tstr": lambda r: r.get("accuracy"),
    "tv2": lambda r: r.get("tv2"),
    "spearman": lambda r: r.get("spearman_error"),
    "beyond": lambda r: r.get("beyond_range"),
    "unreached": lambda r: r.get("unreached_range"),
    "worst_atom": lambda r: r.get("atom_tv_max"),
    "sdm_bins": lambda r: (r.get("sdmetrics_bins") or {}).get("score"),
}


def load(path: str) -> dict[tuple[str, str, int], Row]:
    rows = json.loads(open(path).read())["rows"]
    return {(r["table"], r["system"], r["seed"]): r for r in rows if r.get("status") == "ok"}


def number(value: float | None) -> float:
    return math.nan if value is None else float(value)


def main() -> None:
    before, after = load(sys.argv[1]), load(sys.argv[2])
    print(f"{'table':24s} {'system':14s} " + " ".join(f"{m:>17s}" for m in MEASURES))
    diffs: dict[tuple[str, str], list[float]] = {}
    for key in sorted(set(before) & set(after)):
        cells = []
        for name, measure in MEASURES.items():
            x, y = number(measure(before[key])), number(measure(after[key]))
            cells.append(f"{x:7.3f}->{y:7.3f}")
            if not (math.isnan(x) or math.isnan(y)):
                diffs.setdefault((key[1], name), []).append(y - x)
        print(f"{key[0]:24s} {key[1]:14s} " + " ".join(f"{c:>17s}" for c in cells))
    for (system, name), values in sorted(diffs.items()):
        mean = statistics.mean(values)
        half = 1.96 * statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0
        print(f"mean change {system:14s} {name:10s} {mean:+.4f} ± {half:.4f} (n={len(values)})")


if __name__ == "__main__":
    main()
