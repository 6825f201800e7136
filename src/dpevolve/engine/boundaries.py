"""Boundaries of a numeric column's partitions: given bin edges checked, a point made
a boundary, a span refined (the zoom's cells, :mod:`~dpevolve.engine.zoom`), and
boundaries next to round values moved onto them.

Pure functions of public inputs and released values; used by
:class:`~dpevolve.engine.discretise.Discretiser` (docs/engine.md, Bins and Zoom).
"""

from __future__ import annotations

import math

import numpy as np


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


__all__ = [
    "ROUND_APART",
    "ROUND_REACH",
    "cell_count",
    "checked_edges",
    "refined",
    "rounded",
    "with_point",
]
