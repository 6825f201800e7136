"""Boundaries of a numeric column's partitions: given bin edges checked, a point made
a boundary, and a span refined (the zoom's cells, :mod:`~dpevolve.engine.zoom`).

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
    inner = np.linspace(a, b, cell_count(a, b, cells, step) + 1)
    apart = 1e-6 * (b - a)  # a boundary next to an end of the span is that end
    below, above = edges[edges < a - apart], edges[edges > b + apart]
    return np.unique(np.concatenate([below, inner, above]))


__all__ = ["cell_count", "checked_edges", "refined", "with_point"]
