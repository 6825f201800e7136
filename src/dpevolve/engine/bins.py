"""Where the numeric bins go when a column's declared range is loose.

Equal-width bins over a declared range far wider than the data (Person Activity's
coordinates are declared on [-10, 10] and lie in about [0, 5]) leave the model a handful
of occupied bins. One rule (:func:`loose_edges`) moves them over the column's central
range where that range spans at most :data:`LOOSE` of the declared one; its quantiles
come either from a public table (:func:`dpevolve.engine.public.public_edges`) or from
the noisy fine histograms the engine releases before any marginal
(:func:`released_edges`, ``EngineSpec.adaptive_bins``). Both are free: public facts,
or post-processing of released values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from itertools import pairwise

import numpy as np

from dpevolve.data.schema import NumericColumn
from dpevolve.engine.discretise import Discretiser, FineCells
from dpevolve.measurements import Measurement

#: Tail probability outside the central range (:func:`loose_edges`).
TAIL = 0.005

#: Bins move only where the central range spans at most this fraction of the declared
#: range (a looser declared range wastes equal-width bins).
LOOSE = 0.5

#: A released fine cell counts only above this many noise scales (``sigma``): below it
#: an empty cell's clipped noise would spread spurious mass over the whole range (with
#: about a hundred empty cells, 4 sigma is passed by chance once in a few hundred
#: columns).
THRESHOLD = 4.0

#: Bins move only where the cells above the threshold hold at least this share of the
#: ``n`` rows: otherwise the data are spread too thin to tell from the noise (a column
#: filling its declared range at a few noise scales per cell would keep a random subset
#: of cells, whose range could look loose).
COVER = 0.9


def loose_edges(
    column: NumericColumn,
    quantile: Callable[[np.ndarray], np.ndarray],
    bins: int,
    mode: str,
    snap: Callable[[np.ndarray], np.ndarray],
    grid: np.ndarray | None,
) -> np.ndarray | None:
    """``bins + 1`` edges over a column's central range, or ``None`` where the declared
    range is already tight.

    The central range is ``[quantile(TAIL), quantile(1 - TAIL)]``; only where it spans
    at most :data:`LOOSE` of the declared range ``[lo, hi]`` are the bins moved: ``range``
    puts ``bins - 2`` equal-width bins over it (``quantile``: inner edges at the
    quantiles) and one tail bin on each side out to ``lo`` and ``hi``. ``snap`` moves
    inner edges to where a cut may go; ``grid`` (sorted), when given, holds every
    allowed edge (the boundaries of a finer partition the bins must nest). A column
    keeps exactly ``bins`` bins: repeated edges (point masses, a tail already at an end
    point) are dropped and the widest bins inside the central range split until there
    are ``bins`` again. The one rule for public tables (:func:`public_edges`) and
    released fine histograms (:func:`released_edges`).
    """
    lo, hi = float(column.lo), float(column.hi)
    a, b = (float(v) for v in quantile(np.array([TAIL, 1.0 - TAIL])))
    if not b > a or (b - a) > LOOSE * (hi - lo):
        return None  # a constant column, or a declared range already tight
    if mode == "quantile":
        inner = quantile(np.linspace(TAIL, 1.0 - TAIL, bins - 1))
    else:
        inner = np.linspace(a, b, bins - 1)
    points = np.unique(np.clip(np.concatenate([[lo, hi], snap(inner)]), lo, hi))
    return _filled(points, bins + 1, a, b, grid)


def _filled(
    points: np.ndarray, size: int, a: float, b: float, grid: np.ndarray | None = None
) -> np.ndarray | None:
    """Sorted distinct ``points`` (at most ``size``) grown to ``size`` by splitting the
    widest gap (inside ``[a, b]`` while one is there, else anywhere) at its midpoint, or
    with a ``grid`` at the grid point nearest it (gaps holding none are not split;
    ``None`` when too few remain)."""
    edges = [float(p) for p in points]
    while len(edges) < size:
        gaps = np.diff(edges)
        pairs = list(pairwise(edges))
        middle = [_middle(x, y, grid) for x, y in pairs]
        splits = np.array([m is not None for m in middle])
        if not splits.any():
            return None
        inside = np.array([x >= a and y <= b for x, y in pairs]) & splits
        pick = int(np.argmax(np.where(inside if inside.any() else splits, gaps, -1.0)))
        edges.insert(pick + 1, float(middle[pick]))  # type: ignore[arg-type]
    return np.asarray(edges, dtype=float)


def _middle(x: float, y: float, grid: np.ndarray | None) -> float | None:
    """A point strictly between ``x`` and ``y``: the midpoint, or the nearest grid point."""
    mid = 0.5 * (x + y)
    if grid is None:
        return mid
    inside = grid[(grid > x) & (grid < y)]
    return None if inside.size == 0 else float(inside[np.argmin(np.abs(inside - mid))])


def released_edges(
    discretiser: Discretiser,
    released: Mapping[str, Measurement],
    n: int,
    mode: str = "range",
    skip: Collection[str] = (),
) -> dict[str, np.ndarray]:
    """Bin edges of the numeric columns from their released fine histograms.

    A function of public inputs (the schema, through ``discretiser``'s equal-width fine
    partition) and released values only, so free post-processing: no private record
    is read. Per column (those in ``skip`` aside, e.g. placed by a public table): the
    noisy counts below :data:`THRESHOLD` times their noise scale count as zero; where
    the rest hold at least :data:`COVER` of the ``n`` rows (public under replace-one),
    they give a histogram quantile (atoms as point masses, intervals uniform), and
    :func:`loose_edges` places the bins on the fine partition's boundaries, so that
    every released fine cell lies inside one bin (``Discretiser(..., nested=...)``).
    Columns whose declared range is tight, or whose mass the noise hides, keep their
    equal-width bins (absent from the result).
    """
    out: dict[str, np.ndarray] = {}
    bins = discretiser.bins
    for column in discretiser.numeric:
        if column.name in skip or column.name not in released:
            continue
        cells = discretiser.fine[column.name]
        measured = released[column.name]
        counts = np.asarray(measured.noisy, dtype=np.float64).ravel()
        weights = np.where(counts > THRESHOLD * measured.sigma, counts, 0.0)
        if weights.sum() < COVER * n:  # a missing cell's rows count as covered
            continue
        quantile = histogram_quantile(cells, weights)  # values only: missing left out
        if quantile is None:
            continue
        grid = None if cells.grid else cells.boundaries
        step = cells.step if cells.grid else None
        edges = loose_edges(column, quantile, bins, mode, _snapper(grid, step), grid)
        if edges is not None:
            out[column.name] = edges
    return out


def _snapper(grid: np.ndarray | None, step: float | None) -> Callable[[np.ndarray], np.ndarray]:
    """Inner edges to the nearest boundary of ``grid``, or half-way between grid values."""

    def snap(points: np.ndarray) -> np.ndarray:
        if grid is not None:
            pos = np.clip(np.searchsorted(grid, points), 1, grid.size - 1)
            left, right = grid[pos - 1], grid[pos]
            return np.where(points - left <= right - points, left, right)
        if step is not None:
            return (np.floor(points / step) + 0.5) * step
        return points

    return snap


def histogram_quantile(
    cells: FineCells, weights: np.ndarray
) -> Callable[[np.ndarray], np.ndarray] | None:
    """Quantiles of a fine histogram (``None`` when it holds no mass): atoms are point
    masses, intervals uniform; the missing cell is left out."""
    size = cells.size - int(cells.nullable)
    w = np.clip(np.asarray(weights[:size], dtype=np.float64), 0.0, None)
    lo, hi = cells.lo[:size], cells.hi[:size]
    order = np.lexsort((np.arange(size) >= cells.atoms, lo))  # an atom before its interval
    lo, hi, w = lo[order], hi[order], w[order]
    total = float(w.sum())
    if not total > 0:
        return None
    upper = np.cumsum(w)

    def quantile(q: np.ndarray) -> np.ndarray:
        target = np.asarray(q, dtype=np.float64) * total
        k = np.clip(np.searchsorted(upper, target, side="left"), 0, size - 1)
        below = upper[k] - w[k]
        frac = np.where(w[k] > 0, (target - below) / np.where(w[k] > 0, w[k], 1.0), 0.0)
        return lo[k] + np.clip(frac, 0.0, 1.0) * (hi[k] - lo[k])

    return quantile


__all__ = [
    "COVER",
    "LOOSE",
    "TAIL",
    "THRESHOLD",
    "histogram_quantile",
    "loose_edges",
    "released_edges",
]
