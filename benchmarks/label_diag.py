"""Which columns teach a classifier trained on the output what the real rows do not
(issue 25, TSTR on small tables), one suite table and seed.

Reruns the suite's engine as ``suite.py --seeded-noise`` does (the same split, schema
and noise seed) and prints, for the label and each other column, the test accuracy of
the suite's classifier (HGB) trained on that column alone and on every column but it,
both on the output and on the real private rows. A column whose single-column score on
the output falls below the real rows' while dropping it raises the all-column score
carries a relation to the label that the noise made (session 66, black_politicians:
the treatment alone scores 0.659 on either, every column 0.534-0.583 on the output).

Research only: reads the private part to diagnose; never shipped.

    DPEVOLVE_DATA=... python benchmarks/label_diag.py black_politicians 2
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite_data

from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise


def features(frame: pd.DataFrame, label: str, categories: dict[str, list[str]]) -> pd.DataFrame:
    """The columns but the label, each non-numeric one as a category of ``categories``."""
    out = frame.drop(columns=[label]).copy()
    for name, levels in categories.items():
        out[name] = pd.Categorical(out[name].astype(str), categories=levels)
    return out


def accuracy(train: pd.DataFrame, test: pd.DataFrame, label: str, columns: list[str]) -> float:
    """Test accuracy of the suite's classifier trained on ``columns`` of ``train``."""
    kinds = {
        c: sorted(set(train[c].astype(str)) | set(test[c].astype(str)))
        for c in columns
        if not pd.api.types.is_numeric_dtype(train[c])
    }
    x, x_test = features(train, label, kinds)[columns], features(test, label, kinds)[columns]
    model = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=0)
    model.fit(x, train[label].astype(str))
    return float((model.predict(x_test) == test[label].astype(str)).mean())


def main() -> None:
    table, seed = sys.argv[1], int(sys.argv[2])
    parts = suite_data.load(table)
    label = parts.label
    fit = fit_engine(
        FrameSource(parts.private, parts.schema),
        parts.schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(),
        noise=make_noise(7000 + seed),
        rng=np.random.default_rng(seed),
    )
    output = fit.sample(len(parts.private), np.random.default_rng(seed))
    columns = [c for c in parts.private.columns if c != label]
    both = {"output": output, "real": parts.private}
    every = {k: accuracy(v, parts.test, label, columns) for k, v in both.items()}
    out, real = every["output"], every["real"]
    print(f"{table} seed {seed}: all columns, output {out:.3f}, real {real:.3f}")
    print(f"{'column':24s} {'alone out':>9s} {'real':>6s} {'without out':>11s} {'real':>6s}")
    for name in columns:
        rest = [c for c in columns if c != name]
        alone = [accuracy(v, parts.test, label, [name]) for v in both.values()]
        without = [accuracy(v, parts.test, label, rest) for v in both.values()]
        print(f"{name:24s} {alone[0]:9.3f} {alone[1]:6.3f} {without[0]:11.3f} {without[1]:6.3f}")


if __name__ == "__main__":
    main()
