"""k-way marginal error of a synthetic table against the real one (docs/math.md §7).

For every set ``S`` of ``k`` columns, the total variation distance between the real and
synthetic ``k``-way contingency tables, ``TV_S = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``,
averaged over all sets. Numeric columns are cut into 20 equal-width bins over their
*declared* range.

A measure, not a report: the public pilot's forecast (:mod:`dpevolve.pe.pilot.run`), the
standalone PubMix sampler's cell coding (:mod:`dpevolve.pe.pubmix.discrete`) and the
reports (:mod:`dpevolve.reporting`) all use it, and it uses nothing but the schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError

__all__ = [
    "NUMERIC_BINS",
    "MarginalReport",
    "bin_codes",
    "bin_count",
    "marginal_columns",
    "marginal_report",
    "marginal_tv",
]


NUMERIC_BINS = 20
"""Equal-width bins per numeric column over its declared range (docs/math.md §7)."""


# Running mixed-radix index sizes above this are compacted with np.unique, so that the
# index never overflows int64 and bincount never allocates a huge mostly-empty table.
_MAX_DENSE_CELLS = 1 << 22


# ------------------------------------------------------------------ marginals
@dataclass(frozen=True)
class MarginalReport:
    """k-way marginal total variation between a real and a synthetic table (docs/math.md §7).

    Attributes
    ----------
    k
        Columns per marginal.
    mean
        Mean of ``TV_S`` over all ``k``-sets ``S``.
    max
        Largest ``TV_S``.
    per_set
        ``TV_S`` for every ``k``-set, keyed by its column names.
    """

    k: int
    mean: float
    max: float
    per_set: dict[tuple[str, ...], float]

    @property
    def worst(self) -> tuple[str, ...]:
        """The ``k``-set with the largest TV."""
        return max(self.per_set, key=lambda s: self.per_set[s])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (without the per-set values)."""
        return {
            "mean": self.mean,
            "max": self.max,
            "sets": len(self.per_set),
            # With every TV zero there is no worst set worth naming.
            "worst": list(self.worst) if self.max > 0 else [],
        }


def bin_codes(frame: pd.DataFrame, column: NumericColumn | CategoricalColumn) -> np.ndarray:
    """Cells of one validated column as marginal-table codes (docs/math.md §7).

    Numeric: bin ``i`` of ``NUMERIC_BINS`` is ``[e_i, e_{i+1})`` with
    ``e = linspace(lo, hi, NUMERIC_BINS + 1)``; ``hi`` goes into the last bin.
    Categorical: the index of the value among the declared values.

    Returns
    -------
    numpy.ndarray
        int64 codes in ``[0, bin_count(column))``.
    """
    if isinstance(column, NumericColumn):
        x = frame[column.name].to_numpy(dtype=np.float64)
        # Bins come from explicit edges (not floor((x - lo) / width)) so that a value lying
        # exactly on an edge lands in the same bin as with pandas.cut on the same edges.
        edges = np.linspace(column.lo, column.hi, NUMERIC_BINS + 1)
        codes = np.searchsorted(edges[1:-1], x, side="right")
        codes[np.isnan(x)] = NUMERIC_BINS  # nullable columns: missing is its own bin
        return codes.astype(np.int64, copy=False)
    cells = pd.Categorical(frame[column.name].astype(str), categories=list(column.keys))
    codes = np.asarray(cells.codes, dtype=np.int64)
    if (codes < 0).any():
        raise InputError(f"column '{column.name}' holds values outside the declared set")
    return codes


def bin_count(column: NumericColumn | CategoricalColumn) -> int:
    """Number of marginal-table cells of one column: bins or declared values."""
    if isinstance(column, NumericColumn):
        return NUMERIC_BINS + 1 if column.nullable else NUMERIC_BINS  # + a "missing" bin
    return len(column.values)


def marginal_tv(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    k: int,
    columns: Sequence[str] | None = None,
) -> MarginalReport:
    """k-way marginal total variation distance (docs/math.md §7).

    For every set ``S`` of ``k`` columns, with ``p_S`` and ``q_S`` the real and synthetic
    ``k``-way contingency tables normalised by their row counts,

    ``TV_S = 1/2 * ||p_S - q_S||_1 = 1/2 * sum_cells |p_S(cell) - q_S(cell)|``,

    which lies in ``[0, 1]``. Numeric columns are cut into ``NUMERIC_BINS`` (20)
    equal-width bins over the declared ``[lo, hi]`` (never the data range; ``hi`` goes into
    the last bin); categorical columns count by declared value.

    Parameters
    ----------
    real, synth
        Tables over the schema's columns; both are validated (``on_invalid="error"``).
    schema
        The declared domains.
    k
        Columns per marginal, ``1 <= k <= len(columns)``.
    columns
        Columns to take ``k``-sets from (default: all schema columns, in schema order).

    Returns
    -------
    MarginalReport
        Mean and max of ``TV_S`` over all ``k``-sets, and every ``TV_S``.

    Raises
    ------
    InputError
        A table does not fit the schema, an unknown column, or ``k`` out of range.
    """
    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    names = marginal_columns(schema, columns)
    _check_k(k, len(names))
    real_codes = {n: bin_codes(real_frame, schema[n]) for n in names}
    synth_codes = {n: bin_codes(synth_frame, schema[n]) for n in names}
    return marginal_report(schema, names, k, real_codes, synth_codes)


def marginal_columns(schema: Schema, columns: Sequence[str] | None) -> list[str]:
    """The columns to score: all of ``schema``'s by default, else ``columns``, checked.

    Raises
    ------
    InputError
        ``columns`` is one string, names an unknown column, or names one twice.
    """
    if columns is None:
        return schema.names
    if isinstance(columns, str):
        raise InputError("columns must be a list of column names, not one string")
    names = [str(c) for c in columns]
    for name in names:
        schema[name]  # raises InputError naming the unknown column
    if len(set(names)) != len(names):
        raise InputError("columns lists a column twice")
    return names


def _check_k(k: int, n_columns: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise InputError(f"k must be an integer, got {k!r}")
    if not 1 <= k <= n_columns:
        raise InputError(f"k must be between 1 and the number of columns ({n_columns}), got {k}")


def marginal_report(
    schema: Schema,
    names: Sequence[str],
    k: int,
    real_codes: Mapping[str, np.ndarray],
    synth_codes: Mapping[str, np.ndarray],
    sizes: Mapping[str, int] | None = None,
) -> MarginalReport:
    """Mean and max ``k``-way TV of coded tables; ``sizes`` overrides the cells of a
    column coded otherwise than by :func:`bin_codes` (e.g. at quantile edges)."""
    n_real = len(next(iter(real_codes.values())))
    sizes = {n: (sizes or {}).get(n, bin_count(schema[n])) for n in names}
    per_set: dict[tuple[str, ...], float] = {}
    for subset in combinations(names, k):
        real_index, synth_index, cells = _joint_index(
            [real_codes[n] for n in subset],
            [synth_codes[n] for n in subset],
            [sizes[n] for n in subset],
        )
        p = np.bincount(real_index, minlength=cells) / n_real
        q = np.bincount(synth_index, minlength=cells) / len(synth_index)
        # Rounding can push a disjoint-support TV a hair above 1.
        per_set[subset] = min(1.0, 0.5 * float(np.abs(p - q).sum()))
    values = np.fromiter(per_set.values(), dtype=np.float64, count=len(per_set))
    return MarginalReport(k=k, mean=float(values.mean()), max=float(values.max()), per_set=per_set)


def _joint_index(
    real: Sequence[np.ndarray], synth: Sequence[np.ndarray], sizes: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, int]:
    """Combine per-column codes into one cell index (mixed radix), for both tables.

    Returns the two index arrays and the number of cells they index into.
    """
    real_index = real[0]
    synth_index = synth[0]
    cells = sizes[0]
    for r, s, size in zip(real[1:], synth[1:], sizes[1:], strict=True):
        if cells * size > _MAX_DENSE_CELLS:
            # Relabel the occupied cells 0..m-1 (m <= rows) so the radix stays small.
            both = np.concatenate([real_index, synth_index])
            _, inverse = np.unique(both, return_inverse=True)
            cells = int(inverse.max()) + 1
            real_index, synth_index = inverse[: len(real_index)], inverse[len(real_index) :]
        real_index = real_index * size + r
        synth_index = synth_index * size + s
        cells *= size
    return real_index, synth_index, cells
