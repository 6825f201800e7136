"""Baselines in the same harness, on the same splits and metrics (issue #6, item 4).

For each BF-Soft data set (Adult-5, Bank-5, XOR-3 at 12,000 records) and budget:

* ``nonprivate``: a uniform sample (without replacement) of 512 rows of the private
  training split, the release size of the bfsoft preset. Its error is the floor that
  sampling 512 records alone puts on any 512-record release.
* ``uniform``: 512 records drawn uniformly over the declared schema (PE's random API).
* ``tabpe``: dpevolve's ``tabpe`` preset (Tab-PE's Adult setting: N = 1000, 29 rounds,
  one-hot/L2 distance, hard votes) at the same rho.
* ``mst``: MST on mbi (``experiments.mbi_baselines``), 512 released rows.
* ``aim``: recorded as unavailable (the mbi package does not ship the mechanism).

Scores: the mean error against the training split (``experiments.common``) and, where
the data set has a test split (Adult, XOR-3), TSTR accuracy on it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments import common
from experiments.runner import Study

RELEASE_ROWS = 512


@dataclass(frozen=True)
class BaselineConfig:
    """One baseline release: ``rho`` is None for the budget-free ones."""

    dataset: str
    method: str
    rho: float | None
    seed: int


def baseline_rhos(profile: str) -> list[float]:
    return [1e-4, 1e-3, 1e-2] if profile == "quick" else common.rho_grid(profile)


def baseline_configs(profile: str) -> list[BaselineConfig]:
    seeds = {"quick": 2, "full": 5}[profile]
    out: list[BaselineConfig] = []
    for dataset in ("adult5", "bank5", "xor3"):
        for method in ("nonprivate", "uniform"):
            out += [BaselineConfig(dataset, method, None, s) for s in range(seeds)]
        for method in ("tabpe", "mst"):
            for rho in baseline_rhos(profile):
                out += [BaselineConfig(dataset, method, float(rho), s) for s in range(seeds)]
        out.append(BaselineConfig(dataset, "aim", 1e-3, 0))
    return out


def uniform_rows(schema: Any, rows: int, seed: int) -> Any:
    """``rows`` records uniform over the declared schema (spec §6 random API)."""
    from dpevolve.data.encoding import Layout, decode
    from dpevolve.pe.variation import Variation

    rng = np.random.default_rng(seed)
    return decode(Variation(Layout.of(schema)).random(rows, rng), schema)


def run_baseline(config: BaselineConfig) -> dict[str, Any]:
    """Release by the baseline method, then score like the BF-Soft studies."""
    table = common.load_table(config.dataset)
    ledger: dict[str, Any] = {"epsilon": None, "delta": None, "rho": None}
    begin = time.perf_counter()
    if config.method == "nonprivate":
        synth = table.frame.sample(n=RELEASE_ROWS, random_state=config.seed)
        ledger = {"epsilon": float("inf"), "delta": 1.0, "rho": None, "note": "not private"}
    elif config.method == "uniform":
        synth = uniform_rows(table.schema, RELEASE_ROWS, config.seed)
        ledger = {"epsilon": 0.0, "delta": 0.0, "rho": 0.0, "note": "reads no data"}
    elif config.method == "tabpe":
        model, _ = common.fit_synthesizer(
            config.dataset, rho=config.rho, method="tabpe", seed=config.seed
        )
        synth = model.synthetic_
        ledger = common.ledger_totals(model)
    elif config.method == "mst":
        from experiments import mbi_baselines

        assert config.rho is not None
        synth = mbi_baselines.mst(
            table.frame, table.schema, config.rho, config.seed, rows=RELEASE_ROWS
        )
        ledger = _zcdp_ledger(config.rho)
    elif config.method == "aim":
        from experiments import mbi_baselines

        assert config.rho is not None
        synth = mbi_baselines.aim(
            table.frame, table.schema, config.rho, config.seed, rows=RELEASE_ROWS
        )
        ledger = _zcdp_ledger(config.rho)
    else:
        raise ValueError(f"unknown baseline {config.method!r}")
    release_s = time.perf_counter() - begin
    metrics = common.score_release(config.dataset, synth, tstr=True)
    metrics.update({"release_s": release_s, "rows": len(synth)})
    return {"ledger": ledger, "metrics": metrics}


def _zcdp_ledger(rho: float) -> dict[str, Any]:
    from dpevolve.privacy import epsilon_from_rho

    return {
        "epsilon": epsilon_from_rho(rho, common.DELTA, "cks"),
        "delta": common.DELTA,
        "rho": rho,
        "method": "cks (mixed Gaussian + exponential mechanism)",
    }


STUDIES = [
    Study(
        "baselines",
        "non-private sample, uniform, tabpe preset, MST (mbi), AIM on the BF-Soft data sets",
        baseline_configs,
        run_baseline,
        "baselines",
    ),
]
