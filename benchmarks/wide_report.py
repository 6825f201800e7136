"""Paired-by-seed summary and plot of wide-table runs (``wide_other.py`` and
``quality_paired.py`` JSON lines): per table, the mean TSTR of each setting, the mean
paired difference against the baseline setting with a t interval, CPU and peak memory.

    python benchmarks/wide_report.py runs.jsonl out.json '{"tree_label_groups": 0}'

The third argument names the baseline setting (default ``{}``).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

#: Per-run measures summarised where every seed of a setting has them.
MEASURES = ("tv_all", "spearman_error", "spearman_error_strong")


def interval(values: list[float]) -> list[float]:
    """Mean and 95% t interval of ``values`` (the mean twice for one value)."""
    a = np.asarray(values, dtype=float)
    if len(a) < 2:
        return [float(a.mean())] * 3
    half = stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a))
    return [float(a.mean()), float(a.mean() - half), float(a.mean() + half)]


def summary(rows: list[dict[str, Any]], baseline: str = "{}") -> dict[str, Any]:
    """Per table and setting: TSTR, gap to the real model, CPU; paired differences
    against the ``baseline`` setting (its ``extra`` as sorted JSON) on the seeds both
    ran."""
    runs: dict[str, dict[str, dict[int, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        table = str(row.get("d", row.get("key")))
        runs[table][json.dumps(row["extra"], sort_keys=True)][row["seed"]] = row
    out: dict[str, Any] = {}
    for table, settings in runs.items():
        base = settings.get(baseline, {})
        out[table] = {}
        for setting, by_seed in settings.items():
            seeds = sorted(by_seed)
            entry: dict[str, Any] = {
                "seeds": seeds,
                "tstr": interval([by_seed[s]["tstr"] for s in seeds]),
                "cpu": interval([by_seed[s]["cpu"] for s in seeds]),
            }
            if "real" in by_seed[seeds[0]]:
                entry["gap_to_real"] = interval(
                    [by_seed[s]["real"] - by_seed[s]["tstr"] for s in seeds]
                )
            if "peak_mb" in by_seed[seeds[0]]:
                entry["peak_mb"] = max(by_seed[s]["peak_mb"] for s in seeds)
            measures = [m for m in MEASURES if all(m in by_seed[s] for s in seeds)]
            for m in measures:
                entry[m] = interval([by_seed[s][m] for s in seeds])
            paired = [s for s in seeds if s in base]
            if setting != baseline and paired:
                entry["tstr_minus_baseline"] = interval(
                    [by_seed[s]["tstr"] - base[s]["tstr"] for s in paired]
                )
                for m in measures:
                    both = [s for s in paired if m in base[s]]
                    if both:
                        entry[f"{m}_minus_baseline"] = interval(
                            [by_seed[s][m] - base[s][m] for s in both]
                        )
            out[table][setting] = entry
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    """TSTR per table and setting (mean, 95% interval), the real model's as a mark."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = sorted(result)
    settings = sorted({s for t in tables for s in result[t]})
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(settings))
    for k, setting in enumerate(settings):
        xs, ys, errs = [], [], []
        for i, table in enumerate(tables):
            if setting in result[table]:
                mean, low, high = result[table][setting]["tstr"]
                xs.append(i + k * width)
                ys.append(mean)
                errs.append([[mean - low], [high - mean]])
        err = np.concatenate(errs, axis=1) if errs else None
        ax.errorbar(xs, ys, yerr=err, fmt="o", label=setting or "default", capsize=3)
    ax.set_xticks(range(len(tables)), tables)
    ax.set_ylabel("TSTR (mean, 95% interval)")
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    baseline = json.dumps(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}, sort_keys=True)
    summarised = summary(rows, baseline)
    out = Path(sys.argv[2])
    out.write_text(
        json.dumps({"baseline": baseline, "runs": rows, "summary": summarised}, indent=1) + "\n"
    )
    plot(summarised, out.with_suffix(".png"))


if __name__ == "__main__":
    main()
