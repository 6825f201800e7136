"""Issue 27's column target: the CPU of d = 200 against d = 100, seed by seed.

Reads ``wide_other.py`` JSON lines (one setting, several seeds at both widths) and
writes the per-seed ratios of CPU, of the estimator's work (evaluations times
measurements, free of the machine's load) and of the adaptive rounds, each with its
mean and 95% t interval, the ratio of the mean CPUs, and a plot of each seed's CPU at
both widths against the 2x line.

    python benchmarks/wide_ratio.py out.json runs.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from wide_report import interval

WIDTHS = (100, 200)


def ratios(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The d = 200 / d = 100 ratios on the seeds both widths ran."""
    by = {(int(r["d"]), int(r["seed"])): r for r in rows if int(r["d"]) in WIDTHS}
    seeds = sorted(s for (d, s) in by if d == WIDTHS[0] and (WIDTHS[1], s) in by)
    out: dict[str, Any] = {"seeds": seeds}
    for key in ("cpu", "refit_work", "rounds", "tstr", "peak_mb"):
        if all(key in by[(d, s)] for d in WIDTHS for s in seeds):
            out[key] = {str(d): [by[(d, s)][key] for s in seeds] for d in WIDTHS}
    for key in ("cpu", "refit_work", "rounds"):
        if key in out:
            wide, narrow = out[key][str(WIDTHS[1])], out[key][str(WIDTHS[0])]
            each = [w / n for w, n in zip(wide, narrow, strict=True)]
            out[f"{key}_ratio_per_seed"] = [round(r, 3) for r in each]
            out[f"{key}_ratio_mean_t95"] = [round(v, 3) for v in interval(each)]
            out[f"{key}_ratio_of_means"] = round(sum(wide) / sum(narrow), 3)
    return out


def plot(result: dict[str, Any], path: Path) -> None:
    """Each seed's CPU at d = 100 and d = 200, and twice the d = 100 CPU."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = result["seeds"]
    narrow, wide = (result["cpu"][str(d)] for d in WIDTHS)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(seeds, narrow, "o-", label="d = 100")
    ax.plot(seeds, wide, "s-", label="d = 200")
    ax.plot(seeds, [2 * c for c in narrow], "k:", label="2 x d = 100 (target bound)")
    ax.set_xlabel("seed")
    ax.set_xticks(seeds)
    ax.set_ylabel("CPU s (fit + 20,000-row draw)")
    mean, low, high = result["cpu_ratio_mean_t95"]
    ax.set_title(f"d = 200 / d = 100 CPU: mean {mean:.2f} ({low:.2f}-{high:.2f})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str]) -> None:
    out = Path(argv[0])
    rows = [json.loads(line) for name in argv[1:] for line in Path(name).read_text().splitlines()]
    settings = {json.dumps(r.get("extra", {}), sort_keys=True) for r in rows}
    if len(settings) != 1:
        raise SystemExit(f"one setting per call, got {sorted(settings)}")
    result = {"benchmark": "wide_ratio (issue 27)", "setting": settings.pop(), **ratios(rows)}
    out.write_text(json.dumps(result, indent=1) + "\n")
    plot(result, out.with_suffix(".png"))
    print(json.dumps({k: v for k, v in result.items() if "ratio" in k}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
