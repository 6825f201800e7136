"""Where a value lies within its bin: a public table's shape there, where it has one.

A decoded value first picks a fine cell of its bin, weighted by the released fine
histogram, then a point in the cell, evenly over an interval cell. With a public table
both steps use it too (free: public facts, and the released values as they are):

* **Which cell** (:func:`public_shape`). On a small table a fine cell's released count
  carries noise of the order of its rows, so the weights show a bin's total but hardly
  how its rows spread over its cells (a skewed column's last bin [136, 487], 200 rows:
  weighted up to 195 and drawn there). Within each bin, the weights' shape is blended
  with the public counts' shape by inverse variance: the private shape's relative
  variance ``k sigma^2 / W^2`` (``k`` cells, weight ``W``) against the public sample's
  ``1 / P`` (``P`` public rows in the bin). The bin's weight stays ``W``; a bin whose
  cells show nothing takes the public shape whole, at the model's rows in it (a
  column's first bin [10, 43.5], 65% of the rows, each one-year cell under the noise,
  had its rows spread under a falling density down to 10, past the data's 18).
* **Where in the cell** (:func:`draw_within`). Many real columns hold few distinct
  values, each below the share that makes it an atom of its own (a state's beer tax,
  repeated over all its residents: 40 values of about 2% each; a chain's number of
  locations), and a value drawn evenly misses them all, so no synthetic value equals a
  real one and every measure read at those values (deciles, the label's rate at a
  value) loses what a real sample keeps. Within each interval cell, a public value met
  at least :data:`REPEATED` times is drawn with the share of the cell's public rows it
  holds; the rest of the cell is drawn evenly, as before.

docs/engine.md, Public data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpevolve.engine.cells import FineCells

#: A public value met this often is a value of the column, not a draw of a continuous one
#: that happens to be written down (two equal floats are no chance).
REPEATED = 2

#: A bin holding fewer public rows than this says too little of its shape to blend in.
SHAPE_ROWS = 10


@dataclass(frozen=True)
class CellValues:
    """The public table's repeated values of one numeric column, per interval cell.

    ``cell[k]`` is the fine cell holding ``value[k]`` (ascending, then by value),
    ``upto[k]`` the share of that cell's public rows at its repeated values up to
    ``value[k]``. Public facts.
    """

    cell: np.ndarray
    value: np.ndarray
    upto: np.ndarray

    @property
    def size(self) -> int:
        return int(self.value.size)


def cell_values(cells: FineCells, codes: np.ndarray, public: np.ndarray) -> CellValues | None:
    """The repeated values of one column's ``public`` values (on its value grid), each
    in the fine cell ``codes`` gives it (the discretiser's coding: an atom's value is
    the atom's, not its interval's), within the interval cells of ``cells``: ``None``
    where none holds one, or the partition is a grid (every value a cell of its own)."""
    interval = (codes >= cells.atoms) & (codes < cells.values) & np.isfinite(public)
    if cells.grid or not interval.any():
        return None
    rows = np.bincount(codes[interval], minlength=cells.size)
    pairs, counts = np.unique(
        np.stack([codes[interval].astype(np.float64), public[interval]]), axis=1, return_counts=True
    )
    keep = counts >= REPEATED
    if not keep.any():
        return None
    at = pairs[0, keep].astype(np.int64)
    return CellValues(at, pairs[1, keep], _upto(at, counts[keep] / rows[at]))


def draw_within(
    shape: CellValues, picked: np.ndarray, even: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Values of rows whose fine cells are ``picked``: the public repeated value where a
    uniform draw falls among its cell's shares, else ``even`` (drawn evenly over the
    cell)."""
    keys = shape.cell + shape.upto  # increasing: a cell's shares sum to at most 1
    position = picked.astype(np.float64) + rng.random(picked.size)
    k = np.searchsorted(keys, position, side="right")
    hit = k < shape.size
    hit[hit] = shape.cell[k[hit]] == picked[hit]
    out = np.array(even, dtype=np.float64, copy=True)
    out[hit] = shape.value[k[hit]]
    return out


def public_shape(
    weights: np.ndarray,
    public: np.ndarray,
    cells: FineCells,
    sigma: float,
    mass: np.ndarray | None = None,
) -> np.ndarray:
    """Decoding ``weights`` (one per fine cell, from a histogram released with noise
    ``sigma`` per cell) with each bin's shape blended with the ``public`` counts' (one
    per fine cell) by inverse variance (see the module); a bin's total weight stays. A
    bin whose cells all weigh nothing takes the public shape whole, at its ``mass``
    (the model's rows in each value bin), where that is given and positive."""
    out = np.array(weights, dtype=np.float64, copy=True)
    counts = np.asarray(public, dtype=np.float64)
    index = np.arange(cells.values)
    for b in np.unique(cells.coarse[index]):
        inside = index[cells.coarse[index] == b]
        total, rows = float(out[inside].sum()), float(counts[inside].sum())
        if inside.size < 2 or rows < SHAPE_ROWS:
            continue
        if total <= 0:
            if mass is not None and b < mass.size and mass[b] > 0:
                out[inside] = float(mass[b]) * counts[inside] / rows
            continue
        noisy = inside.size * sigma**2 / total**2
        share = noisy / (noisy + 1.0 / rows)
        out[inside] = (1.0 - share) * out[inside] + share * total * counts[inside] / rows
    return out


def _upto(cell: np.ndarray, share: np.ndarray) -> np.ndarray:
    """Each value's share summed with those before it in its cell (``cell`` ascending)."""
    total = np.cumsum(share)
    first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    before = np.repeat(total[first] - share[first], np.diff(np.r_[first, cell.size]))
    return np.asarray(total - before)


__all__ = ["REPEATED", "SHAPE_ROWS", "CellValues", "cell_values", "draw_within", "public_shape"]
