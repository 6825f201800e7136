"""Per-column summaries of a real and a synthetic table, side by side (docs/math.md §7).

Numeric (and date) columns: mean, quartiles and missing rate; categorical columns: the
shares of their most common values. Both tables must be validated against the schema.
The real side is computed from the private table: the data owner's check only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.columns import MISSING
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.metrics import bin_codes

__all__ = ["TOP_VALUES", "category_shares", "column_summaries", "numeric_summary"]

#: Categories listed per column (the most common in the real table).
TOP_VALUES = 5


def numeric_summary(values: np.ndarray) -> dict[str, float | None]:
    """Mean, quartiles (of the present cells) and the share of missing cells."""
    present = values[~np.isnan(values)]
    missing = 1.0 - len(present) / len(values) if len(values) else 0.0
    if len(present) == 0:
        return {"mean": None, "q25": None, "median": None, "q75": None, "missing": missing}
    q25, median, q75 = np.quantile(present, [0.25, 0.5, 0.75])
    return {
        "mean": float(present.mean()),
        "q25": float(q25),
        "median": float(median),
        "q75": float(q75),
        "missing": missing,
    }


def category_shares(
    real: pd.DataFrame, synthetic: pd.DataFrame, column: CategoricalColumn, top: int = TOP_VALUES
) -> list[dict[str, Any]]:
    """Real and synthetic shares of the ``top`` values most common in the real table,
    then of all other values together (when there are any)."""
    size = len(column.values)
    p = np.bincount(bin_codes(real, column), minlength=size) / max(len(real), 1)
    q = np.bincount(bin_codes(synthetic, column), minlength=size) / max(len(synthetic), 1)
    order = np.argsort(-p, kind="stable")
    rows = []
    for i in order[:top]:
        key = column.keys[int(i)]
        rows.append(
            {"value": "missing" if key == MISSING else key, "real": p[i], "synthetic": q[i]}
        )
    rest = order[top:]
    if len(rest):
        rows.append(
            {
                "value": f"{len(rest)} other values",
                "real": float(p[rest].sum()),
                "synthetic": float(q[rest].sum()),
            }
        )
    return rows


def column_summaries(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema
) -> dict[str, dict[str, Any]]:
    """Every column's summary: ``{"type": "numeric", "real": {...}, "synthetic": {...}}``
    with the statistics of :func:`numeric_summary`, or ``{"type": "categorical",
    "shares": [...]}`` as in :func:`category_shares`. Date columns are numeric in units
    since 1970-01-01 (days or seconds)."""
    out: dict[str, dict[str, Any]] = {}
    for column in schema.columns:
        if isinstance(column, NumericColumn):
            out[column.name] = {
                "type": "numeric",
                "real": numeric_summary(real[column.name].to_numpy(dtype=np.float64)),
                "synthetic": numeric_summary(synthetic[column.name].to_numpy(dtype=np.float64)),
            }
        else:
            out[column.name] = {
                "type": "categorical",
                "shares": category_shares(real, synthetic, column),
            }
    return out
