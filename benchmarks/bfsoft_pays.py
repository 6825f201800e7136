"""Does BF-Soft pay? Hard vs soft configurations, and ``vote="auto"``, with paired seeds.

Part ``target`` (the 25% target): Adult-5 and Bank-5, policy age threshold 7, preset
``bfsoft`` (512 records, 8 rounds, Gower), rho = 1e-4, population drawn at random (as
in RESULTS.md). Arms: hard; soft tau=0.03 (plain Gower); soft at tau 0.03 and 0.06 with
the unprotected attributes sharpened x10; tau 0.03 x10 with 3 debias steps; tau 0.06
x30 with 20 debias steps. ``--arms JSON`` replaces them (hard is always kept).

Part ``auto``: Adult-5, Bank-5, XOR-3 over rho in 1e-5..1e-1, population seeded from
public data (what ``vote="auto"`` needs for its pilot anyway). Arms: hard, the default
soft arms of :func:`dpevolve.pe.pilot.choice.default_arms`, and ``auto``. Public data:
Adult's test split, XOR-3's test split; Bank has none, so a fixed 20% of bank-full is
held out as public and the other 80% is the private table.

Error: mean over k = 1, 2, 3 of the mean k-way marginal TV against the private table.
Per arm: mean, paired difference against hard with a 95% t-interval, relative change.

    python benchmarks/bfsoft_pays.py [--part target|auto|both] [--seeds 5] [--arms JSON]

Writes benchmarks/results/bfsoft_pays[_TAG].json and .png. Votes run on the auto backend
(fused numba kernels when installed). In part ``auto`` the pilot of ``vote="auto"`` runs
per seed and its private run is the chosen arm's fit of that seed (the same run).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from dpevolve.pe.specs import VoteSpec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DELTA = 1e-5
TARGET_RHO = 1e-4
AUTO_RHOS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1)
POLICIES = {
    "adult5": {"attributes": {"age": {"threshold": 7}}},
    "bank5": {"attributes": {"age": {"threshold": 7}}},
    "xor3": {"attributes": {f"num_feat_{i}": {"threshold": 1.5} for i in range(3)}},
}
# name -> Synthesizer keyword arguments
TARGET_ARMS: dict[str, dict[str, Any]] = {
    "hard": {"vote": "hard"},
    "soft0.03": {
        "vote": VoteSpec(kind="soft", temperature=0.03),
    },
    "soft0.03 sharpen10": {
        "vote": VoteSpec(kind="soft", temperature=0.03, sharpen=10.0),
    },
    "soft0.06 sharpen10": {
        "vote": VoteSpec(kind="soft", temperature=0.06, sharpen=10.0),
    },
    "soft0.03 sharpen10 debias3": {
        "vote": VoteSpec(kind="soft", temperature=0.03, sharpen=10.0, debias=3),
    },
    "soft0.06 sharpen30 debias20": {
        "vote": VoteSpec(kind="soft", temperature=0.06, sharpen=30.0, debias=20),
    },
}


@functools.lru_cache(maxsize=8)
def tables(dataset: str) -> tuple[Any, Any, Any]:
    """(private frame, public frame or None, schema)."""
    from dpevolve import datasets

    os.environ.setdefault("DPEVOLVE_DATA", "/work/shared/data")
    if dataset == "adult5":
        train = datasets.load("adult", columns="adult5")
        test = datasets.load("adult", columns="adult5", split="test")
        return train.frame, test.frame, train.schema
    if dataset == "bank5":
        full = datasets.load("bank", split="full", columns="bank5")
        order = np.random.default_rng(2024).permutation(len(full.frame))
        cut = len(order) // 5
        frame = full.frame.reset_index(drop=True)
        return frame.iloc[order[cut:]], frame.iloc[order[:cut]], full.schema
    if dataset == "xor3":
        train = datasets.load("xor3", split="train")
        test = datasets.load("xor3", split="test")
        return train.frame, test.frame, train.schema
    raise KeyError(dataset)


def fit_error(dataset: str, rho: float, arm: dict[str, Any], seed: int, public: bool) -> float:
    from dpevolve import Synthesizer
    from dpevolve.backends import make_backend
    from dpevolve.pe.pilot.run import pilot_error
    from dpevolve.pe.policy.blowfish import Policy
    from dpevolve.presets import get_method

    private, public_frame, schema = tables(dataset)
    model = Synthesizer(
        schema,
        rho=rho,
        delta=DELTA,
        method=get_method("bfsoft", **arm),
        policy=Policy.from_dict(POLICIES[dataset], schema),
        public=public_frame if public else None,
        random_state=seed,
        backend=make_backend("auto"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(private)
    choice = model.ledger_.to_dict().get("vote_choice")
    if choice is not None:
        fit_error.last_choice = choice["chosen"]  # type: ignore[attr-defined]
    return float(pilot_error(private, model.synthetic_, schema))


def auto_choice(dataset: str, rho: float) -> Any:
    """The arm the public pilot of ``vote="auto"`` picks (no private data read)."""
    from dpevolve.backends import make_backend
    from dpevolve.pe.pilot.choice import choose_vote
    from dpevolve.pe.policy.blowfish import Policy
    from dpevolve.presets import get_preset
    from dpevolve.privacy import Budget, calibrate_gaussian
    from dpevolve.synthesizer import Synthesizer

    private, public_frame, schema = tables(dataset)
    policy = Policy.from_dict(POLICIES[dataset], schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        choice = choose_vote(
            schema,
            public_frame,
            len(private),
            calibrate_gaussian(get_preset("bfsoft").schedule.rounds, Budget(rho=rho, delta=DELTA)),
            fit=Synthesizer.pilot_fit(
                schema, "bfsoft", policy=policy, backend=make_backend("auto")
            ),
            rounds=get_preset("bfsoft").schedule.rounds,
            policy=policy,
        )
    return choice.chosen


def t_interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values)
    half /= math.sqrt(len(values))
    return mean, mean - half, mean + half


def paired(errors: dict[str, list[float]]) -> dict[str, Any]:
    hard = errors["hard"]
    out: dict[str, Any] = {}
    for name, values in errors.items():
        mean, lo, hi = t_interval(values)
        row: dict[str, Any] = {"mean": mean, "ci95": [lo, hi], "errors": values}
        if name != "hard":
            d, dlo, dhi = t_interval([a - b for a, b in zip(values, hard, strict=True)])
            base = statistics.fmean(hard)
            row.update(
                paired_diff=d,
                paired_ci95=[dlo, dhi],
                relative_change=d / base,
                relative_ci95=[dlo / base, dhi / base],
                excludes_zero=bool(dhi < 0 or dlo > 0),
            )
        out[name] = row
    return out


def part_target(
    seeds: int, arms: dict[str, dict[str, Any]], datasets: tuple[str, ...] = ("adult5", "bank5")
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dataset in datasets:
        errors = {
            name: [fit_error(dataset, TARGET_RHO, arm, s, public=False) for s in range(seeds)]
            for name, arm in arms.items()
        }
        out[dataset] = paired(errors)
        for name, row in out[dataset].items():
            extra = ""
            if name != "hard":
                lo, hi = row["relative_ci95"]
                extra = f"  rel {row['relative_change']:+.1%} [{lo:+.1%}, {hi:+.1%}]"
            print(f"{dataset} rho=1e-4 {name:28s} {row['mean']:.4f}{extra}", flush=True)
    return out


def part_auto(
    seeds: int,
    rhos: tuple[float, ...],
    datasets: tuple[str, ...],
    out: dict[str, Any],
    on_row: Any = None,
) -> dict[str, Any]:
    """Fill ``out`` (dataset -> rho -> row) and call ``on_row()`` after every row."""
    from dpevolve.pe.pilot.choice import default_arms
    from dpevolve.pe.policy.blowfish import Policy

    for dataset in datasets:
        schema = tables(dataset)[2]
        arms = {
            a.label: {k: v for k, v in a.options().items() if v is not None}
            for a in default_arms(Policy.from_dict(POLICIES[dataset], schema), "gower")
        }
        out[dataset] = {}
        for rho in rhos:
            errors = {
                name: [fit_error(dataset, rho, arm, s, True) for s in range(seeds)]
                for name, arm in arms.items()
            }
            choices = []
            errors["auto"] = []
            for s in range(seeds):
                # The private run of vote="auto" is the chosen arm's run: its error is that
                # arm's error at this seed (fresh noise either way), so only the pilot runs.
                arm = auto_choice(dataset, rho)
                errors["auto"].append(errors[arm.label][s])
                choices.append(arm.options())
            means = {k: statistics.fmean(v) for k, v in errors.items()}
            best_soft = min(v for k, v in means.items() if k.startswith("soft"))
            better = min(means["hard"], best_soft)
            row = {
                "rho": rho,
                "means": means,
                "errors": errors,
                "auto_choices": choices,
                "best_fixed": better,
                "auto_over_best": means["auto"] / better - 1.0,
                "within_5pct": means["auto"] <= 1.05 * better,
            }
            out[dataset][f"{rho:g}"] = row
            if on_row is not None:
                on_row()
            print(
                f"{dataset} rho={rho:g} hard {means['hard']:.4f} best soft {best_soft:.4f} "
                f"auto {means['auto']:.4f} ({row['auto_over_best']:+.1%} vs better) "
                f"choices {[_short(c) for c in choices]}",
                flush=True,
            )
    return out


def _short(choice: dict[str, Any]) -> str:
    """``hard`` or ``soft0.03`` (+ ``d3`` when debiased)."""
    text = choice["vote"] + str(choice["temperature"] or "")
    return text + (f"d{choice['debias']}" if choice["debias"] else "")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    target, auto = result.get("target"), result.get("auto")
    panels = (1 if target else 0) + (len(auto) if auto else 0)
    fig, axes = plt.subplots(1, max(panels, 1), figsize=(5 * max(panels, 1), 4), squeeze=False)
    i = 0
    if target:
        ax = axes[0][i]
        i += 1
        names = [n for n in next(iter(target.values())) if n != "hard"]
        for j, dataset in enumerate(target):
            rel = [100 * target[dataset][n]["relative_change"] for n in names]
            lo = [100 * target[dataset][n]["relative_ci95"][0] for n in names]
            hi = [100 * target[dataset][n]["relative_ci95"][1] for n in names]
            x = np.arange(len(names)) + 0.2 * j
            err = [np.subtract(rel, lo), np.subtract(hi, rel)]
            ax.errorbar(x, rel, yerr=err, fmt="o", capsize=3, label=dataset)
        ax.axhline(0, color="grey", lw=0.8)
        ax.axhline(-25, color="red", ls="--", lw=0.8, label="target -25%")
        ax.set_xticks(np.arange(len(names)), names, rotation=25, ha="right", fontsize=7)
        ax.set_ylabel("paired change vs hard (%), 95% CI")
        ax.set_title("rho = 1e-4, random init")
        ax.legend(fontsize=7)
    for dataset, rows in (auto or {}).items():
        ax = axes[0][i]
        i += 1
        rhos = [r["rho"] for r in rows.values()]
        for name in next(iter(rows.values()))["means"]:
            ax.plot(rhos, [r["means"][name] for r in rows.values()], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xlabel("rho")
        ax.set_ylabel("mean 1/2/3-way TV")
        ax.set_title(f"{dataset}: vote auto (public init)")
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("target", "auto", "both"), default="both")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--auto-seeds", type=int, default=2)
    parser.add_argument("--rhos", type=float, nargs="*", default=list(AUTO_RHOS))
    parser.add_argument("--datasets", nargs="*", default=["adult5", "bank5", "xor3"])
    parser.add_argument("--tag", default="")
    parser.add_argument(
        "--arms", default=None, help="target arms as JSON {name: Synthesizer options}"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "bfsoft_pays" + (f"_{args.tag}" if args.tag else "")
    result: dict[str, Any] = {
        "setup": {
            "preset": "bfsoft (512 records, 8 rounds, Gower)",
            "delta": DELTA,
            "policies": POLICIES,
            "error": "mean over k=1,2,3 of mean k-way marginal TV vs the private table",
            "argv": sys.argv[1:],
        }
    }
    if args.part in ("target", "both"):
        arms = TARGET_ARMS if args.arms is None else {"hard": {"vote": "hard"}}
        arms.update(json.loads(args.arms or "{}"))
        chosen = tuple(d for d in args.datasets if d != "xor3")
        result["target"] = part_target(args.seeds, arms, chosen)
    if args.part in ("auto", "both"):
        result["auto"] = {}

        def save() -> None:  # after every row: a partial grid survives an interrupted run
            (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=2, default=float))

        part_auto(args.auto_seeds, tuple(args.rhos), tuple(args.datasets), result["auto"], save)
    result["wall_seconds"] = time.perf_counter() - started
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=2, default=float))
    plot(result, RESULTS / f"{stem}.png")
    print(f"wrote {RESULTS / stem}.json/.png in {result['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main()
