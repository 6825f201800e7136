"""Boundaries of a numeric column's partitions: its value step, bins cut at round
values, given bin edges checked, a point made a boundary, a span refined (the zoom's
cells, :mod:`~dpevolve.engine.zoom`), and boundaries next to round values moved onto
them.

Pure functions of public inputs and released values; used by
:class:`~dpevolve.engine.discretise.Discretiser` (docs/engine.md, Bins and Zoom).
"""

from __future__ import annotations

import math

import numpy as np

from dpevolve.data.columns import NumericColumn


def checked_edges(default: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Given bin edges, checked against the equal-width ones (count and end points)."""
    if (
        edges.shape != default.shape
        or edges[0] != default[0]
        or edges[-1] != default[-1]
        or not np.all(np.diff(edges) > 0)
    ):
        raise ValueError("bin edges must be bins + 1 increasing values from lo to hi")
    return edges


def own_bins(values: tuple[float, ...], bins: int) -> bool:
    """Whether a column's declared ``values`` each take a bin of their own (no more of
    them than ``bins``): its bins are :func:`value_edges`, not placed from the data."""
    return 0 < len(values) <= bins


def default_edges(column: NumericColumn, bins: int) -> np.ndarray:
    """A column's bins before any data are read: a bin per declared value
    (:func:`value_edges`, where :func:`own_bins`), else ``bins`` equal-width bins."""
    if own_bins(column.values, bins):
        own = value_edges(np.array(column.values), column.lo, column.hi, bins)
        if own.size == bins + 1:
            return own
    return np.linspace(column.lo, column.hi, bins + 1)


def value_edges(values: np.ndarray, lo: float, hi: float, bins: int) -> np.ndarray:
    """``bins + 1`` edges from ``lo`` to ``hi`` that give each of ``values`` (sorted,
    at most ``bins``, inside the range) a bin of its own: cut half-way between
    neighbours, then the widest bin split until there are ``bins``, at the middle of
    its wider side of its value (or its middle, where it holds none), so that no bin
    holds two values. The bins left without one hold nothing the column can take
    (:mod:`~dpevolve.engine.vacant`)."""
    values = np.asarray(values, dtype=np.float64)
    edges = [lo, *(0.5 * (values[1:] + values[:-1])), hi]
    while len(edges) < bins + 1:
        width = np.diff(edges)
        k = int(np.argmax(width))
        a, b = edges[k], edges[k + 1]
        inside = values[(values >= a) & (values < b) | ((values == b) & (b == hi))]
        if inside.size:
            v = float(inside[0])
            cut = 0.5 * (a + v) if v - a > b - v else 0.5 * (v + b)
        else:
            cut = 0.5 * (a + b)
        if not a < cut < b:
            break  # no room left to cut (float resolution): the caller keeps its own
        edges.insert(k + 1, cut)
    return np.asarray(edges, dtype=np.float64)


def whole_numbers(column: NumericColumn, step: float | None, limit: int) -> list[float]:
    """The whole numbers inside the range of a column with ``decimals``, when there are
    at most a quarter of ``limit`` of them: atoms of its fine partition, so that a
    column of mostly whole years keeps them (none for integer or continuous columns)."""
    if step is None or step >= 1.0:
        return []
    first, last = math.ceil(column.lo), math.floor(column.hi)
    if last < first or last - first + 1 > limit // 4:
        return []
    return [float(v) for v in range(first, last + 1)]


def with_point(edges: np.ndarray, point: float, tolerance: float) -> np.ndarray:
    """Interval boundaries with ``point`` among them (moved onto the nearest boundary,
    or inserted), so that an atom there can have a bin of its own without splitting a
    cell."""
    near = int(np.argmin(np.abs(edges - point)))
    if abs(edges[near] - point) <= 1e3 * tolerance:
        out = edges.copy()
        out[near] = point
        return out
    return np.sort(np.append(edges, point))


def cell_count(a: float, b: float, cells: int, step: float | None) -> int:
    """How many equal intervals :func:`refined` puts over ``[a, b]``: ``cells``, fewer
    where they would be narrower than the value ``step`` (each then holds a value)."""
    return int(cells) if step is None else max(1, min(int(cells), math.floor((b - a) / step)))


def refined(
    edges: np.ndarray, span: tuple[float, float], cells: int, step: float | None
) -> np.ndarray:
    """The interval boundaries ``edges`` with those inside ``span = (a, b)`` replaced
    by :func:`cell_count` equal intervals over it; the boundaries outside stay."""
    a, b = max(float(span[0]), float(edges[0])), min(float(span[1]), float(edges[-1]))
    if not b > a:
        return edges
    inner = rounded(np.linspace(a, b, cell_count(a, b, cells, step) + 1), step)
    apart = 1e-6 * (b - a)  # a boundary next to an end of the span is that end
    below, above = edges[edges < a - apart], edges[edges > b + apart]
    return np.unique(np.concatenate([below, inner, above]))


#: An inner boundary of equal-width cells (a continuous column's partition, a zoom's)
#: this share of their width or less from a round value moves onto it (:func:`rounded`).
ROUND_REACH = 0.25

#: Round values lie at least this many cell widths apart (:func:`rounded`): a
#: few boundaries move, the cells stay of about equal width.
ROUND_APART = 5.0


def rounded(bounds: np.ndarray, step: float | None = None) -> np.ndarray:
    """Equal-width boundaries with each inner one that lies within :data:`ROUND_REACH`
    of a width of a round value moved onto it: a multiple of the smallest power of ten
    at least :data:`ROUND_APART` widths (0 among them: a sign, or a round threshold,
    where many rules change, then falls between cells, not just off one). At most one
    boundary in ``ROUND_APART`` moves, by at most a quarter of a width, so the order
    stays. A column with a value ``step`` keeps its boundaries (a round value there is
    one of its values, not a boundary between two). Public: a function of the span."""
    if bounds.size < 3 or step is not None:
        return bounds
    width = float(bounds[1] - bounds[0])
    unit = 10.0 ** math.ceil(math.log10(ROUND_APART * width))
    inner = bounds[1:-1]
    near = np.round(inner / unit) * unit + 0.0
    inner = np.where(np.abs(inner - near) <= ROUND_REACH * width, near, inner)
    return np.concatenate([bounds[:1], inner, bounds[-1:]])


#: Round widths: these mantissas times a power of ten (:func:`round_edges`).
ROUND_MANTISSAS = (10, 20, 25, 50)


def _round_width(width: float) -> tuple[int, int]:
    """The smallest round width at least ``width``, as ``(mantissa, exponent)``: the
    width is ``mantissa * 10 ** exponent`` (:data:`ROUND_MANTISSAS`)."""
    exponent = math.floor(math.log10(width)) - 1
    while True:
        for mantissa in ROUND_MANTISSAS:
            if _times(1, mantissa, exponent) >= width * (1.0 - 1e-12):
                return mantissa, exponent
        exponent += 1


def _times(k: int, mantissa: int, exponent: int) -> float:
    """``k * mantissa * 10 ** exponent`` as the double nearest the decimal (so that
    ``3 * 0.05`` is ``0.15``, a value a schema or a threshold would write)."""
    whole = k * mantissa
    return float(whole * 10**exponent) if exponent >= 0 else whole / 10 ** (-exponent)


def round_edges(lo: float, hi: float, bins: int, step: float | None = None) -> np.ndarray:
    """``bins`` bins of ``[lo, hi]`` whose inner edges are round values: multiples of
    the smallest round width (1, 2, 2.5 or 5 times a power of ten) at least a
    ``bins``-th of the range, an end piece under half that width joined to its
    neighbour, and where those make too few bins, the bins nearest the range's middle
    split in half (in a column of a value ``step``, at the value below the half; the end
    pieces last). The two end bins keep their equal width: a wider one, reaching from
    nearer the data out to the declared end, would decode values far past the data. A
    rule that changes at a round threshold (an age of 65, 50 hours, a sign) then
    changes between bins, not inside one. Equal-width edges where the range is already
    cut at round values, where the width is no multiple of the value ``step``, or where
    the bins cannot be made so. Public: a function of the declared range."""
    equal = np.linspace(lo, hi, bins + 1)
    if not hi > lo or bins < 4:
        return equal
    # the end bins keep their equal width: a wider one would reach from nearer the data
    # out to the declared end, and decode values far past the data's end
    inner = _round_inner(float(equal[1]), float(equal[-2]), bins - 2, step)
    if inner is None:
        return equal
    out = np.concatenate([equal[:1], inner, equal[-1:]])
    return equal if np.allclose(out, equal) else out


def _round_inner(lo: float, hi: float, bins: int, step: float | None) -> np.ndarray | None:
    """:func:`round_edges`' inner bins: ``bins + 1`` edges from ``lo`` to ``hi``, or
    ``None`` where they cannot be made round."""
    mantissa, exponent = _round_width((hi - lo) / bins)
    width = _times(1, mantissa, exponent)
    if step is not None and abs(width / step - round(width / step)) > 1e-9:
        return None
    first, last = math.floor(lo / width) + 1, math.ceil(hi / width) - 1
    edges = [lo, *(_times(k, mantissa, exponent) for k in range(first, last + 1)), hi]
    if len(edges) > 3 and edges[1] - edges[0] < 0.5 * width:
        del edges[1]
    if len(edges) > 3 and edges[-1] - edges[-2] < 0.5 * width:
        del edges[-2]
    if len(edges) == bins + 2:  # one too many: the narrower end piece joins its neighbour
        del edges[1 if edges[1] - edges[0] <= edges[-1] - edges[-2] else -2]
    middle = 0.5 * (lo + hi)
    while len(edges) < bins + 1:
        best: tuple[tuple[bool, float], int, float] | None = None
        for k in range(len(edges) - 1):
            half = _half(edges[k], width, mantissa, exponent, step)
            if edges[k] < half < edges[k + 1]:  # whole bins first, then end pieces
                part = edges[k + 1] - edges[k] < width * (1.0 - 1e-9)
                key = (part, abs(0.5 * (edges[k] + edges[k + 1]) - middle))
                if best is None or key < best[0]:
                    best = (key, k, half)
        if best is None:
            return None
        edges.insert(best[1] + 1, best[2])
    out = np.asarray(edges, dtype=float)
    return out if out.size == bins + 1 else None


def snapped(equal: np.ndarray, target: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Bin edges ``target`` (:func:`round_edges`) each moved onto the nearest of a
    partition's ``bounds``, so that every cell of it lies in one bin; ``equal`` where
    two would meet. The partition's boundaries next to round values already lie on
    them (:func:`rounded`), so a round edge keeps its value where it is that round."""
    inner = np.asarray(target, dtype=float)[1:-1]
    bounds = np.asarray(bounds, dtype=float)
    at = np.clip(np.searchsorted(bounds, inner), 1, bounds.size - 1)
    nearer = np.where(inner - bounds[at - 1] <= bounds[at] - inner, at - 1, at)
    out = np.concatenate([equal[:1], bounds[nearer], equal[-1:]])
    return out if np.all(np.diff(out) > 0) else equal


def _half(left: float, width: float, mantissa: int, exponent: int, step: float | None) -> float:
    """The round value half a ``width`` above the multiple of it nearest ``left`` (in a
    column of a value ``step``, the value at or below it)."""
    half = _times(2 * round(left / width) + 1, 5 * mantissa, exponent - 1)
    if step is None:
        return half
    digits = max(0, -math.floor(math.log10(step)))
    return round(step * math.floor(half / step + 1e-9), digits)


__all__ = [
    "ROUND_APART",
    "ROUND_MANTISSAS",
    "ROUND_REACH",
    "cell_count",
    "checked_edges",
    "default_edges",
    "own_bins",
    "refined",
    "round_edges",
    "rounded",
    "snapped",
    "value_edges",
    "whole_numbers",
    "with_point",
]
