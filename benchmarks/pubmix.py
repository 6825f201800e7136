"""PubMix against LinMix and the Gaussian baseline (spec §5, §6).

Part 1 -- discrete releases on the NIST excerpts (``sample_discrete``). Private tx2019,
public national2019 (and ma2019), the ``nist_subset`` columns (6 categorical, d = 14,742
product cells), n = 9,276, delta = 1/n. For eps in {1, 5} and m in {100, 300, 1000, 3000,
10000}: TV = 1/2 ||P_prv - P_hat_m||_1 between the private distribution and the
empirical histogram of the m released (decoded) samples, for

* ``gaussian``  -- noisy private histogram (sigma for L2 sensitivity sqrt 2), sampled;
* ``linmix``    -- uniform noise, beta = beta_min(1/d, 1/d);
* ``pubmix_wf`` -- water-filled public histogram, gamma from 5 public folds (the default);
* ``pubmix_mifr`` -- the same with MIFR floor raising (national, eps = 5 only);
* ``pubmix_wf_oracle`` -- gamma set to the true TV(P_pub, P_prv). ORACLE: that number is
  computed from the private data and is NOT differentially private; it shows what a
  (cheap, DP) estimate of the public/private shift would buy (spec §5 practical notes).

References: the non-private sampling floor (TV of m i.i.d. samples of P_prv itself: the
best any m-sample release can do), m i.i.d. samples of P_pub, and TV(P_pub, P_prv).
``tv_mix`` is the population TV of the mixture the samples are drawn from,
beta * TV(P_nse, P_prv), i.e. where the curve would go as m -> infinity at that beta.

Part 2 -- Private Evolution on UCI Person Activity. Private = person A train
(``person_activity_holdout(0)``, 80 % stratified), public = person B, test = A's held-out
20 %; columns tag, x, y, z -> activity. The tabpe preset (N = 1000, 29 DP rounds) with
Gaussian selection (public initial population, and Tab-PE's random initial population)
against PubMix selection (basic and tight accounting, WF floor, gamma from folds), eps in
{1, 2, 4}, delta = 1e-5. TSTR accuracy (evaluation.tstr, HGB) on A-test. Baselines:
non-private (HGB on 1000 real A-train rows) and public-only (HGB on person B: all of it,
and 1000 rows).

    python benchmarks/pubmix.py [--quick] [--workers 2] [--part all|tv|pe]

``--quick``: m in {100, 1000, 3000}, 2 seeds for part 1; 1 seed and 15 rounds for part 2.
Writes benchmarks/results/pubmix.json (pubmix_quick.json with --quick),
pubmix_tv.png and pubmix_person_activity.png (``_quick`` likewise).
"""

from __future__ import annotations

import os

# Single-threaded numerics in every process: the work is spread over worker processes.
for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import multiprocessing as mp  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from dpevolve.pe.specs import PubMixSpec  # noqa: E402
from dpevolve.presets import get_method  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"

PRIVATE = "nist_tx2019"
PUBLICS = ("nist_national2019", "nist_ma2019")
COLUMNS = "nist_subset"
TV_EPS = (1.0, 5.0)
M_FULL = (100, 300, 1000, 3000, 10000)
M_QUICK = (100, 1000, 3000)
MIFR_AT = {"public": "nist_national2019", "epsilon": 5.0}  # MIFR: this setting, every m

PE_EPS = (1.0, 2.0, 4.0)
PE_DELTA = 1e-5
PE_SIZE = 1000  # tabpe preset population = synthetic rows = baseline sample size
SPLIT_SEED = 0
STUDY = {  # the PubMix study's own Person Activity split and columns (not ours)
    "epsilon": [1.0, 2.0, 4.0],
    "tabpe": [60.80, 63.22, 64.24],
    "tabpe_pubmix": [66.40, 66.47, 66.85],
}
BASELINES = ("nonprivate", "public_all", "public_1000")
PE_METHODS = {
    # name: (mechanism, accounting, public initial population)
    "tabpe_pubmix_tight": ("pubmix", "tight", True),
    "tabpe_pubmix_basic": ("pubmix", "basic", True),
    "tabpe_gaussian": ("gaussian", "basic", True),
    "tabpe_gaussian_random_init": ("gaussian", "basic", False),
}


# ----------------------------------------------------------------------- helpers
def tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def _backend() -> Any:
    try:
        from dpevolve.backends.fused import FusedBackend, fused_available

        if fused_available():
            backend = FusedBackend(threads=1)
            backend.warmup()
            return backend
    except ImportError:
        pass
    from dpevolve.backends import LocalBackend

    return LocalBackend()


@functools.cache
def nist() -> dict[str, Any]:
    from dpevolve import datasets
    from dpevolve.pe.pubmix.discrete import ProductDomain

    prv = datasets.load(PRIVATE, columns=COLUMNS)
    domain = ProductDomain.of(prv.schema)
    counts = domain.counts(prv.frame)
    out: dict[str, Any] = {
        "schema": prv.schema,
        "frame": prv.frame,
        "domain": domain,
        "n": len(prv.frame),
        "p_private": counts / counts.sum(),
        "counts": counts,
        "public": {},
    }
    for name in PUBLICS:
        pub = datasets.load(name, columns=COLUMNS)
        c = domain.counts(pub.frame)
        out["public"][name] = {"frame": pub.frame, "counts": c, "p": c / c.sum()}
    return out


@functools.cache
def person_activity() -> dict[str, Any]:
    from dpevolve import datasets

    train, test = datasets.person_activity_holdout(SPLIT_SEED)
    public = datasets.load("person_activity", split="B", columns=train.schema.names)
    return {"train": train, "test": test, "public": public, "backend": _backend()}


# ------------------------------------------------------------------ part 1 tasks
def tv_task(public: str, epsilon: float, m: int, seed: int) -> list[dict[str, Any]]:
    """Every method at one (public, eps, m, seed); one row per method."""
    from dpevolve.pe.pubmix import deficit, max_invariance_fill, pubmix_sample, water_fill
    from dpevolve.pe.pubmix.discrete import sample_discrete
    from dpevolve.privacy import Budget
    from dpevolve.privacy.noise import SeededNoise

    data = nist()
    domain, n, p_prv = data["domain"], data["n"], data["p_private"]
    pub = data["public"][public]
    d = domain.cells
    budget = Budget.from_args(epsilon=epsilon, delta=1.0 / n)
    true_gamma = tv(pub["p"], p_prv)
    base = {"public": public, "epsilon": epsilon, "m": m, "seed": seed}
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng([seed, m, int(epsilon * 10), PUBLICS.index(public)])

    # references: m samples of the private (sampling floor) and of the public distribution
    for name, p in (("private_sample", p_prv), ("public_sample", pub["p"])):
        hist = np.bincount(rng.choice(d, size=m, p=p), minlength=d) / m
        rows.append({**base, "method": name, "tv": tv(p_prv, hist)})

    methods: list[tuple[str, dict[str, Any]]] = [
        ("gaussian", {"noise": "gaussian"}),
        ("linmix", {"noise": "linmix"}),
        ("pubmix_wf", {"noise": "pubmix", "floor": "wf"}),
        ("pubmix_wf_oracle", {"noise": "pubmix", "floor": "wf", "gamma": true_gamma}),
    ]
    if public == MIFR_AT["public"] and epsilon == MIFR_AT["epsilon"]:
        methods.append(("pubmix_mifr", {"noise": "pubmix", "floor": "mifr"}))
    for k, (name, kwargs) in enumerate(methods):
        random_state = int(rng.integers(2**31)) + k
        start = time.perf_counter()
        release = sample_discrete(
            data["frame"],
            pub["frame"],
            data["schema"],
            m,
            budget,
            random_state=random_state,
            noise_seed=random_state,  # research reproduction: rerunning gives the same rows
            **kwargs,
        )
        seconds = time.perf_counter() - start
        hist = domain.counts(release.samples) / m  # decode -> re-encode round trip
        det = release.details
        row = {**base, "method": name, "tv": tv(p_prv, hist), "seconds": seconds}
        if "beta" in det:
            beta = float(det["beta"])
            if name == "linmix":
                p_nse = np.full(d, 1.0 / d)
            elif kwargs.get("floor") == "mifr":
                p_nse = max_invariance_fill(pub["p"], det["floor"], counts=pub["counts"])
            else:
                p_nse = water_fill(pub["p"], det["floor"])
            row.update(
                beta=beta,
                tv_mix=beta * tv(p_nse, p_prv),
                **{k2: float(det[k2]) for k2 in ("gamma", "floor", "deficit") if k2 in det},
            )
        else:
            row["sigma"] = float(det["sigma"])
        rows.append(row)

    # ORACLE floor: the WF floor t minimising the true population TV beta(t) TV(P_nse, P_prv)
    # (not DP: it looks at the private histogram). Shows how much the g(t) criterion,
    # g = beta (gamma + D(t)), leaves on the table when its bound gamma + D(t) is loose.
    start = time.perf_counter()
    t, beta, p_nse, mix = oracle_floor(pub["p"], p_prv, n, m, epsilon, 1.0 / n)
    cells = pubmix_sample(data["counts"], p_nse, beta, m, SeededNoise(int(rng.integers(2**31))))
    hist = domain.counts(domain.decode(cells, rng)) / m
    rows.append(
        {
            **base,
            "method": "pubmix_wf_oracle_floor",
            "tv": tv(p_prv, hist),
            "beta": beta,
            "tv_mix": mix,
            "floor": t,
            "deficit": deficit(pub["p"], t),
            "seconds": time.perf_counter() - start,
        }
    )
    return rows


def oracle_floor(
    p_pub: np.ndarray, p_prv: np.ndarray, n: int, m: int, epsilon: float, delta: float
) -> tuple[float, float, np.ndarray, float]:
    """argmin over a grid of t in [0, 1/d] of beta_min(z1, z2) * TV(WF(P_pub, t), P_prv)."""
    from dpevolve.pe.pubmix import beta_min, water_fill

    d = p_pub.size
    best: tuple[float, float, np.ndarray, float] | None = None
    for t in np.concatenate([[0.0], np.geomspace(1e-3 / d, 1.0 / d, 48)]):
        p_nse = water_fill(p_pub, float(t))
        z1, z2 = np.partition(p_nse, 1)[:2]
        beta = beta_min(n, m, epsilon, delta, float(z1), float(z2))
        mix = beta * tv(p_nse, p_prv)
        if best is None or mix < best[3]:
            best = (float(t), beta, p_nse, mix)
    assert best is not None
    return best


def timing_task(ms: tuple[int, ...]) -> dict[str, Any]:
    """Cold-cache costs at d = 14,742: beta_min, the floor search, WF and MIFR fills."""
    from dpevolve.pe.pubmix import choose_floor, max_invariance_fill, water_fill
    from dpevolve.pe.pubmix.beta import _beta_min_cached, beta_min

    data = nist()
    n, d = data["n"], data["domain"].cells
    pub = data["public"]["nist_national2019"]
    out: dict[str, Any] = {"beta_min_linmix": [], "choose_floor": []}
    for eps in TV_EPS:
        for m in ms:
            _beta_min_cached.cache_clear()
            start = time.perf_counter()
            beta = beta_min(n, m, eps, 1.0 / n, 1.0 / d, 1.0 / d)
            out["beta_min_linmix"].append(
                {"epsilon": eps, "m": m, "beta": beta, "seconds": time.perf_counter() - start}
            )
            _beta_min_cached.cache_clear()
            start = time.perf_counter()
            choice = choose_floor(pub["p"], n, m, eps, 1.0 / n, 0.25, "wf", counts=pub["counts"])
            out["choose_floor"].append(
                {
                    "epsilon": eps,
                    "m": m,
                    "t": choice.t,
                    "beta": choice.beta,
                    "seconds_cold": time.perf_counter() - start,
                    "beta_min_evaluations": _beta_min_cached.cache_info().misses,
                }
            )
    t = out["choose_floor"][-1]["t"] or 0.5 / d
    for name, fill in (
        ("water_fill", lambda: water_fill(pub["p"], t)),
        ("mifr_fill", lambda: max_invariance_fill(pub["p"], t, counts=pub["counts"])),
    ):
        start = time.perf_counter()
        fill()
        out[f"{name}_seconds"] = time.perf_counter() - start
    out["fill_floor_t"] = t
    return out


# ------------------------------------------------------------------ part 2 tasks
def pe_task(method: str, epsilon: float, seed: int, rounds: int | None) -> dict[str, Any]:
    from dpevolve import Synthesizer
    from dpevolve.reporting.evaluation import tstr

    data = person_activity()
    train, test, public = data["train"], data["test"], data["public"]
    mechanism, accounting, public_init = PE_METHODS[method]
    start = time.perf_counter()
    model = Synthesizer(
        train.schema,
        epsilon=epsilon,
        delta=PE_DELTA,
        method=get_method(
            "tabpe",
            rounds=rounds,
            mechanism=PubMixSpec(accounting=accounting) if mechanism == "pubmix" else mechanism,
        ),
        public=public.frame if public_init else None,
        backend=data["backend"],
        random_state=seed,
    )
    model.fit(train.frame)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    report = tstr(model.sample(), test.frame, train.schema, train.label, random_state=seed)
    row: dict[str, Any] = {
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        "accuracy": report.accuracy,
        "macro_f1": report.macro_f1,
        "fit_seconds": fit_seconds,
        "tstr_seconds": time.perf_counter() - start,
        "rounds": len(model.history_),
        "ledger_epsilon": model.ledger_.result().epsilon,
        "ledger_method": model.ledger_.result().method,
    }
    betas = [h["beta"] for h in model.history_ if "beta" in h]
    if betas:
        row.update(
            beta_first=betas[0],
            beta_last=betas[-1],
            beta_mean=statistics.fmean(betas),
            floor_last=model.history_[-1].get("floor"),
            gamma_last=model.history_[-1].get("gamma"),
        )
    return row


def baseline_task(kind: str, seed: int) -> dict[str, Any]:
    from dpevolve.reporting.evaluation import tstr

    data = person_activity()
    train, test, public = data["train"], data["test"], data["public"]
    if kind == "nonprivate":
        frame = train.frame.sample(PE_SIZE, random_state=seed)
    elif kind == "public_1000":
        frame = public.frame.sample(PE_SIZE, random_state=seed)
    else:  # public_all
        frame = public.frame
    start = time.perf_counter()
    report = tstr(frame, test.frame, train.schema, train.label, random_state=seed)
    return {
        "method": kind,
        "seed": seed,
        "rows": len(frame),
        "accuracy": report.accuracy,
        "macro_f1": report.macro_f1,
        "majority_accuracy": report.baseline_accuracy,
        "seconds": time.perf_counter() - start,
    }


# --------------------------------------------------------------------- summary
def _ms(values: list[float]) -> dict[str, float]:
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "n": len(values),
    }


def summarise_tv(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["public"], r["epsilon"], r["method"], r["m"]), []).append(r)
    out = []
    for (public, eps, method, m), rs in sorted(groups.items()):
        s: dict[str, Any] = {"public": public, "epsilon": eps, "method": method, "m": m}
        s["tv"] = _ms([r["tv"] for r in rs])
        for key in ("beta", "tv_mix", "gamma", "floor", "deficit", "seconds"):
            if key in rs[0]:
                s[key] = statistics.fmean(r[key] for r in rs)
        out.append(s)
    return out


def summarise_pe(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["method"], r["epsilon"]), []).append(r)
    out = []
    for (method, eps), rs in sorted(groups.items()):
        s = {
            "method": method,
            "epsilon": eps,
            "accuracy": _ms([r["accuracy"] for r in rs]),
            "macro_f1": _ms([r["macro_f1"] for r in rs]),
            "fit_seconds": statistics.fmean(r["fit_seconds"] for r in rs),
            "ledger_epsilon": max(r["ledger_epsilon"] for r in rs),
        }
        for key in ("beta_first", "beta_last", "beta_mean"):
            if key in rs[0]:
                s[key] = statistics.fmean(r[key] for r in rs)
        out.append(s)
    return out


def print_summary(result: dict[str, Any]) -> None:
    tvs = result.get("tv")
    if tvs:
        print("\n== Part 1: TV(P_prv, empirical m-sample), mean over seeds ==")
        for public, ref in tvs["reference_tv_public_private"].items():
            print(f"TV({public}, tx2019) = {ref:.4f}")
        methods = [
            "private_sample",
            "public_sample",
            "gaussian",
            "linmix",
            "pubmix_wf",
            "pubmix_mifr",
            "pubmix_wf_oracle",
            "pubmix_wf_oracle_floor",
        ]
        short = ["floor", "pubsmp", "gauss", "linmix", "pm_wf", "pm_mifr", "orcl_g", "orcl_t"]
        summ = tvs["summary"]
        index = {(s["public"], s["epsilon"], s["method"], s["m"]): s for s in summ}
        for public in tvs["config"]["publics"]:
            for eps in tvs["config"]["epsilons"]:
                print(f"\n{public}  eps={eps:g}")
                print(
                    f"{'m':>6} "
                    + " ".join(f"{h:>8}" for h in short)
                    + "   beta lin/wf/orcl_t  tv_mix lin/wf/orcl_t"
                )
                for m in tvs["config"]["m"]:
                    cells = []
                    for meth in methods:
                        s = index.get((public, eps, meth, m))
                        cells.append(f"{s['tv']['mean']:8.4f}" if s else f"{'-':>8}")
                    betas = [
                        index.get((public, eps, meth, m), {}).get(key)
                        for key in ("beta", "tv_mix")
                        for meth in ("linmix", "pubmix_wf", "pubmix_wf_oracle_floor")
                    ]
                    fmt = ["-" if b is None else f"{b:.3f}" for b in betas]
                    bstr = "/".join(fmt[:3]) + "  " + "/".join(fmt[3:])
                    print(f"{m:>6} " + " ".join(cells) + "   " + bstr)
    timing = result.get("timing")
    if timing:
        print("\n== beta_min / floor search, cold cache, d = 14,742 ==")
        for b, c in zip(timing["beta_min_linmix"], timing["choose_floor"], strict=True):
            print(
                f"eps={b['epsilon']:g} m={b['m']:>5}: beta_min(1/d,1/d) {b['seconds']:.3f}s "
                f"(beta {b['beta']:.4f}); choose_floor wf {c['seconds_cold']:.2f}s "
                f"({c['beta_min_evaluations']} beta_min evals, t={c['t']:.3g})"
            )
        print(
            f"fill at t={timing['fill_floor_t']:.3g}: WF {timing['water_fill_seconds']:.4f}s, "
            f"MIFR {timing['mifr_fill_seconds']:.4f}s"
        )
    pe = result.get("person_activity")
    if pe:
        print("\n== Part 2: Person Activity TSTR accuracy (%), mean ± std over seeds ==")
        print(f"rounds={pe['config']['rounds']}, seeds={pe['config']['seeds']}, delta={PE_DELTA}")
        index = {(s["method"], s["epsilon"]): s for s in pe["summary"]}
        for method in PE_METHODS:
            cells = []
            for eps in pe["config"]["epsilons"]:
                s = index.get((method, eps))
                if s:
                    a = s["accuracy"]
                    cells.append(
                        f"{100 * a['mean']:6.2f}±{100 * a['std']:4.2f} ({s['fit_seconds']:.0f}s)"
                    )
                else:
                    cells.append("-")
            print(f"{method:28s} " + "  ".join(cells))
        for b in pe["baselines_summary"]:
            a = b["accuracy"]
            print(f"{b['method']:28s} {100 * a['mean']:6.2f}±{100 * a['std']:4.2f}")
        print(f"study Tab-PE          {STUDY['tabpe']}")
        print(f"study Tab-PE+PubMix   {STUDY['tabpe_pubmix']}")
    print(f"\nwall time {result['wall_seconds']:.0f}s")


# ------------------------------------------------------------------------ plots
def plot(result: dict[str, Any], suffix: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    tvs = result.get("tv")
    if tvs:
        cfg = tvs["config"]
        publics, epsilons = cfg["publics"], cfg["epsilons"]
        fig, axes = plt.subplots(
            len(publics),
            len(epsilons),
            figsize=(5.2 * len(epsilons), 4.0 * len(publics)),
            squeeze=False,
            sharey=True,
        )
        style = {
            "gaussian": ("Gaussian", "tab:blue", "o", "-"),
            "linmix": ("LinMix", "tab:orange", "s", "-"),
            "pubmix_wf": ("PubMix WF (gamma: folds)", "tab:green", "^", "-"),
            "pubmix_mifr": ("PubMix MIFR (gamma: folds)", "tab:olive", "v", "none"),
            "pubmix_wf_oracle": (
                "PubMix WF, ORACLE gamma = true TV (not DP)",
                "tab:red",
                "D",
                "--",
            ),
            "pubmix_wf_oracle_floor": ("PubMix WF, ORACLE floor (not DP)", "tab:brown", "x", "--"),
            "private_sample": ("non-private m-sample (floor)", "black", ".", ":"),
            "public_sample": ("public m-sample", "tab:gray", ".", ":"),
        }
        for i, public in enumerate(publics):
            for j, eps in enumerate(epsilons):
                ax = axes[i][j]
                for method, (label, color, marker, ls) in style.items():
                    pts = [
                        s
                        for s in tvs["summary"]
                        if s["public"] == public and s["epsilon"] == eps and s["method"] == method
                    ]
                    if not pts:
                        continue
                    pts.sort(key=lambda s: s["m"])
                    ax.errorbar(
                        [s["m"] for s in pts],
                        [s["tv"]["mean"] for s in pts],
                        yerr=[s["tv"]["std"] for s in pts],
                        label=label,
                        color=color,
                        marker=marker,
                        linestyle=ls,
                        capsize=2,
                    )
                ref = tvs["reference_tv_public_private"][public]
                ax.axhline(
                    ref, color="tab:purple", linestyle="-.", label=f"public only: TV={ref:.3f}"
                )
                ax.set_xscale("log")
                ax.set_xlabel("m (released samples)")
                ax.set_title(f"private tx2019, public {public.removeprefix('nist_')}, eps={eps:g}")
                ax.grid(alpha=0.3)
                if j == 0:
                    ax.set_ylabel("TV(P_prv, empirical m-sample)")
        axes[0][-1].legend(fontsize=7, loc="upper right")
        fig.suptitle(f"NIST nist_subset, d={cfg['cells']:,}, n={cfg['n']:,}, delta=1/n")
        fig.tight_layout()
        path = RESULTS / f"pubmix_tv{suffix}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(str(path))
    pe = result.get("person_activity")
    if pe:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        colors = ["tab:green", "tab:olive", "tab:blue", "tab:cyan"]
        for method, color in zip(PE_METHODS, colors, strict=True):
            pts = sorted(
                (s for s in pe["summary"] if s["method"] == method), key=lambda s: s["epsilon"]
            )
            if pts:
                ax.errorbar(
                    [s["epsilon"] for s in pts],
                    [100 * s["accuracy"]["mean"] for s in pts],
                    yerr=[100 * s["accuracy"]["std"] for s in pts],
                    label=method,
                    color=color,
                    marker="o",
                    capsize=3,
                )
        for b, color in zip(
            pe["baselines_summary"], ["black", "tab:purple", "tab:gray"], strict=False
        ):
            ax.axhline(100 * b["accuracy"]["mean"], color=color, linestyle="--", label=b["method"])
        ax.plot(
            STUDY["epsilon"],
            STUDY["tabpe"],
            "x:",
            color="tab:blue",
            alpha=0.6,
            label="study Tab-PE (own split/cols)",
        )
        ax.plot(
            STUDY["epsilon"],
            STUDY["tabpe_pubmix"],
            "x:",
            color="tab:green",
            alpha=0.6,
            label="study Tab-PE+PubMix (own split/cols)",
        )
        ax.set_xscale("log", base=2)
        ax.set_xticks(pe["config"]["epsilons"], [f"{e:g}" for e in pe["config"]["epsilons"]])
        ax.set_xlabel("epsilon")
        ax.set_ylabel("TSTR accuracy (%) on A-test")
        ax.set_title(
            f"Person Activity A (private) / B (public), tabpe, {pe['config']['rounds']} rounds, "
            f"delta={PE_DELTA:g}"
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = RESULTS / f"pubmix_person_activity{suffix}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(str(path))
    return written


# ------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--part", choices=("all", "tv", "pe"), default="all")
    parser.add_argument("--tv-seeds", type=int, default=None)
    parser.add_argument("--pe-seeds", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None, help="PE rounds (default: preset's 29)")
    parser.add_argument("--no-ma", action="store_true", help="skip ma2019 as a second public")
    args = parser.parse_args()

    ms = M_QUICK if args.quick else M_FULL
    tv_seeds = args.tv_seeds or (2 if args.quick else 3)
    pe_seeds = args.pe_seeds or (1 if args.quick else 3)
    rounds = args.rounds if args.rounds is not None else (15 if args.quick else None)
    publics = PUBLICS[:1] if args.no_ma else PUBLICS
    do_tv, do_pe = args.part in ("all", "tv"), args.part in ("all", "pe")

    wall = time.perf_counter()
    tasks: list[tuple[str, Any, tuple]] = []
    if do_pe:  # longest first
        for method in PE_METHODS:
            for eps in sorted(PE_EPS, reverse=True):
                for seed in range(pe_seeds):
                    tasks.append(("pe", pe_task, (method, eps, seed, rounds)))
        for seed in range(pe_seeds):
            tasks.append(("base", baseline_task, ("nonprivate", seed)))
            tasks.append(("base", baseline_task, ("public_1000", seed)))
        tasks.append(("base", baseline_task, ("public_all", 0)))
    if do_tv:
        tasks.append(("timing", timing_task, (ms,)))
        for public in publics:
            for eps in TV_EPS:
                for m in sorted(ms, reverse=True):
                    for seed in range(tv_seeds):
                        tasks.append(("tv", tv_task, (public, eps, m, seed)))

    collected: dict[str, list[Any]] = {"pe": [], "base": [], "tv": [], "timing": []}
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
        futures = {pool.submit(fn, *a): (kind, a) for kind, fn, a in tasks}
        done = 0
        for future in as_completed(futures):
            kind, a = futures[future]
            out = future.result()
            if kind == "tv":
                collected["tv"].extend(out)
            else:
                collected[kind].append(out)
            done += 1
            elapsed = time.perf_counter() - wall
            print(f"[{done}/{len(tasks)} {elapsed:6.0f}s] {kind} {a}", flush=True)

    result: dict[str, Any] = {
        "benchmark": "pubmix",
        "quick": args.quick,
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "workers": args.workers,
        },
    }
    if do_tv:
        data = nist()
        result["tv"] = {
            "config": {
                "private": PRIVATE,
                "publics": list(publics),
                "columns": list(data["schema"].names),
                "cells": data["domain"].cells,
                "n": data["n"],
                "delta": 1.0 / data["n"],
                "epsilons": list(TV_EPS),
                "m": list(ms),
                "seeds": tv_seeds,
                "mifr_at": MIFR_AT,
                "oracle_note": "pubmix_wf_oracle sets gamma to the true TV(P_pub, P_prv), "
                "computed from the private data: NOT differentially private. "
                "pubmix_wf_oracle_floor picks the WF floor minimising the true "
                "beta * TV(P_nse, P_prv) over a grid: NOT differentially private.",
                "tv_definition": "1/2 ||P_prv - P_hat_m||_1 over product cells, P_hat_m from "
                "ProductDomain.counts of the decoded samples",
            },
            "reference_tv_public_private": {
                p: tv(data["public"][p]["p"], data["p_private"]) for p in publics
            },
            "tv_uniform_private": tv(
                np.full(data["domain"].cells, 1 / data["domain"].cells), data["p_private"]
            ),
            "rows": collected["tv"],
            "summary": summarise_tv(collected["tv"]),
        }
        result["timing"] = collected["timing"][0]
    if do_pe:
        data = person_activity()
        base_groups: dict[str, list[dict[str, Any]]] = {}
        for b in collected["base"]:
            base_groups.setdefault(b["method"], []).append(b)
        result["person_activity"] = {
            "config": {
                "private": "person_activity A-train (person_activity_holdout(seed=0), 80%)",
                "public": "person_activity B",
                "test": "person_activity A-test (20%, stratified by activity)",
                "columns": list(data["train"].schema.names),
                "label": data["train"].label,
                "n_private": len(data["train"].frame),
                "n_public": len(data["public"].frame),
                "n_test": len(data["test"].frame),
                "preset": "tabpe",
                "rounds": rounds if rounds is not None else 29,
                "epsilons": list(PE_EPS),
                "delta": PE_DELTA,
                "seeds": pe_seeds,
                "methods": {
                    k: {"mechanism": v[0], "accounting": v[1], "public_init": v[2]}
                    for k, v in PE_METHODS.items()
                },
                "pubmix": "WF floor, gamma from 5 public folds (default)",
                "backend": type(data["backend"]).__name__,
            },
            "study_reference": {**STUDY, "note": "the study's own split and columns, not ours"},
            "rows": collected["pe"],
            "summary": summarise_pe(collected["pe"]),
            "baselines": collected["base"],
            "baselines_summary": [
                {
                    "method": k,
                    "accuracy": _ms([b["accuracy"] for b in v]),
                    "macro_f1": _ms([b["macro_f1"] for b in v]),
                    "majority_accuracy": v[0]["majority_accuracy"],
                }
                for k, v in sorted(base_groups.items(), key=lambda kv: BASELINES.index(kv[0]))
            ],
        }
    result["wall_seconds"] = time.perf_counter() - wall
    suffix = "_quick" if args.quick else ""
    if args.part != "all":
        suffix += f"_{args.part}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    result["plots"] = plot(result, suffix)
    path = RESULTS / f"pubmix{suffix}.json"
    path.write_text(json.dumps(result, indent=1, default=float))
    print_summary(result)
    print(f"wrote {path} and {', '.join(result['plots'])}")


if __name__ == "__main__":
    main()
