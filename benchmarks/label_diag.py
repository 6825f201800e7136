"""Which columns teach a classifier trained on the output what the real rows do not
(issue 25, TSTR on small tables), one suite table and seed.

Fits the default engine on the suite's split and schema with seeded noise (the seeds
of ``pair_diag.py``; the rows drawn may differ from the suite's) and prints, for each
column but the label, the suite's TSTR accuracy (HGB) of a classifier trained on that
column alone and on every column but it, both on the output and on the real private
rows. A column whose single-column score on the output falls below the real rows'
while dropping it raises the all-column score carries a relation to the label that the
noise made (session 66, black_politicians: the treatment alone scores 0.659 on either,
every column 0.534-0.583 on the output).

Research only: reads the private part to diagnose; never shipped.

    DPEVOLVE_DATA=... python benchmarks/label_diag.py black_politicians 2
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite_data

from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise
from dpevolve.reporting.tstr import tstr


def accuracy(train: pd.DataFrame, parts: suite_data.Parts, columns: list[str]) -> float:
    """The suite's TSTR accuracy (:func:`~dpevolve.reporting.tstr.tstr`) of a classifier
    trained on ``columns`` of ``train`` and tested on the test part."""
    label = parts.label
    keep = [c for c in parts.schema.columns if c.name in columns or c.name == label]
    schema = Schema(tuple(keep), label=label)
    names = [c.name for c in keep]
    return tstr(train[names], parts.test[names], schema, label).accuracy


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
    every = {k: accuracy(v, parts, columns) for k, v in both.items()}
    out, real = every["output"], every["real"]
    print(f"{table} seed {seed}: all columns, output {out:.3f}, real {real:.3f}")
    print(f"{'column':24s} {'alone out':>9s} {'real':>6s} {'without out':>11s} {'real':>6s}")
    for name in columns:
        rest = [c for c in columns if c != name]
        alone = [accuracy(v, parts, [name]) for v in both.values()]
        without = [accuracy(v, parts, rest) for v in both.values()]
        print(f"{name:24s} {alone[0]:9.3f} {alone[1]:6.3f} {without[0]:11.3f} {without[1]:6.3f}")


if __name__ == "__main__":
    main()
