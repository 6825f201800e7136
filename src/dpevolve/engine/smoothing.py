"""Decoding weights from a released fine histogram: smoothed against its noise, then floored.

A value is decoded by drawing a fine cell of its bin in proportion to these weights
(:meth:`~dpevolve.engine.discretise.Discretiser.decode`). The released counts carry
noise of scale ``sigma`` in every cell; used as they are, a bin whose values are spread
evenly decodes to a lumpy histogram (cells of 90 records at ``sigma`` 38 weigh from 15
to 165), and one whose values sit in a few cells draws values across all of them.

Post-processing steps of released values answer them:

1. **Smoothing.** The ordered cells (equal intervals, or the values of a grid) are
   averaged with a Gaussian kernel of ``h`` cells, rows normalised, never over an atom (a
   point mass such as "exactly 0" keeps its own count; on a grid, a value the data are
   known to hold: :attr:`~dpevolve.engine.cells.FineCells.known_cells`) and, where the
   intervals differ in width from bin to bin, never across a bin's edge (decoding only
   uses proportions within a bin; counts of unequal cells are not comparable). ``h`` is
   chosen per column from :data:`BANDWIDTHS` by Stein's unbiased risk estimate of a
   linear smoother ``S`` (Stein 1981; Li 1986):
   ``SURE(h) = ||y - S y||^2 + 2 sigma^2 tr(S) - m sigma^2``, so a spike (47% of Adult's
   hours are exactly 40) keeps ``h = 0`` and an even spread is averaged.
   In the tails of moved bins (:mod:`~dpevolve.engine.bins`: the bins cover the central
   range, wide bins on each side hold the rest out to the declared end) the count is
   instead fitted non-decreasing towards the central range, by pool-adjacent-
   violators (Barlow et al. 1972): a tail thins out away from the data, so isolated
   noise far out pools with its empty neighbours and is floored, instead of drawing
   values where there are none.
2. **Floor.** A cell whose smoothed count is at most :data:`DECODE_FLOOR` times its
   noise scale (``sigma ||S_i||_2``) weighs nothing. Otherwise the clipped noise of
   empty cells draws values where there are none, most visibly in a wide tail bin of
   moved bins. A single value among a continuous column's intervals (a declared end,
   0, a whole number) is never smoothed; where its bin's intervals all weigh nothing
   and it lies past the span the weighted intervals show, it weighs only above
   :data:`LONE_POINT` scales (:func:`without_lone_points`): at 2, each of a column's
   17 whole-number atoms passes by chance 2% of the time, and one that passes would
   draw every row of its bin (black_politicians' incomes: the declared end, 16, 2.7
   scales up, drew a tail bin's 277 rows where the data stop at 13.7). Next to intervals that weigh
   something, a point keeps the floor of 2 and takes its share; an atom alone in its
   bin (a value the bins were placed around) decodes its bin's rows whatever it
   weighs.
3. **Support.** Beyond the lowest and the highest cell whose released count passes
   :data:`SUPPORT` noise scales, the counts are fitted non-decreasing towards those
   cells, as in a moved column's tails, and a pooled run weighs something only where
   its mean passes :data:`SUPPORT` times its noise scale ``sigma / sqrt(run)``: noise
   out where the released histogram shows no data pools with its empty neighbours and
   weighs nothing, a thin real tail pools into runs that pass. The run of cells next
   to the sure ones whose total stands out most against its noise
   (:func:`adjacent_run`) keeps its own fit where that passes :data:`SUPPORT`: pooled
   from the far end of a loose range, a thin real tail drowned. A candidate value out
   there (a declared end, 0 or a whole number among intervals, not a value the data
   are known to hold: :attr:`~dpevolve.engine.cells.FineCells.candidates`) has no
   density to pool: it weighs only where its own count passes :data:`SUPPORT`. A bin
   whose cells then all weigh nothing, beyond every cell that weighs something, draws
   from the nearest such cell (:meth:`~dpevolve.engine.discretise.Discretiser.decode`),
   so no value lands far beyond the data.
4. **Known values.** A value the data are known to hold (declared in the schema's
   ``atoms``, or found by the atom release: :attr:`~dpevolve.engine.cells.FineCells.
   known_cells`) weighs at least its own count where that stands :data:`DECODE_FLOOR`
   noise scales out, the bar of any cell. Smoothed with its empty neighbours on a grid,
   or held to the support's bar, it weighed nothing: crime1's quarters employed (step
   0.1, 0 declared; 23% of 1,090 rows at 0, released 303 at noise 85) drew its first
   bin's rows at 0.2, where no row lies. From 3 scales (the bar at which the bins are
   placed, :data:`~dpevolve.engine.mass.KNOWN_THRESHOLD`) to 2: over the scan of
   package tables, values drawn at 4 times their share 224 -> 217, values of 5% drawn
   at a quarter of it 173 -> 171 (crime1, fertil2, loanapp); the suite's runs within
   0.0001.
"""

from __future__ import annotations

from itertools import takewhile

import numpy as np

from dpevolve.engine.cells import FineCells, shown_span

#: Kernel widths tried, in cells (0: the released counts as they are).
BANDWIDTHS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)

#: A bin at either end of a moved column wider than this many median bins is a tail.
TAIL_WIDTH = 2.0

#: Noise scales a released cell must pass to bound the support, and a pooled run
#: beyond it to weigh anything (an empty cell passes 4 by chance about once in 30,000).
SUPPORT = 4.0

#: Noise scales at or below which a point mass past the data the weighted intervals
#: show weighs nothing (:func:`without_lone_points`): black_politicians' declared end
#: of 16 (seed 4) stood 2.7 scales up with no data there, cps91's other incomes of 0,
#: 11% of the wives' rows, stood 3.6 up (seed 0) next to intervals the noise floored.
LONE_POINT = 3.0

#: Noise scales at or below which a (smoothed) cell weighs nothing when decoding
#: (measured with the floor alone: Person Activity with moved bins, tv_all 0.033 -> 0.027).
DECODE_FLOOR = 2.0


def smoothable(cells: FineCells) -> np.ndarray:
    """The cells a kernel may average: the intervals, or on a grid every value but those
    the data are known to hold (a point mass lends its count to no neighbour: bwght's
    parity, 58% of the rows at 1 and none at the declared end 0, lent 0 a weight that
    drew 9% of a run's rows there)."""
    index = np.arange(cells.size)
    keep = ~cells.known_cells if cells.grid else index >= cells.atoms
    if cells.nullable:
        keep[-1] = False  # the missing cell is no point on the axis
    return keep


def smoother(cells: FineCells, h: float) -> np.ndarray:
    """The ``(size, size)`` row-normalised smoothing matrix of width ``h`` cells: a
    Gaussian kernel over the smoothable cells (within each bin where their widths
    differ), the identity elsewhere."""
    size = cells.size
    if h <= 0:
        return np.eye(size)
    keep = smoothable(cells)
    index = np.arange(size, dtype=np.float64)
    inside = keep[:, None] & keep[None, :]
    if not _equal_widths(cells, keep):
        inside &= cells.coarse[:, None] == cells.coarse[None, :]
    kernel = np.where(inside, np.exp(-0.5 * ((index[:, None] - index[None, :]) / h) ** 2), 0.0)
    kernel[np.diag_indices(size)] = 1.0
    return kernel / kernel.sum(axis=1, keepdims=True)


def _equal_widths(cells: FineCells, keep: np.ndarray) -> bool:
    """Whether the smoothable cells are one evenly spaced axis (a grid, or equal
    intervals): then a kernel may reach across bin edges, counts being comparable."""
    if cells.grid:  # the known values kept apart are still on the grid's axis
        values = cells.lo[: cells.values]
        return values.size < 3 or bool(np.allclose(np.diff(values), values[1] - values[0]))
    width = (cells.hi - cells.lo)[keep]
    return width.size == 0 or bool(np.allclose(width, width[0]))


def monotone(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The non-decreasing least-squares fit of ``values`` (pool-adjacent-violators) and,
    per entry, the size of the pool it was averaged in."""
    means: list[float] = []
    sizes: list[int] = []
    for v in np.asarray(values, dtype=np.float64):
        means.append(float(v))
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            size = sizes[-2] + sizes[-1]
            means[-2] = (means[-2] * sizes[-2] + means[-1] * sizes[-1]) / size
            sizes[-2] = size
            means.pop()
            sizes.pop()
    return np.repeat(means, sizes), np.repeat(sizes, sizes).astype(np.float64)


def monotone_apart(values: np.ndarray, sure: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`monotone` over each run of ``values`` between the ``sure`` entries, which
    keep their own value (a pool of one): a tail thins out away from the data, but a
    cell that stands out on its own is data, and pooled with the empty cells between
    it and the body it would weigh nothing (a census table's population density, one
    value per area: a far area's 441 rows stood 4.3 noise scales out in a moved
    column's tail bin, were pooled away, and its bin's rows spread across the bin,
    1% of all rows past the data)."""
    values = np.asarray(values, dtype=np.float64)
    fit, pooled = values.copy(), np.ones(values.size)
    cuts = np.flatnonzero(np.asarray(sure, dtype=bool))
    for start, stop in zip(np.r_[0, cuts + 1], np.r_[cuts, values.size], strict=True):
        if stop > start:
            fit[start:stop], pooled[start:stop] = monotone(values[start:stop])
    return fit, pooled


def _tail_cells(cells: FineCells) -> list[np.ndarray]:
    """The smoothable cells of each tail, ordered towards the centre: the bins at either
    end wider than :data:`TAIL_WIDTH` times the median bin (a moved column's tail bin,
    and the wide bins it was split into)."""
    keep = smoothable(cells)
    index = np.arange(cells.size)
    bins = np.unique(cells.coarse[keep])
    extent = np.array(
        [np.ptp(np.r_[cells.lo[keep & (cells.coarse == b)], cells.hi[keep & (cells.coarse == b)]])
         for b in bins]
    )  # fmt: skip
    wide = extent > TAIL_WIDTH * np.median(extent)
    out = []
    for order in (range(bins.size), range(bins.size - 1, -1, -1)):
        run = list(takewhile(lambda k: bool(wide[k]), order))
        if run and len(run) < bins.size:
            tail = index[keep & np.isin(cells.coarse, bins[run])]
            out.append(tail if run[0] == 0 else tail[::-1])
    return out


def sure(noisy: np.ndarray, sigma: float, matrix: np.ndarray) -> float:
    """Stein's unbiased estimate of ``E||S y - x||^2`` for ``y = x + N(0, sigma^2 I)``."""
    residual = noisy - matrix @ noisy
    return float(residual @ residual + 2.0 * sigma**2 * np.trace(matrix) - noisy.size * sigma**2)


def shown_known(cells: FineCells, noisy: np.ndarray, sigma: float) -> np.ndarray:
    """Per fine cell, whether it is a value the data are known to hold whose released
    count ``noisy`` (noise scale ``sigma``) stands :data:`DECODE_FLOOR` scales out:
    such a value weighs its count (step 4), and its bin is held by the folds
    (:func:`~dpevolve.engine.tails.shown_values`)."""
    return cells.known_cells & (np.asarray(noisy, dtype=np.float64) > DECODE_FLOOR * sigma)


def decode_weights(
    noisy: np.ndarray, sigma: float, cells: FineCells, tails: bool = False
) -> np.ndarray:
    """A released fine histogram as decoding weights (post-processing; module docstring);
    ``tails``: the column's bins were moved, so its wide end bins are tails."""
    counts = np.asarray(noisy, dtype=np.float64)
    if counts.shape != (cells.size,):
        raise ValueError("the fine histogram must have one count per fine cell")
    best = min(BANDWIDTHS, key=lambda h: sure(counts, sigma, smoother(cells, h)))
    matrix = smoother(cells, best)
    smoothed = matrix @ counts
    scale = sigma * np.sqrt((matrix**2).sum(axis=1))
    for tail in _tail_cells(cells) if tails else []:
        fit, pooled = monotone_apart(counts[tail], counts[tail] > SUPPORT * sigma)
        smoothed[tail], scale[tail] = fit, sigma / np.sqrt(pooled)
    floor = np.full(cells.size, DECODE_FLOOR)
    near = np.zeros(cells.size)
    for tail in _outer_cells(cells, counts > SUPPORT * sigma):
        lone = cells.candidates[tail]  # no density to pool: its own count, at the bar
        floor[tail[lone]] = SUPPORT
        tail = tail[~lone]
        if tail.size == 0:
            continue
        fit, pooled = monotone(counts[tail])
        smoothed[tail], scale[tail] = fit, sigma / np.sqrt(pooled)
        floor[tail] = SUPPORT  # out there, a pooled run must stand out as a cell would
        inner = adjacent_run(counts[tail[::-1]], sigma)
        if inner:
            run = tail[::-1][:inner][::-1]  # the run next to the sure cells, outer first
            near[run] = np.clip(monotone(counts[run])[0], 0.0, None)
    weights = np.maximum(np.where(smoothed > floor * scale, smoothed, 0.0), near)
    known = shown_known(cells, counts, sigma)
    weights[known] = np.maximum(weights[known], counts[known])
    return without_lone_points(weights, counts, sigma, cells)


def without_lone_points(
    weights: np.ndarray, counts: np.ndarray, sigma: float, cells: FineCells
) -> np.ndarray:
    """``weights`` less those of the atoms (single values among a continuous column's
    intervals, never smoothed) whose released count stands at most :data:`LONE_POINT`
    noise scales out, that share a bin whose intervals all weigh nothing, and that lie
    past the span the weighted intervals show (:func:`~dpevolve.engine.cells.
    shown_span`): such a point would draw every row of its bin where no data are shown
    (module docstring, floor)."""
    out = np.asarray(weights, dtype=np.float64).copy()
    if cells.grid or cells.atoms == 0:
        return out
    bins = int(cells.coarse[: cells.values].max()) + 1
    intervals = cells.coarse[cells.atoms : cells.values]
    shared = np.bincount(intervals, minlength=bins) > 0
    shown = np.bincount(intervals, weights=out[cells.atoms : cells.values] > 0, minlength=bins) > 0
    span = shown_span(cells, np.where(np.arange(out.size) >= cells.atoms, out, 0.0))
    for atom in range(cells.atoms):
        bin_, value = int(cells.coarse[atom]), float(cells.lo[atom])
        beyond = span is None or not span[0] <= value <= span[1]
        if shared[bin_] and beyond and not shown[bin_] and counts[atom] <= LONE_POINT * sigma:
            out[atom] = 0.0
    return out


def adjacent_run(counts: np.ndarray, sigma: float) -> int:
    """How many of the cells next to the sure ones (``counts`` ordered outwards) a thin
    tail holds: the run from the inside whose total stands out most against its noise
    scale ``sigma sqrt(k)``, where that passes :data:`SUPPORT` (0 if none). Pooled from
    the far end instead, a real tail next to the data drowns in the empty cells of a
    loose declared range (cps91's wages, declared on [0, 500] and held in [0, 79]: every
    cell past the first was floored, every wage decoded within one cell); the longest
    passing run would reach past the tail into empty cells its mass carries."""
    totals = np.cumsum(np.asarray(counts, dtype=np.float64))
    if totals.size == 0:
        return 0
    score = totals / (sigma * np.sqrt(np.arange(1, totals.size + 1)))
    best = int(np.argmax(score))
    return best + 1 if score[best] > SUPPORT else 0


def _outer_cells(cells: FineCells, certain: np.ndarray) -> list[np.ndarray]:
    """The value cells beyond the lowest and the highest ``certain`` cell, each run
    ordered towards the centre (none where no cell is sure)."""
    stop = cells.size - int(cells.nullable)
    order = np.lexsort((np.arange(stop) >= cells.atoms, cells.lo[:stop]))
    marked = np.flatnonzero(certain[order])
    if marked.size == 0:
        return []
    below, above = order[: marked[0]], order[marked[-1] + 1 :][::-1]
    return [run for run in (below, above) if run.size]


__all__ = [
    "BANDWIDTHS",
    "DECODE_FLOOR",
    "LONE_POINT",
    "SUPPORT",
    "adjacent_run",
    "decode_weights",
    "monotone_apart",
    "shown_known",
    "smoothable",
    "smoother",
    "sure",
    "without_lone_points",
]
