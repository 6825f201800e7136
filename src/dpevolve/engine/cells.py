"""A numeric column's fine partition, and which of its cells a bin decodes in.

The fine partition (:class:`FineCells`) is public: made from the schema alone. Its
decoding weights are a released fine histogram, clipped (:func:`cell_weights`). Where a
bin's own cells weigh nothing, the bin decodes among cells chosen from where the weights
do show data (:func:`shown_span`, :func:`cells_within`, :func:`nearest_cells`,
:func:`nearest_weighted`), and in a column whose weights lie on its whole numbers, among
those (:func:`whole_atoms`). Post-processing of released values; docs/engine.md,
Decoding values within a bin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: A released fine histogram describes where a column's values lie (its cells above the
#: noise hold at least this share of the ``n`` rows): bins may be placed from it
#: (:mod:`~dpevolve.engine.bins`), and nothing is decoded beyond its cells.
COVER = 0.9

#: A bin of floored cells decodes within the span of the weighted cells widened by this
#: share of it (else at the nearest weighted cell): a thin real tail the noise hides
#: (Adult's ages past 65) keeps the rows the model gives it nearby; a tenth, since the span
#: lies inside the data, puts no value beyond them by more than a tenth of their width.
MARGIN = 0.1


@dataclass(frozen=True)
class FineCells:
    """The fine partition of one numeric column (public: from the schema alone).

    Cells ``0 .. atoms - 1`` are atoms (single values ``lo[i]``); the others are the
    intervals ``[lo[i], hi[i])``, ``bins * per_bin`` of them in order (``per_bin`` in
    each coarse bin, unless the bins are nested in the equal-width partition);
    ``coarse[i]`` is the bin that holds cell ``i``. A nullable column's last cell is the
    missing cell (``coarse`` = the missing bin). On a ``grid`` every cell is an atom: one
    per value.
    """

    lo: np.ndarray
    hi: np.ndarray
    coarse: np.ndarray
    atoms: int
    per_bin: int
    step: float | None
    nullable: bool

    @property
    def size(self) -> int:
        return int(self.lo.size)

    @property
    def values(self) -> int:
        """How many cells hold values (all but a nullable column's missing cell)."""
        return self.size - int(self.nullable)

    @property
    def grid(self) -> bool:
        return self.per_bin == 0

    @property
    def boundaries(self) -> np.ndarray:
        """The sorted boundaries of the intervals, end points included (none on a grid)."""
        stop = self.values
        if self.grid or stop <= self.atoms:
            return np.empty(0)
        return np.append(self.lo[self.atoms : stop], self.hi[stop - 1])


def cell_weights(cells: FineCells, hist: np.ndarray | None) -> np.ndarray:
    """Sampling weight of every fine cell: its clipped noisy count, or its width."""
    if hist is not None:
        return np.clip(np.asarray(hist, dtype=np.float64), 0.0, None)
    width = np.where(np.arange(cells.size) < cells.atoms, 0.0, cells.hi - cells.lo)
    if cells.grid:
        width = np.ones(cells.size)
    return np.nan_to_num(width, nan=1.0)


def shown_span(cells: FineCells, weights: np.ndarray) -> tuple[float, float] | None:
    """The values from the lowest to the highest value cell of positive weight, widened
    by :data:`MARGIN` of their width on each side (``None`` where no cell weighs
    anything)."""
    positive = np.flatnonzero(np.asarray(weights[: cells.values]) > 0)
    if positive.size == 0:
        return None
    low, high = float(np.min(cells.lo[positive])), float(np.max(cells.hi[positive]))
    margin = MARGIN * (high - low)
    return low - margin, high + margin


def cells_within(cells: FineCells, inside: np.ndarray, span: tuple[float, float]) -> np.ndarray:
    """The cells ``inside`` (of one bin) that meet ``span``, else those nearest it."""
    meet = (cells.hi[inside] > span[0]) & (cells.lo[inside] < span[1])
    meet |= (cells.lo[inside] >= span[0]) & (cells.lo[inside] <= span[1])  # atoms
    return inside[meet] if meet.any() else inside[nearest_cells(cells, inside, span)]


def nearest_cells(
    cells: FineCells, inside: np.ndarray, window: tuple[float, float], reach: float = MARGIN
) -> np.ndarray:
    """Which of the cells ``inside`` (a bin wholly past ``window``) lie nearest it: the
    nearest, and those within ``reach`` of the window's width past it."""
    gap = np.maximum(cells.lo[inside] - window[1], 0.0)
    gap = gap + np.maximum(window[0] - cells.hi[inside], 0.0)
    return np.asarray(gap <= gap.min() + reach * (window[1] - window[0]))


def nearest_weighted(cells: FineCells, weights: np.ndarray, centre: float) -> int:
    """The value cell of positive weight nearest to ``centre`` (an atom's distance is to
    its value, an interval's to its nearer end)."""
    index = np.arange(cells.values)
    index = index[weights[index] > 0]
    gap = np.maximum(cells.lo[index] - centre, 0.0) + np.maximum(centre - cells.hi[index], 0.0)
    return int(index[np.argmin(gap)])


def whole_atoms(cells: FineCells, weights: np.ndarray) -> np.ndarray | None:
    """The atoms at whole numbers of a column with ``decimals`` whose weights lie on
    them (at least :data:`COVER` of the weight), else ``None``.

    A bin whose cells weigh nothing draws among these rather than among fractions the
    data do not hold (catholic's mothers' schooling, whole years released with
    ``decimals: 1``: its first bin, 6 to 12 years, 15% of the rows, decoded at
    11.4-11.9, and no row at 11, which holds 8% of the real ones)."""
    if cells.step is None or cells.step >= 1.0 or cells.grid:
        return None
    index = np.arange(cells.atoms)
    values = cells.lo[index]
    whole = index[np.abs(values - np.round(values)) <= 1e-9 * np.maximum(1.0, np.abs(values))]
    total = float(np.sum(weights[: cells.values]))
    if whole.size == 0 or total <= 0 or float(np.sum(weights[whole])) < COVER * total:
        return None
    return whole


__all__ = [
    "COVER",
    "MARGIN",
    "FineCells",
    "cell_weights",
    "cells_within",
    "nearest_cells",
    "nearest_weighted",
    "shown_span",
    "whole_atoms",
]
