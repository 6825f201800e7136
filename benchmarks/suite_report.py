"""Summaries, the markdown table (benchmarks/SUITE.md) and a plot of suite results.

    python benchmarks/suite_report.py benchmarks/results/suite_*.json [--md benchmarks/SUITE.md]

Several JSON files are merged (later rows win for the same table, system and seed).
A mean carries a 95% interval ``mean +- t * sd / sqrt(k)`` over its k seeds (none for
one seed).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

METRICS = (
    "sdm_bins", "sdm", "accuracy", "majority", "tv1", "tv2", "spearman_error",
    "beyond_range", "atom_tv_max", "cpu_seconds", "peak_rss_mb",
)  # fmt: skip
SYSTEM_ORDER = ("engine", "engine_public", "aim", "mst", "bootstrap", "sample1000", "real")
HERE = Path(__file__).resolve().parent


def _flat(row: dict[str, Any]) -> dict[str, float]:
    out = {k: row.get(k) for k in METRICS}
    out["sdm"] = (row.get("sdmetrics") or {}).get("score")
    out["sdm_bins"] = (row.get("sdmetrics_bins") or {}).get("score")
    return {k: float(v) for k, v in out.items() if v is not None}


def interval(values: list[float]) -> dict[str, float]:
    """Mean, 95% half-width (NaN for one value) and count of finite ``values``."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if len(x) == 0:
        return {"mean": float("nan"), "ci95": float("nan"), "n": 0}
    half = float("nan")
    if len(x) > 1:
        half = float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))
    return {"mean": float(x.mean()), "ci95": half, "n": len(x)}


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """table -> system -> metric -> :func:`interval` over the ok rows' seeds."""
    grouped: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
    for row in rows:
        if row.get("status") == "ok":
            grouped[(row["table"], row["system"])].append(_flat(row))
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for (table, system), flats in grouped.items():
        out[table][system] = {m: interval([f.get(m, float("nan")) for f in flats]) for m in METRICS}
    return dict(out)


def merge(paths: list[Path]) -> list[dict[str, Any]]:
    rows: dict[tuple, dict[str, Any]] = {}
    for path in paths:
        for row in json.loads(path.read_text())["rows"]:
            key = (row["table"], row["system"], row["seed"])
            if row.get("status") == "ok" or key not in rows:
                rows[key] = row
    return list(rows.values())


def _cell(stat: dict[str, Any] | None, digits: int = 3) -> str:
    if not stat or not stat["n"]:
        return "–"
    text = f"{stat['mean']:.{digits}f}"
    if math.isfinite(stat["ci95"]):
        text += f" ± {stat['ci95']:.{digits}f}"
    return text


def table_markdown(summary: dict[str, Any], metric: str, title: str, digits: int = 3) -> str:
    systems = [s for s in SYSTEM_ORDER if any(s in v for v in summary.values())]
    lines = [f"### {title}", "", "| table | " + " | ".join(systems) + " |"]
    lines.append("|---" * (len(systems) + 1) + "|")
    for table, by_system in summary.items():
        cells = [_cell(by_system.get(s, {}).get(metric), digits) for s in systems]
        lines.append(f"| {table} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def headline(summary: dict[str, Any]) -> str:
    """The suite average of each system's mean, over the tables every system completed."""
    systems = [s for s in SYSTEM_ORDER if any(s in v for v in summary.values())]
    lines = [
        "| system | tables | SDMetrics (bins) | TSTR | TV2 | Spearman err | beyond range | CPU s |"
    ]
    lines.append("|---" * 8 + "|")
    for system in systems:
        tables = [t for t, v in summary.items() if system in v]

        def mean(metric: str, tables: list[str] = tables, system: str = system) -> str:
            vals = [summary[t][system][metric]["mean"] for t in tables]
            vals = [v for v in vals if math.isfinite(v)]
            return f"{np.mean(vals):.3f}" if vals else "–"

        lines.append(
            f"| {system} | {len(tables)} | {mean('sdm_bins')} | {mean('accuracy')} | "
            f"{mean('tv2')} | {mean('spearman_error')} | {mean('beyond_range')} | "
            f"{mean('cpu_seconds')} |"
        )
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    summary = summarise(rows)
    parts = [
        headline(summary),
        table_markdown(
            summary, "sdm_bins", "SDMetrics QualityReport, numerics on the real deciles"
        ),
        table_markdown(summary, "sdm", "SDMetrics QualityReport, as is"),
        table_markdown(summary, "accuracy", "TSTR accuracy (HGB, tested on the 20% test part)"),
        table_markdown(summary, "majority", "Majority class on the test part"),
        table_markdown(summary, "tv2", "TV2, numerics at the public part's quantiles"),
        table_markdown(summary, "tv1", "TV1, numerics at the public part's quantiles"),
        table_markdown(summary, "spearman_error", "Mean Spearman error over numeric pairs"),
        table_markdown(
            summary, "beyond_range", "Rows beyond the private range by > 10% of its width"
        ),
        table_markdown(summary, "atom_tv_max", "Worst TV of P(label | atom), atoms >= 5% of rows"),
        table_markdown(summary, "cpu_seconds", "CPU seconds of the fit", 1),
        table_markdown(summary, "peak_rss_mb", "Peak resident set of the fit, MiB", 0),
    ]
    return "\n\n".join(parts) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Bars of SDMetrics (bins) and TSTR per table and system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarise(rows)
    tables = list(summary)
    systems = [s for s in SYSTEM_ORDER if any(s in v for v in summary.values())]
    fig, axes = plt.subplots(2, 1, figsize=(max(8, len(tables) * 0.9), 7), sharex=True)
    width = 0.8 / max(1, len(systems))
    for ax, metric, name in zip(axes, ("sdm_bins", "accuracy"), ("SDMetrics (bins)", "TSTR"),
                                strict=True):  # fmt: skip
        for i, system in enumerate(systems):
            means = [summary[t].get(system, {}).get(metric, {}).get("mean", np.nan) for t in tables]
            ax.bar(np.arange(len(tables)) + i * width, means, width, label=system)
        ax.set_ylabel(name)
        ax.set_ylim(0.3, 1.0)
    axes[1].set_xticks(np.arange(len(tables)) + 0.4 - width / 2, tables, rotation=45, ha="right")
    axes[0].legend(ncol=len(systems), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("json", nargs="+", type=Path)
    parser.add_argument("--md", type=Path, default=None, help="write the markdown here")
    parser.add_argument("--png", type=Path, default=None, help="write the plot here")
    args = parser.parse_args(argv)
    rows = merge(args.json)
    text = markdown(rows)
    if args.md:
        args.md.write_text(text)
    if args.png:
        plot(rows, args.png)
    print(text)


if __name__ == "__main__":
    main(sys.argv[1:])
