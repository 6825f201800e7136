"""Summaries, effect sizes, issue 18's targets, the markdown table and the plot of
fidelity benchmark results (``benchmarks/fidelity.py``).

    python benchmarks/fidelity_report.py RESULT.json [MORE.json ...] [--system engine]

Several result files are merged (a later file's row replaces an earlier one's for the
same table, system and seed), so a baseline run and an engine run print as one table.
Means over seeds with a 95% Student-t interval (``mean ± half-width``, shown when there
are 2 or more seeds); effects of ``--system`` (default the engine) are paired by seed
against each baseline.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fidelity_data import LOADERS, TITLES
from fidelity_systems import SYSTEMS

METRICS = (
    "tv1",
    "tv2",
    "tv_all",
    "accuracy",
    "majority",
    "distinct",
    "rows",
    "distinct_rate",
    "distinct_binned_rate",
    "seconds",
    "cpu_seconds",
    "peak_rss_mb",
    "fit_rss_mb",
)
SYSTEM_TITLES = {
    "engine": "dpevolve engine",
    "engine_pe": "dpevolve engine + PE stage",
    "engine_nope": "dpevolve engine, no PE stage",
    "engine_nopublic": "dpevolve engine, public withheld",
    "engine_declared_bins": "dpevolve engine, declared-range bins",
    "engine_released_bins": "dpevolve engine, released-histogram bins (public bins off)",
    "tabpe": "dpevolve `tabpe`",
    "hybrid": "dpevolve `hybrid`",
    "aim": "AIM (mbi port)",
    "mst": "MST (mbi port)",
    "bootstrap": "real bootstrap",
    "real": "real table",
}
# Issue 18's figures for smartnoise-synth's AIM and MST (add/remove adjacency: a weaker
# epsilon 1 than ours), shown only where our own port has no measured row.
RECORDED: dict[str, dict[str, dict[str, float]]] = {
    "adult": {
        "aim": {"tv1": 0.004, "tv2": 0.030, "accuracy": 0.826},
        "mst": {"tv1": 0.004, "tv2": 0.055, "accuracy": 0.740, "distinct_rate": 26900 / 16730},
    },
    "bank": {
        "aim": {"tv1": 0.002, "tv2": 0.026, "accuracy": 0.884},
        "mst": {"tv1": 0.002, "tv2": 0.031, "accuracy": 0.884},
    },
    "person_activity": {
        "aim": {"tv1": 0.018, "tv2": 0.062, "accuracy": 0.560},
        "mst": {"tv1": 0.004, "tv2": 0.064, "accuracy": 0.517},
    },
}
COMPARED = ("engine", "tabpe", "hybrid", "aim", "mst")
"""The systems a paired effect is taken against."""
RECORDED_NOTE = "recorded in issue 18: smartnoise-synth, add/remove; not rerun"


# ------------------------------------------------------------------ statistics
def _t975(df: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(0.975, df))


def interval(values: list[float]) -> dict[str, float]:
    """Mean, sd and the 95% Student-t half-width (NaN below 2 values)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"n": len(values), "mean": mean, "sd": math.nan, "ci95": math.nan}
    sd = statistics.stdev(values)
    return {
        "n": len(values),
        "mean": mean,
        "sd": sd,
        "ci95": _t975(len(values) - 1) * sd / math.sqrt(len(values)),
    }


def _ok(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r.get("status") == "ok"]


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``"dataset/system" -> {metric: interval, "failed": [reasons]}``."""
    out: dict[str, dict[str, Any]] = {}
    for key in sorted({(r["dataset"], r["system"]) for r in rows}):
        group = [r for r in rows if (r["dataset"], r["system"]) == key]
        entry: dict[str, Any] = {}
        for metric in METRICS:
            values = [float(r[metric]) for r in _ok(group) if _finite(r.get(metric))]
            if values:
                entry[metric] = interval(values)
        failed = [_reason(r) for r in group if r["status"] != "ok"]
        if failed:
            entry["failed"] = failed
        capped = [r["facts"] for r in _ok(group) if r.get("facts", {}).get("aim_capped")]
        if capped:
            entry["capped"] = {
                "rows": len(capped),
                "rounds": statistics.fmean(f["aim_rounds"] for f in capped),
                "rho_share": statistics.fmean(
                    f["aim_rho_used"] / f.get("aim_rho", _default_rho()) for f in capped
                ),
                "cap_s": capped[0].get("aim_cap_s"),
            }
        out[f"{key[0]}/{key[1]}"] = entry
    return out


def _reason(row: dict[str, Any]) -> str:
    """Why a row has no measurement; a stopped run says how much CPU it had used."""
    reason = str(row.get("reason", row["status"]))
    if _finite(row.get("cpu_seconds_at_stop")):
        reason += f" after {row['cpu_seconds_at_stop']:.0f} CPU s"
    return reason


def _default_rho() -> float:
    """rho of epsilon 1, delta 1e-5 (CKS): AIM rows recorded before ``aim_rho`` was."""
    from dpevolve.privacy import rho_for_epsilon

    return float(rho_for_epsilon(1.0, 1e-5, "cks"))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def effects(rows: list[dict[str, Any]], system: str = "engine") -> list[dict[str, Any]]:
    """Paired (same seed) differences ``system - reference`` of tv_all and TSTR, for
    every reference of :data:`COMPARED` measured on the same seeds."""
    out = []
    ok = _ok(rows)
    for key in LOADERS:
        mine = {r["seed"]: r for r in ok if r["dataset"] == key and r["system"] == system}
        for reference in COMPARED:
            if reference == system:
                continue
            ref = {r["seed"]: r for r in ok if r["dataset"] == key and r["system"] == reference}
            seeds = sorted(set(ref) & set(mine))
            capped = any(ref[s].get("facts", {}).get("aim_capped") for s in seeds)
            for metric in ("tv_all", "accuracy"):
                diffs = [mine[s][metric] - ref[s][metric] for s in seeds]
                if diffs:
                    out.append(
                        {
                            "dataset": key,
                            "system": system,
                            "metric": metric,
                            "reference": reference,
                            "reference_capped": capped,
                            **interval(diffs),
                        }
                    )
    return out


def merge(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """All rows, a later document's row replacing an earlier one's (table, system, seed)."""
    rows: dict[tuple[str, str, int], dict[str, Any]] = {}
    for doc in docs:
        for r in doc["rows"]:
            rows[(r["dataset"], r["system"], r["seed"])] = r
    return list(rows.values())


# ------------------------------------------------------------------ markdown
def _cell(entry: dict[str, Any], metric: str, digits: int = 3) -> str:
    if metric not in entry:
        return ""
    m = entry[metric]
    text = f"{m['mean']:.{digits}f}"
    if m["n"] > 1 and math.isfinite(m["ci95"]):
        text += f" ± {m['ci95']:.{digits}f}"
    return text


def _distinct(entry: dict[str, Any]) -> str:
    if "distinct" not in entry or "rows" not in entry:
        return ""
    rate = entry.get("distinct_rate", {}).get("mean", math.nan)
    binned = entry.get("distinct_binned_rate", {}).get("mean", math.nan)
    counts = f"{entry['distinct']['mean']:,.0f} / {entry['rows']['mean']:,.0f}"
    return f"{counts} ({rate:.2f} / {binned:.2f})"


def markdown(docs: list[dict[str, Any]]) -> str:
    """The README / FIDELITY.md table of every measured table and system."""
    rows = merge(docs)
    summary = summarise(rows)
    lines = [
        "| data set (majority) | system | seeds | tv1 | tv2 | tv_all | TSTR | "
        "distinct / rows (x bootstrap's: exact / binned) | wall s (CPU s) | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in LOADERS:
        present = [s for s in SYSTEMS if f"{key}/{s}" in summary]
        if not present:
            continue
        majority = next(
            (
                summary[f"{key}/{s}"]["majority"]["mean"]
                for s in present
                if "majority" in summary[f"{key}/{s}"]
            ),
            math.nan,
        )
        first = f"{TITLES[key]} ({majority:.3f})"
        for system in SYSTEMS:
            entry = summary.get(f"{key}/{system}")
            title = SYSTEM_TITLES[system]
            capped = (entry or {}).get("capped")
            if capped:
                title += (
                    f"; rounds capped at {capped['cap_s']:.0f} s: {capped['rounds']:.0f} rounds,"
                    f" {100 * capped['rho_share']:.0f}% of rho spent"
                )
            if entry is None or "accuracy" not in entry or capped:
                recorded = RECORDED.get(key, {}).get(system)
                reason = "; ".join(sorted(set((entry or {}).get("failed", []))))
                if recorded is not None:
                    lines.append(
                        f"| {first} | {title.split(' (')[0]} ({RECORDED_NOTE}"
                        f"{'; ours: ' + reason if reason else ''}) | | "
                        f"{recorded.get('tv1', '')} | {recorded.get('tv2', '')} | | "
                        f"{recorded.get('accuracy', '')} | | | |"
                    )
                    first = ""
                elif reason:
                    lines.append(f"| {first} | {title} | | {reason} | | | | | | |")
                    first = ""
                if entry is None or "accuracy" not in entry:
                    continue
            lines.append(
                f"| {first} | {title} | {entry['accuracy']['n']} | {_cell(entry, 'tv1')} | "
                f"{_cell(entry, 'tv2')} | {_cell(entry, 'tv_all')} | "
                f"{_cell(entry, 'accuracy')} | {_distinct(entry)} | "
                f"{_cell(entry, 'seconds', 0)} ({_cell(entry, 'cpu_seconds', 0)}) | "
                f"{_cell(entry, 'peak_rss_mb', 0)} |"
            )
            first = ""
    return "\n".join(lines)


def effects_markdown(docs: list[dict[str, Any]], system: str = "engine") -> str:
    """``system`` minus each baseline, paired by seed, with 95% intervals."""
    lines = [
        f"| data set | metric | `{system}` minus | difference (95% CI) | seeds |",
        "|---|---|---|---|---|",
    ]
    for e in effects(merge(docs), system):
        ci = f" ± {e['ci95']:.3f}" if math.isfinite(e["ci95"]) else ""
        ref = SYSTEM_TITLES[e["reference"]] + (" (capped)" if e["reference_capped"] else "")
        metric = "TSTR" if e["metric"] == "accuracy" else e["metric"]
        lines.append(
            f"| {TITLES[e['dataset']]} | {metric} | {ref} | {e['mean']:+.3f}{ci} | {e['n']} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ targets
def targets(docs: list[dict[str, Any]], system: str = "engine") -> list[dict[str, Any]]:
    """Issue 18's targets for ``system``: each with the measured mean and met / not."""
    summary = summarise(merge(docs))
    checks: list[tuple[str, str, str, float | None, str]] = [
        ("adult", "tv_all", "<=", 0.015, "Adult-9 tv_all <= 0.015"),
        ("adult", "accuracy", ">=", 0.83, "Adult-9 TSTR >= 0.83"),
        ("adult", "seconds", "<=", 60.0, "Adult-9 wall <= 60 s"),
        ("bank", "accuracy", ">=", 0.884, "Bank-5 TSTR >= 0.884"),
        ("bank", "tv_all", "<=", 0.01, "Bank-5 tv_all <= 0.01"),
        ("person_activity_public", "accuracy", ">=", 0.66, "Person Activity + B TSTR >= 0.66"),
        ("person_activity", "accuracy", ">=", 0.62, "Person Activity TSTR >= 0.62"),
        ("xor3", "accuracy", ">=", 0.95, "XOR-3 TSTR >= 0.95"),
        ("xor3_off", "accuracy", ">=", 0.93, "XOR-3 off-midpoint TSTR >= 0.93"),
        ("adult15", "tv_all", "<=", 0.03, "Adult-15 tv_all <= 0.03"),
        ("adult15", "accuracy", ">=", 0.845, "Adult-15 TSTR >= 0.845"),
    ]
    for d in ("wide40", "wide100"):
        checks += [
            (d, "seconds", "<=", 600.0, f"{TITLES[d]}: wall <= 600 s"),
            (d, "peak_rss_mb", "<=", 2048.0, f"{TITLES[d]}: peak RSS <= 2 GiB"),
            (d, "accuracy", ">=", None, f"{TITLES[d]}: TSTR >= real table's - 0.05"),
        ]
    for key in LOADERS:
        checks.append((key, "accuracy", ">=", None, f"{TITLES[key]}: TSTR >= majority"))
        checks.append(
            (key, "distinct_rate", ">=", 0.8, f"{TITLES[key]}: distinct rows >= 0.8 x bootstrap's")
        )
    out = []
    for key, metric, op, bound, text in checks:
        entry = summary.get(f"{key}/{system}", {})
        if bound is None and "majority" in text:
            bound = entry.get("majority", {}).get("mean")
        elif bound is None:
            real = summary.get(f"{key}/real", {}).get("accuracy", {}).get("mean")
            bound = None if real is None else real - 0.05
        value = entry.get(metric, {}).get("mean")
        met = None
        if value is not None and bound is not None:
            met = value <= bound if op == "<=" else value >= bound
        out.append(
            {
                "target": text,
                "dataset": key,
                "metric": metric,
                "bound": bound,
                "measured": value,
                "seeds": entry.get(metric, {}).get("n", 0),
                "met": met,
                "failed": entry.get("failed"),
            }
        )
    return out


def targets_markdown(docs: list[dict[str, Any]], system: str = "engine") -> str:
    lines = [
        f"Issue 18 targets for `{system}`:",
        "",
        "| target | measured | seeds | met |",
        "|---|---|---|---|",
    ]
    for t in targets(docs, system):
        if t["measured"] is None and not t["failed"]:
            continue  # table or system not run: nothing to say
        measured = "" if t["measured"] is None else f"{t['measured']:.3f}"
        if t["failed"]:
            measured += f" ({'; '.join(sorted(set(t['failed'])))})"
        met = {True: "yes", False: "**no**", None: "not measured"}[t["met"]]
        lines.append(f"| {t['target']} | {measured} | {t['seeds']} | {met} |")
    return "\n".join(lines)


# ------------------------------------------------------------------ plot
def plot(doc: dict[str, Any], path: Path) -> None:
    """tv_all and TSTR per table and system, with 95% intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarise(doc["rows"])
    keys = [k for k in LOADERS if any(f"{k}/{s}" in summary for s in SYSTEMS)]
    if not keys:
        return
    fig, axes = plt.subplots(2, len(keys), figsize=(3.6 * len(keys), 6.5), squeeze=False)
    for i, key in enumerate(keys):
        systems = [s for s in SYSTEMS if "accuracy" in summary.get(f"{key}/{s}", {})]
        for j, metric in enumerate(("tv_all", "accuracy")):
            ax = axes[j][i]
            means = [summary[f"{key}/{s}"][metric]["mean"] for s in systems]
            errs = [summary[f"{key}/{s}"][metric]["ci95"] for s in systems]
            errs = [e if math.isfinite(e) else 0.0 for e in errs]
            ax.bar(range(len(systems)), means, yerr=errs, color="tab:blue", capsize=3)
            ax.set_xticks(range(len(systems)), systems, rotation=40, ha="right", fontsize=8)
            ax.set_title(f"{TITLES[key]}: {'TSTR' if metric == 'accuracy' else metric}", fontsize=9)
            if metric == "accuracy" and systems:
                majority = summary[f"{key}/{systems[0]}"].get("majority", {}).get("mean")
                if majority is not None:
                    ax.axhline(majority, color="grey", ls="--", lw=1)
                ax.set_ylim(0.3, 1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("results", nargs="+")
    parser.add_argument("--system", default="engine", help="system checked against targets")
    args = parser.parse_args()
    docs = [json.loads(Path(p).read_text()) for p in args.results]
    print(markdown(docs))
    print()
    print(effects_markdown(docs, args.system))
    print()
    print(targets_markdown(docs, args.system))


if __name__ == "__main__":
    main()
