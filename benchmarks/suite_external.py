"""The suite's external tools, run in their own virtual environment (not dpevolve's).

SmartNoise Synth's AIM and MST (``smartnoise-synth``, which pins its own ``mbi``, jax and
an older OpenDP) and SDMetrics 0.32 (which needs pandas < 3) do not install beside
dpevolve's pinned packages, so ``benchmarks/suite.py`` calls this script with the
interpreter of ``$SUITE_BASELINES_VENV`` (default ``/work/venvs/baselines``):

    python -m venv /work/venvs/baselines
    /work/venvs/baselines/bin/pip install smartnoise-synth 'sdmetrics==0.32.*'

Commands (files in one work folder written by the harness):

* ``fit SYSTEM EPSILON DELTA SEED DIR``: ``DIR/private.csv`` and ``DIR/columns.json``
  (per column: ``categorical`` with its codes, or ``numeric`` with the declared ``lo``,
  ``hi``, ``nullable``) -> ``DIR/synth.csv``, as many rows as the private table. Numeric
  columns are cut into :data:`BINS` equal-width bins over the declared range (no budget
  spent on bounds) and decoded at bin midpoints, SmartNoise's ``BinTransformer``.
  SmartNoise measures every marginal with sensitivity 1 (add/remove-one adjacency) and
  converts (epsilon, delta) to rho with its ``cdp_rho``; its noise is numpy's (the
  seed is set, so a run repeats).
* ``score DIR``: ``DIR/real.csv``, ``DIR/synth.csv``, ``DIR/columns.json`` -> JSON on
  stdout: the SDMetrics QualityReport (score, column shapes, column pair trends) on the
  tables as they are, and again with every numeric column cut at the real table's decile
  edges (``shared bins``: categorical cells on both sides).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

BINS = 20
"""Equal-width bins of a numeric column for AIM and MST."""


def _read(path: Path, columns: dict[str, Any]) -> pd.DataFrame:
    kinds = {n: (str if c["kind"] == "categorical" else float) for n, c in columns.items()}
    return pd.read_csv(path, dtype=kinds, keep_default_na=True)


def fit(system: str, epsilon: float, delta: float, seed: int, folder: Path) -> None:
    """Fit SmartNoise's ``system`` on the private table and write its sample."""
    from snsynth import Synthesizer
    from snsynth.transform import BinTransformer, LabelTransformer, TableTransformer

    columns = json.loads((folder / "columns.json").read_text())
    private = _read(folder / "private.csv", columns)
    steps = []
    for spec in columns.values():
        if spec["kind"] == "categorical":
            steps.append(LabelTransformer(nullable=False))
        else:
            steps.append(
                BinTransformer(
                    bins=BINS, lower=spec["lo"], upper=spec["hi"], nullable=spec["nullable"]
                )
            )
    np.random.seed(seed)  # noqa: NPY002  (SmartNoise draws from numpy's global generator)
    model = Synthesizer.create(system, epsilon=epsilon, delta=delta)
    model.fit(private, transformer=TableTransformer(steps), preprocessor_eps=0.0)
    synth = model.sample(len(private))
    synth.columns = list(columns)
    synth.to_csv(folder / "synth.csv", index=False)


def _binned(real: pd.DataFrame, synth: pd.DataFrame, numeric: list[str]) -> tuple:
    real, synth = real.copy(), synth.copy()
    for name in numeric:
        edges = np.unique(np.nanquantile(real[name].to_numpy(float), np.linspace(0, 1, 11)))
        inner = edges[1:-1]
        for frame in (real, synth):
            values = frame[name].to_numpy(float)
            codes = np.searchsorted(inner, values, side="right").astype(str).astype(object)
            codes[np.isnan(values)] = "missing"
            frame[name] = codes
    return real, synth


def _quality(real: pd.DataFrame, synth: pd.DataFrame, kinds: dict[str, str]) -> dict[str, float]:
    from sdmetrics.reports.single_table import QualityReport

    metadata = {"columns": {n: {"sdtype": k} for n, k in kinds.items()}}
    report = QualityReport()
    report.generate(real, synth, metadata, verbose=False)
    props = report.get_properties().set_index("Property")["Score"]
    return {
        "score": float(report.get_score()),
        "column_shapes": float(props.get("Column Shapes", np.nan)),
        "pair_trends": float(props.get("Column Pair Trends", np.nan)),
    }


def score(folder: Path) -> dict[str, Any]:
    """SDMetrics' QualityReport as is and on the real table's decile bins."""
    columns = json.loads((folder / "columns.json").read_text())
    real = _read(folder / "real.csv", columns)
    synth = _read(folder / "synth.csv", columns)
    kinds = {
        n: ("categorical" if c["kind"] == "categorical" else "numerical")
        for n, c in columns.items()
    }
    numeric = [n for n, k in kinds.items() if k == "numerical"]
    out = {"sdmetrics": _quality(real, synth, kinds)}
    real_b, synth_b = _binned(real, synth, numeric)
    out["sdmetrics_bins"] = _quality(real_b, synth_b, dict.fromkeys(kinds, "categorical"))
    return out


def main(argv: list[str]) -> None:
    if argv[0] == "fit":
        system, epsilon, delta, seed, folder = argv[1:]
        fit(system, float(epsilon), float(delta), int(seed), Path(folder))
    elif argv[0] == "score":
        print(json.dumps(score(Path(argv[1]))))
    else:
        raise SystemExit(f"unknown command {argv[0]!r} (fit, score)")


if __name__ == "__main__":
    main(sys.argv[1:])
