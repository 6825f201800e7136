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

from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import pairwise

import numpy as np

from dpevolve.data.schema import NumericColumn
from dpevolve.engine.discretise import (
    COVER,
    Discretiser,
    FineCells,
    atom_tolerance,
    value_step,
)
from dpevolve.measurements import Measurement

#: A value holding at least this share of the rows is an atom, a bin of its own
#: (:func:`released_atoms`): a rule such as "any expense exactly when spend > 0" then
#: shows in a 2-way marginal. The evaluation calls a value an atom from 5% up.
ATOM_SHARE = 0.05

#: A value of an integer (or ``decimals``) column is an atom only where its count is
#: more than this many times the mean of its neighbours' (:func:`spikes`): the first
#: value of an even run, next to empty ones, is not.
SPIKE = 3.0

#: At most this share of a column's bins are atoms' own bins.
ATOM_BINS = 0.25

#: Equal-width bins are crowded, and the bins go to the quantiles instead, where one
#: of them holds more than this share of the values other than the atoms.
CROWDED = 0.25

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


def loose_edges(
    column: NumericColumn,
    quantile: Callable[[np.ndarray], np.ndarray],
    bins: int,
    mode: str,
    snap: Callable[[np.ndarray], np.ndarray],
    grid: np.ndarray | None,
    atoms: Sequence[float] = (),
) -> np.ndarray | None:
    """``bins + 1`` edges where the data are, or ``None`` where equal-width bins serve.

    ``quantile`` is the quantile function of the values other than the ``atoms``
    (values holding a large share of the rows, each given a bin of its own:
    :func:`atom_edges`). The central range is ``[quantile(TAIL), quantile(1 - TAIL)]``.
    Where it spans at most :data:`LOOSE` of the declared range ``[lo, hi]``, ``range``
    puts ``bins - 2`` equal-width bins over it and one tail bin on each side out to
    ``lo`` and ``hi``; else the equal-width bins stay. Where those bins are crowded (one
    holds more than :data:`CROWDED` of the values, say a wealth column whose values sit
    in two of 20 bins), or with ``quantile``, the inner edges go to the quantiles
    instead. ``snap`` moves inner edges to where a cut may go; ``grid`` (sorted), when
    given, holds every allowed edge (the boundaries of a finer partition the bins must
    nest). A column keeps exactly ``bins`` bins: repeated edges are dropped and the
    widest bins inside the central range split until there are ``bins`` again (too
    many: the narrowest pairs of bins not an atom's are merged). The one rule for
    public tables (:func:`public_edges`) and released fine histograms
    (:func:`released_edges`).
    """
    lo, hi = float(column.lo), float(column.hi)
    protected = atom_edges(column, atoms)
    a, b = (float(v) for v in quantile(np.array([TAIL, 1.0 - TAIL])))
    if not b > a:  # a constant column (or atoms only): equal width around the atoms
        if not protected:
            return None
        a, b = lo, hi
        inner = np.linspace(lo, hi, bins + 1)[1:-1]
    else:
        loose = (b - a) <= LOOSE * (hi - lo)
        inner = np.linspace(a, b, bins - 1) if loose else np.linspace(lo, hi, bins + 1)[1:-1]
        crowded = _largest_share(quantile, np.concatenate([[lo], inner, [hi]])) > CROWDED
        if mode == "quantile" or crowded:
            inner = quantile(np.linspace(TAIL, 1.0 - TAIL, bins - 1))
        elif not loose and not protected:
            return None  # a declared range already tight, the values spread over it
        if not loose:
            a, b = lo, hi
    points = np.clip(snap(np.asarray(inner, dtype=float)), lo, hi)
    points = _outside_atoms(points, protected, column)
    points = np.unique(np.concatenate([[lo, hi], points, protected]))
    points = _trimmed(points, bins + 1, set(protected) | {lo, hi})
    return _filled(points, bins + 1, a, b, grid)


def atom_edges(column: NumericColumn, atoms: Sequence[float]) -> list[float]:
    """The edges of the atoms' own bins: ``[v - t, v + t)`` with ``t`` the
    :func:`atom_tolerance` (no value but ``v`` lies inside, and no fine cell is split:
    atoms are boundaries of the fine intervals); an atom at a declared end keeps that
    end as its outer edge."""
    lo, hi = float(column.lo), float(column.hi)
    half = atom_tolerance(column)
    out: set[float] = set()
    for v in atoms:
        out.update(e for e in (float(v) - half, float(v) + half) if lo < e < hi)
    return sorted(out)


def _outside_atoms(
    points: np.ndarray, protected: Sequence[float], column: NumericColumn
) -> np.ndarray:
    """Inner points with those near an atom's bin left out: within twice the tolerance,
    or half a value step (a cut half-way to an atom's neighbour would leave a bin that
    holds no value)."""
    if not protected:
        return points
    step = value_step(column)
    near = max(2.0 * atom_tolerance(column), 0.5005 * step if step is not None else 0.0)
    edges = np.asarray(protected)
    gap = np.abs(points[:, None] - edges[None, :]).min(axis=1)
    return points[gap > near]


def _largest_share(quantile: Callable[[np.ndarray], np.ndarray], edges: np.ndarray) -> float:
    """The largest share of the values (given by their quantile function) in one bin."""
    values = quantile(np.linspace(0.0005, 0.9995, 1000))
    codes = np.searchsorted(edges[1:-1], values, side="right")
    return float(np.bincount(codes, minlength=edges.size - 1).max()) / values.size


def _trimmed(points: np.ndarray, size: int, keep: set[float]) -> np.ndarray:
    """At most ``size`` sorted points: while too many, the point not in ``keep`` whose
    two neighbours lie closest together is dropped (the narrowest pair of bins merged)."""
    edges = [float(p) for p in points]
    while len(edges) > size:
        spans = [
            edges[i + 1] - edges[i - 1] if edges[i] not in keep else np.inf
            for i in range(1, len(edges) - 1)
        ]
        if not np.isfinite(min(spans)):
            break
        del edges[1 + int(np.argmin(spans))]
    return np.asarray(edges, dtype=float)


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
    known: Mapping[str, Sequence[float]] | None = None,
) -> dict[str, np.ndarray]:
    """Bin edges of the numeric columns from their released fine histograms.

    A function of public inputs (the schema, through ``discretiser``'s fine partition)
    and released values only, so free post-processing: no private record is read. Per
    column (those in ``skip`` aside, e.g. placed by a public table): the noisy counts
    below :data:`THRESHOLD` times their noise scale count as zero; single values of the
    fine partition (declared ends, 0, every value of a grid) whose count is at least
    :data:`ATOM_SHARE` of the ``n`` rows (public under replace-one) are atoms
    (:func:`released_atoms`); where the kept counts hold at least :data:`COVER` of the
    rows, the others give a histogram quantile (intervals uniform) and
    :func:`loose_edges` places the bins on the fine partition's boundaries, so that
    every released fine cell lies inside one bin (``Discretiser(..., nested=...)``).
    Columns without atoms whose bins serve as they are (a tight range, values spread
    over it, or mass the noise hides) keep their equal-width bins (absent from the
    result). ``known``: atoms of the fine partition found by another release
    (:func:`dpevolve.engine.atoms.release_atoms`, largest first); they take the first
    of the atoms' bins.
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
        most = max(1, int(ATOM_BINS * bins))
        given = [float(v) for v in (known or {}).get(column.name, ())]
        extra = [v for v in released_atoms(cells, weights, n, most) if v not in given]
        atoms = sorted((given + extra)[:most])
        rest = weights.copy()
        rest[np.isin(cells.lo, atoms) & (np.arange(cells.size) < cells.atoms)] = 0.0
        quantile = histogram_quantile(cells, rest)  # values only: missing left out
        if weights.sum() < COVER * n or quantile is None:  # a missing cell's rows count
            if not atoms:
                continue
            quantile = _uniform(column)  # the values between atoms: no better guess
        grid = None if cells.grid else cells.boundaries
        step = cells.step if cells.grid else None
        edges = loose_edges(column, quantile, bins, mode, _snapper(grid, step), grid, atoms)
        if edges is not None:
            out[column.name] = edges
    return out


def released_atoms(cells: FineCells, weights: np.ndarray, n: int, most: int) -> list[float]:
    """The single values of a fine partition (its atoms) whose released, thresholded
    count is at least :data:`ATOM_SHARE` of ``n`` and, on a grid, a spike
    (:func:`spikes`): the ``most`` largest, sorted."""
    counts = np.asarray(weights[: cells.atoms], dtype=np.float64)
    heavy = counts >= ATOM_SHARE * n
    if cells.grid:
        heavy &= spikes(counts)
    index = np.flatnonzero(heavy)
    index = index[np.argsort(-counts[index], kind="stable")][:most]
    return sorted(float(cells.lo[i]) for i in index)


def spikes(counts: np.ndarray, reach: int = 2) -> np.ndarray:
    """Which of consecutive values' counts stand out: more than :data:`SPIKE` times the
    mean count of the ``reach`` values on either side (an even run of values, say
    a uniform count from 40 to 50, has no atom: its bins already hold it)."""
    c = np.asarray(counts, dtype=np.float64)
    padded = np.pad(c, reach)
    window = np.convolve(padded, np.ones(2 * reach + 1), mode="valid") - c
    return c > SPIKE * window / (2 * reach)


def _uniform(column: NumericColumn) -> Callable[[np.ndarray], np.ndarray]:
    def quantile(q: np.ndarray) -> np.ndarray:
        return float(column.lo) + np.asarray(q, dtype=float) * float(column.range)

    return quantile


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
    "ATOM_BINS",
    "ATOM_SHARE",
    "COVER",
    "CROWDED",
    "LOOSE",
    "SPIKE",
    "TAIL",
    "THRESHOLD",
    "atom_edges",
    "histogram_quantile",
    "loose_edges",
    "released_atoms",
    "released_edges",
    "spikes",
]
