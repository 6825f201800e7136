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
    "beyond_range", "unreached_range", "atom_tv_max", "cpu_seconds", "peak_rss_mb", "n_private",
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


def headline(summary: dict[str, Any], systems: tuple[str, ...]) -> str:
    """Suite averages of each system's means over the tables where all ``systems`` ran."""
    tables = [t for t, v in summary.items() if all(s in v for s in systems)]
    head = (
        "| system | SDMetrics (bins) | SDMetrics | TSTR | TV2 | Spearman err | beyond range "
        "| CPU s |"
    )
    lines = [f"Over {len(tables)} tables: {', '.join(tables) or 'none'}.", "", head]
    lines.append("|---" * 8 + "|")
    for system in systems:

        def mean(metric: str, system: str = system) -> str:
            vals = [summary[t][system][metric]["mean"] for t in tables]
            vals = [v for v in vals if math.isfinite(v)]
            return f"{np.mean(vals):.3f}" if vals else "–"

        lines.append(
            f"| {system} | {mean('sdm_bins')} | {mean('sdm')} | {mean('accuracy')} | "
            f"{mean('tv2')} | {mean('spearman_error')} | {mean('beyond_range')} | "
            f"{mean('cpu_seconds')} |"
        )
    return "\n".join(lines)


def halfway_markdown(summary: dict[str, Any]) -> str:
    """Issue 25's suite target: how far from AIM towards the bootstrap the default gets
    (0: AIM's level, 1: the bootstrap's), averaged over the tables AIM completed."""
    tables = [t for t, v in summary.items() if all(s in v for s in ("engine", "aim", "bootstrap"))]
    if not tables:
        return "No table has AIM, the default and the bootstrap all measured yet."
    out = []
    for system in ("engine", "engine_public"):
        for metric, name in (("sdm_bins", "SDMetrics (bins)"), ("tv2", "TV2")):
            got = [_mean(summary, t, system, metric) for t in tables]
            aim = [_mean(summary, t, "aim", metric) for t in tables]
            boot = [_mean(summary, t, "bootstrap", metric) for t in tables]
            a, b, g = np.nanmean(aim), np.nanmean(boot), np.nanmean(got)
            share = (g - a) / (b - a) if b != a else float("nan")
            out.append(f"`{system}` {name}: {share:.2f} of the way from AIM ({a:.3f}) to the "
                       f"bootstrap ({b:.3f}), at {g:.3f} (target 0.5)")  # fmt: skip
    return "Over the tables AIM completed: " + "; ".join(out) + "."


def _mean(summary: dict[str, Any], table: str, system: str, metric: str) -> float:
    return float(summary[table].get(system, {}).get(metric, {}).get("mean", float("nan")))


def targets_markdown(summary: dict[str, Any], system: str) -> str:
    """Issue 25's per-table targets for ``system`` (yes / no / – where not measurable)."""
    head = [
        "table", "SDM ≥ AIM", "SDM ≥ 1k sample", "TSTR ≥ AIM", "TSTR ≥ maj+0.01",
        "Spearman ≤ 0.05", "beyond ≤ 0.1%", "atoms ≤ 0.05", "CPU ≤ 10% AIM",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]

    for table, by_system in summary.items():
        if system in by_system:
            cells = [_mark(ok) for ok in _targets(summary, table, system)]
            lines.append(f"| {table} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mark(ok: bool | None) -> str:
    return "–" if ok is None else ("yes" if ok else "**no**")


def _targets(summary: dict[str, Any], table: str, system: str) -> list[bool | None]:
    """Each target of :func:`targets_markdown`: met, missed, or ``None`` (not measurable)."""

    def get(metric: str, of: str = system) -> float:
        return _mean(summary, table, of, metric)

    def at_least(a: float, b: float) -> bool | None:
        return None if math.isnan(a) or math.isnan(b) else a >= b

    big = get("n_private") >= 10_000
    real_gain = get("accuracy", "real") - get("majority")
    return [
        at_least(get("sdm_bins"), get("sdm_bins", "aim")),
        at_least(get("sdm_bins"), get("sdm_bins", "sample1000")) if big else None,
        at_least(get("accuracy"), get("accuracy", "aim")),
        at_least(get("accuracy"), get("majority") + 0.01) if real_gain >= 0.03 else None,
        at_least(0.05, get("spearman_error")),
        at_least(0.001, get("beyond_range")),
        at_least(0.05, get("atom_tv_max")),
        at_least(0.1 * get("cpu_seconds", "aim"), get("cpu_seconds")),
    ]


OWN_TABLES = {
    "adult": ("UCI Adult (adult-tabpe's 9 columns), train + test", "income", "CC BY 4.0 (UCI)"),
    "bank": ("UCI Bank Marketing, bank-full, 17 columns", "y", "CC BY 4.0 (UCI)"),
    "person_activity": ("UCI Localization Data for Person Activity, persons A + B", "activity",
                        "CC BY 4.0 (UCI)"),
    "xor3": ("generated XOR-3 (datasets.make_xor), train + test", "target", "generated"),
}  # fmt: skip


def tables_markdown(rows: list[dict[str, Any]]) -> str:
    """Each suite table: source, licence, label and why, rows of each part, refused rows."""
    from dpevolve.datasets.suite import LICENCES, SPLIT_SHARES, SUITE, SUITE_SEED, TABLES

    sizes: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.get("status") == "ok":
            sizes.setdefault(row["table"], row)
    lines = [
        f"Every table is cut {' / '.join(f'{int(100 * v)}% {k}' for k, v in SPLIT_SHARES.items())}"
        f" by one seeded permutation (seed {SUITE_SEED}); its schema is what `dpevolve schema "
        "infer PUBLIC --label LABEL` proposes from the public part (no hand edits). Private "
        "or test rows that schema refuses (a value the public part never showed) are left "
        "out, as `--on-invalid drop` would; the last column counts them.",
        "",
        "| table | source | label (why) | licence | public / private / test | refused |",
        "|---|---|---|---|---|---|",
    ]
    known = {t.name: t for t in TABLES}
    for name in SUITE:
        row = sizes.get(name, {})
        parts = "/".join(str(row.get(f"n_{p}", "?")) for p in ("public", "private", "test"))
        refused = sum((row.get("refused") or {}).values()) if row else "?"
        if name in known:
            t = known[name]
            source = f"`{t.package}`: {t.source}" + (f" ({t.notes})" if t.notes else "")
            label, licence = f"`{t.label}`: {t.why}", LICENCES[t.package]
        else:
            source, label_name, licence = OWN_TABLES[name]
            label = f"`{label_name}`: the table's documented label"
        lines.append(f"| {name} | {source} | {label} | {licence} | {parts} | {refused} |")
    return "\n".join(lines)


SYSTEMS_TEXT = (
    "* `engine`: `dpevolve.engine.synthesize`, the shipped default, on the private part "
    "alone; `engine_public`: the same with the public part passed (`--public`). "
    "Replace-one adjacency.\n"
    "* `aim`, `mst`: SmartNoise Synth 1.0.8's AIM and MST (defaults; run to completion, no "
    "time cap) in a venv of their own (`benchmarks/suite_external.py`); numerics in 20 "
    "equal-width bins over the inferred schema's range, decoded at bin midpoints (rounded "
    "where the schema says whole); no budget spent on bounds. SmartNoise measures each "
    "marginal with sensitivity 1, i.e. add/remove-one adjacency: at the same (epsilon, "
    "delta) it adds less noise than a replace-one mechanism would need (sensitivity "
    "sqrt(2) for a histogram), so the comparison favours the baselines.\n"
    "* `bootstrap`: as many private rows drawn with replacement; `sample1000`: 1,000 "
    "private rows without replacement; `real`: the private part itself (its TSTR is the "
    "real model's). Not private: references."
)


def completion_markdown(rows: list[dict[str, Any]]) -> str:
    """Which tables each system completed, and the others' errors."""
    lines = ["", "| system | completed (seeds) | failed |", "|---|---|---|"]
    for system in SYSTEM_ORDER:
        ok = sorted({r["table"] for r in rows if r["system"] == system and r["status"] == "ok"})
        bad = [
            f"{r['table']}: {r.get('reason', '?')[:80]}"
            for r in rows
            if r["system"] == system and r["status"] != "ok"
        ]
        seeds = sorted({r["seed"] for r in rows if r["system"] == system and r["status"] == "ok"})
        lines.append(f"| {system} | {len(ok)} tables, seeds {seeds} | {'; '.join(bad) or '–'} |")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    summary = summarise(rows)
    parts = [
        "# The benchmark suite (issue 25)",
        "Written by `benchmarks/suite_report.py` from the JSON in benchmarks/results/ "
        "(`suite_*.json`); the harness is `benchmarks/suite.py`. Epsilon 1, delta 1e-5; each "
        "output is scored against the private part, TSTR on the test part. A cell is the mean "
        "over seeds, ± the 95% interval where there are several.",
        "## Systems",
        SYSTEMS_TEXT,
        completion_markdown(rows),
        "## Headline: suite averages",
        headline(summary, ("engine", "engine_public", "real")),
        "On the tables where the real references ran:",
        headline(summary, ("engine", "engine_public", "sample1000", "bootstrap")),
        "On the tables where MST completed:",
        headline(summary, ("engine", "engine_public", "mst")),
        "On the tables where AIM completed:",
        headline(summary, ("engine", "engine_public", "aim")),
        halfway_markdown(summary),
        "## Issue 25's per-table targets, the default without public data (`engine`)",
        "SDM: SDMetrics on the real deciles. The sample comparison applies where the "
        "private part holds 10,000 rows or more; the TSTR floor where the real model beats "
        "the majority class by 0.03 or more; – where a baseline did not run.",
        targets_markdown(summary, "engine"),
        "## The same targets with the public part (`engine_public`)",
        targets_markdown(summary, "engine_public"),
        "## Tables",
        tables_markdown(rows),
        "## Results per table",
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
        table_markdown(
            summary,
            "unreached_range",
            "Real rows beyond the synthetic range by > 10% of the private width (a tail cut off)",
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
