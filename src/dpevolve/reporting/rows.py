"""Row-level checks of a synthetic table: distinct, duplicated and copied rows, and the
distance to the closest record (DCR) in the private table (docs/math.md §7).

Distinct and duplicated counts read the synthetic table alone, which is released, so
they may be shared. Copied rows and DCR compare the synthetic rows with the private
ones: they are the data owner's check only and are never differentially private.

All functions take tables already validated against the schema
(:meth:`~dpevolve.data.schema.Schema.validate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.metrics import bin_codes

__all__ = ["DCR_PRIVATE_ROWS", "DCR_ROWS", "RowReport", "distance_to_closest", "row_report"]

#: Synthetic (or held-out) rows whose DCR is measured; a seeded sample beyond this.
DCR_ROWS = 1_000
#: Private rows searched for the closest record; a seeded sample beyond this.
DCR_PRIVATE_ROWS = 20_000
# Distances are computed for this many query rows at a time, against every searched
# private row: the working matrix stays _CHUNK x DCR_PRIVATE_ROWS floats (8 MB).
_CHUNK = 100


@dataclass(frozen=True)
class RowReport:
    """Distinct, duplicated and copied rows of a synthetic table.

    Attributes
    ----------
    rows
        Synthetic rows.
    distinct
        Different rows among them.
    duplicated
        Rows equal to an earlier synthetic row (``rows - distinct``).
    copied
        Synthetic rows equal, in every column, to some private row; ``None`` when the
        private table was not compared.
    """

    rows: int
    distinct: int
    duplicated: int
    copied: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        out: dict[str, Any] = {
            "rows": self.rows,
            "distinct": self.distinct,
            "duplicated": self.duplicated,
        }
        if self.copied is not None:
            out["copied"] = self.copied
        return out


def row_report(
    synthetic: pd.DataFrame, schema: Schema, real: pd.DataFrame | None = None
) -> RowReport:
    """Count distinct and duplicated synthetic rows, and (given ``real``) copied ones.

    Rows are compared on their validated cells: numbers exactly, categories by
    declared value, missing equal to missing.
    """
    synth_keys = _row_hashes(synthetic, schema)
    distinct = len(np.unique(synth_keys))
    copied = None
    if real is not None:
        copied = int(np.isin(synth_keys, _row_hashes(real, schema)).sum())
    return RowReport(len(synthetic), distinct, len(synthetic) - distinct, copied)


def match_share(rows: pd.DataFrame, real: pd.DataFrame, schema: Schema) -> float:
    """Share of ``rows`` equal to some row of ``real`` (0 for no rows)."""
    if len(rows) == 0:
        return 0.0
    return float(np.isin(_row_hashes(rows, schema), _row_hashes(real, schema)).mean())


def distance_to_closest(
    queries: pd.DataFrame, private: pd.DataFrame, schema: Schema, random_state: int = 0
) -> np.ndarray:
    """Distance from each query row to its closest private row (DCR).

    The distance is Gower's mean over columns: ``|a - b| / (hi - lo)`` on numeric
    columns (a missing cell is 0 from a missing cell and 1 from any number) and 0/1 on
    categorical ones, so it lies in ``[0, 1]``; 0 is an exact copy. At most
    :data:`DCR_ROWS` queries and :data:`DCR_PRIVATE_ROWS` private rows are used (a
    seeded sample of each beyond that), so memory stays bounded for any table.

    Returns
    -------
    numpy.ndarray
        One distance per (sampled) query row.
    """
    rng = np.random.default_rng(random_state)
    q_num, q_cat = _encoded(_sample(queries, DCR_ROWS, rng), schema)
    p_num, p_cat = _encoded(_sample(private, DCR_PRIVATE_ROWS, rng), schema)
    # float32 is plenty for distances in [0, 1] and halves the memory traffic.
    q_num, p_num = q_num.astype(np.float32), p_num.astype(np.float32)
    gaps = [bool(np.isnan(q_num[:, j]).any() or np.isnan(p_num[:, j]).any())
            for j in range(q_num.shape[1])]  # fmt: skip
    out = np.empty(len(q_num), dtype=np.float64)
    width = q_num.shape[1] + q_cat.shape[1]
    for start in range(0, len(q_num), _CHUNK):
        stop = start + _CHUNK
        total = np.zeros((len(q_num[start:stop]), len(p_num)), dtype=np.float32)
        for j in range(q_num.shape[1]):
            diff = np.abs(q_num[start:stop, j, None] - p_num[None, :, j])
            if gaps[j]:  # missing vs missing is 0, missing vs a number is 1
                q_nan = np.isnan(q_num[start:stop, j, None])
                p_nan = np.isnan(p_num[None, :, j])
                diff = np.where(q_nan | p_nan, (q_nan != p_nan).astype(np.float32), diff)
            total += diff
        for j in range(q_cat.shape[1]):
            total += q_cat[start:stop, j, None] != p_cat[None, :, j]
        out[start:stop] = total.min(axis=1) / max(width, 1)
    return out


def _sample(frame: pd.DataFrame, limit: int, rng: np.random.Generator) -> pd.DataFrame:
    if len(frame) <= limit:
        return frame
    return frame.iloc[np.sort(rng.choice(len(frame), size=limit, replace=False))]


def _encoded(frame: pd.DataFrame, schema: Schema) -> tuple[np.ndarray, np.ndarray]:
    """Numeric cells scaled to [0, 1] by the declared range, and categorical codes."""
    numeric = [c for c in schema.columns if isinstance(c, NumericColumn)]
    categorical = [c for c in schema.columns if not isinstance(c, NumericColumn)]
    num = np.empty((len(frame), len(numeric)), dtype=np.float64)
    for j, col in enumerate(numeric):
        num[:, j] = (frame[col.name].to_numpy(dtype=np.float64) - col.lo) / col.range
    cat = np.empty((len(frame), len(categorical)), dtype=np.int32)
    for j, cat_col in enumerate(categorical):
        cat[:, j] = bin_codes(frame, cat_col)
    return num, cat


def _row_hashes(frame: pd.DataFrame, schema: Schema) -> np.ndarray:
    # Raw numbers, not the scaled ones: scaling could merge two nearby values.
    keys = pd.DataFrame(
        {
            c.name: frame[c.name].to_numpy(dtype=np.float64)
            if isinstance(c, NumericColumn)
            else bin_codes(frame, c)
            for c in schema.columns
        }
    )
    return np.asarray(pd.util.hash_pandas_object(keys, index=False), dtype=np.uint64)
