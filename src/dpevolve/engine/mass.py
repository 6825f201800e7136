"""How many rows each cell of a released fine histogram holds, read through its noise.

Post-processing of one released fine histogram (:func:`released_mass`), for placing a
numeric column's bins where its values are (:mod:`~dpevolve.engine.bins`); see
docs/engine.md, Bins.
"""

from __future__ import annotations

import numpy as np

from dpevolve.data.atoms import spikes
from dpevolve.engine.cells import FineCells

#: Rows no cell or block of a released fine histogram shows go beyond the cells next to
#: those it shows only where the counts there total more than this many of their noise
#: scales (:func:`released_mass`).
SIDE = 2.0

#: A released fine cell counts only above this many noise scales (``sigma``): below it
#: an empty cell's clipped noise would spread spurious mass over the whole range (with
#: about a hundred empty cells, 4 sigma is passed by chance once in a few hundred
#: columns).
THRESHOLD = 4.0

#: A value the data are known to hold (declared in the schema's ``atoms``, or found by
#: the atom release) stands out from this many noise scales of its fine cell, a
#: candidate from :data:`THRESHOLD`: a column names a handful of known values, not the
#: hundred empty cells that bar guards (an empty cell passes 3 scales by chance 0.13%
#: of the time). Its bin of its own then holds data
#: (:func:`~dpevolve.engine.bins.known_weights`,
#: :func:`~dpevolve.engine.counts.known_atom_bins`).
KNOWN_THRESHOLD = 3.0


def standing(counts: np.ndarray, sigma: float) -> np.ndarray:
    """The released ``counts`` that stand out of their noise (above :data:`THRESHOLD`
    noise scales ``sigma``), the others zero: what a single cell shows of its rows."""
    return np.where(counts > THRESHOLD * sigma, counts, 0.0)


def released_mass(cells: FineCells, counts: np.ndarray, sigma: float, n: int) -> np.ndarray:
    """How many rows each fine cell holds, read from its released counts (``sigma``
    their noise scale; post-processing).

    A single cell's count passes for its mass where it is above :data:`THRESHOLD`
    noise scales. A skewed column's long thin tail is below the noise in every cell
    (cps91's wages: 97% of the values in one of 20 equal-width bins), so runs of
    neighbouring cells are pooled, in blocks of 2, 4, 8, ... along the axis: the cells
    of a block not yet read whose total passes :data:`THRESHOLD` times its noise scale
    ``sigma sqrt(k)`` share that total (in proportion to their width; evenly on a grid).
    What is left of the rows holding a value (``n`` less the missing cell's clipped
    count) is spread the same way over the cells no block read next to those read, as
    far as it reaches at the mean density of the pooled runs, else of the single cells
    read (:func:`_width_per_row`, :func:`_beside`; over every cell not read where
    neither shows a density, or over those read where none is left): the noise
    hides where it lies; spread over the whole declared range it would
    place bins where there are no data, which the model then fills with noise (cps91's
    earnings, declared on [0, 5000] and held in [0, 1500], drawn up to 5000), and
    spread only within the span of the cells read it would crowd the bins into that
    span (a column spread evenly over its range, read in a few blocks of its middle).
    The missing cell keeps its clipped count. All zero where nothing is read. Each pooled
    total is tested once, so noise alone passes about as often as for single cells.
    """
    values = cells.size - int(cells.nullable)
    order = np.lexsort((np.arange(values) >= cells.atoms, cells.lo[:values]))
    c = np.asarray(counts, dtype=np.float64)[order]
    width = np.ones(values) if cells.grid else (cells.hi - cells.lo)[order]
    mass, pooled = _read(c, width, sigma)
    missing = float(np.clip(counts[-1], 0.0, n)) if cells.nullable else 0.0
    if not mass.any():
        return np.zeros(cells.size)  # the noise hides every value: no mass to place
    left = max(0.0, n - missing - float(mass.sum()))
    mass += _left_mass(c, width, mass, pooled, left, sigma, cells.grid)
    out = np.zeros(cells.size)
    out[order] = mass
    if cells.nullable:
        out[-1] = missing
    return out


def _read(c: np.ndarray, width: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """The masses of the ordered cells' counts ``c`` that stand out of the noise, alone
    or pooled in blocks (:func:`released_mass`), and which cells were pooled."""
    mass = standing(c, sigma)
    free = mass == 0.0
    pooled = np.zeros(c.size, dtype=bool)
    size = 2
    while size // 2 < c.size:
        for start in range(0, c.size, size):
            block = start + np.flatnonzero(free[start : start + size])
            total = float(c[block].sum())
            if block.size > 1 and total > THRESHOLD * sigma * np.sqrt(block.size):
                mass[block] = total * _shares(width[block])
                free[block] = False
                pooled[block] = True
        size *= 2
    return mass, pooled


def _left_mass(
    c: np.ndarray,
    width: np.ndarray,
    mass: np.ndarray,
    pooled: np.ndarray,
    left: float,
    sigma: float,
    grid: bool,
) -> np.ndarray:
    """Where the ``left`` rows no cell or block shows go (:func:`released_mass`): per
    ordered cell, the rows added."""
    free = mass == 0.0
    out = np.zeros(c.size)
    per_row = _width_per_row(width, mass, pooled, ~free & ~pooled, grid)
    if per_row is None:  # no density shown: anywhere the cells were not read
        region = free if free.any() else ~free
        out[region] = left * _shares(width[region])
        return out
    near = free & _beside(width, ~free, left * per_row)
    read = np.flatnonzero(~free)
    index = np.arange(c.size)
    sides = [free & ~near & (index < read[0]), free & ~near & (index > read[-1])]
    shown = [float(c[side].sum()) for side in sides]
    shown = [
        t if t > SIDE * sigma * np.sqrt(side.sum()) else 0.0
        for t, side in zip(shown, sides, strict=True)
    ]
    scale = min(1.0, left / sum(shown)) if sum(shown) > 0 else 0.0
    for total, side in zip(shown, sides, strict=True):
        if total > 0:
            out[side] = scale * total * _shares(width[side])
    region = near if near.any() else ~free
    out[region] += (left - scale * sum(shown)) * _shares(width[region])
    return out


def _width_per_row(
    width: np.ndarray, mass: np.ndarray, pooled: np.ndarray, single: np.ndarray, grid: bool
) -> float | None:
    """The width a row takes at the mean density of the pooled runs, else of the single
    cells read that are neither atoms nor spikes (over their span); ``None`` where
    neither is there (an atom or a spike shows no density)."""
    if pooled.any():
        return float(width[pooled].sum()) / float(mass[pooled].sum())
    plain = single & (width > 0)
    if grid:
        plain &= ~spikes(np.where(single, mass, 0.0))
    if not plain.any():
        return None
    right = np.cumsum(width)
    first, last = np.flatnonzero(plain)[[0, -1]]
    return float(right[last] - right[first] + width[first]) / float(mass[plain].sum())


def _beside(width: np.ndarray, read: np.ndarray, extra: float) -> np.ndarray:
    """The cells (ordered, of ``width``) within the span of the ``read`` ones widened by
    ``extra``, half on each side (what does not fit past a declared end goes to the
    other side)."""
    right = np.cumsum(width)
    left = right - width
    first, last = np.flatnonzero(read)[[0, -1]]
    a, b = float(left[first]), float(right[last])
    below = min(a, max(0.5 * extra, extra - (float(right[-1]) - b)))
    return (right > a - below) & (left < b + extra - below)


def _shares(width: np.ndarray) -> np.ndarray:
    """Shares in proportion to ``width``, evenly where no cell has any (atoms only)."""
    total = float(width.sum())
    return width / total if total > 0 else np.full(width.size, 1.0 / width.size)


__all__ = ["KNOWN_THRESHOLD", "SIDE", "THRESHOLD", "released_mass", "standing"]
