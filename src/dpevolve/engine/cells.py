"""A numeric column's fine partition, and which of its cells a bin decodes in.

The fine partition (:class:`FineCells`) is public: made from the schema alone. Its
decoding weights are a released fine histogram, clipped (:func:`cell_weights`). Where a
bin's own cells weigh nothing, the bin decodes among cells chosen from where the weights
do show data (:func:`shown_span`, :func:`cells_within`, :func:`nearest_cells`,
:func:`nearest_weighted`), and in a column whose weights lie on its whole numbers, among
those (:func:`whole_atoms`). Post-processing of released values; docs/engine.md,
Decoding values within a bin. At an end of the data a bin's rows may thin out past
the cells the weights show (:func:`thinning`), and a held end bin's weights may
overrule the support its column's first histogram showed (:func:`overrules_support`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from dpevolve.data.atoms import ATOM_SHARE

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
    known: frozenset[float] = frozenset()  # atoms the data hold: declared or found

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

    def bin_sums(self, values: np.ndarray, bins: int) -> np.ndarray:
        """Per value bin (of ``bins``), the sum of ``values`` over its value cells (a
        nullable column's missing cell left out)."""
        weights = np.asarray(values, dtype=np.float64)[: self.values]
        return np.bincount(self.coarse[: self.values], weights=weights, minlength=bins)[:bins]

    @property
    def candidates(self) -> np.ndarray:
        """Per cell, whether it is a candidate value: an atom of an interval partition
        that nothing says the data hold (a declared end, 0, a whole number), as opposed
        to one ``known`` (declared in the schema or found by a release). A candidate
        has no density of its own: it weighs only on its own released count."""
        out = np.zeros(self.size, dtype=bool)
        if not self.grid:
            values = self.lo[: self.atoms]
            out[: self.atoms] = ~np.isin(values, np.array(sorted(self.known), dtype=np.float64))
        return out

    @property
    def known_cells(self) -> np.ndarray:
        """Per cell, whether it is a single value the data are known to hold (declared
        in the schema or found by a release): among intervals, an atom that is no
        :attr:`candidates`; on a grid, one of its values so known."""
        known = np.array(sorted(self.known), dtype=np.float64)
        return (np.arange(self.size) < self.atoms) & np.isin(self.lo, known)

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


def even_weights(cells: FineCells, inside: np.ndarray) -> np.ndarray:
    """Weights of the cells ``inside`` at an even density, for a bin whose cells say
    nothing: an interval's width, a value the data hold an interval's mean width, a
    candidate value nothing (all equal where every cell is a single value).
    black_politicians' last bin of median incomes, [4, 16], weighed nothing and decoded
    next to the data, among its interval [4, 4.2) and the whole number 4: equal weights
    had put 5.7% of all rows at exactly 4.0, where the data hold none."""
    width = cell_weights(cells, None)[inside]
    intervals = width > 0
    held = cells.known_cells[inside]
    if not intervals.any():
        return np.ones(inside.size)
    return np.where(held, float(width[intervals].mean()), width)


def known_floor(
    cells: FineCells, inside: np.ndarray, weights: np.ndarray, share: float
) -> np.ndarray:
    """The decoding ``weights`` of the cells ``inside`` a bin holding ``share`` of the
    column's rows, each value the data are known to hold (declared in the schema's
    ``atoms``, which ``schema infer`` lists at
    :data:`~dpevolve.data.atoms.ATOM_SHARE` of the public rows, or found by the atom
    release) lifted to at least that share of the column's rows (up to an equal part
    of the bin), the other cells keeping their proportions of the rest. A known value's
    own fine count is floored as noise below 2 noise scales, where the smoothed density
    of the intervals beside it is not: jtrain3's earnings of 0 (13% of 1,070 rows,
    1.9 scales) were drawn nowhere, every row of their bin [0, 7.5] spread over the
    intervals; bwght's bracketed incomes (6-13% of 555 rows each), in bins whose cells
    weigh nothing, had been drawn at 0-2% each. Returned as shares summing to 1 (the
    weights as given where they sum to nothing). Post-processing of released values and
    the schema; docs/engine.md, Decoding values within a bin."""
    out = np.array(weights, dtype=np.float64)
    held = cells.known_cells[inside]
    total = float(out.sum())
    if total <= 0:
        return out
    out /= total
    if share <= 0 or not held.any() or held.all():
        return out
    least = min(ATOM_SHARE / share, 1.0 / float(held.sum()))  # each one's part of the bin
    out[held] = np.maximum(out[held], least)
    known = float(out[held].sum())
    rest = float(out[~held].sum())
    if known >= 1.0 - 1e-12:
        out[~held] = 0.0
    elif rest > 0:
        out[~held] *= (1.0 - known) / rest
    return out / out.sum()


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


def falling(
    cells: FineCells, inside: np.ndarray, apex: float, foot: float, level: float = 0.0
) -> np.ndarray:
    """Weights of the cells ``inside`` under a density falling linearly from 1 at
    ``apex`` to ``level`` at ``foot`` (either side of it) and zero past them, per unit
    of value: each cell's part between them times the density at that part's middle (a
    grid's value stands for its step; an atom of an interval partition for nothing)."""
    low, high = min(apex, foot), max(apex, foot)
    a = np.clip(cells.lo[inside], low, high)
    b = np.clip(cells.hi[inside], low, high)
    share = np.clip(np.abs(0.5 * (a + b) - apex) / max(high - low, 1e-300), 0.0, 1.0)
    outside = (cells.lo[inside] > high) | (cells.hi[inside] < low)
    height = np.where(outside, 0.0, 1.0 - (1.0 - level) * share)
    point = cells.grid | (np.asarray(inside) < cells.atoms)
    return np.asarray(height * np.where(point, cells.step or 0.0, b - a))


def outer_density(
    cells: FineCells, weights: np.ndarray, inside: np.ndarray, upward: bool
) -> tuple[float, float] | None:
    """The outer boundary of the weighted cell of ``inside`` furthest up (``upward``)
    or down, and its weight per unit of value: a grid value's per its step, its
    boundary half a step out (an atom of an interval partition shows no density and is
    passed over); ``None`` where no such cell weighs anything."""
    points = inside if cells.grid else inside[inside >= cells.atoms]
    shown = points[np.asarray(weights)[points] > 0]
    if shown.size == 0:
        return None
    i = int(shown[np.argmax(cells.hi[shown])] if upward else shown[np.argmin(cells.lo[shown])])
    width = (cells.step or 0.0) if cells.grid else float(cells.hi[i] - cells.lo[i])
    if width <= 0:
        return None
    half = 0.5 * width if cells.grid else 0.0
    edge = float(cells.hi[i]) + half if upward else float(cells.lo[i]) - half
    return edge, float(weights[i]) / width


def overrules_support(
    cells: FineCells, weights: np.ndarray, inside: np.ndarray, within: np.ndarray
) -> bool:
    """Whether a held end bin's weights overrule the support its column's first fine
    histogram showed (``within``: its cells inside that support): they lie mostly past
    it, in one run of weighted cells (injury's ages past 34.5: 42% of the rows, weighted
    over 40-68, had been drawn at 46 and below). A run set apart by a floored gap is
    the noise the support keeps out."""
    if 2.0 * weights[within].sum() >= weights[inside].sum():
        return False
    shown = np.flatnonzero(weights[inside[np.argsort(cells.lo[inside], kind="stable")]] > 0)
    return bool(shown.size) and int(shown[-1] - shown[0]) + 1 == shown.size


def thinning(
    cells: FineCells,
    inside: np.ndarray,
    weights: np.ndarray,
    apex: float,
    foot: float,
    level: float = 0.0,
    whole: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The cells and weights of a bin at an end of the data whose rows thin out from
    ``apex`` to ``foot``, to ``level`` of their density at the apex
    (:func:`~dpevolve.engine.reach.end_reach`,
    :func:`~dpevolve.engine.reach.shown_reach`): where its cells
    show nothing, its cells between them under a falling density, and its values the
    data are known to hold (:attr:`FineCells.known_cells`) wherever they lie, at their
    floor (:func:`known_floor`: ma2019's household weights of 0, 6% of the rows, lie
    past the foot of the first bin's even reach, [9.4, 20]) (in a column whose
    weights lie on its whole numbers, ``whole``: :func:`whole_atoms`, the whole numbers
    between them, each at the density there); else its weights, and past the furthest
    weighted cell the density there falling to zero at ``foot``.

    Whole numbers keep a whole column's tail on them (catholic's fathers' schooling,
    whole years released with ``decimals: 1``: its last bin, [18, 19.3), holds the 99
    fathers with 18 years and had drawn 7 rows at 19.1-19.2, past the data by more than
    a tenth of their range)."""
    upward = foot > apex
    edge = outer_density(cells, weights, inside, upward)
    if edge is None:
        known = inside[cells.known_cells[inside]]  # the data hold them wherever the reach ends
        inside = cells_within(cells, inside, (min(apex, foot), max(apex, foot)))
        points = inside if whole is None else inside[np.isin(inside, whole)]
        inside = np.union1d(points if points.size else inside, known)
        return inside, falling(cells, inside, apex, foot, level)
    start, density = edge  # the weights' own edge (a stored ``apex`` may predate them)
    past = (cells.lo[inside] >= start) if upward else (cells.hi[inside] <= start)
    tail = np.zeros(inside.size)
    tail[past] = density * falling(cells, inside[past], start, foot, level)
    return inside, weights[inside] + tail


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
    if np.any(np.diff(np.round(values[whole])) != 1.0):
        # a few values, not every whole number of a range: those the data hold, not
        # the candidates among them (alcohol's cigarette tax, declared 10, 13, 14, ...,
        # on [0, 45]: its weightless first bin drew 5.6% of a run's rows at the
        # declared end 0, where the data start at 2)
        whole = whole[~cells.candidates[whole]]
    total = float(np.sum(weights[: cells.values]))
    if whole.size == 0 or total <= 0 or float(np.sum(weights[whole])) < COVER * total:
        return None
    return whole


def weighed_beside(
    cells: FineCells,
    weights: np.ndarray,
    held: Collection[int],
    bins: int,
    empty: Collection[int] = (),
) -> set[int]:
    """The bins (of ``bins``) whose cells the decoding ``weights`` show data in, joined
    to one of the ``held`` bins by a run of such bins: the fine histogram, a release of
    its own, shows the data going on past the bins the marginals hold. A run cut off
    from the held bins is left out: the weights' smoothed tails can show a noise bump
    far past the data (cps91's husbands' ages at 82-100). So is a run through a bin of
    ``empty`` (every release combined shows it at or below zero): the smoothing lends
    weight to its cells from both sides, and a noise bump past it joined the data
    (catholic's reading scores, seed 5: two bins released at -68 and -24 between the
    data and an empty end bin released at 184 +- 68; 3.7% of the rows drawn there)."""
    shown = cells.bin_sums(weights, bins) > 0
    shown[[b for b in empty if 0 <= b < bins]] = False
    out: set[int] = set()
    for start in held:
        for step in (1, -1):
            b = start + step
            while 0 <= b < bins and shown[b] and b not in held:
                out.add(b)
                b += step
    return out


__all__ = [
    "COVER",
    "MARGIN",
    "FineCells",
    "cell_weights",
    "cells_within",
    "even_weights",
    "falling",
    "known_floor",
    "nearest_cells",
    "nearest_weighted",
    "outer_density",
    "overrules_support",
    "shown_span",
    "thinning",
    "weighed_beside",
    "whole_atoms",
]
