"""BF-Soft studies (issue #6, item 2): grids of fits, one fit per configuration.

* ``bfsoft_budget``: hard vote and the fixed temperatures (0.015, 0.03, 0.06) over a
  log-spaced grid of budgets rho (1e-5 .. 1e-1) on Adult-5, Bank-5 and XOR-3 (12,000
  records). The report interpolates the crossover budget where soft stops winning and
  converts it to eps at delta = 1e-5.
* ``bfsoft_temperature``: a temperature sweep at rho in {1e-4, 3e-3} on Adult and Bank.
* ``bfsoft_policy``: five policies on Adult at rho = 1e-4, each at the three fixed
  temperatures, against the hard vote on the same seeds (paired tests, Holm).
* ``bfsoft_pilot``: the public pilot (Adult test split as public data, no private
  budget) forecasts, for each (policy, rho, tau) setting, whether soft beats hard; the
  private runs of the same settings give the truth. The report derives the sign-forecast
  accuracy and the calibration cost (regret of the pilot's choice against the best
  choice in hindsight, and the pilot's wall time) from these rows.
* ``bfsoft_calibration``: the hard vote under a policy with the closed-form sensitivity
  (sqrt 2) against the exact per-round calibration (``calibration="exact"``: a search
  over the protected edges for an argmin change, on the public population); its cost in
  time and what it saves (rounds that cost nothing).
* ``bfsoft_trainsize``: XOR-3 at 12k, 48k (and 100k in ``full``) private records.

Policies (``experiments.common.POLICIES``): Adult ``age`` = age threshold 7 (reach
7/365), Bank ``age`` = age threshold 7 (reach 0.2 * 7/77), XOR-3 ``features`` = each
feature threshold 1.5 (reach 0.25 * 1.5/20).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments import common
from experiments.runner import Study

SEEDS = {"quick": 2, "full": 5}


@dataclass(frozen=True)
class FitConfig:
    """One private fit of the bfsoft preset and its scores.

    ``vote`` is ``hard`` (``tau`` None) or ``soft`` at temperature ``tau``.
    """

    dataset: str
    policy: str
    rho: float
    vote: str
    tau: float | None
    seed: int


@dataclass(frozen=True)
class PilotConfig:
    """One run of the public pilot (no private budget) for a (policy, rho) setting.

    ``seed`` is the first of the pilot's two seeds.
    """

    dataset: str
    policy: str
    rho: float
    seed: int


def votes(temperatures: tuple[float, ...] = common.TEMPERATURES) -> list[tuple[str, Any]]:
    """The hard vote and one soft vote per temperature."""
    return [("hard", None)] + [("soft", float(t)) for t in temperatures]


def fit_grid(
    datasets: list[str],
    rhos: list[float],
    seeds: int,
    temperatures: tuple[float, ...] = common.TEMPERATURES,
    policies: list[str] | None = None,
) -> list[FitConfig]:
    """Every (data set, policy, rho, vote, seed); policy: each data set's default."""
    out = []
    for dataset in datasets:
        names = policies or [common.default_policy(dataset)]
        for name in names:
            for rho in rhos:
                for vote, tau in votes(temperatures):
                    for seed in range(seeds):
                        out.append(FitConfig(dataset, name, float(rho), vote, tau, seed))
    return out


def run_fit(config: FitConfig) -> dict[str, Any]:
    """Fit, then score against the private training table."""
    model, fit_s = common.fit_synthesizer(
        config.dataset,
        rho=config.rho,
        vote=config.vote,
        tau=config.tau,
        policy_name=config.policy,
        seed=config.seed,
    )
    begin = time.perf_counter()
    metrics = common.score_release(config.dataset, model.synthetic_)
    meta = model.ledger_.to_dict()
    metrics.update({"fit_s": fit_s, "eval_s": time.perf_counter() - begin})
    return {
        "ledger": common.ledger_totals(model),
        "metrics": metrics,
        "info": {
            "backend": common.backend_name(),
            "private_rows": meta.get("private_rows"),
            "reach": meta.get("reach"),
            "sigma": meta.get("sigma"),
            "l2_sensitivity": meta.get("l2_sensitivity"),
        },
    }


def run_pilot_config(config: PilotConfig) -> dict[str, Any]:
    """The public pilot of one setting: hard and per-temperature errors on public data."""
    from dpevolve.pe.pilot.run import run_pilot
    from dpevolve.presets import get_preset
    from dpevolve.privacy import Budget, calibrate_gaussian
    from dpevolve.synthesizer import Synthesizer

    private = common.load_table(config.dataset)
    public = common.load_table(config.dataset, "test")
    begin = time.perf_counter()
    result = run_pilot(
        private.schema,
        public.frame,
        len(private.frame),
        calibrate_gaussian(
            get_preset("bfsoft").schedule.rounds,
            Budget.from_args(rho=config.rho, delta=common.DELTA),
        ),
        temperatures=common.TEMPERATURES,
        seeds=(config.seed, config.seed + 1),
        public_init=False,
        fit=Synthesizer.pilot_fit(
            private.schema,
            "bfsoft",
            policy=common.policy(config.dataset, config.policy),
            backend=common.backend(),
        ),
        rounds=get_preset("bfsoft").schedule.rounds,
    )
    seconds = time.perf_counter() - begin
    metrics: dict[str, Any] = {
        "pilot_hard_error": result.hard_error,
        "pilot_best_temperature": result.best_temperature,
        "pilot_soft_wins": result.soft_wins,
        "pilot_s": seconds,
        "public_rows": len(public.frame),
    }
    for tau, err in result.soft_errors.items():
        metrics[f"pilot_soft_error@{tau:g}"] = err
    return {
        "ledger": {"epsilon": 0.0, "delta": 0.0, "rho": 0.0, "note": "public data only"},
        "metrics": metrics,
        "info": {"noise_scale": result.noise_scale, "backend": common.backend_name()},
    }


@dataclass(frozen=True)
class CalibrationConfig:
    """A hard-vote fit under a policy with ``calibration`` ``bound`` or ``exact``."""

    dataset: str
    policy: str
    rho: float
    calibration: str
    seed: int


def run_calibration(config: CalibrationConfig) -> dict[str, Any]:
    """Hard vote with the closed-form bound or the exact per-round calibration (the
    search over protected edges for an argmin change, on the public population)."""
    model, fit_s = common.fit_synthesizer(
        config.dataset,
        rho=config.rho,
        vote="hard",
        policy_name=config.policy,
        seed=config.seed,
        calibration=config.calibration,
    )
    metrics = common.score_release(config.dataset, model.synthetic_)
    events = model.ledger_.to_dict().get("events", [])
    sens = [e.get("sensitivity") for e in events if e.get("sensitivity") is not None]
    metrics.update(
        {
            "fit_s": fit_s,
            "rounds": len(events),
            "rounds_free": sum(1 for x in sens if x == 0),
            "mean_sensitivity": float(np.mean(sens)) if sens else float("nan"),
        }
    )
    return {"ledger": common.ledger_totals(model), "metrics": metrics}


def calibration_configs(profile: str) -> list[CalibrationConfig]:
    """Adult, the two policies whose reach is below the floor, two budgets."""
    seeds = SEEDS[profile]
    rhos = [1e-4, 1e-3] if profile == "quick" else [1e-5, 1e-4, 1e-3, 1e-2]
    return [
        CalibrationConfig("adult5", name, rho, cal, s)
        for name in ("age", "hours-per-week")
        for rho in rhos
        for cal in ("bound", "exact")
        for s in range(seeds)
    ]


def run_budget_or_pilot(config: FitConfig | PilotConfig) -> dict[str, Any]:
    """Dispatch on the configuration type (the pilot study holds both kinds)."""
    if isinstance(config, PilotConfig):
        return run_pilot_config(config)
    return run_fit(config)


# ------------------------------------------------------------------ grids
def budget_configs(profile: str) -> list[FitConfig]:
    return fit_grid(["adult5", "bank5", "xor3"], common.rho_grid(profile), SEEDS[profile])


SWEEP_RHOS = (1e-4, 3e-3)


def sweep_temperatures(profile: str) -> tuple[float, ...]:
    """quick: 5 temperatures (a factor 2 apart, 0.0075 .. 0.12); full: 12, log-spaced
    0.004 .. 0.25, plus the three fixed ones."""
    if profile == "quick":
        return (0.0075, 0.015, 0.03, 0.06, 0.12)
    grid = {float(f"{t:.3g}") for t in np.logspace(np.log10(0.004), np.log10(0.25), 12)}
    return tuple(sorted(grid | set(common.TEMPERATURES)))


def temperature_configs(profile: str) -> list[FitConfig]:
    seeds = {"quick": 2, "full": 10}[profile]
    return fit_grid(["adult5", "bank5"], list(SWEEP_RHOS), seeds, sweep_temperatures(profile))


POLICY_RHO = 1e-4
POLICY_NAMES = ("age", "hours-per-week", "age+workclass", "age+income", "all-five")


def policy_configs(profile: str) -> list[FitConfig]:
    """Hard once per seed (its noise does not depend on the policy), soft per policy."""
    seeds = {"quick": 5, "full": 20}[profile]
    out = [FitConfig("adult5", "age", POLICY_RHO, "hard", None, s) for s in range(seeds)]
    for name in POLICY_NAMES:
        for tau in common.TEMPERATURES:
            for s in range(seeds):
                out.append(FitConfig("adult5", name, POLICY_RHO, "soft", float(tau), s))
    return out


def pilot_rhos(profile: str) -> list[float]:
    rhos = common.rho_grid(profile)
    return rhos if profile == "quick" else sorted({*rhos, 3e-3})


def pilot_configs(profile: str) -> list[FitConfig | PilotConfig]:
    """quick: the age policy x 5 budgets x 3 temperatures = 15 settings; full: 5
    policies x 14 budgets x 3 temperatures = 210 settings (the published grid size)."""
    policies = ["age"] if profile == "quick" else list(POLICY_NAMES)
    rhos = pilot_rhos(profile)
    out: list[FitConfig | PilotConfig] = [
        PilotConfig("adult5", name, float(rho), 0) for name in policies for rho in rhos
    ]
    out += fit_grid(["adult5"], rhos, SEEDS[profile], policies=policies)
    return out


def trainsize_configs(profile: str) -> list[FitConfig]:
    sizes = ["xor3", "xor3-48000"] + ([] if profile == "quick" else ["xor3-100000"])
    rhos = [1e-5, 1e-4, 1e-3] if profile == "quick" else common.rho_grid(profile)
    return fit_grid(sizes, rhos, SEEDS[profile])


STUDIES = [
    Study(
        "bfsoft_budget",
        "hard vs soft (tau 0.015/0.03/0.06) over rho 1e-5..1e-1 on Adult, Bank, XOR-3",
        budget_configs,
        run_fit,
        "bfsoft",
    ),
    Study(
        "bfsoft_temperature",
        "temperature sweep at rho 1e-4 and 3e-3 on Adult and Bank",
        temperature_configs,
        run_fit,
        "bfsoft",
    ),
    Study(
        "bfsoft_policy",
        "five policies on Adult at rho 1e-4, paired against hard (Holm)",
        policy_configs,
        run_fit,
        "bfsoft",
    ),
    Study(
        "bfsoft_pilot",
        "public pilot sign forecasts vs private outcomes; calibration cost",
        pilot_configs,
        run_budget_or_pilot,
        "bfsoft",
    ),
    Study(
        "bfsoft_calibration",
        "hard vote: closed-form sensitivity bound vs exact per-round calibration",
        calibration_configs,
        run_calibration,
        "bfsoft",
    ),
    Study(
        "bfsoft_trainsize",
        "private training size: XOR-3 at 12k, 48k (100k in full)",
        trainsize_configs,
        run_fit,
        "bfsoft",
    ),
]
