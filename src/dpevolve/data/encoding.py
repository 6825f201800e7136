"""Tables <-> arrays (docs/math.md §1).

A table that passed :meth:`Schema.validate` becomes :class:`Records`: numeric columns
scaled by their declared range to ``(x - lo) / R`` in [0, 1], categorical columns as
integer codes into the declared values. Distances, votes and variation all work on
``Records``; only :func:`decode` turns them back into a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema


@dataclass(frozen=True)
class Records:
    """Encoded rows: ``numeric`` (n, K_num) float64 in [0, 1], ``codes`` (n, K_cat) int32."""

    numeric: np.ndarray
    codes: np.ndarray

    def __post_init__(self) -> None:
        if self.numeric.shape[0] != self.codes.shape[0]:
            raise ValueError("numeric and categorical parts must have the same rows")

    def __len__(self) -> int:
        return int(self.numeric.shape[0])

    def take(self, index: np.ndarray | slice) -> Records:
        return Records(self.numeric[index], self.codes[index])

    @staticmethod
    def concat(parts: Sequence[Records]) -> Records:
        return Records(
            np.concatenate([p.numeric for p in parts]), np.concatenate([p.codes for p in parts])
        )

    def equals(self, other: Records) -> bool:
        return bool(
            np.array_equal(self.numeric, other.numeric) and np.array_equal(self.codes, other.codes)
        )


@dataclass(frozen=True)
class Layout:
    """Where each schema column lives inside :class:`Records`."""

    numeric: tuple[NumericColumn, ...]
    categorical: tuple[CategoricalColumn, ...]

    @classmethod
    def of(cls, schema: Schema) -> Layout:
        return cls(
            tuple(c for c in schema.columns if isinstance(c, NumericColumn)),
            tuple(c for c in schema.columns if isinstance(c, CategoricalColumn)),
        )

    @property
    def cardinalities(self) -> np.ndarray:
        return np.array([len(c.values) for c in self.categorical], dtype=np.int64)

    @property
    def integer_mask(self) -> np.ndarray:
        return np.array([c.integer for c in self.numeric], dtype=bool)

    @property
    def nullable_mask(self) -> np.ndarray:
        """Numeric slots that may hold NaN (missing); categorical ones use a category."""
        return np.array([c.nullable for c in self.numeric], dtype=bool)

    @property
    def ranges(self) -> np.ndarray:
        return np.array([c.range for c in self.numeric], dtype=np.float64)


def encode(frame: pd.DataFrame, schema: Schema) -> Records:
    """Encode a validated table (see :meth:`Schema.validate`) into :class:`Records`."""
    layout = Layout.of(schema)
    n = len(frame)
    numeric = np.empty((n, len(layout.numeric)), dtype=np.float64)
    for j, col in enumerate(layout.numeric):
        numeric[:, j] = (frame[col.name].to_numpy(dtype=np.float64) - col.lo) / col.range
    codes = np.empty((n, len(layout.categorical)), dtype=np.int32)
    for j, cat in enumerate(layout.categorical):
        keys = frame[cat.name].astype(str)
        codes[:, j] = pd.Categorical(keys, categories=list(cat.keys)).codes
    if (codes < 0).any():
        raise ValueError("encode() needs a table validated against the schema")
    return Records(numeric, codes)


def decode(records: Records, schema: Schema) -> pd.DataFrame:
    """Records back to a table in schema column order, with declared value types."""
    layout = Layout.of(schema)
    columns: dict[str, np.ndarray | pd.Series] = {}
    num_index = {c.name: j for j, c in enumerate(layout.numeric)}
    cat_index = {c.name: j for j, c in enumerate(layout.categorical)}
    for column in schema.columns:
        if isinstance(column, NumericColumn):
            raw = column.lo + records.numeric[:, num_index[column.name]] * column.range
            raw = np.clip(raw, column.lo, column.hi)
            columns[column.name] = column.format(raw)  # dates, Int64 for nullable integers
        else:
            values = np.array(column.values, dtype=object)
            if column.nullable:
                values[-1] = None  # the reserved missing category decodes to a missing cell
            decoded = values[records.codes[:, cat_index[column.name]]]
            columns[column.name] = pd.Series(decoded).infer_objects().to_numpy()
    return pd.DataFrame(columns)
