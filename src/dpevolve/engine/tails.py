"""End bins decoded inward: model mass past a gap at a column's end, within the noise.

On a small table at a modest budget a released 1-way marginal of a numeric column
carries noise of scale ``sigma`` of the order of a bin's count (``sigma`` 112 for 2,700
rows over 20 bins). Where a public range was widened beyond the data, the bins near its
ends hold no records, yet the noise there survives the estimator's non-negativity: the
model gives an empty end bin a hundred rows, set apart from the rest of the column's mass
by bins it gives nothing. Decoded within that bin, those rows land far beyond the data
(issue 25: 2-5% of rows on three real tables).

Post-processing of released values: per numeric column, the model's own 1-way answer
(fitted to the releases) and the released fine histogram's decoding weights
(:mod:`~dpevolve.engine.smoothing`). From each end of the column's value bins, the bins
beyond a bin the model gives no mass are *inward* when

- their total model mass is at most :data:`~dpevolve.engine.smoothing.DECODE_FLOOR`
  noise scales of one released 1-way cell (what one empty bin's noise can leave), and
- the fine histogram's weights show no data in any of them the model gives mass
  (a floored histogram's false cell, where the model holds nothing, protects nothing);

the innermost such gap is taken. Rows the model draws in an inward bin are decoded as
rows of the nearest bin inside the gap (:class:`~dpevolve.engine.model.EngineModel`):
values stay where the releases show data, and no row moves more than the gap.

A gap is not always there: the model's noise mass in a widened range's end bins can
run into the data's own bins (cps91's ages, declared on [10, 65] and held in [18, 59]:
94 rows at 10-15 from noise of scale 107 per released cell, next to bins of 2 and 38
rows). So, further, the bins wholly beyond the span of the fine cells the decoding
weights show data in, widened by :data:`~dpevolve.engine.discretise.MARGIN` of it
(:func:`shown_span`), decode as the nearest bin that is not, when the model gives them
together at most :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales
(:func:`beyond_span`): the real tail that can go with them is one the releases cannot
tell from noise, and it moves in by no more than the margin.
See docs/engine.md, decoding.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from dpevolve.engine.discretise import MARGIN, Discretiser, FineCells
from dpevolve.engine.smoothing import DECODE_FLOOR
from dpevolve.measurements import Estimator, Measurement

#: A bin the model gives less than this many rows holds nothing (its fitted answer is
#: rarely exactly zero).
HELD = 0.5


def inward(mass: np.ndarray, sigma: float, shown: np.ndarray) -> np.ndarray:
    """The bin each value bin decodes as (itself unless inward; module docstring).

    Parameters
    ----------
    mass
        The model's mass per value bin, in value order (rows).
    sigma
        Noise scale of one cell of the column's released 1-way marginal.
    shown
        Per bin, whether the released fine histogram's weights show data in it.
    """
    mass = np.asarray(mass, dtype=np.float64)
    shown = np.asarray(shown, dtype=bool)
    target = np.arange(mass.size)
    held = mass >= HELD
    for order in (np.arange(mass.size), np.arange(mass.size)[::-1]):
        if not held.any():
            return target
        # gaps: empty bins with mass further in; the innermost one whose outer part is noise
        for k in range(order.size - 1, 0, -1):
            outer, rest = order[:k], order[k:]
            if held[order[k - 1]] or not held[rest].any():
                continue
            if mass[outer].sum() <= DECODE_FLOOR * sigma and not (shown & held)[outer].any():
                inner = rest[int(np.flatnonzero(held[rest])[0])]
                target[outer] = inner
                held[outer] = False  # the other end's gaps are sought among the rest
                break
    return target


def shown_span(cells: FineCells, weights: np.ndarray) -> tuple[float, float] | None:
    """The values from the lowest to the highest fine cell of positive decoding weight,
    widened by :data:`~dpevolve.engine.discretise.MARGIN` of their width on each side
    (``None`` where no cell weighs anything)."""
    stop = cells.size - int(cells.nullable)
    positive = np.flatnonzero(np.asarray(weights[:stop]) > 0)
    if positive.size == 0:
        return None
    low, high = float(np.min(cells.lo[positive])), float(np.max(cells.hi[positive]))
    margin = MARGIN * (high - low)
    return low - margin, high + margin


def beyond_span(
    edges: np.ndarray, span: tuple[float, float], mass: np.ndarray, sigma: float
) -> np.ndarray:
    """The bin each value bin decodes as: on each side, the bins wholly beyond ``span``
    decode as the nearest bin that is not, where the model gives them together at most
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales ``sigma`` (what the
    noise of an empty stretch can leave; module docstring)."""
    mass = np.asarray(mass, dtype=np.float64)
    target = np.arange(mass.size)
    below = np.flatnonzero(edges[1:] <= span[0])
    above = np.flatnonzero(edges[:-1] >= span[1])
    if below.size < mass.size and mass[below].sum() <= DECODE_FLOOR * sigma:
        target[below] = below.size  # bins below are a prefix: the next one is not
    if above.size < mass.size and mass[above].sum() <= DECODE_FLOOR * sigma:
        target[above] = mass.size - above.size - 1
    return target


def released_inward(
    discretiser: Discretiser,
    model: Estimator,
    measurements: Iterable[Measurement],
    weights: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Per numeric column with a released 1-way marginal and fine histogram, the bin
    each of its cells decodes as (:func:`inward`; a missing cell stays itself).
    Columns whose end bins all decode as themselves are left out."""
    sigma: dict[str, float] = {}
    for m in measurements:
        if len(m.clique) == 1:
            name = m.clique[0]
            sigma[name] = min(sigma.get(name, np.inf), float(m.sigma))
    out: dict[str, np.ndarray] = {}
    bins = discretiser.bins
    for column in discretiser.numeric:
        name = column.name
        if name not in sigma or name not in weights:
            continue
        cells = discretiser.fine[name]
        w = np.asarray(weights[name])
        shown = np.array([bool((w[cells.coarse == b] > 0).any()) for b in range(bins)])
        mass = np.asarray(model.answer((name,)), dtype=np.float64)
        target = inward(mass[:bins], sigma[name], shown)
        span = shown_span(cells, w)
        if span is not None:
            target = beyond_span(discretiser.edges(name), span, mass[:bins], sigma[name])[target]
        if np.any(target != np.arange(bins)):
            out[name] = np.append(target, np.arange(bins, mass.size))
    return out


__all__ = ["HELD", "beyond_span", "inward", "released_inward", "shown_span"]
