"""Wide tables from a generator other than :func:`tables.make_wide`, the schema inferred.

Research only (seeded noise, as in ``quality_paired.py``): ``d`` columns, numerics on
several ranges and offsets, categoricals with string codes, tied by a few latent
factors (each column loads on one); the label (``"yes"``/``"no"``) is a logistic of a
quarter of the columns, spread over the table, so a model that leaves a column
unconnected loses its part. The schema is what ``dpevolve schema infer`` proposes on a
public draw of the same generator. Prints one JSON line per run: TSTR, the real model's
accuracy on the same test rows, CPU seconds and peak memory (one run per process for a
run's own peak), the estimator's fits and work (evaluations times measurements, free of
the machine's load), the adaptive rounds, the cliques holding the label and how many of
the label's columns share one with it, and the mean Spearman error over the numeric
pairs (all, and those whose real Spearman is at least 0.3 in size).

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
from dpevolve.engine.loop import default_estimator
from dpevolve.estimate import MarkovRandomField
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise
from dpevolve.reporting.tstr import tstr

LABEL = "outcome"


def _structure(d: int) -> dict[str, np.ndarray]:
    """The table's structure, fixed by ``d``: each column's factor, strength, kind,
    scale, offset, levels and the label's coefficients."""
    shape = np.random.default_rng([d, 99])
    factors = max(2, d // 10)
    out = {
        "load": shape.integers(0, factors, size=d),
        "strength": shape.uniform(0.5, 0.9, size=d),
        "kind": shape.random(d) < 0.5,  # True: numeric
        "scale": shape.choice([1.0, 10.0, 250.0, 4000.0], size=d),
        "offset": shape.choice([0.0, -50.0, 1000.0], size=d),
        "levels": shape.integers(3, 7, size=d),
    }
    used = shape.random(d) < 0.25
    sign = shape.choice([-1.0, 1.0], size=d) * shape.uniform(0.6, 1.2, size=d)
    out["beta"] = np.where(used, sign, 0)
    out["used"] = used
    return out


def _name(j: int, numeric: bool) -> str:
    return f"{'m' if numeric else 'c'}{j}"


def label_columns(d: int) -> set[str]:
    """The columns the label's logistic uses (public: the generator's structure)."""
    s = _structure(d)
    return {_name(int(j), bool(s["kind"][j])) for j in np.flatnonzero(s["used"])}


def make_other(d: int, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows of the ``d``-column table (structure fixed by ``d``, rows by ``seed``)."""
    s = _structure(d)
    load, strength, kind, scale = s["load"], s["strength"], s["kind"], s["scale"]
    offset, levels, used, beta = s["offset"], s["levels"], s["used"], s["beta"]
    factors = max(2, d // 10)
    rng = np.random.default_rng([d, seed, 7])
    z = rng.normal(size=(n, factors))
    latent = strength * z[:, load] + np.sqrt(1 - strength**2) * rng.normal(size=(n, d))
    logit = latent @ beta / np.sqrt(max(1.0, used.sum() / 4))
    y = rng.random(n) < 1.0 / (1.0 + np.exp(-logit))
    data: dict[str, Any] = {}
    for j in range(d):
        if kind[j]:
            data[_name(j, True)] = np.round(offset[j] + scale[j] * latent[:, j], 2)
        else:
            cuts = np.quantile(latent[:, j], np.linspace(0, 1, levels[j] + 1)[1:-1])
            codes = np.searchsorted(cuts, latent[:, j])
            data[_name(j, False)] = np.array([f"k{chr(97 + i)}" for i in range(levels[j])])[codes]
    data[LABEL] = np.where(y, "yes", "no")
    return pd.DataFrame(data)


def rank_errors(real: pd.DataFrame, synth: pd.DataFrame, numeric: list[str]) -> dict[str, float]:
    """Mean |Spearman real - synthetic| over all numeric pairs, and over the pairs whose
    real Spearman is at least 0.3 in size (those sharing a factor)."""
    rho = [f[numeric].rank().corr().to_numpy() for f in (real, synth)]
    upper = np.triu_indices(len(numeric), 1)
    gap = np.abs(rho[0] - rho[1])[upper]
    strong = np.abs(rho[0][upper]) >= 0.3
    return {
        "spearman_error": round(float(gap.mean()), 4),
        "spearman_error_strong": round(float(gap[strong].mean()), 4) if strong.any() else 0.0,
    }


class _Work:
    """The estimator's work in a run, free of the machine's load: fits, and evaluations
    times the measurements each fit reads (a mirror-descent step is linear in them)."""

    def __init__(self) -> None:
        self.fits = 0
        self.work = 0

    def factory(self, domain: Any, total: int, spec: EngineSpec) -> MarkovRandomField:
        model = default_estimator(domain, total, spec)
        assert isinstance(model, MarkovRandomField)
        tally = self

        class Counted(MarkovRandomField):
            def fit(self, measurements: Any) -> MarkovRandomField:
                out = super().fit(measurements)
                tally.fits += 1
                tally.work += self.stats.evaluations * len(measurements)
                return out

        return Counted(domain, total, iterations=model.iterations, tol=model.tol)


def run(d: int, seed: int, options: dict[str, Any], n: int = 20_000) -> dict[str, Any]:
    """One engine run with seeded noise on the ``d``-column table."""
    public = make_other(d, 5_000, 10_000 + seed)
    schema = inferred_schema(public, LABEL)
    train = make_other(d, n, seed)
    test = make_other(d, 10_000, 20_000 + seed)
    train, _ = schema.validate(train, on_invalid="drop", what="train")
    test, _ = schema.validate(test, on_invalid="drop", what="test")
    work = _Work()
    cpu = time.process_time()
    result = fit_engine(
        FrameSource(train, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**options),
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
        estimator=work.factory,
    )
    synth = result.sample(len(train), np.random.default_rng(seed))
    cpu = time.process_time() - cpu
    fake = tstr(synth, test, schema, LABEL)
    real = tstr(train, test, schema, LABEL)
    cliques = result.measurements.cliques()
    covered = {a for c in cliques if len(c) > 1 for a in c}
    with_label = {a for c in cliques if LABEL in c for a in c} - {LABEL}
    used = label_columns(d)
    numeric = [a for a in train.columns if a.startswith("m")]
    return {
        "d": d,
        "seed": seed,
        "extra": options,
        "cpu": round(cpu, 1),
        "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "fits": work.fits,
        "refit_work": work.work,
        "rounds": len({h["round"] for h in result.history if "stage" not in h}),
        "beyond_ones": sum(len(c) > 1 for c in cliques),
        "unconnected": len(schema.names) - len(covered),
        "label_cliques": sum(LABEL in c and len(c) > 1 for c in cliques),
        "used_with_label": len(used & with_label),
        "used": len(used),
        **rank_errors(train, synth, numeric),
        "tstr": round(fake.accuracy, 4),
        "real": round(real.accuracy, 4),
        "majority": round(real.baseline_accuracy, 4),
    }


def main() -> None:
    paired_grid(run, key=int)


if __name__ == "__main__":
    main()
