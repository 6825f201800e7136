"""Wide tables from a generator other than :func:`tables.make_wide`, the schema inferred.

Research only (seeded noise, as in ``quality_paired.py``): ``d`` columns, numerics on
several ranges and offsets, categoricals with string codes, tied by a few latent
factors (each column loads on one); the label (``"yes"``/``"no"``) is a logistic of a
quarter of the columns, spread over the table, so a model that leaves a column
unconnected loses its part. The schema is what ``dpevolve schema infer`` proposes on a
public draw of the same generator. Prints one JSON line per run: TSTR, the real model's
accuracy on the same test rows, CPU seconds and peak memory.

    DPEVOLVE_DATA=... python benchmarks/wide_other.py 40,100 0,1 '{"tree_share": 0}'
"""

from __future__ import annotations

import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import pandas as pd
from quality_paired import paired_grid

from dpevolve.data.sources import FrameSource
from dpevolve.datasets.suite import inferred_schema
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise
from dpevolve.reporting.tstr import tstr

LABEL = "outcome"


def make_other(d: int, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows of the ``d``-column table (structure fixed by ``d``, rows by ``seed``)."""
    shape = np.random.default_rng([d, 99])
    factors = max(2, d // 10)
    load = shape.integers(0, factors, size=d)
    strength = shape.uniform(0.5, 0.9, size=d)
    kind = shape.random(d) < 0.5  # True: numeric
    scale = shape.choice([1.0, 10.0, 250.0, 4000.0], size=d)
    offset = shape.choice([0.0, -50.0, 1000.0], size=d)
    levels = shape.integers(3, 7, size=d)
    used = shape.random(d) < 0.25
    beta = np.where(used, shape.choice([-1.0, 1.0], size=d) * shape.uniform(0.6, 1.2, size=d), 0)
    rng = np.random.default_rng([d, seed, 7])
    z = rng.normal(size=(n, factors))
    latent = strength * z[:, load] + np.sqrt(1 - strength**2) * rng.normal(size=(n, d))
    logit = latent @ beta / np.sqrt(max(1.0, used.sum() / 4))
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-logit))
    data: dict[str, Any] = {}
    for j in range(d):
        if kind[j]:
            data[f"m{j}"] = np.round(offset[j] + scale[j] * latent[:, j], 2)
        else:
            cuts = np.quantile(latent[:, j], np.linspace(0, 1, levels[j] + 1)[1:-1])
            codes = np.searchsorted(cuts, latent[:, j])
            data[f"c{j}"] = np.array([f"k{chr(97 + i)}" for i in range(levels[j])])[codes]
    data[LABEL] = np.where(y, "yes", "no")
    return pd.DataFrame(data)


def run(d: int, seed: int, options: dict[str, Any], n: int = 20_000) -> dict[str, Any]:
    """One engine run with seeded noise on the ``d``-column table."""
    public = make_other(d, 5_000, 10_000 + seed)
    schema = inferred_schema(public, LABEL)
    train = make_other(d, n, seed)
    test = make_other(d, 10_000, 20_000 + seed)
    train, _ = schema.validate(train, on_invalid="drop", what="train")
    test, _ = schema.validate(test, on_invalid="drop", what="test")
    cpu = time.process_time()
    result = fit_engine(
        FrameSource(train, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**options),
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
    )
    synth = result.sample(len(train), np.random.default_rng(seed))
    cpu = time.process_time() - cpu
    fake = tstr(synth, test, schema, LABEL)
    real = tstr(train, test, schema, LABEL)
    cliques = result.measurements.cliques()
    covered = {a for c in cliques if len(c) > 1 for a in c}
    return {
        "d": d,
        "seed": seed,
        "extra": options,
        "cpu": round(cpu, 1),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "beyond_ones": sum(len(c) > 1 for c in cliques),
        "unconnected": len(schema.names) - len(covered),
        "tstr": round(fake.accuracy, 4),
        "real": round(real.accuracy, 4),
        "majority": round(real.baseline_accuracy, 4),
    }


def main() -> None:
    paired_grid(run, key=int)


if __name__ == "__main__":
    main()
