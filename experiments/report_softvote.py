"""RESULTS.md section "BF-Soft that pays": sharpened and debiased soft votes against hard,
against the published reductions and against the plain soft vote of section 2."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from experiments import analysis
from experiments.report import (
    DATASET_NAMES,
    PUBLISHED,
    Claim,
    Context,
    _pending,
    _verdict_reduction,
    _why_reduction,
    best_soft,
    fmt,
    md_table,
    pct,
    sci,
    vote_means,
)
from experiments.runner import REPO_ROOT
from experiments.softvote_studies import TARGET_ARM

TARGET = -0.25  # the goal: >= 25% below hard at rho 1e-4, 95% CI excluding 0
AUTO_SLACK = 0.05  # vote auto within 5% of the better of hard and the best soft arm
AUTO_RESULTS = REPO_ROOT / "benchmarks" / "results" / "bfsoft_pays_auto.json"


def section_pays(ctx: Context) -> list[str]:
    """Paired change of every arm against hard, the targets and the auto grid."""
    lines = ["## 2b. BF-Soft that pays: sharpening and debiasing", ""]
    df = ctx.table("bfsoft_pays")
    if df.empty:
        return lines + _pending(ctx, "bfsoft_pays")
    lines += [
        "The soft vote with the Gower weights of the attributes the policy leaves "
        "unprotected multiplied by `sharpen` (the reach, hence the noise, is unchanged: "
        "the vote blurs only along the protected attribute) and the released histogram "
        "debiased by `debias` Richardson-Lucy steps (post-processing, no privacy cost). "
        "Population drawn at random, as in sections 1-2. 'change' is the paired mean "
        "difference against hard over the same seeds, relative to hard's mean, with its "
        "95% t-interval. The declared arm (`"
        + TARGET_ARM
        + "`, also an arm of `vote auto`) was picked "
        "on separate exploration runs (`benchmarks/bfsoft_pays.py --arms`, other noise "
        "draws) before these rows were run; the targets are judged on it alone.",
        "",
    ]
    previous = _previous(ctx)
    verdicts: list[str] = []
    for (dataset, rho), cell in df.groupby(["dataset", "rho"]):
        hard = cell[cell["arm"] == "hard"].set_index("seed")["mean_error"]
        rows, tests = [], {}
        for arm, group in cell[cell["arm"] != "hard"].groupby("arm", sort=False):
            errors = group.set_index("seed")["mean_error"]
            seeds = sorted(set(hard.index) & set(errors.index))
            test = analysis.paired(hard.loc[seeds].tolist(), errors.loc[seeds].tolist())
            lo, hi = test.relative_ci
            rows.append([str(arm), fmt(test.mean_b), pct(test.relative), f"[{pct(lo)}, {pct(hi)}]"])
            tests[str(arm)] = test
        name = DATASET_NAMES.get(dataset, dataset)
        lines += [f"**{name}, rho = {sci(rho)}** (hard {fmt(hard.mean())}, {len(hard)} seeds)", ""]
        lines += md_table(["arm", "mean error", "change", "95% CI"], rows)
        if not tests or not math.isclose(rho, 1e-4):
            continue
        # The declared arm (chosen on a separate exploration run), not the best in
        # hindsight among the arms here, which would be biased toward a larger gain.
        arm = TARGET_ARM if TARGET_ARM in tests else min(tests, key=lambda a: tests[a].mean_b)
        test = tests[arm]
        lo, hi = test.relative_ci
        met = test.relative <= TARGET and hi < 0
        verdicts.append(
            f"{name}: {pct(test.relative)} [{pct(lo)}, {pct(hi)}] with {arm}: "
            f"target {'met' if met else 'not met'}"
        )
        _claim(ctx, dataset, test, arm)
        prev = previous.get(dataset)
        prev_text = (
            f"section 2's best plain soft vote {fmt(prev[0])} -> {fmt(prev[1])} "
            f"({pct(prev[1] / prev[0] - 1)}, 2 seeds)"
            if prev
            else "section 2 pending"
        )
        key = "adult" if dataset == "adult5" else "bank"
        hard_pub, soft_pub = PUBLISHED[f"{key}_1e-4"]
        lines += [
            f"At rho = 1e-4 the declared arm {arm}: {fmt(test.mean_a)} -> {fmt(test.mean_b)} "
            f"({pct(test.relative)}, 95% CI [{pct(lo)}, {pct(hi)}]); before: {prev_text}; "
            f"published: {hard_pub} -> {soft_pub} ({pct(soft_pub / hard_pub - 1)}).",
            "",
        ]
    if verdicts:
        lines += [
            "Target (at least 25% below hard at rho = 1e-4, 95% CI excluding 0): "
            + "; ".join(verdicts)
            + ".",
            "",
        ]
    return lines + _auto_grid()


def _previous(ctx: Context) -> dict[str, tuple[float, float]]:
    """Section 2's hard and best plain soft means at rho 1e-4, per data set."""
    df = ctx.table("bfsoft_temperature")
    if df.empty:
        return {}
    best = best_soft(vote_means(df, ["dataset", "rho"]), ["dataset", "rho"])
    best = best[np.isclose(best["rho"], 1e-4)]
    return {str(r["dataset"]): (float(r["hard"]), float(r["best"])) for _, r in best.iterrows()}


def _claim(ctx: Context, dataset: str, test: analysis.Paired, arm: str) -> None:
    key, name = ("adult", "Adult") if dataset == "adult5" else ("bank", "Bank")
    hard_pub, soft_pub = PUBLISHED[f"{key}_1e-4"]
    red_pub, red = 1 - soft_pub / hard_pub, -test.relative
    lo, hi = test.relative_ci
    ctx.claims.append(
        Claim(
            f"{name}: rho = 1e-4, hard -> soft with sharpening/debiasing (paired)",
            f"{hard_pub} -> {soft_pub} ({pct(-red_pub)})",
            f"{test.mean_a:.3f} -> {test.mean_b:.3f} ({pct(-red)}, 95% CI [{pct(lo)}, "
            f"{pct(hi)}], {test.n} seeds; {arm})",
            _verdict_reduction(red, red_pub),
            _why_reduction(red, red_pub) + "; see section 2b",
        )
    )


def _auto_grid() -> list[str]:
    """``vote="auto"`` against the better fixed arm, from the benchmark's JSON."""
    if not AUTO_RESULTS.exists():
        return []
    result: dict[str, Any] = json.loads(AUTO_RESULTS.read_text())
    auto = result.get("auto") or {}
    rows, worst = [], -math.inf
    for dataset, cells in auto.items():
        for cell in cells.values():
            means = cell["means"]
            soft = {k: v for k, v in means.items() if k.startswith("soft")}
            best_arm = min(soft, key=lambda k: soft[k])
            worst = max(worst, cell["auto_over_best"])
            better = "hard" if means["hard"] <= soft[best_arm] else best_arm
            test = analysis.paired(cell["errors"][better], cell["errors"]["auto"])
            lo, hi = test.relative_ci
            chosen = sorted(
                {
                    "hard" if c["vote"] == "hard" else _arm_label(c)
                    for c in cell.get("auto_choices", [])
                }
            )
            rows.append(
                [
                    DATASET_NAMES.get(dataset, dataset),
                    sci(cell["rho"]),
                    fmt(means["hard"]),
                    f"{fmt(soft[best_arm])} ({best_arm})",
                    fmt(means["auto"]),
                    pct(cell["auto_over_best"]),
                    f"[{pct(lo)}, {pct(hi)}]",
                    ", ".join(chosen),
                ]
            )
    seeds = len(next(iter(next(iter(auto.values())).values()))["errors"]["hard"]) if auto else 0
    met = worst <= AUTO_SLACK
    return [
        "**vote auto** (population seeded from public data, the pilot's setting; "
        f"{seeds} seeds per cell; from `benchmarks/bfsoft_pays.py --part auto`, "
        f"{AUTO_RESULTS.name}): the arm the public pilot chose (3 pilot seeds per private "
        "run; a soft arm only if it beats hard on every pilot seed), against the better "
        "of hard and the best soft arm in hindsight. Arms: hard, soft tau 0.015/0.03/0.06 "
        "sharpened x10, soft tau 0.06 sharpened x30 with 20 debias steps.",
        "",
        *md_table(
            [
                "data set",
                "rho",
                "hard",
                "best soft (arm)",
                "auto",
                "auto vs better",
                "paired 95% CI",
                "chose",
            ],
            rows,
        ),
        f"Target (auto never more than 5% above the better fixed arm): "
        f"{'met' if met else 'not met'} (worst {pct(worst)}). The better arm is chosen "
        "in hindsight on the private error of the same runs, and a cell's paired "
        "interval shows how far seed-to-seed variation alone moves the comparison.",
        "",
    ]


def _arm_label(choice: dict[str, Any]) -> str:
    text = f"soft {choice['temperature']:g}"
    if choice.get("sharpen", 1.0) != 1.0:
        text += f" x{choice['sharpen']:g}"
    if choice.get("debias"):
        text += f" d{choice['debias']}"
    return text
