"""Vacant bins: bins of a numeric column that hold no value the column can take.

Why (issue 25, numbers as they are). Every numeric column has the same number of bins
(the model's domain), but a column whose values are few, a grid of whole numbers
(children 0-6) or declared ``values`` (years married 0.5, 2.5, 6, ..., 23: a bin of
their own each, :func:`~dpevolve.engine.boundaries.value_edges`), leaves some bins
with no value in them. No record can fall there, yet each such cell of every
marginal is released with noise like the others, and the estimator, which keeps
cells non-negative, gives it the positive part of its noise: on happiness' teenagers
(0-4 on [0, 10], 20 bins) the model held 160 of 6,853 rows in bins between the whole
numbers, decoded to the nearest value (5 teenagers, a value no row holds).

What. For each such column a pseudo-measurement of its 1-way: the vacant bins as one
group, holding 0, the rest as another, holding the ``n`` rows, at a small noise scale
(:data:`SHARPNESS` times below the 1-ways'), so the model keeps those cells empty in
every clique.

Privacy. Which bins are vacant is a fact of the schema and the bins (public); ``n`` is
public under replace-one adjacency. The pseudo-measurement reads no record: its event
has sensitivity 0 (free), like a public table's prior (docs/engine.md, Vacant bins).
"""

from __future__ import annotations

import numpy as np

from dpevolve.engine.discretise import Discretiser
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

#: The pseudo-measurement's noise scale is the 1-ways' divided by this: sharp enough
#: that the fit keeps the vacant cells near 0, loose enough to leave the solver's
#: steps as they were.
SHARPNESS = 10.0

#: The label of the pseudo-measurement's (free) event, followed by the column's name.
VACANT = "vacant:"


def vacant_bins(discretiser: Discretiser, name: str) -> np.ndarray:
    """Per value bin of numeric column ``name``, whether no cell of its fine partition
    lies in it: on a grid, the bins between its values; in an interval partition,
    which fills its bins, only a sliver an atom's own bin leaves beside it (an income
    declared from -100,000 with an atom at 0: the bin just below 0)."""
    cells = discretiser.fine[name]
    held = np.bincount(cells.coarse[: cells.values], minlength=discretiser.bins)
    return np.asarray(held[: discretiser.bins] == 0)


def vacant_measurements(discretiser: Discretiser, n: int, sigma: float) -> list[Measurement]:
    """One pseudo-measurement per numeric column with vacant bins (module docstring):
    its 1-way grouped into the vacant bins (0 rows) and the other cells (``n``), at
    ``sigma / SHARPNESS`` (``sigma``: the 1-ways' noise scale)."""
    out: list[Measurement] = []
    scale = float(sigma) / SHARPNESS
    if not (np.isfinite(scale) and scale > 0):
        return out  # no 1-way released: nothing to be sharper than
    for column in discretiser.numeric:
        vacant = vacant_bins(discretiser, column.name)
        if not vacant.any():
            continue
        cells = discretiser.bins + int(column.nullable)
        grouping = tuple(int(not vacant[b]) if b < discretiser.bins else 1 for b in range(cells))
        query = MarginalQuery((column.name,), (grouping,))
        noisy = np.array([0.0, float(n)])
        noisy.setflags(write=False)
        event = GaussianEvent(0.0, scale, label=VACANT + column.name)
        out.append(Measurement(query, noisy, scale, event))
    return out


__all__ = ["SHARPNESS", "VACANT", "vacant_bins", "vacant_measurements"]
