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

A gap is not always there: noise can leave a run of islands, each past its own gap,
whose masses together pass the floor (issue 25: cps91's earnings, declared on [0, 5000]
and held in [0, 1500], drew 17% of the rows up to 4,500). So the released 1-way counts
themselves (and those of every released clique holding the column, summed over the
others; all pooled by precision: :func:`pooled_ones`) also bound the support, by the
rule the fine histograms' decoding weights follow (:mod:`~dpevolve.engine.smoothing`,
support): beyond the lowest and the highest bin whose count passes
:data:`~dpevolve.engine.smoothing.SUPPORT` noise scales, the counts are fitted
non-decreasing towards those bins (pool-adjacent-violators) and a pooled run is kept
only where its mean passes ``KEEP * sigma / sqrt(run)`` (:func:`supported`); a bin where
the fine histogram's decoding weights show data is kept too (two releases must agree
before a bin is given up), and so is every bin inside a kept one. A row the model draws
in a bin not kept is drawn again (the model conditioned on the bins the releases
support, so its noise mass there spreads over the kept bins instead of piling up at
their edge), and after :data:`REDRAWS` tries decodes as a row of the outermost bin kept
on its side: a target ``-1 - k`` in :func:`released_inward`'s maps says "redraw, else
bin ``k``" (:func:`redraw_or`).
See docs/engine.md, decoding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np

from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT, monotone
from dpevolve.measurements import Estimator, Measurement

#: A bin the model gives less than this many rows holds nothing (its fitted answer is
#: rarely exactly zero).
HELD = 0.5

#: Noise scales a pooled run of released 1-way counts beyond the certain bins must pass,
#: ``KEEP * sigma / sqrt(run)``, to be kept (:func:`supported`). Lower than
#: :data:`~dpevolve.engine.smoothing.SUPPORT`: a bin's count there is a thin tail's, not
#: a fine cell's; measured on runs of 5 to 17 empty bins, noise alone keeps one in 200
#: to 500 of them (one in 14 at 2 scales).
KEEP = 3.0

#: Times a row in a bin the releases do not support is drawn again before it decodes at
#: the edge of those they do (:func:`supported`).
REDRAWS = 8


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


def supported(counts: np.ndarray, sigma: float, shown: np.ndarray | None = None) -> np.ndarray:
    """The bin each value bin decodes as by the released counts' support (module
    docstring): itself where kept, else the outermost kept bin on its side.

    Parameters
    ----------
    counts
        The released (noisy, unclipped) 1-way counts per value bin, in value order.
    sigma
        Their noise scale.
    shown
        Per bin, whether the released fine histogram's decoding weights show data in
        it: such a bin is kept whatever its count (two releases must agree before a
        bin is given up), and so is every bin between it and the certain ones.
    """
    counts = np.asarray(counts, dtype=np.float64)
    shown = np.zeros(counts.size, dtype=bool) if shown is None else np.asarray(shown, dtype=bool)
    target = np.arange(counts.size)
    certain = np.flatnonzero(counts > SUPPORT * sigma)
    if certain.size == 0:
        return target
    below = np.arange(certain[0])  # ordered towards the centre
    above = np.arange(counts.size - 1, certain[-1], -1)
    for run, edge in ((below, certain[0]), (above, certain[-1])):
        if run.size == 0:
            continue
        fit, pooled = monotone(counts[run])
        kept = (fit > KEEP * sigma / np.sqrt(pooled)) | shown[run]
        kept = np.logical_or.accumulate(kept)  # a kept bin keeps those inside it (run order)
        # the fit rises towards the centre: the bins kept are the run's inner part
        first = int(np.argmax(kept)) if kept.any() else run.size
        outermost = int(run[first]) if first < run.size else int(edge)
        target[run[:first]] = outermost
    return target


def pooled_ones(measurements: Iterable[Measurement]) -> dict[str, tuple[np.ndarray, float]]:
    """Per attribute, its 1-way counts from every release of a clique holding it (the
    clique's counts summed over the other attributes, noise variance ``sigma^2`` times
    the cells summed), pooled by precision (coarse releases aside), and their noise
    scale: post-processing of released values."""
    sums: dict[str, np.ndarray] = {}
    precision: dict[str, float] = {}
    for m in measurements:
        if m.coarse:
            continue
        noisy = np.asarray(m.noisy, dtype=np.float64)
        for axis, name in enumerate(m.clique):
            others = tuple(k for k in range(noisy.ndim) if k != axis)
            counts = noisy.sum(axis=others) if others else noisy
            p = 1.0 / (float(m.sigma) ** 2 * (noisy.size / noisy.shape[axis]))
            sums[name] = sums.get(name, 0.0) + p * counts
            precision[name] = precision.get(name, 0.0) + p
    return {a: (sums[a] / precision[a], float(1.0 / np.sqrt(precision[a]))) for a in sums}


def released_inward(
    discretiser: Discretiser,
    model: Estimator,
    measurements: Iterable[Measurement],
    weights: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    """Per numeric column with a released 1-way marginal and fine histogram, the bin
    each of its cells decodes as (:func:`inward`; a missing cell stays itself), or
    ``-1 - k`` where :func:`supported` gives the cell up: redrawn, else bin ``k``
    (:func:`redraw_or`). Columns whose end bins all decode as themselves are left out."""
    measurements = list(measurements)
    sigma: dict[str, float] = {}
    for m in measurements:
        if len(m.clique) == 1:
            name = m.clique[0]
            sigma[name] = min(sigma.get(name, np.inf), float(m.sigma))
    ones = pooled_ones(measurements)
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
        if name in ones:
            counts, scale = ones[name]
            support = supported(counts[:bins], scale, shown)
            moved = support != np.arange(bins)
            target = np.where(moved, -1 - support, support[target])
        if np.any(target != np.arange(bins)):
            out[name] = np.append(target, np.arange(bins, mass.size))
    return out


def redraw_or(
    codes: np.ndarray,
    targets: Mapping[int, np.ndarray],
    draw: Callable[[int], np.ndarray],
) -> np.ndarray:
    """Rows of ``codes`` with every column ``j`` of ``targets`` mapped by its target
    (:func:`released_inward`): a row that lands on a redraw target (``-1 - k``) is drawn
    again by ``draw(count)`` up to :data:`REDRAWS` times, then decodes with bin ``k``."""

    def mapped(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = np.array(rows, dtype=np.int64, copy=True)
        for j, target in targets.items():
            out[:, j] = np.asarray(target, dtype=np.int64)[out[:, j]]
        return out, np.asarray((out < 0).any(axis=1), dtype=bool)

    out, again = mapped(codes)
    for _ in range(REDRAWS):
        if not again.any():
            break
        fresh, bad = mapped(draw(int(again.sum())))
        index = np.flatnonzero(again)
        out[index] = fresh
        again[index] = bad
    return np.where(out < 0, -1 - out, out)


__all__ = [
    "HELD",
    "KEEP",
    "REDRAWS",
    "inward",
    "pooled_ones",
    "redraw_or",
    "released_inward",
    "supported",
]
