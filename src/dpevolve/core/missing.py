"""Distances for schemas with nullable numeric columns (missing cells as NaN).

A missing cell is one more domain value: its per-attribute distance is 0 to another
missing cell and 1 (the maximum) to any present value, so Gower stays in ``[0, 1]`` per
attribute and every reach and sensitivity bound computed from declared ranges still
holds. Categorical columns need nothing here: their missing cells are the reserved
category :data:`~dpevolve.data.schema.MISSING`, and the ordinary tables already give
it distance 1 to every other value.

The fused and GPU backends reproduce these two classes term for term, in the same
order (backends/fused.py, backends/gpu.py), so votes stay bit-identical.
"""

from __future__ import annotations

import numpy as np

from dpevolve.core.distance import Gower, TabPEEmbedding
from dpevolve.data.encoding import Records
from dpevolve.data.schema import Schema


def _missing_term(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|a - b| with NaN -> 0, exactly-one-missing indicator)`` for one attribute."""
    na, nb = np.isnan(a), np.isnan(b)
    differ = np.abs(a[:, None] - b[None, :])
    np.nan_to_num(differ, copy=False, nan=0.0)
    return differ, (na[:, None] ^ nb[None, :])


class NullableGower(Gower):
    """Gower distance where a numeric ``d_k`` of a missing cell is 0 or 1 (see module)."""

    def __init__(self, schema: Schema) -> None:
        super().__init__(schema)
        self.nullable = self.layout.nullable_mask

    def pairwise(self, x: Records, c: Records) -> np.ndarray:
        out = np.zeros((len(x), len(c)), dtype=np.float64)
        for k, w in enumerate(self.numeric_weights):
            if self.nullable[k]:
                differ, one_missing = _missing_term(x.numeric[:, k], c.numeric[:, k])
                out += w * np.where(one_missing, 1.0, differ)
            else:
                out += w * np.abs(x.numeric[:, k, None] - c.numeric[None, :, k])
        for k, table in enumerate(self.tables):
            out += table[x.codes[:, k, None], c.codes[None, :, k]]
        return out

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        kind, k = self._locate(column)
        if kind == "numeric" and (np.isnan(a) or np.isnan(b)):
            same = bool(np.isnan(a) and np.isnan(b))
            return 0.0 if same else float(self.numeric_weights[k])
        return super().edge_length(column, a, b)


class NullableTabPEEmbedding(TabPEEmbedding):
    """Tab-PE's embedding distance; a missing numeric coordinate is 1 from any present
    one and 0 from another missing one (squared terms add as for any coordinate)."""

    def __init__(self, schema: Schema) -> None:
        super().__init__(schema)
        self.nullable = self.layout.nullable_mask

    def squared(self, x: Records, c: Records) -> np.ndarray:
        cols = np.flatnonzero(self.nullable)
        xn, cn = x.numeric.copy(), c.numeric.copy()
        xn[:, cols] = 0.0  # the nullable coordinates are added below, exactly
        cn[:, cols] = 0.0
        out = super().squared(Records(xn, x.codes), Records(cn, c.codes))
        for k in cols:
            differ, one_missing = _missing_term(x.numeric[:, k], c.numeric[:, k])
            out += np.where(one_missing, 1.0, differ**2)
        return out

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        if np.isnan(a) or np.isnan(b):
            return 0.0 if bool(np.isnan(a) and np.isnan(b)) else 1.0
        return super().edge_length(column, a, b)


def nullable_distance(name: str, schema: Schema) -> Gower | TabPEEmbedding:
    """The missing-aware version of distance ``name`` (``gower`` or ``tabpe``)."""
    return NullableGower(schema) if name == "gower" else NullableTabPEEmbedding(schema)
