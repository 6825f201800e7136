"""PubMix studies (issue #6, item 3), run against dpevolve's PubMix when it is there.

* ``pubmix_tv_m``: TV between the released sample and the private distribution against
  the number m of released samples, for the Gaussian mechanism, LinMix and PubMix, on a
  discrete public/private pair: the NIST excerpts (``nist_subset``: six categorical
  columns, d = 14,742 cells), private = tx2019 (n = 9,276), public = national2019.

  - Gaussian: the count histogram plus N(0, sigma^2) per cell, sigma calibrated to
    (eps, delta) with L2 sensitivity sqrt 2 (replace-one), clipped at 0, normalised;
    then m samples of it (post-processing).
  - LinMix: ``P_syn = (1 - beta) P_prv + beta U`` with ``beta = beta_min(1/d, 1/d)``
    (spec §5, ``dpevolve.pe.pubmix.beta.beta_min``); m samples of it.
  - PubMix: the public histogram water-filled to the floor t and its beta, both chosen
    by ``dpevolve.pe.pubmix.choose_floor`` (spec §5) with gamma from 5 public folds (the
    default); ``pubmix-oracle-gamma`` uses the true TV(P_pub, P_prv) as gamma instead
    (not privatised: a reference for what a better gamma buys).

  Metrics: ``tv_sample`` = TV(empirical m-sample, P_prv) (what a user of the release
  sees) and ``tv_dist`` = TV(P_syn, P_prv) (the error before sampling).
* ``pubmix_tstr``: TSTR accuracy (activity, 11 classes) on UCI Person Activity: private
  = person A (80% train, stratified, seed 0), public = person B, test = A's held-out
  20%, at eps in {1, 2, 4} (delta = 1/(n ln n)). Methods: the tabpe preset, tabpe +
  PubMix (``Synthesizer(..., mechanism="pubmix", public=B)``, basic per-round
  accounting, and ``-tight``: the worst-case pair's PLD composed over the rounds;
  ``unavailable`` while the engine lacks it), mbi's public-data reweighting estimator,
  AIM (our port on mbi, ``experiments.mbi_baselines.aim``: 3-way workload, replace-one,
  n synthetic rows, one seed), and the non-private, public-only and uniform references.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.pe.specs import PubMixSpec
from experiments import common
from experiments.runner import Study, Unavailable

NIST_PRIVATE = "nist_tx2019"
NIST_PUBLIC = "nist_national2019"


# ----------------------------------------------------------------- TV vs m
@dataclass(frozen=True)
class TVConfig:
    """One release of m samples by ``mechanism`` at (``epsilon``, delta = 1e-5)."""

    mechanism: str
    epsilon: float
    m: int
    seed: int


@functools.lru_cache(maxsize=1)
def nist_histograms() -> tuple[np.ndarray, np.ndarray, int]:
    """(private counts, public normalised histogram, n) over the nist_subset cells."""
    from dpevolve import datasets
    from dpevolve.reporting.evaluation import bin_codes, bin_count

    private = datasets.load(NIST_PRIVATE, columns="nist_subset")
    public = datasets.load(NIST_PUBLIC, columns="nist_subset")
    schema = private.schema
    sizes = [bin_count(c) for c in schema.columns]

    def cells(frame: Any) -> np.ndarray:
        codes = [bin_codes(frame, c) for c in schema.columns]
        return np.ravel_multi_index(codes, sizes)

    d = math.prod(sizes)
    counts = np.bincount(cells(private.frame), minlength=d).astype(np.float64)
    pub = np.bincount(cells(public.frame), minlength=d).astype(np.float64)
    _PUBLIC_COUNTS.append(pub.astype(np.int64))
    return counts, pub / pub.sum(), len(private.frame)


_PUBLIC_COUNTS: list[np.ndarray] = []


def nist_public_counts() -> np.ndarray:
    """Integer public counts per cell (for the fold estimate of gamma)."""
    nist_histograms()
    return _PUBLIC_COUNTS[-1]


def tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


@functools.lru_cache(maxsize=64)
def pubmix_choice(m: int, epsilon: float, gamma_kind: str) -> tuple[Any, float]:
    """PubMix's floor choice (WF) for the NIST pair, and the gamma it used.

    ``gamma_kind``: ``folds`` (spec §5 default: 0.95 quantile of the TV between 5 public
    folds) or ``oracle`` (the true TV(P_pub, P_prv): not privatised, a reference for
    what a good gamma would give).
    """
    import dpevolve.pe.pubmix as pubmix

    counts, public, n = nist_histograms()
    public_counts = nist_public_counts()
    if gamma_kind == "folds":
        gamma = pubmix.gamma_from_fold_counts(public_counts, rng=np.random.default_rng(0))
    else:
        gamma = tv(public, counts / n)
    choice = pubmix.choose_floor(
        public, n=n, m=m, epsilon=epsilon, delta=common.DELTA, gamma=gamma, method="wf"
    )
    return choice, float(gamma)


def run_tv(config: TVConfig) -> dict[str, Any]:
    """Release m samples and measure their TV to the private distribution."""
    counts, public, n = nist_histograms()
    d = len(counts)
    p_prv = counts / n
    delta = common.DELTA
    rng = np.random.default_rng(config.seed)
    info: dict[str, Any] = {"d": d, "n": n, "delta": delta}
    begin = time.perf_counter()
    if config.mechanism == "gaussian":
        from dpevolve.privacy import rho_for_epsilon

        rho = rho_for_epsilon(config.epsilon, delta, "exact")
        sigma = math.sqrt(2.0) / math.sqrt(2.0 * rho)
        noisy = np.clip(counts + rng.normal(0.0, sigma, size=d), 0.0, None)
        p_syn = noisy / noisy.sum() if noisy.sum() > 0 else np.full(d, 1.0 / d)
        info.update({"sigma": sigma, "rho": rho})
    elif config.mechanism == "linmix":
        try:
            from dpevolve.pe.pubmix.beta import beta_min
        except ImportError as exc:
            raise Unavailable(f"dpevolve.pe.pubmix.beta not importable: {exc}") from None
        beta = beta_min(
            n=n, m=config.m, epsilon=config.epsilon, delta=delta, z1=1.0 / d, z2=1.0 / d
        )
        p_syn = (1.0 - beta) * p_prv + beta / d
        info["beta"] = beta
    elif config.mechanism in ("pubmix", "pubmix-oracle-gamma"):
        kind = "folds" if config.mechanism == "pubmix" else "oracle"
        choice, gamma = pubmix_choice(config.m, config.epsilon, kind)
        beta = float(choice.beta)
        p_syn = (1.0 - beta) * p_prv + beta * np.asarray(choice.p_noise, dtype=np.float64)
        info.update(
            {
                "beta": beta,
                "floor_t": float(choice.t),
                "gamma": gamma,
                "gamma_kind": kind,
                "tv_public_private": tv(public, p_prv),
            }
        )
    else:
        raise ValueError(f"unknown mechanism {config.mechanism!r}")
    sample = rng.choice(d, size=config.m, p=p_syn / p_syn.sum())
    empirical = np.bincount(sample, minlength=d) / config.m
    metrics = {
        "tv_sample": tv(empirical, p_prv),
        "tv_dist": tv(p_syn, p_prv),
        "release_s": time.perf_counter() - begin,
    }
    ledger = {"epsilon": config.epsilon, "delta": delta}
    return {"ledger": ledger, "metrics": metrics, "info": info}


def tv_configs(profile: str) -> list[TVConfig]:
    if profile == "quick":
        ms, eps, seeds = [100, 300, 1000, 3000, 10000], [1.0, 5.0], 2
    else:
        ms = [30, 100, 300, 1000, 2000, 3000, 5000, 10000, 20000, 30000]
        eps, seeds = [0.5, 1.0, 2.0, 5.0], 5
    return [
        TVConfig(mech, e, m, s)
        for mech in ("gaussian", "linmix", "pubmix", "pubmix-oracle-gamma")
        for e in eps
        for m in ms
        for s in range(seeds)
    ]


# ------------------------------------------------------------------- TSTR
@dataclass(frozen=True)
class TSTRConfig:
    """One release on Person Activity by ``method`` at ``epsilon`` (None: no budget)."""

    method: str
    epsilon: float | None
    seed: int


@functools.lru_cache(maxsize=1)
def person_activity() -> tuple[Any, Any, Any]:
    """(A-train, A-test, B) of the PubMix study."""
    from dpevolve import datasets

    train, test = datasets.person_activity_holdout(seed=0)
    public = datasets.load("person_activity", split="B")
    return train, test, public


def run_tstr(config: TSTRConfig) -> dict[str, Any]:
    """Release, then TSTR on A's held-out rows."""
    train, test, public = person_activity()
    schema, label = train.schema, train.label
    n = len(train.frame)
    delta = 1.0 / (n * math.log(n))
    ledger: dict[str, Any] = {"epsilon": config.epsilon, "delta": delta}
    rows = 1000
    begin = time.perf_counter()
    info: dict[str, Any] = {}
    if config.method in ("tabpe", "tabpe+pubmix", "tabpe+pubmix-tight"):
        options: dict[str, Any] = {}
        if config.method.startswith("tabpe+pubmix"):
            accounting = "tight" if config.method.endswith("-tight") else "basic"
            options = {
                "mechanism": PubMixSpec(accounting=accounting),
                "public": public.frame,
            }
        model, _ = common.fit_synthesizer(
            "person_activity",
            epsilon=config.epsilon,
            delta=delta,
            method="tabpe",
            seed=config.seed,
            private=train.frame,
            schema=schema,
            **options,
        )
        synth = model.synthetic_
        ledger = common.ledger_totals(model)
        betas = [h.get("beta") for h in model.history_ if h.get("beta") is not None]
        if betas:
            info["beta_mean"] = float(np.mean(betas))
            info["beta_min"] = float(np.min(betas))
    elif config.method == "mbi_reweight":
        from dpevolve.privacy import rho_for_epsilon
        from experiments import mbi_baselines

        assert config.epsilon is not None
        rho = rho_for_epsilon(config.epsilon, delta, "exact")  # one Gaussian release
        synth = mbi_baselines.reweight_public(
            train.frame, public.frame, schema, rho, config.seed, rows=rows
        )
        ledger = {"epsilon": config.epsilon, "delta": delta, "rho": rho}
    elif config.method == "aim":
        from dpevolve.privacy import rho_for_epsilon
        from experiments import mbi_baselines

        assert config.epsilon is not None
        # zCDP -> (eps, delta) by the CKS conversion (private-pgm's cdp_rho)
        rho = rho_for_epsilon(config.epsilon, delta, "cks")
        synth = mbi_baselines.aim(
            train.frame, schema, rho, config.seed, rows=n, info=info, **AIM_SETTINGS
        )
        ledger = {"epsilon": config.epsilon, "delta": delta, "rho": rho}
    elif config.method == "nonprivate":
        synth = train.frame.sample(n=rows, random_state=config.seed)
        ledger = {"epsilon": float("inf"), "delta": 1.0, "note": "not private"}
    elif config.method == "public_only":
        synth = public.frame.sample(n=rows, random_state=config.seed)
        ledger = {"epsilon": 0.0, "delta": 0.0, "note": "public data only"}
    elif config.method == "uniform":
        from experiments.baselines import uniform_rows

        synth = uniform_rows(schema, rows, config.seed)
        ledger = {"epsilon": 0.0, "delta": 0.0, "note": "reads no data"}
    else:
        raise ValueError(f"unknown method {config.method!r}")
    release_s = time.perf_counter() - begin
    metrics = common.marginal_errors(train.frame, synth, schema)
    metrics.update(common.tstr_scores(synth, test.frame, schema, label))
    metrics.update({"release_s": release_s, "rows": len(synth)})
    metrics.update(info)
    return {"ledger": ledger, "metrics": metrics}


TSTR_EPSILONS = (1.0, 2.0, 4.0)

#: our AIM port's settings (experiments.mbi_baselines.aim): 3-way workload, rounds
#: 16 x 5 columns, 80 MB model cap (never binding: the full 5-column joint is 2.7 MB),
#: 250 warm-started mirror-descent steps per refit, 1000 for the last fit, 300 s cap
AIM_SETTINGS: dict[str, Any] = {
    "degree": 3,
    "max_model_size": 80.0,
    "round_iters": 250,
    "final_iters": 1000,
    "time_limit": 300.0,
}


def tstr_configs(profile: str) -> list[TSTRConfig]:
    seeds = {"quick": 2, "full": 5}[profile]
    out = [
        TSTRConfig(method, eps, s)
        for method in ("tabpe", "tabpe+pubmix", "tabpe+pubmix-tight", "mbi_reweight")
        for eps in TSTR_EPSILONS
        for s in range(seeds)
    ]
    out += [TSTRConfig("aim", eps, 0) for eps in TSTR_EPSILONS]
    out += [
        TSTRConfig(m, None, s)
        for m in ("nonprivate", "public_only", "uniform")
        for s in range(seeds)
    ]
    return out


STUDIES = [
    Study(
        "pubmix_tv_m",
        "TV vs m for Gaussian, LinMix and PubMix on NIST tx2019 (private) / national2019",
        tv_configs,
        run_tv,
        "pubmix",
    ),
    Study(
        "pubmix_tstr",
        "Person Activity TSTR at eps 1/2/4: tabpe, tabpe+PubMix, mbi reweighting, refs",
        tstr_configs,
        run_tstr,
        "pubmix",
    ),
]
