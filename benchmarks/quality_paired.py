"""Paired engine comparisons on the fidelity tables: the same noise draws per seed.

Research only: the noise comes from ``make_noise(seed + 1000)`` (seeded, removable by
anyone holding the seed), so two engine settings run on the same seed share their first
draws and differ by the setting, not by the draw. Prints one JSON line per run.

    DPEVOLVE_DATA=... python benchmarks/quality_paired.py adult,xor3 0,1,2 '{"pair_groups": [5]}'
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_data
import fidelity_metrics
import numpy as np

from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise


def run(key: str, seed: int, options: dict[str, Any], epsilon: float = 1.0) -> dict[str, Any]:
    """One engine run with seeded noise on table ``key``, scored by the fidelity metrics."""
    split = fidelity_data.load(key)
    cpu = time.process_time()
    result = fit_engine(
        FrameSource(split.train, split.schema),
        split.schema,
        Budget(epsilon=epsilon, delta=1e-5),
        EngineSpec(**options),
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
    )
    synth = result.sample(len(split.train), np.random.default_rng(seed))
    cpu = time.process_time() - cpu
    m = fidelity_metrics.score(split.train, split.test, synth, split.schema, split.label, seed)
    return {
        "key": key,
        "seed": seed,
        "extra": options,
        "cpu": round(cpu, 1),
        "rounds": len(result.history),
        "tv_all": round(m["tv_all"], 4),
        "tv2": round(m["tv2"], 4),
        "tstr": round(m["accuracy"], 4),
    }


def paired_grid(
    run: Callable[[Any, int, dict[str, Any]], dict[str, Any]],
    key: Callable[[str], Any] = str,
) -> None:
    """``argv``: KEYS SEEDS [OPTIONS]: every ``run(key, seed, options)`` as a JSON line
    (KEYS and SEEDS comma-separated, OPTIONS a JSON object of ``EngineSpec`` fields)."""
    keys, seeds = [key(k) for k in sys.argv[1].split(",")], [int(s) for s in sys.argv[2].split(",")]
    options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    for k in keys:
        for seed in seeds:
            print(json.dumps(run(k, seed, options)), flush=True)


def main() -> None:
    paired_grid(run)


if __name__ == "__main__":
    main()
