"""The fidelity benchmark's one evaluator, the same for every system.

* ``tv1``, ``tv2``: mean total variation ``1/2 ||p_S - q_S||_1`` over all 1-way and all
  2-way marginals ``S`` of the real training rows against the synthetic rows, numeric
  columns in the evaluation's 20 equal-width bins over the *declared* range
  (:func:`dpevolve.metrics.marginal_tv`); ``tv_all`` the mean over all
  1- and 2-way sets together.
* ``accuracy`` (TSTR): histogram gradient boosting trained on the synthetic rows,
  tested on held-out real rows (:func:`dpevolve.reporting.tstr.tstr`); ``majority``:
  the accuracy of always predicting the test rows' most frequent class.
* ``distinct``: distinct rows (exact cell values) among the synthetic rows;
  ``distinct_rate``: that count over the distinct rows of a real bootstrap (``n`` rows
  drawn with replacement from the real training rows; the same seed). With ``n``
  output rows, 1.0 means as varied as fresh draws of the real distribution's records;
  ``distinct_binned`` counts rows of evaluation-bin codes instead (numerics in 20 bins),
  so continuous output that is only jittered copies does not count as fresh.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.metrics import bin_codes, marginal_report
from dpevolve.reporting.tstr import tstr


def codes(frame: pd.DataFrame, schema: Schema) -> dict[str, np.ndarray]:
    """Evaluation-bin codes of every column of a validated frame."""
    return {name: bin_codes(frame, schema[name]) for name in schema.names}


def tv_scores(
    real_codes: dict[str, np.ndarray], synth_codes: dict[str, np.ndarray], schema: Schema
) -> dict[str, float]:
    """``tv1``, ``tv2`` and ``tv_all`` (the mean over all 1- and 2-way sets)."""
    names = schema.names
    one = marginal_report(schema, names, 1, real_codes, synth_codes)
    out = {"tv1": one.mean, "tv_all": one.mean, "tv2": float("nan")}
    if len(names) >= 2:
        two = marginal_report(schema, names, 2, real_codes, synth_codes)
        k, pairs = len(names), len(two.per_set)
        out["tv2"] = two.mean
        out["tv_all"] = (k * one.mean + pairs * two.mean) / (k + pairs)
    return out


def distinct_rows(frame: pd.DataFrame) -> int:
    """Number of distinct rows (exact cell values; all columns)."""
    if len(frame) == 0:
        return 0
    return len(frame.drop_duplicates())


def distinct_coded(table: dict[str, np.ndarray]) -> int:
    """Number of distinct rows of a table of integer codes (one array per column)."""
    matrix = np.column_stack(list(table.values()))
    return len(np.unique(matrix, axis=0)) if len(matrix) else 0


def bootstrap(frame: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    """``rows`` real rows drawn with replacement (the real bootstrap of the benchmark)."""
    return frame.sample(n=rows, replace=True, random_state=seed).reset_index(drop=True)


def score(
    train: pd.DataFrame,
    test: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    label: str,
    seed: int,
) -> dict[str, Any]:
    """Every metric of ``synth`` against the real ``train`` / held-out ``test`` rows.

    The distinct-row rate is taken against a real bootstrap of ``len(synth)`` rows
    drawn with ``seed``.
    """
    real, _ = schema.validate(train, on_invalid="error", what="real table")
    fake, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    real_codes, fake_codes = codes(real, schema), codes(fake, schema)
    out: dict[str, Any] = tv_scores(real_codes, fake_codes, schema)
    report = tstr(fake, test, schema, label)
    boot = bootstrap(real, len(fake), seed)
    boot_distinct = distinct_rows(boot)
    boot_binned = distinct_coded(codes(boot, schema))
    out.update(
        {
            "accuracy": report.accuracy,
            "majority": report.baseline_accuracy,
            "rows": len(fake),
            "distinct": distinct_rows(fake),
            "distinct_binned": distinct_coded(fake_codes),
            "bootstrap_distinct": boot_distinct,
            "bootstrap_distinct_binned": boot_binned,
        }
    )
    out["distinct_rate"] = out["distinct"] / boot_distinct if boot_distinct else float("nan")
    out["distinct_binned_rate"] = out["distinct_binned"] / boot_binned if boot_binned else 0.0
    return out
