"""``python -m experiments report``: RESULTS.md with tables and PNG figures.

Every section is computed from the store alone; a study without rows is reported as
pending with the command that runs it. Our numbers are put beside the published ones
(:data:`PUBLISHED`) and each claim is judged by the rule stated in RESULTS.md.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from experiments import analysis
from experiments.runner import Store

DELTA = 1e-5
TAUS = (0.015, 0.03, 0.06)
DATASET_NAMES = {
    "adult5": "Adult-5",
    "bank5": "Bank-5",
    "xor3": "XOR-3 (12k)",
    "xor3-48000": "XOR-3 (48k)",
    "xor3-100000": "XOR-3 (100k)",
}

PUBLISHED: dict[str, Any] = {
    "adult_1e-4": (0.696, 0.427),
    "bank_1e-4": (0.976, 0.730),
    "adult_3e-3_reduction": 0.099,
    "bank_3e-3_reduction": 0.072,
    "crossover_eps": (0.16, 0.46),
    "pilot": (190, 210),
    "age_policy": -0.336,
    "tstr": {
        "aim": (56.77, 58.42, 59.12),
        "tabpe": (60.80, 63.22, 64.24),
        "tabpe+pubmix": (66.40, 66.47, 66.85),
    },
}

FULL_COMMAND = "python -m experiments run all --full --workers 2 && python -m experiments report"
QUICK_COMMAND = "python -m experiments run all --quick --workers 2 && python -m experiments report"


@dataclass
class Claim:
    """One published claim, our value and the verdict."""

    claim: str
    published: str
    ours: str
    verdict: str
    why: str


@dataclass
class Context:
    """What the sections share: the rows, the figure folder, the claims found."""

    rows: list[dict[str, Any]]
    figures: Path
    output: Path
    claims: list[Claim] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def table(self, study: str) -> pd.DataFrame:
        return analysis.frame(self.rows, study)

    def link(self, path: Path) -> str:
        return os.path.relpath(path, self.output.parent).replace(os.sep, "/")

    def unavailable(self, study: str) -> dict[str, str]:
        """Reason per configuration label of the latest non-ok rows of a study."""
        out: dict[str, str] = {}
        for row in self.rows:
            if row.get("study") == study and row.get("status") == "unavailable":
                cfg = row.get("config", {})
                label = cfg.get("method") or cfg.get("mechanism") or "?"
                out[label] = str(row.get("reason") or "").splitlines()[0]
        return out


# ------------------------------------------------------------------ format
def fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.{digits}f}"


def pct(x: float | None, digits: int = 1) -> str:
    if x is None or not math.isfinite(x):
        return "–"
    return f"{100 * x:+.{digits}f}%"


def sci(x: float) -> str:
    return f"{x:.3g}"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]


def eps_of(rho: float) -> float:
    from dpevolve.privacy import epsilon_from_rho

    return epsilon_from_rho(rho, DELTA, "exact")


def rho_of(eps: float) -> float:
    from dpevolve.privacy import rho_for_epsilon

    return rho_for_epsilon(eps, DELTA, "exact")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def vote_means(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Mean error per ``keys`` + vote label (``hard`` or the temperature)."""
    df = df.copy()
    df["arm"] = np.where(df["vote"] == "hard", "hard", df["tau"].map(lambda t: f"{t:g}"))
    return df.groupby([*keys, "arm"])["mean_error"].agg(["mean", "std", "count"]).reset_index()


def best_soft(means: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys``: hard mean, best soft mean and its temperature."""
    out = []
    for key, group in means.groupby(keys):
        key = key if isinstance(key, tuple) else (key,)
        hard = group[group["arm"] == "hard"]["mean"]
        soft = group[group["arm"] != "hard"]
        if hard.empty or soft.empty:
            continue
        best = soft.loc[soft["mean"].idxmin()]
        out.append(
            {
                **dict(zip(keys, key, strict=True)),
                "hard": float(hard.iloc[0]),
                "best": float(best["mean"]),
                "best_tau": best["arm"],
                "seeds": int(group["count"].min()),
            }
        )
    return pd.DataFrame(out)


# ------------------------------------------------------------------ sections
def section_budget(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_budget")
    lines = ["## 1. BF-Soft: error against the budget", ""]
    if df.empty:
        return lines + _pending(ctx, "bfsoft_budget")
    base = ctx.table("baselines")
    means = vote_means(df, ["dataset", "rho"])
    best = best_soft(means, ["dataset", "rho"])
    seeds = int(means["count"].min())
    lines += [
        f"Mean error (defined above) of the 512-record release, mean over {seeds} seeds per "
        "cell; eps is the run's ledger epsilon at delta = 1e-5 (exact Gaussian conversion "
        "of rho). Policies: Adult and Bank protect age (threshold 7), XOR-3 protects each "
        "feature (threshold 1.5). 'change' is best soft against hard.",
        "",
    ]
    crossover_rows = []
    crossovers: dict[str, float | None] = {}
    for dataset in _ordered(df["dataset"].unique()):
        sub = means[means["dataset"] == dataset]
        rhos = sorted(sub["rho"].unique())
        header = ["rho", "eps", "hard", *[f"tau {t:g}" for t in TAUS], "best soft", "change"]
        rows = []
        for rho in rhos:
            cell = sub[sub["rho"] == rho].set_index("arm")["mean"]
            b = best[(best["dataset"] == dataset) & (best["rho"] == rho)]
            hard = cell.get("hard", math.nan)
            bb = float(b["best"].iloc[0]) if not b.empty else math.nan
            rows.append(
                [
                    sci(rho),
                    fmt(eps_of(rho), 4),
                    fmt(hard),
                    *[fmt(cell.get(f"{t:g}", math.nan)) for t in TAUS],
                    fmt(bb),
                    pct(bb / hard - 1 if hard else math.nan),
                ]
            )
        lines += [f"**{DATASET_NAMES.get(dataset, dataset)}**", "", *md_table(header, rows)]
        bsub = best[best["dataset"] == dataset].sort_values("rho")
        cross = analysis.crossover(bsub["rho"].tolist(), (bsub["best"] - bsub["hard"]).tolist())
        crossovers[dataset] = cross
        per_tau = []
        for t in TAUS:
            hard_s = sub[sub["arm"] == "hard"].set_index("rho")["mean"]
            tau_s = sub[sub["arm"] == f"{t:g}"].set_index("rho")["mean"]
            common = sorted(set(hard_s.index) & set(tau_s.index))
            c = analysis.crossover(common, [tau_s[r] - hard_s[r] for r in common])
            per_tau.append(f"{fmt(eps_of(c), 3)}" if c else "none")
        crossover_rows.append(
            [
                DATASET_NAMES.get(dataset, dataset),
                sci(cross) if cross else "none in grid",
                fmt(eps_of(cross), 3) if cross else "–",
                *per_tau,
            ]
        )
    lines += [
        "**Crossover** (where the best soft vote stops beating hard; linear in log rho "
        "between grid points; eps at delta = 1e-5):",
        "",
    ]
    lines += md_table(
        ["data set", "rho*", "eps*", *[f"eps* tau {t:g}" for t in TAUS]], crossover_rows
    )
    low = best[np.isclose(best["rho"], 1e-5) & best["dataset"].isin(["adult5", "bank5"])]
    if not low.empty:
        changes = ", ".join(
            f"{DATASET_NAMES[r['dataset']]} {pct(r['best'] / r['hard'] - 1)}"
            for _, r in low.iterrows()
        )
        ctx.notes.append(
            f"One decade below the published budget, at rho = 1e-5, the best soft vote "
            f"changes our mean error by {changes}: the size of the published changes at "
            "rho = 1e-4 (Adult -38.6%, Bank -25.2%). Soft votes win where noise dominates "
            "the vote counts, so this is what one would see if the published runs had "
            "about 10x more noise per count at the same nominal rho (fewer private "
            "records, a per-round rho, or another sensitivity); the studies do not say "
            "which, so we cannot tell."
        )
    fig = _figure_budget(ctx, means, best, base, crossovers)
    lines += [f"![error vs budget]({ctx.link(fig)})", ""]

    found = {k: v for k, v in crossovers.items() if not k.startswith("xor3-")}
    eps_found = {k: eps_of(v) for k, v in found.items() if v}
    lo, hi = PUBLISHED["crossover_eps"]
    if eps_found:
        inside = all(lo / 2 <= e <= hi * 2 for e in eps_found.values())
        ours = ", ".join(f"{DATASET_NAMES[k]} {v:.3f}" for k, v in eps_found.items())
        missing = [DATASET_NAMES[k] for k, v in found.items() if not v]
        if missing:
            ours += f"; no crossover in the grid for {', '.join(missing)}"
        ctx.claims.append(
            Claim(
                "BF-Soft crossover budget",
                f"eps about {lo} to {hi} (delta 1e-5)",
                ours,
                "reproduced" if inside and not missing else "not reproduced",
                "rule: every data set's crossover eps within a factor 2 of the published "
                "range (the quick grid has one budget per decade, so the interpolation "
                "is coarse)" + ("" if inside else "; ours falls outside it, see section 1"),
            )
        )
    else:
        ctx.claims.append(
            Claim(
                "BF-Soft crossover budget",
                f"eps about {lo} to {hi}",
                "no sign change in the grid",
                "not reproduced",
                "soft never (or always) beat hard over the budgets run",
            )
        )
    return lines


def _figure_budget(
    ctx: Context,
    means: pd.DataFrame,
    best: pd.DataFrame,
    base: pd.DataFrame,
    crossovers: dict[str, float | None],
) -> Path:
    plt = _plt()
    datasets = _ordered(means["dataset"].unique())
    fig, axes = plt.subplots(1, len(datasets), figsize=(5 * len(datasets), 4), squeeze=False)
    colors = {"hard": "black", "0.015": "tab:blue", "0.03": "tab:orange", "0.06": "tab:green"}
    for ax, dataset in zip(axes[0], datasets, strict=True):
        sub = means[means["dataset"] == dataset]
        for arm, group in sub.groupby("arm"):
            group = group.sort_values("rho")
            label = "hard" if arm == "hard" else f"soft tau={arm}"
            ax.plot(group["rho"], group["mean"], "o-", label=label, color=colors.get(arm))
        if not base.empty:
            bsub = base[base["dataset"] == dataset]
            for method, style in (("mst", "s--"), ("tabpe", "^:")):
                m = bsub[bsub["method"] == method].groupby("rho")["mean_error"].mean()
                if not m.empty:
                    ax.plot(m.index, m.values, style, color="grey", label=f"{method} (baseline)")
            for method, ls in (("nonprivate", "-."), ("uniform", "--")):
                m = bsub[bsub["method"] == method]["mean_error"]
                if not m.empty:
                    ax.axhline(m.mean(), ls=ls, color="silver", label=f"{method} (512 rows)")
        cross = crossovers.get(dataset)
        if cross:
            ax.axvline(
                cross, color="red", lw=0.8, ls=":", label=f"crossover eps={eps_of(cross):.2f}"
            )
        ax.set_xscale("log")
        ax.set_xlabel("rho (zCDP)")
        ax.set_ylabel("mean error (mean k-way TV, k=1..3)")
        ax.set_title(DATASET_NAMES.get(dataset, dataset))
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(ctx, fig, "bfsoft_budget.png")


def section_temperature(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_temperature")
    lines = ["## 2. BF-Soft: temperature sweeps", ""]
    if df.empty:
        return lines + _pending(ctx, "bfsoft_temperature")
    means = vote_means(df, ["dataset", "rho"])
    best = best_soft(means, ["dataset", "rho"])
    taus = sorted({float(a) for a in means["arm"] if a != "hard"})
    lines += [
        f"Mean error at each temperature, mean over {int(means['count'].min())} seeds; "
        "'best' is the lowest mean over the swept temperatures (chosen in hindsight on "
        "the private data, as the published 'best soft').",
        "",
    ]
    header = ["data set", "rho", "hard", *[f"{t:g}" for t in taus], "best (tau)", "change"]
    rows = []
    for _, b in best.sort_values(["dataset", "rho"]).iterrows():
        cell = means[(means["dataset"] == b["dataset"]) & (means["rho"] == b["rho"])]
        cell = cell.set_index("arm")["mean"]
        rows.append(
            [
                DATASET_NAMES.get(b["dataset"], b["dataset"]),
                sci(b["rho"]),
                fmt(b["hard"]),
                *[fmt(cell.get(f"{t:g}", math.nan)) for t in taus],
                f"{fmt(b['best'])} ({b['best_tau']})",
                pct(b["best"] / b["hard"] - 1),
            ]
        )
    lines += md_table(header, rows)
    fig = _figure_temperature(ctx, means)
    lines += [f"![temperature sweeps]({ctx.link(fig)})", ""]

    def find(dataset: str, rho: float) -> pd.Series | None:
        b = best[(best["dataset"] == dataset) & np.isclose(best["rho"], rho)]
        return None if b.empty else b.iloc[0]

    for dataset, name in (("adult5", "Adult"), ("bank5", "Bank")):
        key = "adult" if dataset == "adult5" else "bank"
        b = find(dataset, 1e-4)
        if b is not None:
            hard_pub, soft_pub = PUBLISHED[f"{key}_1e-4"]
            red_pub = 1 - soft_pub / hard_pub
            red = 1 - b["best"] / b["hard"]
            ctx.claims.append(
                Claim(
                    f"{name}: best mean error at rho = 1e-4, hard -> best soft",
                    f"{hard_pub} -> {soft_pub} ({pct(-red_pub)})",
                    f"{b['hard']:.3f} -> {b['best']:.3f} ({pct(-red)})",
                    _verdict_reduction(red, red_pub),
                    _why_reduction(red, red_pub)
                    + "; absolute levels differ: see 'Why our numbers differ'",
                )
            )
        b = find(dataset, 3e-3)
        if b is not None:
            red_pub = PUBLISHED[f"{key}_3e-3_reduction"]
            red = 1 - b["best"] / b["hard"]
            ctx.claims.append(
                Claim(
                    f"{name}: reduction at rho = 3e-3",
                    f"{pct(-red_pub)}",
                    f"{b['hard']:.3f} -> {b['best']:.3f} ({pct(-red)})",
                    _verdict_reduction(red, red_pub),
                    _why_reduction(red, red_pub),
                )
            )
    return lines


def _verdict_reduction(ours: float, published: float) -> str:
    return "reproduced" if 0.5 * published <= ours <= 1.5 * published else "not reproduced"


def _why_reduction(ours: float, published: float) -> str:
    rule = "rule: our relative reduction within ±50% of the published one"
    if 0.5 * published <= ours <= 1.5 * published:
        return rule
    if ours <= 0:
        return rule + "; soft did not beat hard here"
    return rule + ("; ours is smaller" if ours < published else "; ours is larger")


def _figure_temperature(ctx: Context, means: pd.DataFrame) -> Path:
    plt = _plt()
    keys = sorted({(d, r) for d, r in zip(means["dataset"], means["rho"], strict=True)})
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3.6), squeeze=False)
    for ax, (dataset, rho) in zip(axes[0], keys, strict=True):
        sub = means[(means["dataset"] == dataset) & (means["rho"] == rho)]
        soft = sub[sub["arm"] != "hard"].copy()
        soft["tau"] = soft["arm"].astype(float)
        soft = soft.sort_values("tau")
        ax.errorbar(soft["tau"], soft["mean"], yerr=soft["std"], fmt="o-", label="soft")
        hard = sub[sub["arm"] == "hard"]
        if not hard.empty:
            ax.axhline(float(hard["mean"].iloc[0]), color="black", ls="--", label="hard")
        ax.set_xscale("log")
        ax.set_xlabel("temperature tau")
        ax.set_ylabel("mean error")
        ax.set_title(f"{DATASET_NAMES.get(dataset, dataset)}, rho={rho:g}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(ctx, fig, "bfsoft_temperature.png")


def section_policy(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_policy")
    lines = ["## 3. BF-Soft: policy variants on Adult (paired, Holm)", ""]
    if df.empty:
        return lines + _pending(ctx, "bfsoft_policy")
    hard = df[df["vote"] == "hard"].set_index("seed")["mean_error"]
    rho = float(df["rho"].iloc[0])
    reach = _policy_reaches()
    tests = []
    for (name, tau), group in df[df["vote"] == "soft"].groupby(["policy", "tau"]):
        soft = group.set_index("seed")["mean_error"]
        seeds = sorted(set(soft.index) & set(hard.index))
        p = analysis.paired([hard[s] for s in seeds], [soft[s] for s in seeds])
        tests.append((name, float(tau), p))
    adjusted = analysis.holm([t[2].p_value for t in tests])
    lines += [
        f"rho = {rho:g} (eps = {eps_of(rho):.4f} at delta = 1e-5). Each policy at each "
        f"fixed temperature against the hard vote on the same {len(hard)} seeds (the "
        "hard vote's noise does not depend on the policy: its L2 sensitivity is sqrt 2 "
        "whenever any substitution is protected). 'paired change' = mean(soft - hard) "
        "/ mean(hard) with its 95% t-interval; p = two-sided paired t-test; Holm adjusts "
        "over all policy x temperature tests (15), which also covers picking the best "
        "temperature per policy afterwards. q = tanh(r / 2 tau) is the noise ratio.",
        "",
    ]
    header = [
        "policy",
        "reach r",
        "tau",
        "q",
        "hard",
        "soft",
        "paired change",
        "95% CI",
        "p",
        "p (Holm)",
    ]
    rows = []
    best_by_policy: dict[str, tuple[float, analysis.Paired, float]] = {}
    for (name, tau, p), p_holm in zip(tests, adjusted, strict=True):
        r = reach.get(name, math.nan)
        q = math.tanh(r / (2 * tau)) if math.isfinite(r) else math.nan
        lo, hi = p.relative_ci
        rows.append(
            [
                name,
                fmt(r, 4),
                f"{tau:g}",
                fmt(q, 3),
                fmt(p.mean_a),
                fmt(p.mean_b),
                pct(p.relative),
                f"[{pct(lo)}, {pct(hi)}]",
                _p(p.p_value),
                _p(p_holm),
            ]
        )
        if name not in best_by_policy or p.mean_b < best_by_policy[name][1].mean_b:
            best_by_policy[name] = (tau, p, p_holm)
    order = {n: i for i, n in enumerate(_policy_order())}
    rows.sort(key=lambda r: (order.get(r[0], 99), float(r[2])))
    lines += md_table(header, rows)
    fig = _figure_policy(ctx, tests)
    lines += [f"![policy variants]({ctx.link(fig)})", ""]
    floored = [n for n, r in reach.items() if r >= 0.2 - 1e-12]
    if floored:
        ctx.notes.append(
            "Policies that protect a flat categorical attribute ("
            + ", ".join(floored)
            + ") have the maximal reach 0.2 and q = tanh(0.1 / tau) near 1: the soft "
            "vote keeps its blur without a noise cut and loses to hard (spec §3 floors); "
            "with equal noise these policies give identical runs on the same seeds."
        )
    if "age" in best_by_policy:
        tau, p, p_holm = best_by_policy["age"]
        lo, hi = p.relative_ci
        published = PUBLISHED["age_policy"]
        inside = lo <= published <= hi
        ctx.claims.append(
            Claim(
                "Age-only policy, paired error change at rho = 1e-4",
                pct(published),
                f"{pct(p.relative)} at tau {tau:g}, 95% CI [{pct(lo)}, {pct(hi)}], "
                f"Holm p {_p(p_holm)} ({p.n} seeds)",
                "reproduced" if inside else "not reproduced",
                "rule: the published value inside our 95% CI (best of the three fixed "
                "temperatures)" + ("" if inside else "; see 'Why our numbers differ'"),
            )
        )
    return lines


def _p(p: float) -> str:
    if p is None or not math.isfinite(p):
        return "–"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def _policy_order() -> list[str]:
    return ["age", "hours-per-week", "age+workclass", "age+income", "all-five"]


def _policy_reaches() -> dict[str, float]:
    """Reach r of each Adult policy (Gower, weight 1/5 per column; spec §3)."""
    try:
        from dpevolve import datasets
        from dpevolve.pe.distance import make_distance
        from experiments import common

        schema = datasets.schema("adult5")
        distance = make_distance("gower", schema)
        return {
            name: float(common.policy("adult5", name).reach(distance))
            for name in common.POLICIES["adult5"]
        }
    except Exception:
        return {}


def _figure_policy(ctx: Context, tests: list[tuple[str, float, analysis.Paired]]) -> Path:
    plt = _plt()
    names = [n for n in _policy_order() if any(t[0] == n for t in tests)]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    width = 0.25
    for j, tau in enumerate(TAUS):
        xs, ys, errs = [], [], []
        for i, name in enumerate(names):
            for n, t, p in tests:
                if n == name and math.isclose(t, tau):
                    lo, hi = p.relative_ci
                    xs.append(i + (j - 1) * width)
                    ys.append(100 * p.relative)
                    errs.append(
                        [100 * (p.relative - lo), 100 * (hi - p.relative)]
                        if math.isfinite(lo)
                        else [0, 0]
                    )
        if xs:
            ax.bar(xs, ys, width, yerr=np.array(errs).T, capsize=2, label=f"tau={tau:g}")
    ax.axhline(100 * PUBLISHED["age_policy"], color="red", ls=":", label="published age-only")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, fontsize=8)
    ax.set_ylabel("paired change in mean error vs hard (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(ctx, fig, "bfsoft_policy.png")


def section_pilot(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_pilot")
    lines = ["## 4. Public pilot: sign forecasts and calibration cost", ""]
    if df.empty or "pilot_hard_error" not in df or "vote" not in df:
        return lines + _pending(ctx, "bfsoft_pilot")
    pilots = df[df["config_type"] == "PilotConfig"]
    fits = df[df["config_type"] == "FitConfig"]
    means = vote_means(fits, ["policy", "rho"])
    settings = []
    for _, pilot in pilots.iterrows():
        cell = means[(means["policy"] == pilot["policy"]) & (means["rho"] == pilot["rho"])]
        cell = cell.set_index("arm")["mean"]
        if "hard" not in cell:
            continue
        for tau in TAUS:
            key = f"pilot_soft_error@{tau:g}"
            if f"{tau:g}" not in cell or key not in pilot or pd.isna(pilot[key]):
                continue
            forecast = pilot[key] - pilot["pilot_hard_error"]
            truth = cell[f"{tau:g}"] - cell["hard"]
            settings.append(
                {
                    "policy": pilot["policy"],
                    "rho": pilot["rho"],
                    "tau": tau,
                    "forecast": forecast,
                    "truth": truth,
                    "agree": (forecast < 0) == (truth < 0),
                }
            )
    st = pd.DataFrame(settings)
    if st.empty:
        return lines + _pending(ctx, "bfsoft_pilot")
    k, n = int(st["agree"].sum()), len(st)
    lo, hi = analysis.wilson(k, n)
    pub_k, pub_n = PUBLISHED["pilot"]
    lines += [
        "A setting is (policy, rho, tau). The pilot runs the same preset on the public "
        "Adult test split (15,318 rows) at the private run's noise-to-signal ratio, "
        "spending no private budget, and forecasts the sign of (soft - hard); the truth "
        "is the sign of the mean private (soft - hard) over "
        f"{int(means['count'].min())} seeds.",
        "",
        f"**Sign-forecast accuracy: {k} of {n} settings ({100 * k / n:.1f}%, Wilson 95% CI "
        f"{100 * lo:.1f}-{100 * hi:.1f}%)**; published: {pub_k} of {pub_n} "
        f"({100 * pub_k / pub_n:.1f}%).",
        "",
    ]
    rows = [
        [
            r["policy"],
            sci(r["rho"]),
            f"{r['tau']:g}",
            f"{r['forecast']:+.3f}",
            f"{r['truth']:+.3f}",
            "yes" if r["agree"] else "**no**",
        ]
        for _, r in st.sort_values(["policy", "rho", "tau"]).iterrows()
    ]
    lines += md_table(
        ["policy", "rho", "tau", "pilot soft-hard", "private soft-hard", "sign agrees"], rows
    )
    inside = lo <= pub_k / pub_n <= hi
    ctx.claims.append(
        Claim(
            "Public pilot sign-forecast accuracy (Adult)",
            f"{pub_k}/{pub_n} ({100 * pub_k / pub_n:.1f}%)",
            f"{k}/{n} ({100 * k / n:.1f}%, 95% CI {100 * lo:.0f}-{100 * hi:.0f}%)",
            "reproduced" if inside else "not reproduced",
            "rule: the published rate inside our Wilson 95% interval"
            + ("" if n >= 100 else f"; the quick grid has only {n} settings (full: 210)"),
        )
    )
    lines += _calibration(ctx, pilots, fits, means)
    fig = _figure_pilot(ctx, st)
    lines += [f"![pilot forecasts]({ctx.link(fig)})", ""]
    return lines


def _calibration(
    ctx: Context, pilots: pd.DataFrame, fits: pd.DataFrame, means: pd.DataFrame
) -> list[str]:
    """Regret of the pilot's choice vs the best choice in hindsight, and its time."""
    rows, regrets = [], []
    for _, pilot in pilots.sort_values(["policy", "rho"]).iterrows():
        cell = means[(means["policy"] == pilot["policy"]) & (means["rho"] == pilot["rho"])]
        cell = cell.set_index("arm")["mean"]
        if cell.empty or "hard" not in cell:
            continue
        choice = f"{pilot['pilot_best_temperature']:g}" if pilot["pilot_soft_wins"] else "hard"
        if choice not in cell:
            continue
        oracle_arm = cell.idxmin()
        regret = cell[choice] - cell[oracle_arm]
        regrets.append(regret / cell[oracle_arm])
        rows.append(
            [
                pilot["policy"],
                sci(pilot["rho"]),
                choice,
                fmt(cell[choice]),
                oracle_arm,
                fmt(cell[oracle_arm]),
                pct(regret / cell[oracle_arm]),
                fmt(pilot["pilot_s"], 1),
            ]
        )
    fit_s = fits["fit_s"].mean() if "fit_s" in fits else math.nan
    pilot_s = pilots["pilot_s"].mean() if "pilot_s" in pilots else math.nan
    lines = [
        "**Cost of choosing the temperature.** Choosing the vote and temperature costs "
        "no private budget "
        "with the pilot; its costs are accuracy (the regret of the pilot's choice "
        "against the best arm in hindsight, which a private tuning would have to pay "
        "budget for) and time. Mean regret "
        f"{pct(float(np.mean(regrets)) if regrets else math.nan)}; the pilot took "
        f"{fmt(pilot_s, 1)} s on average (8 fits on the public table) against "
        f"{fmt(fit_s, 2)} s for one private fit (the first fit of a worker includes "
        "kernel compilation).",
        "",
    ]
    lines += md_table(
        [
            "policy",
            "rho",
            "pilot's choice",
            "its private error",
            "best arm",
            "best error",
            "regret",
            "pilot s",
        ],
        rows,
    )
    return lines


def _figure_pilot(ctx: Context, st: pd.DataFrame) -> Path:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5, 4))
    for agree, color in ((True, "tab:green"), (False, "tab:red")):
        s = st[st["agree"] == agree]
        ax.scatter(s["forecast"], s["truth"], c=color, label="agree" if agree else "disagree")
    ax.axhline(0, color="black", lw=0.6)
    ax.axvline(0, color="black", lw=0.6)
    ax.set_xlabel("pilot (public) soft - hard")
    ax.set_ylabel("private soft - hard")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(ctx, fig, "bfsoft_pilot.png")


def section_trainsize(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_trainsize")
    lines = ["## 5. BF-Soft: private training size (XOR-3)", ""]
    if df.empty:
        return lines + _pending(ctx, "bfsoft_trainsize")
    means = vote_means(df, ["dataset", "rho"])
    best = best_soft(means, ["dataset", "rho"])
    lines += [
        "Hard against the best fixed temperature; the noise per count is the same at "
        "every size, so more private records mean relatively less noise.",
        "",
    ]
    rows = []
    for _, b in best.sort_values(["dataset", "rho"]).iterrows():
        rows.append(
            [
                DATASET_NAMES.get(b["dataset"], b["dataset"]),
                sci(b["rho"]),
                fmt(b["hard"]),
                f"{fmt(b['best'])} ({b['best_tau']})",
                pct(b["best"] / b["hard"] - 1),
            ]
        )
    lines += md_table(["records", "rho", "hard", "best soft (tau)", "change"], rows)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for dataset, group in best.groupby("dataset"):
        group = group.sort_values("rho")
        ax.plot(
            group["rho"],
            100 * (group["best"] / group["hard"] - 1),
            "o-",
            label=DATASET_NAMES.get(dataset, dataset),
        )
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xscale("log")
    ax.set_xlabel("rho")
    ax.set_ylabel("best soft vs hard (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = _save(ctx, fig, "bfsoft_trainsize.png")
    return [*lines, f"![training size]({ctx.link(path)})", ""]


def section_baselines(ctx: Context) -> list[str]:
    df = ctx.table("baselines")
    lines = ["## 6. Baselines (same splits, same metrics)", ""]
    unavailable = ctx.unavailable("baselines")
    if df.empty and not unavailable:
        return lines + _pending(ctx, "baselines")
    lines += [
        "Same private training splits and the same mean error; TSTR (gradient boosting, "
        "predicting the label from the other four columns) on the held-out test split "
        "where there is one (Adult: test; XOR-3: 3,000 rows of seed 1; Bank has none). "
        "Releases: 512 rows (nonprivate, uniform, MST), the tabpe preset's N = 1000. "
        "Our bfsoft rows come from section 1 (hard / best fixed temperature at the same "
        "rho).",
        "",
    ]
    budget = ctx.table("bfsoft_budget")
    best = pd.DataFrame()
    if not budget.empty:
        best = best_soft(vote_means(budget, ["dataset", "rho"]), ["dataset", "rho"])
    rows = []
    if not df.empty:
        agg = (
            df.groupby(["dataset", "method", "rho"], dropna=False)
            .agg(
                error=("mean_error", "mean"),
                acc=("tstr_accuracy", "mean"),
                secs=("release_s", "mean"),
                seeds=("seed", "count"),
            )
            .reset_index()
        )
        for _, r in agg.sort_values(["dataset", "method", "rho"]).iterrows():
            rho = r["rho"]
            ours = ""
            if not best.empty and pd.notna(rho):
                b = best[(best["dataset"] == r["dataset"]) & np.isclose(best["rho"], rho)]
                if not b.empty:
                    ours = f"{fmt(b['hard'].iloc[0])} / {fmt(b['best'].iloc[0])}"
            rows.append(
                [
                    DATASET_NAMES.get(r["dataset"], r["dataset"]),
                    r["method"],
                    "–" if pd.isna(rho) else sci(rho),
                    fmt(r["error"]),
                    fmt(r["acc"]) if pd.notna(r["acc"]) else "–",
                    fmt(r["secs"], 1),
                    str(int(r["seeds"])),
                    ours or "–",
                ]
            )
    lines += md_table(
        [
            "data set",
            "method",
            "rho",
            "mean error",
            "TSTR acc",
            "release s",
            "seeds",
            "bfsoft hard / best soft",
        ],
        rows,
    )
    for method, reason in unavailable.items():
        lines += [f"* **{method}**: not available: {reason}"]
    if unavailable:
        lines.append("")
    return lines


def section_tv_m(ctx: Context) -> list[str]:
    df = ctx.table("pubmix_tv_m")
    lines = ["## 7. PubMix: TV against m (NIST tx2019 private, national2019 public)", ""]
    unavailable = ctx.unavailable("pubmix_tv_m")
    if df.empty:
        return lines + _pending(ctx, "pubmix_tv_m")
    lines += [
        "Six categorical columns (nist_subset, d = 14,742 cells), n = 9,276 private "
        "records, delta = 1e-5. 'sample' = TV between the m released samples and the "
        "private distribution; 'dist' = TV of the distribution sampled from. Mean over "
        f"{int(df.groupby(['mechanism', 'epsilon', 'm'])['seed'].count().min())} seeds.",
        "",
    ]
    agg = df.groupby(["epsilon", "m", "mechanism"])[["tv_sample", "tv_dist"]].mean()
    order = ("gaussian", "linmix", "pubmix", "pubmix-oracle-gamma")
    mechs = [m for m in order if m in df["mechanism"].unique()]
    header = ["eps", "m", *[f"{m} sample" for m in mechs], *[f"{m} dist" for m in mechs]]
    rows = []
    for (eps, m), _ in df.groupby(["epsilon", "m"]):
        rows.append(
            [f"{eps:g}", str(m)]
            + [fmt(agg["tv_sample"].get((eps, m, mech), math.nan)) for mech in mechs]
            + [fmt(agg["tv_dist"].get((eps, m, mech), math.nan)) for mech in mechs]
        )
    lines += md_table(header, rows)
    if "pubmix" in unavailable:
        lines += [f"* **PubMix**: pending: {unavailable['pubmix']}", ""]
    lines += _tv_m_notes(df)
    plt = _plt()
    epsilons = sorted(df["epsilon"].unique())
    fig, axes = plt.subplots(1, len(epsilons), figsize=(4.5 * len(epsilons), 3.8), squeeze=False)
    for ax, eps in zip(axes[0], epsilons, strict=True):
        for mech in mechs:
            s = agg.xs(eps, level="epsilon")["tv_sample"]
            s = s[s.index.get_level_values("mechanism") == mech].droplevel("mechanism")
            if not s.empty:
                ax.plot(s.index, s.values, "o-", label=mech)
        ax.set_xscale("log")
        ax.set_xlabel("m (released samples)")
        ax.set_ylabel("TV(sample, private)")
        ax.set_title(f"eps = {eps:g}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = _save(ctx, fig, "pubmix_tv_m.png")
    return [*lines, f"![TV vs m]({ctx.link(path)})", ""]


def _tv_m_notes(df: pd.DataFrame) -> list[str]:
    """Which mechanism wins where, and the gamma PubMix used."""
    out = []
    if "gamma" in df.columns:
        pm = df[df["mechanism"] == "pubmix"]
        if not pm.empty and pm["gamma"].notna().any():
            out.append(
                f"* PubMix's gamma from public folds is {pm['gamma'].dropna().iloc[0]:.3f}, "
                f"against a true TV(P_pub, P_prv) of "
                f"{pm['tv_public_private'].dropna().iloc[0]:.3f}: the folds measure the "
                "spread inside the public data, not the public-private shift (spec §5)."
            )
    if {"pubmix", "linmix"} <= set(df["mechanism"]):
        agg = df.groupby(["epsilon", "m", "mechanism"])["tv_sample"].mean().unstack()
        wins = int((agg["pubmix"] < agg["linmix"]).sum())
        out.append(
            f"* PubMix (fold gamma) has a lower sample TV than LinMix in {wins} of "
            f"{len(agg)} (eps, m) cells; the Gaussian histogram is best at large m "
            "where the mixtures need beta near 1."
        )
    return [*out, ""] if out else []


def _pubmix_why(df: pd.DataFrame, measured: dict[str, list[float]]) -> str:
    """Why Tab-PE + PubMix lands where it does: its per-round beta, public-only TSTR."""
    parts = []
    if "beta_mean" in df.columns:
        betas = df[df["method"] == "tabpe+pubmix"]["beta_mean"].dropna()
        if not betas.empty:
            parts.append(
                f"with the budget split over the 29 rounds the mean per-round beta is "
                f"{betas.mean():.3f}, so parents come almost only from the public votes"
            )
    public = df[df["method"] == "public_only"]["tstr_accuracy"].dropna()
    if not public.empty:
        parts.append(
            f"the release then tracks person B: public-only rows score {100 * public.mean():.2f}"
        )
    parts.append(
        "spec §5 predicts this regime (beta about 1 - 1/m inside PE); the published "
        "numbers likely use another accounting, schedule or gamma"
    )
    return "; ".join(parts)


def section_calibration(ctx: Context) -> list[str]:
    df = ctx.table("bfsoft_calibration")
    lines = ["## 4b. Calibration cost: the hard vote's exact per-round sensitivity", ""]
    if df.empty:
        return lines + _pending(ctx, "bfsoft_calibration")
    lines += [
        "Under a policy the hard vote's sensitivity is sqrt 2 only if some protected "
        'substitution can change an argmin; `calibration="exact"` searches the protected '
        "edges of the domain against each round's (public) population and releases a "
        "round for free when none can (spec §3). The soft vote needs no search: its bound "
        "is closed-form. Adult, hard vote, mean over seeds:",
        "",
    ]
    agg = (
        df.groupby(["policy", "rho", "calibration"])
        .agg(
            error=("mean_error", "mean"),
            fit=("fit_s", "min"),
            free=("rounds_free", "mean"),
            rounds=("rounds", "mean"),
            eps=("ledger_epsilon", "mean"),
        )
        .reset_index()
    )
    rows = [
        [
            r["policy"],
            sci(r["rho"]),
            r["calibration"],
            fmt(r["error"]),
            fmt(r["eps"], 4),
            f"{r['free']:.1f} / {r['rounds']:.0f}",
            fmt(r["fit"], 2),
        ]
        for _, r in agg.iterrows()
    ]
    lines += md_table(
        ["policy", "rho", "calibration", "mean error", "ledger eps", "free rounds", "fit s*"],
        rows,
    )
    lines += [
        "\\* fastest fit over the seeds (a worker's first fit includes compiling kernels).",
        "",
    ]
    exact = agg[agg["calibration"] == "exact"]
    bound = agg[agg["calibration"] == "bound"]
    if not exact.empty and not bound.empty:
        overhead = exact["fit"].mean() / bound["fit"].mean() - 1
        lines += [
            f"The exact search costs {pct(overhead)} fit time on average and found "
            f"{exact['free'].sum():.0f} free rounds in total: on Adult's 512-candidate "
            "populations some protected age (or hours) step always moves a nearest "
            "candidate, so exact calibration gives the same noise as the bound here.",
            "",
        ]
    return lines


def _aim_note(df: pd.DataFrame) -> list[str]:
    """What our AIM row is: the port's settings and its per-run wall time."""
    sub = df[df["method"] == "aim"]
    runs = []
    for _, row in sub.sort_values("epsilon").iterrows():
        extra = ""
        if "aim_rounds" in sub.columns and pd.notna(row.get("aim_rounds")):
            extra = (
                f", {int(row['aim_rounds'])} rounds, "
                f"{int(row.get('aim_sigma_halvings', 0))} sigma halvings"
                + (", stopped by the time cap" if bool(row.get("aim_capped")) else "")
            )
        runs.append(f"eps {float(row['epsilon']):g}: {float(row['release_s']):.0f} s{extra}")
    return [
        "* **aim** is *our port* (`experiments.mbi_baselines.aim`, written on mbi 2.0 after "
        "private-pgm's `mechanisms/aim.py`), not the authors' run: workload all 3-way "
        "marginals of (tag, x, y, z, activity) with x, y, z in the evaluation's 20 bins; "
        "replace-one adjacency (Gaussian noise sqrt 2 larger, exponential-mechanism "
        "sensitivity 2 x max weight); rho from (eps, delta) by the CKS conversion "
        "(private-pgm's `cdp_rho`); 16 x 5 planned rounds with budget annealing; "
        "80 MB model-size cap (never binding: the full joint is 2.7 MB); 250 warm-started "
        "mirror-descent steps per round, 1000 at the end; a 300 s wall-clock cap; "
        "n = 21,980 synthetic rows (the other rows release 1000); one seed.",
        "* AIM release time (2 workers on 2 cores, incl. jax compilation): "
        + "; ".join(runs)
        + ".",
        "",
    ]


def section_tstr(ctx: Context) -> list[str]:
    df = ctx.table("pubmix_tstr")
    lines = ["## 8. PubMix: TSTR accuracy on Person Activity", ""]
    unavailable = ctx.unavailable("pubmix_tstr")
    if df.empty and not unavailable:
        return lines + _pending(ctx, "pubmix_tstr")
    lines += [
        "Private: person A, 80% (stratified by activity, seed 0; 21,980 rows); test: "
        "A's other 20% (5,493 rows); public: person B (30,150 rows). TSTR accuracy (%) of "
        "gradient boosting predicting the activity (11 classes) from tag and x, y, z; "
        "delta = 1/(n ln n). Mean ± sd over seeds.",
        "",
    ]
    pub = PUBLISHED["tstr"]
    eps_list = [1.0, 2.0, 4.0]
    rows = []
    measured: dict[str, list[float]] = {}
    methods = [
        "aim",
        "tabpe",
        "tabpe+pubmix",
        "tabpe+pubmix-tight",
        "mbi_reweight",
        "nonprivate",
        "public_only",
        "uniform",
    ]
    for method in methods:
        sub = df[df["method"] == method] if not df.empty else df
        cells = []
        if not sub.empty and sub["epsilon"].notna().any():
            for eps in eps_list:
                acc = sub[np.isclose(sub["epsilon"].astype(float), eps)]["tstr_accuracy"]
                m, sd, n = analysis.mean_sd(100 * acc)
                measured.setdefault(method, []).append(m)
                cells.append(f"{m:.2f} ± {sd:.2f}" if n > 1 else fmt(m, 2))
        elif not sub.empty:
            m, sd, n = analysis.mean_sd(100 * sub["tstr_accuracy"])
            cells = [f"{m:.2f} ± {sd:.2f} (no budget)", "", ""]
        elif method in unavailable:
            cells = ["not available" if method != "tabpe+pubmix" else "pending"] * 3
        else:
            continue
        published = " / ".join(f"{v:.2f}" for v in pub[method]) if method in pub else "–"
        rows.append([method, *cells, published])
    lines += md_table(["method", "eps 1", "eps 2", "eps 4", "published (1 / 2 / 4)"], rows)
    if not df.empty and "beta_mean" in df.columns:
        for method in ("tabpe+pubmix", "tabpe+pubmix-tight"):
            b = df[df["method"] == method].groupby("epsilon")["beta_mean"].mean()
            if not b.empty:
                values = ", ".join(f"eps {e:g}: {v:.3f}" for e, v in b.items())
                lines += [f"* {method}: mean per-round PubMix beta {values}"]
        lines.append("")
    for method, reason in unavailable.items():
        lines += [f"* **{method}**: {reason}"]
    if unavailable:
        lines.append("")
    if "aim" in measured:
        lines += _aim_note(df)
    if "tabpe" in measured:
        ours = measured["tabpe"]
        diffs = [o - p for o, p in zip(ours, pub["tabpe"], strict=True)]
        ok = all(math.isfinite(d) and abs(d) <= 2.5 for d in diffs)
        ctx.claims.append(
            Claim(
                "Tab-PE TSTR on Person Activity, eps 1 / 2 / 4",
                " / ".join(f"{v:.2f}" for v in pub["tabpe"]),
                " / ".join(fmt(v, 2) for v in ours),
                "reproduced" if ok else "not reproduced",
                "rule: within 2.5 accuracy points at every eps"
                + ("" if ok else "; see 'Why our numbers differ'"),
            )
        )
    for method, label in (("tabpe+pubmix", "Tab-PE + PubMix"), ("aim", "AIM")):
        values = " / ".join(f"{v:.2f}" for v in pub[method])
        if method in measured:
            ours = measured[method]
            ok = all(abs(o - p) <= 2.5 for o, p in zip(ours, pub[method], strict=True))
            text = " / ".join(fmt(v, 2) for v in ours)
            why = "rule: within 2.5 accuracy points at every eps"
            if method == "aim":
                why += (
                    "; our port of AIM on mbi 2.0 (replace-one, 3-way workload, one seed; "
                    "see section 8)"
                )
                if not ok:
                    why += (
                        "; likely cause: one seed of a noisy mechanism, and our binning "
                        "(20 equal-width bins for x, y, z) and classifier differ from the "
                        "paper's integer-coded copy"
                    )
            if method == "tabpe+pubmix":
                if "tabpe+pubmix-tight" in measured:
                    tight = " / ".join(fmt(v, 2) for v in measured["tabpe+pubmix-tight"])
                    text += f" (tight accounting: {tight})"
                if not ok:
                    why += "; " + _pubmix_why(df, measured)
            ctx.claims.append(
                Claim(
                    f"{label} TSTR on Person Activity, eps 1 / 2 / 4",
                    values,
                    text,
                    "reproduced" if ok else "not reproduced",
                    why,
                )
            )
        else:
            ctx.claims.append(
                Claim(
                    f"{label} TSTR on Person Activity, eps 1 / 2 / 4",
                    values,
                    "–",
                    "pending" if method == "tabpe+pubmix" else "not applicable",
                    unavailable.get(method, "not run yet"),
                )
            )
    if not df.empty and df["epsilon"].notna().any():
        plt = _plt()
        fig, ax = plt.subplots(figsize=(7, 3.8))
        width = 0.2
        arms = ["tabpe", "tabpe+pubmix", "tabpe+pubmix-tight", "mbi_reweight"]
        for j, method in enumerate(arms):
            if method in measured:
                ax.bar(
                    np.arange(3) + (j - 1.5) * width,
                    measured[method],
                    width,
                    label=f"{method} (ours)",
                )
        for method, marker in (("aim", "v"), ("tabpe", "o"), ("tabpe+pubmix", "*")):
            ax.plot(
                np.arange(3),
                pub[method],
                marker,
                color="black",
                ls="none",
                label=f"{method} (published)",
            )
        ax.set_xticks(range(3))
        ax.set_xticklabels([f"eps={e:g}" for e in eps_list])
        ax.set_ylabel("TSTR accuracy (%)")
        ax.set_ylim(30, 80)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        path = _save(ctx, fig, "pubmix_tstr.png")
        lines += [f"![Person Activity TSTR]({ctx.link(path)})", ""]
    return lines


# ------------------------------------------------------------------ helpers
def _ordered(names: Any) -> list[str]:
    order = list(DATASET_NAMES)
    return sorted(names, key=lambda n: order.index(n) if n in order else 99)


def _pending(ctx: Context, study: str) -> list[str]:
    ctx.pending.append(study)
    return [f"*Pending: no results yet. Run `python -m experiments run {study} --quick`.*", ""]


def _save(ctx: Context, fig: Any, name: str) -> Path:
    ctx.figures.mkdir(parents=True, exist_ok=True)
    path = ctx.figures / name
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _provenance(ctx: Context, store: Store) -> list[str]:
    ok = [r for r in ctx.rows if r.get("status") == "ok"]
    commits = sorted({str(r.get("commit", "unknown"))[:12] for r in ok})
    profiles = sorted({str(r.get("profile")) for r in ok})
    dirty = any(r.get("dirty") for r in ok)
    by_study: dict[str, list[float]] = {}
    for r in ok:
        by_study.setdefault(r["study"], []).append(float(r.get("wall_s") or 0))
    lines = [
        "## Provenance",
        "",
        f"* Store: `{_rel(store.path)}`: {len(ctx.rows)} configurations "
        f"({len(ok)} ok), profile(s): {', '.join(profiles) or '–'}.",
        f"* Commit(s): {', '.join(commits) or '–'}"
        + (" (with uncommitted changes in the tree at run time)" if dirty else ""),
        "* Compute (sum of per-configuration wall times, 2 worker processes):",
        "",
    ]
    lines += md_table(
        ["study", "configurations", "CPU-seconds"],
        [[s, str(len(v)), f"{sum(v):.0f}"] for s, v in by_study.items()],
    )
    return lines


def _rel(path: Path) -> str:
    try:
        from experiments.runner import REPO_ROOT

        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


HEADER = """# RESULTS

Written by `python -m experiments report` from the study store; do not edit by hand.

* **Quick profile** (these numbers): `{quick}` (about 15-20 minutes on 2 cores).
* **Full profile**: `{full}` (more budgets, temperatures, seeds and policies; hours).

## The error measure

**Mean error** = the mean over k = 1, 2, 3 of the mean k-way marginal total variation
distance between the private training table and the synthetic release
(`dpevolve.pe.pilot.run.pilot_error`; spec §7): for every set S of k columns,
TV_S = 1/2 sum_cells |p_S - q_S| over the k-way contingency tables (numeric columns in
20 equal-width bins over the declared range), averaged over all k-sets, then over k.
It lies in [0, 1]; lower is better. Every BF-Soft number below is this measure on the
512-record release of the `bfsoft` preset (8 rounds, Gower distance), at the rho of
the run, delta = 1e-5.

"""


def _claims_table(ctx: Context) -> list[str]:
    lines = [
        "## Published claims",
        "",
        "Each claim, our measured value and the verdict: **reproduced**, **not "
        "reproduced** (with our value and the likely reason), **pending** (the "
        "mechanism is not in dpevolve yet) or **not applicable** (not run here). The "
        "rule behind each verdict is stated beside it.",
        "",
    ]
    rows = [[c.claim, c.published, c.ours, f"**{c.verdict}**", c.why] for c in ctx.claims]
    profiles = sorted({str(r.get("profile")) for r in ctx.rows if r.get("status") == "ok"})
    ours = f"ours ({', '.join(profiles)})" if profiles else "ours"
    return lines + md_table(["claim", "published", ours, "verdict", "rule / why"], rows)


WHY = """## Why our numbers differ from the published ones

* **Absolute error levels.** The published Adult/Bank errors at rho = 1e-4 (0.696 and
  0.976 for hard) are far above ours. Bank's 0.976 is close to the maximum of any
  TV-based mean, so the published measure is on another scale: it is likely a sum, an
  L1 (not halved) distance, or computed on more columns or finer numeric bins; our
  mean error is defined above and uses the spec's 20 bins. Only relative changes
  (soft against hard on the same seeds) are comparable, and those are what the claims
  table judges.
* **Policies.** The published studies' exact policies for the budget grids are not
  given; we protect age (threshold 7) on Adult and Bank and each feature (threshold 1.5)
  on XOR-3. Reaches (hence q = tanh(r / 2 tau)) drive every soft-vs-hard gap, so a
  different policy moves the crossover.
* **Seeds and grids.** The quick profile uses 2 seeds (5 in the policy study) and one
  budget per decade, so the crossover is interpolated across a whole decade and paired
  intervals are wide. The full profile (13 budgets, 5-20 seeds, 210 pilot settings)
  tightens them.
* **Pilot.** Our pilot uses the Adult test split as the public data; the published
  public source may differ. Its 210 settings are matched in the full profile (5
  policies x 14 budgets x 3 temperatures); the quick profile has 15.
* **Person Activity.** We use the UCI copy (tag, x, y, z, activity) with declared
  ranges (+-10 m, +-5 m) and dpevolve's gradient-boosting TSTR; Tab-PE's published
  numbers use its own integer-coded copy and classifier, and the private/test split is
  ours (80/20 stratified, seed 0).
* **AIM.** The mbi package ships the estimation library, not the mechanisms; MST and
  AIM are ported onto it (replace-one adjacency, no domain compression). AIM runs in
  the Person Activity TSTR study (settings in section 8) and, at one budget and one
  seed, in the baselines study (section 6), where it beats every PE configuration on
  the 5-column marginal error: marginal-based synthesizers fit exactly what this error
  measures.

"""


def write_report(store: Store, output: str | Path, figures: str | Path) -> Path:
    """Write RESULTS.md (and the PNG figures) from ``store``; returns the path."""
    output, figures = Path(output), Path(figures)
    from experiments.report_softvote import section_pays

    rows = analysis.latest_rows(store.rows())
    ctx = Context(rows, figures, output)
    sections: list[Callable[[Context], list[str]]] = [
        section_budget,
        section_temperature,
        section_pays,
        section_policy,
        section_pilot,
        section_calibration,
        section_trainsize,
        section_baselines,
        section_tv_m,
        section_tstr,
    ]
    body: list[str] = []
    for section in sections:
        try:
            body += section(ctx)
        except Exception as exc:  # a broken section must not hide the others
            body += [f"*Section {section.__name__} failed: {type(exc).__name__}: {exc}*", ""]
    text = [HEADER.format(quick=QUICK_COMMAND, full=FULL_COMMAND)]
    text += _claims_table(ctx)
    if ctx.pending:
        text += [
            "Pending studies (no rows in the store): " + ", ".join(ctx.pending) + ".",
            "",
        ]
    text += body
    text += [WHY]
    if ctx.notes:
        text += ["Measured hints (from this store):", "", *[f"* {n}" for n in ctx.notes], ""]
    text += _provenance(ctx, store)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(text).rstrip() + "\n", encoding="utf-8")
    return output
