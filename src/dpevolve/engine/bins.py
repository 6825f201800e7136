"""Where the numeric bins go when a column's declared range is loose.

Equal-width bins over a declared range far wider than the data (Person Activity's
coordinates are declared on [-10, 10] and lie in about [0, 5]) leave the model a handful
of occupied bins. One rule (:func:`loose_edges`) moves them over the column's central
range where that range spans at most :data:`LOOSE` of the declared one; its quantiles
come either from a public table (:func:`dpevolve.engine.public.public_edges`) or from
the noisy fine histograms the engine releases before any marginal, read as masses
through their noise (:func:`~dpevolve.engine.mass.released_mass`; :func:`released_edges`,
``EngineSpec.adaptive_bins``). Both are free: public facts, or post-processing of
released values. See docs/engine.md, Bins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from itertools import pairwise

import numpy as np

from dpevolve.data.atoms import ATOM_SHARE, spikes
from dpevolve.data.schema import NumericColumn
from dpevolve.engine.boundaries import round_edges
from dpevolve.engine.cells import FineCells
from dpevolve.engine.discretise import Discretiser, atom_tolerance
from dpevolve.engine.mass import KNOWN_THRESHOLD, THRESHOLD, released_mass, standing
from dpevolve.measurements import Measurement

#: At least this share of a column's bins may be atoms' own bins (more where the atoms
#: hold most of the rows: :func:`atom_bins`).
ATOM_BINS = 0.25

#: Equal-width bins are crowded, and the bins go to the quantiles instead, where one
#: of them holds more than this share of the values other than the atoms.
CROWDED = 0.25

#: Tail probability outside the central range (:func:`loose_edges`).
TAIL = 0.005

#: Bins move only where the central range spans at most this fraction of the declared
#: range (a looser declared range wastes equal-width bins).
LOOSE = 0.5


#: A moved column's end bins decode within the span of the fine cells holding mass
#: (:func:`released_support`) widened by this share of its width on each side: the
#: rows no cell shows lie beyond it at a reach the noise hides (catholic's parents'
#: years of schooling, read in [10.7, 14.2], reach 8 and 18).
REACH = 0.5

#: A bin edge placed this many fine boundaries from a round one (0, or a multiple of
#: a power of ten: :func:`round_points`) moves onto it. A sign or a round threshold is
#: where many rules change: the XOR of features N(50, 10) and N(0, 1) declared on
#: [-4, 200], cut at 50 and 0, had its bin edges at 48.7 and at -0.02.
ROUND_EDGE_REACH = 1


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
    step = column.step
    protected = atom_edges(column, atoms)
    a, b = (float(v) for v in quantile(np.array([TAIL, 1.0 - TAIL])))
    if not b > a:  # a constant column (or atoms only): equal width around the atoms
        if not protected:
            return None
        a, b = lo, hi
        inner = round_edges(lo, hi, bins, step)[1:-1]
    else:
        loose = (b - a) <= LOOSE * (hi - lo)
        inner = np.linspace(a, b, bins - 1) if loose else np.linspace(lo, hi, bins + 1)[1:-1]
        crowded = _largest_share(quantile, np.concatenate([[lo], inner, [hi]])) > CROWDED
        inner = inner if loose else round_edges(lo, hi, bins, step)[1:-1]
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
    return _filled(points, bins + 1, a, b, grid, quantile(np.linspace(0.0005, 0.9995, 1000)))


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
    step = column.step
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
    points: np.ndarray,
    size: int,
    a: float,
    b: float,
    grid: np.ndarray | None = None,
    sample: np.ndarray | None = None,
) -> np.ndarray | None:
    """Sorted distinct ``points`` (at most ``size``) grown to ``size`` by splitting gaps
    (``None`` when too few can be split: a gap is split at a ``grid`` point strictly
    inside it when one is given). The gap holding most of ``sample`` (the values' quantiles
    at even steps) is split at the point nearest their median; once no gap that can be
    split holds any, the one whose point nearest the central range ``[a, b]`` lies
    nearest it is split there (inside the range: the widest, at its middle), one side
    after the other as the points move out. So the bins go
    where the data are, and where a heavy fine cell cannot be split, next to it (where
    a thin tail the noise hides lies) rather than out in a loose range's empty end,
    whose bins the model fills with noise."""
    edges = [float(p) for p in points]
    values = np.empty(0) if sample is None else np.sort(np.asarray(sample, dtype=float))
    while len(edges) < size:
        best: tuple[float, float, float] | None = None
        cut = 0.0
        last = len(edges) - 2
        for k, (x, y) in enumerate(pairwise(edges)):
            held = values[((values >= x) | (k == 0)) & ((values < y) | (k == last))]
            target = x if x >= b else y if y <= a else 0.5 * (x + y)
            point = _inside(x, y, float(np.median(held)) if held.size else target, grid)
            if point is None:
                continue
            key = (float(held.size), -max(a - point, point - b, 0.0), y - x)
            if best is None or key > best:
                best, cut = key, point
        if best is None:
            return None
        edges = sorted([*edges, cut])
    return np.asarray(edges, dtype=float)


def _inside(x: float, y: float, target: float, grid: np.ndarray | None) -> float | None:
    """A point strictly between ``x`` and ``y`` nearest ``target``: ``target`` itself
    (without a grid, where it lies strictly inside, else the midpoint), or the nearest
    grid point."""
    if grid is None:
        return target if x < target < y else 0.5 * (x + y)
    inside = grid[(grid > x) & (grid < y)]
    return None if inside.size == 0 else float(inside[np.argmin(np.abs(inside - target))])


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
    column (those in ``skip`` aside, e.g. placed by a public table): the released counts
    are read as masses (:func:`released_mass`: cells and merged runs of cells that stand
    :data:`THRESHOLD` noise scales above zero, the rest of the ``n`` rows, public under
    replace-one, spread evenly over the cells left); single values of the fine partition
    (declared ends, 0, every value of a grid) whose count is at least :data:`ATOM_SHARE`
    of the rows are atoms (:func:`released_atoms`), and so is every atom the schema
    declares (:func:`declared_atoms`); the other masses give a histogram
    quantile (intervals uniform) and :func:`loose_edges` places the bins on the fine
    partition's boundaries, so that every released fine cell lies inside one bin
    (``Discretiser(..., nested=...)``). Columns without atoms whose bins serve as they
    are (a tight range, values spread over it, or mass the noise hides) keep their
    equal-width bins (absent from the result). ``known``: atoms of the fine partition
    found by another release (:func:`dpevolve.engine.atoms.release_atoms`, largest
    first); they take the first of the atoms' bins, the declared atoms the last.
    """
    out: dict[str, np.ndarray] = {}
    bins = discretiser.bins
    for column in discretiser.numeric:
        if column.name in skip or column.name not in released or column.name in discretiser.valued:
            continue  # placed by a public table, not released, or a bin per declared value
        cells = discretiser.fine[column.name]
        measured = released[column.name]
        counts = np.asarray(measured.noisy, dtype=np.float64).ravel()
        mass = released_mass(cells, counts, float(measured.sigma), n)
        heavy = released_atoms(cells, known_weights(cells, counts, float(measured.sigma)), n)
        given = [float(v) for v in (known or {}).get(column.name, ())]
        extra = [v for v, _ in heavy if v not in given]
        declared = declared_atoms(column, cells, counts, given + extra)
        # a given or declared atom the release does not show holds at least the atom share
        unshown = len(given) - (len(heavy) - len(extra)) + len(declared)
        shares = [s for _, s in heavy] + [ATOM_SHARE] * unshown
        atoms = sorted((given + extra + declared)[: atom_bins(bins, shares)])
        rest = mass.copy()
        rest[np.isin(cells.lo, atoms) & (np.arange(cells.size) < cells.atoms)] = 0.0
        quantile = histogram_quantile(cells, rest)  # values only: missing left out
        if quantile is None:
            if not atoms:
                continue
            quantile = _uniform(column)  # the values between atoms: no better guess
        grid = _cuts(cells)
        edges = loose_edges(column, quantile, bins, mode, snapper(grid), grid, atoms)
        if edges is not None:
            out[column.name] = edges
    return out


def released_support(
    discretiser: Discretiser, released: Mapping[str, Measurement], n: int, columns: Collection[str]
) -> dict[str, tuple[float, float]]:
    """Per column of ``columns``, where its values lie as its released fine histogram
    shows them (:func:`released_mass`): from the lowest to the highest cell holding
    mass, widened by :data:`REACH` of that width on each
    side (post-processing; the span a moved column's end bins decode within,
    ``Discretiser(..., support=...)``)."""
    out: dict[str, tuple[float, float]] = {}
    for name in columns:
        cells = discretiser.fine[name]
        measured = released[name]
        mass = released_mass(cells, np.asarray(measured.noisy, dtype=np.float64), measured.sigma, n)
        held = np.flatnonzero(mass[: cells.size - int(cells.nullable)] > 0)
        if held.size:
            low, high = float(cells.lo[held].min()), float(cells.hi[held].max())
            out[name] = (low - REACH * (high - low), high + REACH * (high - low))
    return out


def most_atoms(bins: int) -> int:
    """The most atoms of a column that can have bins of their own among ``bins``: an
    inner atom takes two edges (:func:`atom_edges`), so ``(bins - 1) // 2`` (at least
    the :data:`ATOM_BINS` share)."""
    return max(1, int(ATOM_BINS * bins), (bins - 1) // 2)


def atom_bins(bins: int, shares: Sequence[float] = ()) -> int:
    """At most this many of a column's ``bins`` are atoms' own bins, given the heavy
    values' ``shares`` of the rows: :data:`ATOM_BINS` of them, or more where the atoms
    hold most of the column, as many as leave the values between them bins in
    proportion to their share (at least one), up to :func:`most_atoms`. A column of a
    few values (fair's years married: seven values, each 6-33% of the rows) then keeps
    every value a bin."""
    rest = max(0.0, 1.0 - float(sum(shares)))
    share = bins - max(1, math.ceil(rest * bins))
    return max(1, int(ATOM_BINS * bins), min(most_atoms(bins), share))


def declared_atoms(
    column: NumericColumn, cells: FineCells, counts: np.ndarray, taken: Collection[float]
) -> list[float]:
    """The column's declared atoms (the schema's ``atoms``: public) not in ``taken``,
    the largest released count first (post-processing). Each keeps a bin of its own
    whatever its release shows: at a small table's noise a value holding 40% of the
    rows can stand under the bar, and sharing a bin with the interval beside it, it
    lost its rows to that interval (a state law's share in force, 0 or 1 in 98% of 480
    rows, noise 133 a cell: 11% of the rows drawn at 0 against 42%, 20% over 0.04 ..
    0.09)."""
    count = {float(v): float(c) for v, c in zip(cells.lo[: cells.atoms], counts, strict=False)}
    rest = [float(v) for v in column.atoms if float(v) not in taken]
    return sorted(rest, key=lambda v: -count.get(v, 0.0))


def known_weights(cells: FineCells, counts: np.ndarray, sigma: float) -> np.ndarray:
    """The released ``counts`` that stand out of their noise ``sigma``
    (:func:`~dpevolve.engine.mass.standing`), a known value's from
    :data:`~dpevolve.engine.mass.KNOWN_THRESHOLD` scales (post-processing). injury's
    weekly benefits of 246.84 and 265.04 (6% of 2,855 rows each, declared) stood 3.8
    and 3.9 scales up and lost their bins, and were drawn nowhere."""
    counts = np.asarray(counts, dtype=np.float64)
    out = standing(counts, sigma)
    if cells.grid:
        return out
    return np.where(cells.known_cells & (counts > KNOWN_THRESHOLD * sigma), counts, out)


def released_atoms(cells: FineCells, weights: np.ndarray, n: int) -> list[tuple[float, float]]:
    """The single values of a fine partition (its atoms) whose released, thresholded
    count is at least :data:`ATOM_SHARE` of ``n`` and, on a grid, a spike
    (:func:`spikes`), with their shares of ``n``: largest first."""
    counts = np.asarray(weights[: cells.atoms], dtype=np.float64)
    heavy = counts >= ATOM_SHARE * n
    if cells.grid:
        heavy &= spikes(counts)
    index = np.flatnonzero(heavy)
    index = index[np.argsort(-counts[index], kind="stable")]
    return [(float(cells.lo[i]), float(counts[i]) / n) for i in index]


def _uniform(column: NumericColumn) -> Callable[[np.ndarray], np.ndarray]:
    def quantile(q: np.ndarray) -> np.ndarray:
        return float(column.lo) + np.asarray(q, dtype=float) * float(column.range)

    return quantile


def _cuts(cells: FineCells) -> np.ndarray:
    """Where a bin edge may go: the boundaries of the fine intervals, or on a grid the
    points half-way between neighbouring values (a bin between two of them would hold
    none)."""
    if not cells.grid:
        return cells.boundaries
    values = np.sort(cells.lo[: cells.atoms])
    return 0.5 * (values[1:] + values[:-1])


def snapper(grid: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Inner edges to the nearest point of ``grid`` (sorted); an edge within
    :data:`ROUND_EDGE_REACH` points of a round point of the grid (0, or a multiple of the
    largest power of ten that fits in the span of the edges) moves onto it."""

    def snap(points: np.ndarray) -> np.ndarray:
        if grid.size == 0:
            return points
        pos = np.searchsorted(grid, points)
        left = np.clip(pos - 1, 0, grid.size - 1)
        right = np.clip(pos, 0, grid.size - 1)
        at = np.where(np.abs(points - grid[left]) <= np.abs(grid[right] - points), left, right)
        rounds = round_points(grid, points)
        for z in rounds:
            # the nearest edge not on a round point already, in grid points: none
            # lies between it and z, so the order stays
            free = np.flatnonzero(~np.isin(at, rounds))
            if free.size == 0 or z in at:
                continue
            near = int(free[np.argmin(np.abs(at[free] - z))])
            k = int(at[near])
            if abs(k - int(z)) <= ROUND_EDGE_REACH and no_wider_cell_between(grid, k, z):
                at[near] = z
        return grid[np.sort(at)]

    return snap


def no_wider_cell_between(grid: np.ndarray, at: int, to: int) -> bool:
    """Whether grid point ``to`` lies no further from point ``at`` than the narrower of
    the cells beside ``at`` (an edge next to a wide cell, at the end of a zoom, does
    not jump across it)."""
    sides = np.diff(grid[max(0, at - 1) : at + 2])
    return bool(abs(grid[to] - grid[at]) <= (1.0 + 1e-9) * float(sides.min()))


def round_points(grid: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The indices of the points of ``grid`` that are 0 or a multiple of the largest
    power of ten that fits in the span of ``points`` (public: the grid and the edges)."""
    points = np.asarray(points, dtype=np.float64)
    width = float(points.max() - points.min()) if points.size else 0.0
    if not width > 0:
        return np.flatnonzero(grid == 0.0)
    unit = 10.0 ** math.floor(math.log10(width))
    with np.errstate(over="ignore", invalid="ignore"):  # a vanishing span: no multiple
        ratio = grid / unit
        return np.flatnonzero((grid == 0.0) | (np.abs(ratio - np.round(ratio)) < 1e-9))


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
    "CROWDED",
    "LOOSE",
    "REACH",
    "ROUND_EDGE_REACH",
    "TAIL",
    "THRESHOLD",
    "atom_bins",
    "atom_edges",
    "declared_atoms",
    "histogram_quantile",
    "known_weights",
    "loose_edges",
    "most_atoms",
    "no_wider_cell_between",
    "released_atoms",
    "released_edges",
    "released_support",
    "round_points",
    "snapper",
]
