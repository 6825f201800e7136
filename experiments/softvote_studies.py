"""BF-Soft that pays: the soft vote with policy-matched sharpening and debiasing.

* ``bfsoft_pays``: Adult-5 and Bank-5 (age protected, threshold 7) at rho = 1e-4, the
  population drawn at random (as in sections 1-2), 5 paired seeds per arm. Arms: the
  hard vote and the soft vote (tau 0.03, 0.06) with the unprotected attributes' Gower
  weights sharpened x10 or x30 (the reach, hence the noise, is unchanged) and the
  released histogram debiased by 3 to 20 Richardson-Lucy steps (post-processing). The
  plain soft vote is section 2's. The full profile adds rho 1e-5 and 1e-3.

Every arm of one seed shares the seed (the population's randomness); the Gaussian noise
is drawn fresh per fit, so the paired differences include noise variation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from dpevolve.pe.specs import VoteSpec
from experiments import common
from experiments.runner import Study

SEEDS = 5
# Arm label -> Synthesizer vote options. Labels are stable: they key the store.
ARMS: dict[str, dict[str, Any]] = {
    "hard": {"vote": "hard"},
    "soft tau=0.03 sharpen=10 debias=3": {
        "vote": VoteSpec(kind="soft", temperature=0.03, sharpen=10.0, debias=3),
    },
    "soft tau=0.06 sharpen=10 debias=3": {
        "vote": VoteSpec(kind="soft", temperature=0.06, sharpen=10.0, debias=3),
    },
    "soft tau=0.03 sharpen=30 debias=3": {
        "vote": VoteSpec(kind="soft", temperature=0.03, sharpen=30.0, debias=3),
    },
    "soft tau=0.06 sharpen=30 debias=5": {
        "vote": VoteSpec(kind="soft", temperature=0.06, sharpen=30.0, debias=5),
    },
    "soft tau=0.06 sharpen=30 debias=20": {
        "vote": VoteSpec(kind="soft", temperature=0.06, sharpen=30.0, debias=20),
    },
}
# The arm the targets are judged on, declared after exploration runs of
# benchmarks/bfsoft_pays.py (other noise draws) and before its rows here were run.
TARGET_ARM = "soft tau=0.06 sharpen=30 debias=20"


@dataclass(frozen=True)
class ArmConfig:
    """One private fit of the bfsoft preset with the vote options of ``ARMS[arm]``."""

    dataset: str
    policy: str
    rho: float
    arm: str
    seed: int


def pays_configs(profile: str) -> list[ArmConfig]:
    """quick: rho 1e-4 on Adult-5 and Bank-5; full: also rho 1e-5 and 1e-3."""
    rhos = [1e-4] if profile == "quick" else [1e-5, 1e-4, 1e-3]
    return [
        ArmConfig(dataset, common.default_policy(dataset), rho, arm, seed)
        for dataset in ("adult5", "bank5")
        for rho in rhos
        for arm in ARMS
        for seed in range(SEEDS)
    ]


def run_arm(config: ArmConfig) -> dict[str, Any]:
    """Fit with the arm's vote options, then score against the private training table."""
    options = dict(ARMS[config.arm])
    model, fit_s = common.fit_synthesizer(
        config.dataset,
        rho=config.rho,
        vote=options.pop("vote"),
        tau=options.pop("temperature", None),
        policy_name=config.policy,
        seed=config.seed,
        **options,
    )
    begin = time.perf_counter()
    metrics = common.score_release(config.dataset, model.synthetic_)
    meta = model.ledger_.to_dict()
    metrics.update({"fit_s": fit_s, "eval_s": time.perf_counter() - begin})
    return {
        "ledger": common.ledger_totals(model),
        "metrics": metrics,
        "info": {
            "reach": meta.get("reach"),
            "sigma": meta.get("sigma"),
            "l2_sensitivity": meta.get("l2_sensitivity"),
            "vote": meta.get("vote"),
        },
    }


STUDIES = [
    Study(
        "bfsoft_pays",
        "soft + sharpening + debiasing vs hard at rho 1e-4 (Adult, Bank; 5 paired seeds)",
        pays_configs,
        run_arm,
        "bfsoft",
    ),
]
