"""Hard vs soft votes (BF-Soft) on Adult-5: paired errors, pilot forecasts, calibration cost.

Private table: UCI Adult train split; public table: the UCI test split (it seeds the
population and is the only thing the pilot sees). Schema ``adult5`` (age, workclass,
sex, hours-per-week, income; weight 1/5 each), policy: age threshold theta = 7
(reach 7/365), preset ``bfsoft`` (512 records, 8 rounds, Gower), delta = 1e-5.

1. Hard vs soft at tau in {0.015, 0.03, 0.06}, at a strong budget (rho = 1e-4) and a
   weak one (rho = 3e-3), with paired seeds (the same seed for every method). Error =
   ``pilot_error(train, synthetic)``: mean over k = 1, 2, 3 of the mean k-way marginal TV
   (spec §7). Per setting: mean error, mean paired difference soft - hard with a 95%
   t-interval, and relative change.
2. The public pilot's forecast (``run_pilot``, public_init=True, as ``temperature="auto"``
   runs it) against the measured outcome: overall sign (does the best soft beat hard?),
   best temperature, and the per-temperature signs.
3. Calibration cost on one released population (512 records): the closed-form soft
   bound vs exact hard and exact soft searches over the full Adult-5 domain
   (74 x 8 x 2 x 99 x 2 = 234,432 records).
Plus diagnostics: sigma, q and the signal-to-noise of the noiseless vote histograms.

    python benchmarks/bfsoft.py [--seeds 5] [--pilot-reps 3] [--quick] [--workers 2]

Writes benchmarks/results/bfsoft.json and benchmarks/results/bfsoft.png
(``--tag X`` writes bfsoft_X.json / bfsoft_X.png instead).

Note on numba: FusedBackend's soft kernels (parallel=True, cache=True) segfault when
loaded from numba's on-disk cache in this environment (numba 0.68); so every process
here compiles into its own fresh, temporary NUMBA_CACHE_DIR (~15 s per process).
"""

from __future__ import annotations

import os
import shutil
import tempfile

# Before anything imports numba (also in spawned workers, which re-import this module).
os.environ.setdefault("NUMBA_NUM_THREADS", "1")
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
if __name__ in ("__main__", "__mp_main__"):  # the script or a spawned worker, not an import
    if "BFSOFT_NUMBA_ROOT" not in os.environ:
        os.environ["BFSOFT_NUMBA_ROOT"] = tempfile.mkdtemp(prefix="bfsoft_numba_")
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(dir=os.environ["BFSOFT_NUMBA_ROOT"])

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing as mp  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from dpevolve.pe.specs import VoteSpec  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TAUS = (0.015, 0.03, 0.06)
BUDGETS = {"strong": 1e-4, "weak": 3e-3}
# Diagnostics only: a budget so large the noise vanishes (the vote's own bias), and one
# so small that selection is pure noise (what mutation and resampling alone do).
DIAGNOSTIC_BUDGETS = {"noiseless": 1e3, "pure_noise": 1e-10}
ALL_BUDGETS = {**BUDGETS, **DIAGNOSTIC_BUDGETS}
DELTA = 1e-5
POLICY = {"attributes": {"age": {"threshold": 7}}}
METHODS = ("hard", *(f"soft{t}" for t in TAUS))
# The BF-Soft study's published Adult numbers (their error measure may differ from ours).
PUBLISHED = {
    "strong": {
        "rho": 1e-4,
        "hard": 0.696,
        "best_soft": 0.427,
        "relative_change": 0.427 / 0.696 - 1.0,
    },
    "weak": {"rho": 3e-3, "relative_change": -0.099},
}

_STATE: dict[str, Any] = {}


# ----------------------------------------------------------------- shared setup
def _setup(backend: str = "fused") -> dict[str, Any]:
    """Data, schema, policy and backend, once per process."""
    if _STATE:
        return _STATE
    from dpevolve import datasets
    from dpevolve.pe.distance import make_distance
    from dpevolve.pe.policy.blowfish import Policy

    os.environ.setdefault("DPEVOLVE_DATA", "/work/shared/data")
    train = datasets.load("adult", columns="adult5")
    test = datasets.load("adult", columns="adult5", split="test")
    schema = train.schema
    be: Any = None
    if backend == "fused":
        try:
            from dpevolve.backends.fused import FusedBackend, fused_available

            if fused_available():
                be = FusedBackend()
        except ImportError:
            be = None
    if be is None:
        from dpevolve.backends import LocalBackend

        be = LocalBackend()
    _STATE.update(
        train=train.frame,
        test=test.frame,
        schema=schema,
        policy=Policy.from_dict(POLICY, schema),
        distance=make_distance("gower", schema),
        backend=be,
        backend_name=type(be).__name__,
    )
    return _STATE


def _public_init() -> bool:
    """Whether private runs seed their population from the public split (``--init``)."""
    return os.environ.get("BFSOFT_INIT", "public") == "public"


def _fit(rho: float, method: str, seed: int) -> Any:
    from dpevolve import Synthesizer
    from dpevolve.presets import get_method

    s = _STATE
    vote, tau = ("hard", None) if method == "hard" else ("soft", float(method[4:]))
    return Synthesizer(
        s["schema"],
        rho=rho,
        delta=DELTA,
        method=get_method("bfsoft", vote=VoteSpec(kind=vote, temperature=tau)),
        policy=s["policy"],
        public=s["test"] if _public_init() else None,
        random_state=seed,
        backend=s["backend"],
    ).fit(s["train"])


# ------------------------------------------------------------------------ tasks
def task_fit(args: tuple[str, str, int, str]) -> dict[str, Any]:
    budget, method, seed, backend = args
    _setup(backend)
    from dpevolve.pe.pilot.run import pilot_error

    start = time.perf_counter()
    model = _fit(ALL_BUDGETS[budget], method, seed)
    seconds = time.perf_counter() - start
    error = pilot_error(_STATE["train"], model.synthetic_, _STATE["schema"])
    meta = model.ledger_.to_dict()
    return {
        "budget": budget,
        "method": method,
        "seed": seed,
        "error": error,
        "seconds": seconds,
        "epsilon": model.ledger_.result().epsilon,
        "backend": _STATE["backend_name"],
        "sigma": meta.get("sigma"),
        "l2_sensitivity": meta.get("l2_sensitivity"),
        "kept_final": model.history_[-1].get("kept_candidates"),
        "kept_per_round": [h.get("kept_candidates") for h in model.history_],
    }


def task_pilot(args: tuple[str, int, tuple[int, ...], str]) -> dict[str, Any]:
    budget, rep, seeds, backend = args
    s = _setup(backend)
    from dpevolve.pe.pilot.run import run_pilot
    from dpevolve.presets import get_preset
    from dpevolve.privacy import Budget, calibrate_gaussian
    from dpevolve.synthesizer import Synthesizer

    start = time.perf_counter()
    result = run_pilot(
        s["schema"],
        s["test"],
        len(s["train"]),
        calibrate_gaussian(
            get_preset("bfsoft").schedule.rounds,
            Budget.from_args(rho=BUDGETS[budget], delta=DELTA),
        ),
        temperatures=TAUS,
        seeds=seeds,
        public_init=_public_init(),
        fit=Synthesizer.pilot_fit(s["schema"], "bfsoft", policy=s["policy"], backend=s["backend"]),
        rounds=get_preset("bfsoft").schedule.rounds,
    )
    out = result.to_dict()
    out.update(budget=budget, rep=rep, seconds=time.perf_counter() - start)
    return out


def _time_call(fn: Any, repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def task_calibration(args: tuple[int, str]) -> dict[str, Any]:
    """Closed-form vs exact calibration on the final population of one hard run."""
    seed, backend = args
    s = _setup(backend)
    from dpevolve.pe.policy.sensitivity import (
        exact_hard_sensitivity,
        exact_soft_sensitivity,
        numeric_grid,
        per_round_hard_sensitivity,
        soft_bound,
    )

    policy, distance = s["policy"], s["distance"]
    model = _fit(BUDGETS["strong"], "hard", seed)
    population = model.population_
    layout = distance.layout
    domain = math.prod(
        [len(numeric_grid(c, None)) for c in layout.numeric]
        + [len(c.values) for c in layout.categorical]
    )
    reach = policy.reach(distance)
    # Closed form = the policy's reach (computed from the schema) + one tanh.
    closed_full = _time_call(lambda: soft_bound(policy.reach(distance), 0.03), 2000)
    closed_tanh = _time_call(lambda: soft_bound(reach, 0.03), 20000)
    hard = exact_hard_sensitivity(policy, distance, population)
    start = time.perf_counter()
    hard_value = per_round_hard_sensitivity(policy, distance, population)
    per_round_seconds = time.perf_counter() - start
    soft = {}
    for tau in TAUS:
        r = exact_soft_sensitivity(policy, distance, population, tau)
        bound = soft_bound(reach, tau)
        soft[str(tau)] = {
            "value": r.value,
            "bound": bound,
            "exact_over_bound": r.value / bound,
            "edges_checked": r.edges_checked,
            "seconds": r.seconds,
            "attribute": r.attribute,
        }
    # The same search on the initial population (a public sample): the value moves.
    import numpy as np

    from dpevolve.data.encoding import Layout, encode
    from dpevolve.pe.variation import Variation

    rng = np.random.default_rng(seed)
    initial = Variation(Layout.of(s["schema"])).from_public(
        encode(s["test"], s["schema"]), 512, rng
    )
    init_soft = exact_soft_sensitivity(policy, distance, initial, 0.03)
    t03 = soft["0.03"]
    return {
        "population": f"final population of the hard run, rho=1e-4, seed {seed} (512 records)",
        "domain_records": domain,
        "domain_searched": "full product domain (no sampling)",
        "reach": reach,
        "closed_form": {
            "seconds_reach_plus_tanh": closed_full,
            "seconds_tanh_only": closed_tanh,
            "value_tau0.03": soft_bound(reach, 0.03),
            "edges_checked": 0,
        },
        "exact_hard": {
            "value": hard.value,
            "edges_checked": hard.edges_checked,
            "seconds": hard.seconds,
            "attribute": hard.attribute,
            "stopped_early": hard.value >= math.sqrt(2) - 1e-12,
            "per_round_hard_sensitivity_seconds": per_round_seconds,
            "per_round_value": hard_value,
        },
        "exact_soft": soft,
        "exact_soft_initial_population_tau0.03": {
            "value": init_soft.value,
            "exact_over_bound": init_soft.value / soft_bound(reach, 0.03),
            "seconds": init_soft.seconds,
            "edges_checked": init_soft.edges_checked,
        },
        "ratios_vs_closed_form": {
            "exact_hard_seconds / closed_form_seconds": hard.seconds / closed_full,
            "exact_soft_tau0.03_seconds / closed_form_seconds": t03["seconds"] / closed_full,
            "exact_soft_tau0.03_seconds / exact_hard_seconds": t03["seconds"] / hard.seconds,
            "per_run_exact_soft_seconds (x8 rounds)": 8 * t03["seconds"],
            "per_run_exact_hard_seconds (x8 rounds)": 8 * hard.seconds,
        },
    }


def task_snr(args: tuple[int, str]) -> dict[str, Any]:
    """Noiseless vote histograms on the initial (public) population vs each method's sigma."""
    seed, backend = args
    s = _setup(backend)
    import numpy as np

    from dpevolve.data.encoding import Layout, encode
    from dpevolve.pe.variation import Variation
    from dpevolve.pe.votes import make_vote
    from dpevolve.privacy import Budget, calibrate_gaussian

    rng = np.random.default_rng(seed)
    population = Variation(Layout.of(s["schema"])).from_public(
        encode(s["test"], s["schema"]), 512, rng
    )
    private = encode(s["train"], s["schema"])
    reach = s["policy"].reach(s["distance"])
    out: dict[str, Any] = {"n_private": len(private), "mean_count": len(private) / 512}
    from dpevolve.data.encoding import decode
    from dpevolve.pe.pilot.run import pilot_error

    variation = Variation(Layout.of(s["schema"]))
    out["baseline_errors"] = {
        "initial_public_population_512": pilot_error(
            s["train"], decode(population, s["schema"]), s["schema"]
        ),
        "uniform_random_512": pilot_error(
            s["train"], decode(variation.random(512, rng), s["schema"]), s["schema"]
        ),
        "train_sample_512": pilot_error(
            s["train"], s["train"].sample(n=512, random_state=seed), s["schema"]
        ),
        "whole_public_test_split": pilot_error(s["train"], s["test"], s["schema"]),
    }
    for method in METHODS:
        vote = make_vote("hard") if method == "hard" else make_vote("soft", float(method[4:]))
        h = s["backend"].vote(private, population, s["distance"], vote)
        sens = vote.l2_sensitivity(reach)
        row = {
            "l2_sensitivity": sens,
            "q": sens / math.sqrt(2),
            "hist_std": float(h.std()),
            "hist_max": float(h.max()),
            "hist_nonzero": int(np.count_nonzero(h > 0.5)),
            # top-decile mass share: how peaked the signal is
            "top10pct_share": float(np.sort(h)[-51:].sum() / h.sum()),
        }
        for name, rho in BUDGETS.items():
            sigma = calibrate_gaussian(8, Budget.from_args(rho=rho, delta=DELTA)) * sens
            row[f"sigma_{name}"] = sigma
            row[f"snr_{name}"] = float(h.std()) / sigma
        out[method] = row
    return out


def run_task(job: tuple[str, Any]) -> tuple[str, Any]:
    kind, args = job
    fn = {"fit": task_fit, "pilot": task_pilot, "calibration": task_calibration, "snr": task_snr}[
        kind
    ]
    return kind, fn(args)


# --------------------------------------------------------------------- analysis
def _ci(values: list[float]) -> tuple[float, float]:
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, float("nan")
    half = float(
        stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    )
    return mean, half


def analyse(fits: list[dict[str, Any]], pilots: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for budget in BUDGETS:
        rows = {
            m: {r["seed"]: r for r in fits if r["budget"] == budget and r["method"] == m}
            for m in METHODS
        }
        seeds = sorted(rows["hard"])
        errors = {m: [rows[m][s]["error"] for s in seeds] for m in METHODS}
        summary: dict[str, Any] = {
            "rho": BUDGETS[budget],
            "epsilon": rows["hard"][seeds[0]]["epsilon"],
            "seeds": seeds,
            "methods": {},
        }
        hard_mean = statistics.fmean(errors["hard"])
        for m in METHODS:
            mean, half = _ci(errors[m])
            entry: dict[str, Any] = {
                "mean_error": mean,
                "ci95_half": half,
                "errors": errors[m],
                "sigma": rows[m][seeds[0]]["sigma"],
                "mean_kept_final": statistics.fmean(rows[m][s]["kept_final"] for s in seeds),
                "mean_fit_seconds": statistics.fmean(rows[m][s]["seconds"] for s in seeds),
            }
            if m != "hard":
                diffs = [a - b for a, b in zip(errors[m], errors["hard"], strict=True)]
                d, dh = _ci(diffs)
                entry.update(
                    paired_diff=d,
                    paired_ci95=[d - dh, d + dh],
                    relative_change=d / hard_mean,
                    soft_better_seeds=sum(x < 0 for x in diffs),
                    significant=bool(not math.isnan(dh) and abs(d) > dh),
                )
            summary["methods"][m] = entry
        soft_means = {t: summary["methods"][f"soft{t}"]["mean_error"] for t in TAUS}
        best = min(soft_means, key=lambda t: soft_means[t])
        summary["measured"] = {
            "best_temperature": best,
            "soft_wins": soft_means[best] < hard_mean,
            "best_relative_change": soft_means[best] / hard_mean - 1.0,
            "signs": {str(t): soft_means[t] < hard_mean for t in TAUS},
        }
        # pilots
        reps = [p for p in pilots if p["budget"] == budget]
        comparisons = []
        for p in reps:
            signs = {str(t): p["soft_errors"][str(t)] < p["hard_error"] for t in TAUS}
            comparisons.append(
                {
                    "rep": p["rep"],
                    "seeds": p["seeds"],
                    "hard_error": p["hard_error"],
                    "soft_errors": p["soft_errors"],
                    "forecast_soft_wins": p["soft_wins"],
                    "forecast_best_temperature": p["best_temperature"],
                    "overall_sign_right": p["soft_wins"] == summary["measured"]["soft_wins"],
                    "best_tau_right": p["best_temperature"] == best,
                    "per_tau_signs_right": sum(
                        signs[k] == summary["measured"]["signs"][k] for k in signs
                    ),
                    "noise_scale": p["noise_scale"],
                    "seconds": p["seconds"],
                }
            )
        summary["pilot"] = comparisons
        out[budget] = summary
    n = sum(len(out[b]["pilot"]) for b in BUDGETS)
    out["pilot_agreement"] = {
        "pilots": n,
        "overall_sign_right": sum(
            c["overall_sign_right"] for b in BUDGETS for c in out[b]["pilot"]
        ),
        "best_tau_right": sum(c["best_tau_right"] for b in BUDGETS for c in out[b]["pilot"]),
        "per_tau_signs_right": sum(
            c["per_tau_signs_right"] for b in BUDGETS for c in out[b]["pilot"]
        ),
        "per_tau_signs_total": n * len(TAUS),
    }
    return out


# ------------------------------------------------------------------------- plot
def plot(
    analysis: dict[str, Any],
    calibration: dict[str, Any],
    path: Path,
    baselines: dict[str, float] | None = None,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    colors = {"strong": "tab:blue", "weak": "tab:orange"}
    x = range(len(METHODS))
    for i, budget in enumerate(BUDGETS):
        a = analysis[budget]
        means = [a["methods"][m]["mean_error"] for m in METHODS]
        halves = [a["methods"][m]["ci95_half"] for m in METHODS]
        off = -0.15 + 0.3 * i
        axes[0].errorbar(
            [v + off for v in x],
            means,
            yerr=halves,
            fmt="o",
            capsize=4,
            color=colors[budget],
            label=f"rho={a['rho']:g} (eps={a['epsilon']:.3g})",
        )
        diffs = [a["methods"][m]["paired_diff"] for m in METHODS[1:]]
        lo = [
            a["methods"][m]["paired_diff"] - a["methods"][m]["paired_ci95"][0] for m in METHODS[1:]
        ]
        axes[1].errorbar(
            [v + off for v in range(len(TAUS))],
            diffs,
            yerr=lo,
            fmt="o",
            capsize=4,
            color=colors[budget],
            label=f"rho={a['rho']:g}",
        )
    refs = [
        ("noiseless_diagnostic", "hard", "noiseless hard", "tab:green"),
        ("pure_noise_diagnostic", "hard", "pure-noise selection", "tab:red"),
    ]
    for key, method, label, color in refs:
        if method in analysis.get(key, {}):
            axes[0].axhline(analysis[key][method], ls=":", color=color, lw=1, label=label)
    if baselines and "initial_public_population_512" in baselines:
        axes[0].axhline(
            baselines["initial_public_population_512"],
            ls="--",
            color="grey",
            lw=1,
            label="512 public records (init)",
        )
    axes[0].set_xticks(list(x), ["hard"] + [f"soft τ={t}" for t in TAUS])
    axes[0].set_ylabel("error: mean 1/2/3-way TV vs train")
    axes[0].set_title("Adult-5, age θ=7, bfsoft (mean ± 95% CI)")
    axes[0].legend(fontsize=7)
    axes[1].axhline(0, color="grey", lw=1)
    axes[1].set_xticks(list(range(len(TAUS))), [f"τ={t}" for t in TAUS])
    axes[1].set_ylabel("paired soft − hard (95% t-CI)")
    axes[1].set_title("paired differences (< 0: soft better)")
    axes[1].legend()
    c = calibration
    labels = ["closed form", "exact hard", "exact soft τ=0.03"]
    secs = [
        c["closed_form"]["seconds_reach_plus_tanh"],
        c["exact_hard"]["seconds"],
        c["exact_soft"]["0.03"]["seconds"],
    ]
    bars = axes[2].bar(labels, secs, color=["tab:green", "tab:red", "tab:purple"])
    axes[2].set_yscale("log")
    axes[2].set_ylim(top=max(secs) * 40)
    axes[2].set_ylabel("seconds per calibration (one 512-record population)")
    edges = [0, c["exact_hard"]["edges_checked"], c["exact_soft"]["0.03"]["edges_checked"]]
    for bar, s, e in zip(bars, secs, edges, strict=True):
        axes[2].annotate(
            f"{s:.3g}s\n{e:,} edges",
            (bar.get_x() + bar.get_width() / 2, s),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    axes[2].set_title("calibration cost (full 234k-record domain)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="paired seeds per setting")
    parser.add_argument("--quick", action="store_true", help="2 seeds, 2 pilot replicates")
    parser.add_argument(
        "--pilot-reps",
        type=int,
        default=3,
        help="pilot replicates per budget (each uses 2 pilot seeds)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--backend", default="fused", choices=["fused", "local"])
    parser.add_argument(
        "--init",
        default="public",
        choices=["public", "random"],
        help="seed the population from the public split (default; the "
        "pilot then splits it) or at random over the schema",
    )
    parser.add_argument("--tag", default="", help="suffix of the output file names")
    args = parser.parse_args()
    seeds = 2 if args.quick else args.seeds
    reps = 2 if args.quick else args.pilot_reps
    started = time.perf_counter()
    os.environ["BFSOFT_INIT"] = args.init  # inherited by the spawned workers

    jobs: list[tuple[str, Any]] = [("calibration", (0, args.backend)), ("snr", (0, args.backend))]
    jobs += [
        ("pilot", (b, r, (1000 + 2 * r, 1001 + 2 * r), args.backend))
        for b in BUDGETS
        for r in range(reps)
    ]
    jobs += [
        ("fit", (b, m, s, args.backend)) for b in BUDGETS for s in range(seeds) for m in METHODS
    ]
    jobs += [
        ("fit", ("noiseless", m, s, args.backend)) for s in range(min(seeds, 3)) for m in METHODS
    ]
    jobs += [
        ("fit", ("pure_noise", m, s, args.backend))
        for s in range(min(seeds, 3))
        for m in ("hard", "soft0.03")
    ]
    results: dict[str, list[Any]] = {"fit": [], "pilot": [], "calibration": [], "snr": []}
    try:
        if args.workers > 1:
            with mp.get_context("spawn").Pool(args.workers) as pool:
                for kind, res in pool.imap_unordered(run_task, jobs):
                    results[kind].append(res)
        else:
            for job in jobs:
                kind, res = run_task(job)
                results[kind].append(res)
    finally:
        shutil.rmtree(os.environ.get("BFSOFT_NUMBA_ROOT", ""), ignore_errors=True)

    main_fits = [r for r in results["fit"] if r["budget"] in BUDGETS]
    analysis = analyse(main_fits, results["pilot"])
    for diag in DIAGNOSTIC_BUDGETS:
        analysis[f"{diag}_diagnostic"] = {
            m: statistics.fmean(
                r["error"] for r in results["fit"] if r["budget"] == diag and r["method"] == m
            )
            for m in METHODS
            if any(r["budget"] == diag and r["method"] == m for r in results["fit"])
        }
    calibration = results["calibration"][0]
    snr = results["snr"][0]

    out = {
        "setting": {
            "data": "UCI Adult train (private) / test (public), adult5 columns",
            "policy": POLICY,
            "preset": "bfsoft (512 records, 8 rounds, Gower)",
            "delta": DELTA,
            "budgets": BUDGETS,
            "temperatures": TAUS,
            "seeds": seeds,
            "pilot_reps": reps,
            "pilot_seeds_per_rep": 2,
            "error": "pilot_error(train, synthetic): mean over k=1,2,3 of mean k-way TV",
            "population_init": args.init
            + (" (UCI test split)" if args.init == "public" else " (uniform over the schema)"),
            "backend": args.backend,
            "workers": args.workers,
            "backend_used": sorted({r["backend"] for r in results["fit"]}),
        },
        "published_bfsoft_study": PUBLISHED,
        "results": analysis,
        "calibration": calibration,
        "signal_to_noise": snr,
        "runs": sorted(results["fit"], key=lambda r: (r["budget"], r["method"], r["seed"])),
        "wall_seconds": time.perf_counter() - started,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "bfsoft" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(out, indent=2, default=float))
    plot(analysis, calibration, RESULTS / f"{stem}.png", snr["baseline_errors"])
    print_summary(out)
    print(f"wrote {RESULTS / (stem + '.json')} and .png in {out['wall_seconds']:.0f} s")


def print_summary(out: dict[str, Any]) -> None:
    res = out["results"]
    for budget in BUDGETS:
        a = res[budget]
        print(
            f"\n== {budget}: rho={a['rho']:g} (eps={a['epsilon']:.4g} at delta={DELTA:g}), "
            f"{len(a['seeds'])} paired seeds"
        )
        for m in METHODS:
            e = a["methods"][m]
            line = (
                f"  {m:10s} err {e['mean_error']:.4f} ± {e['ci95_half']:.4f}  "
                f"sigma {e['sigma']:.1f}"
            )
            if m != "hard":
                lo, hi = e["paired_ci95"]
                line += (
                    f"  diff {e['paired_diff']:+.4f} [{lo:+.4f}, {hi:+.4f}]  "
                    f"rel {e['relative_change']:+.1%}  soft better {e['soft_better_seeds']}"
                    f"/{len(a['seeds'])}"
                )
            print(line)
        ms = a["measured"]
        print(
            f"  measured: best tau {ms['best_temperature']}, soft wins {ms['soft_wins']} "
            f"({ms['best_relative_change']:+.1%})"
        )
        for c in a["pilot"]:
            print(
                f"  pilot rep {c['rep']}: soft wins {c['forecast_soft_wins']}, best tau "
                f"{c['forecast_best_temperature']} | sign right {c['overall_sign_right']}, "
                f"tau right {c['best_tau_right']}, per-tau signs {c['per_tau_signs_right']}/3"
            )
    pa = res["pilot_agreement"]
    print(
        f"\npilot agreement: overall sign {pa['overall_sign_right']}/{pa['pilots']}, best tau "
        f"{pa['best_tau_right']}/{pa['pilots']}, per-tau signs "
        f"{pa['per_tau_signs_right']}/{pa['per_tau_signs_total']}"
    )
    c = out["calibration"]
    print(f"\ncalibration ({c['domain_records']:,} domain records, 512 candidates):")
    print(
        f"  closed form {c['closed_form']['seconds_reach_plus_tanh']:.2e} s "
        f"(tanh only {c['closed_form']['seconds_tanh_only']:.2e} s)"
    )
    h = c["exact_hard"]
    print(
        f"  exact hard  {h['seconds']:.3f} s, {h['edges_checked']:,} edges, value {h['value']:.4f}"
    )
    for t, s in c["exact_soft"].items():
        print(
            f"  exact soft tau={t}: {s['seconds']:.2f} s, {s['edges_checked']:,} edges, "
            f"value {s['value']:.4f} vs bound {s['bound']:.4f} ({s['exact_over_bound']:.3f})"
        )
    for k, v in c["ratios_vs_closed_form"].items():
        print(f"  {k}: {v:.4g}")
    for diag, rho in DIAGNOSTIC_BUDGETS.items():
        print(
            f"\n{diag} (rho={rho:g}) mean error: "
            + ", ".join(f"{m} {v:.4f}" for m, v in res[f"{diag}_diagnostic"].items())
        )
    print(
        "baselines: "
        + ", ".join(f"{k} {v:.4f}" for k, v in out["signal_to_noise"]["baseline_errors"].items())
    )
    print("\nsignal-to-noise (noiseless histogram std / sigma, initial public population):")
    snr = out["signal_to_noise"]
    for m in METHODS:
        r = snr[m]
        print(
            f"  {m:10s} q {r['q']:.4f}  hist std {r['hist_std']:.2f}  "
            f"sigma strong {r['sigma_strong']:.1f} (snr {r['snr_strong']:.3f})  "
            f"sigma weak {r['sigma_weak']:.1f} (snr {r['snr_weak']:.3f})"
        )


if __name__ == "__main__":
    main()
