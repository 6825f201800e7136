"""Point masses of a numeric column: values that hold a large share of its rows.

A value repeated over many rows (0 spent, a state's tax rate repeated over its
residents, a bracket's midpoint standing for an income) carries rules: "any expense is
yes exactly when spend > 0" lives at the atom 0. The engine keeps such a rule only where
the value is a cell of its model of its own (docs/engine.md, Atoms). The rule that names
them, :func:`heavy_values`, reads **public** values only: a public table given to a run
(:mod:`dpevolve.engine.public`), or the public table ``schema infer`` declares a
column's ``atoms`` from (:mod:`dpevolve.data.proposal`); the engine finds the private
table's own atoms only through charged releases (:mod:`dpevolve.engine.atoms`).
"""

from __future__ import annotations

import math

import numpy as np

#: A value holding at least this share of the rows is an atom, a bin of its own: a
#: rule such as "any expense exactly when spend > 0" then shows in a 2-way marginal. The
#: evaluation calls a value an atom from 5% up.
ATOM_SHARE = 0.05

#: A value of an integer (or ``decimals``) column is an atom only where its count is
#: more than this many times the mean of its neighbours' (:func:`spikes`): the first
#: value of an even run, next to empty ones, is not.
SPIKE = 3.0

#: The most atoms a column may declare: at most this many values can each hold
#: :data:`ATOM_SHARE` of the rows.
MOST_ATOMS = 20


def spikes(counts: np.ndarray, reach: int = 2) -> np.ndarray:
    """Which of consecutive values' counts stand out: more than :data:`SPIKE` times the
    mean count of the ``reach`` values on either side (an even run of values, say
    a uniform count from 40 to 50, has no atom: its bins already hold it)."""
    c = np.asarray(counts, dtype=np.float64)
    padded = np.pad(c, reach)
    window = np.convolve(padded, np.ones(2 * reach + 1), mode="valid") - c
    return c > SPIKE * window / (2 * reach)


def heavy_values(values: np.ndarray, step: float | None) -> list[tuple[float, float]]:
    """Public ``values`` (present ones) holding at least :data:`ATOM_SHARE` of them (in a
    column of value ``step``, spikes among their neighbours: :func:`spikes`), each on
    the column's grid, with its share: largest first."""
    found, counts = np.unique(values, return_counts=True)
    heavy = counts >= ATOM_SHARE * values.size
    if step is not None and found.size:
        grid = np.round((found - found[0]) / step).astype(np.int64)
        if grid[-1] < 1_000_000:  # beyond, values are far apart: every heavy one stands out
            dense = np.zeros(int(grid[-1]) + 1)
            dense[grid] = counts
            heavy &= spikes(dense)[grid]
    index = np.flatnonzero(heavy)
    index = index[np.argsort(-counts[index], kind="stable")]
    picked = on_grid(found[index], step)
    shares: dict[float, float] = {}  # values the grid makes one share their rows
    for v, c in zip(picked, counts[index], strict=True):
        shares[float(v)] = shares.get(float(v), 0.0) + float(c) / values.size
    return sorted(shares.items(), key=lambda item: -item[1])


def on_grid(values: np.ndarray, step: float | None) -> np.ndarray:
    """Values on the grid of ``step``, as the fine partition codes them (float32 4.2
    written 4.19999980926514: 4.2)."""
    if step is None:
        return values
    return np.asarray(np.round(np.round(values / step) * step, max(0, round(-math.log10(step)))))


__all__ = ["ATOM_SHARE", "MOST_ATOMS", "SPIKE", "heavy_values", "on_grid", "spikes"]
