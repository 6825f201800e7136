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

Folded bins are held empty the same way, in a last refit (:func:`folded_measurements`):
the bins a column's folds move (:func:`~dpevolve.engine.tails.released_inward`: end
stretches whose rows the releases read as noise) decode in the bin they fold into, and
the model's noise there had piled up in it: cps91's hourly wages (1,285 present rows,
88 of them above 20.8) drew 240 rows in [20.8, 25), the noise of fourteen bins past the
data (docs/engine.md, Folded bins held empty).

Privacy. Which bins are vacant is a fact of the schema and the bins (public); ``n`` is
public under replace-one adjacency. The pseudo-measurement reads no record: its event
has sensitivity 0 (free), like a public table's prior (docs/engine.md, Vacant bins).
The folds are post-processing of the releases and of the model fitted to them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpevolve.engine.discretise import Discretiser
from dpevolve.measurements import Estimator, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

#: The pseudo-measurement's noise scale is the 1-ways' divided by this: sharp enough
#: that the fit keeps the vacant cells near 0, loose enough to leave the solver's
#: steps as they were.
SHARPNESS = 10.0

#: The label of the pseudo-measurement's (free) event, followed by the column's name.
VACANT = "vacant:"

#: The label of a folded stretch's pseudo-measurement, followed by the column's name.
FOLDED = "folded:"


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
    empty = {c.name: vacant_bins(discretiser, c.name) for c in discretiser.numeric}
    return empty_measurements(discretiser, empty, n, sigma, VACANT)


def folded_measurements(
    discretiser: Discretiser,
    targets: Mapping[str, np.ndarray],
    model: Estimator,
    n: int,
    sigma: float,
) -> list[Measurement]:
    """Per numeric column whose folds move value bins into others (``targets``: per
    column, the bin each cell decodes as; :class:`~dpevolve.engine.tails.Fold`), a
    pseudo-measurement holding the moved bins at 0 rows: the folds read the releases as
    showing no data there, so the model's rows there are noise, and the last fit moves
    them where the releases put the column's rows instead of piling them at the bin
    they fold into (post-processing of released values). A nullable column's missing
    cell keeps the rows ``model`` gives it: moved rows go to the values, not to it."""
    bins = discretiser.bins
    empty: dict[str, np.ndarray] = {}
    missing: dict[str, float] = {}
    for column in discretiser.numeric:
        if column.name not in targets:
            continue
        target = np.asarray(targets[column.name])[:bins]
        moved = (target != np.arange(bins)) & (target < bins)
        if moved.any() and not moved.all():
            empty[column.name] = moved & ~vacant_bins(discretiser, column.name)
            if column.nullable:
                missing[column.name] = float(np.asarray(model.answer((column.name,)))[bins])
    return empty_measurements(discretiser, empty, n, sigma, FOLDED, missing)


def closed_ends(target: np.ndarray, bins: int) -> np.ndarray:
    """``target`` (the bin each cell of a column decodes as, its ``bins`` value cells
    first) with every value bin nearer an end than the bin that end folds into folded
    there too: a bin the model gave no rows needs no fold, but the refit that holds the
    folded bins empty may give it some (a noise count of 54 +- 32 below data that start
    at 10, between two bins folded inward: a refit gave it 26 rows, drawn at 4-6)."""
    out = np.array(target, dtype=np.int64)
    low, high = int(out[0]), int(out[bins - 1])
    if low <= high < bins:
        out[:low] = low
        out[high + 1 : bins] = high
    return out


def empty_measurements(
    discretiser: Discretiser,
    empty: Mapping[str, np.ndarray],
    n: int,
    sigma: float,
    label: str,
    missing: Mapping[str, float] | None = None,
) -> list[Measurement]:
    """Per numeric column with a bin in ``empty`` (a mask over its value bins), its
    1-way grouped into those bins (0 rows) and the other cells (``n``), at ``sigma /
    SHARPNESS``: free (sensitivity 0), labelled ``label`` and the column's name. A
    nullable column in ``missing`` has its missing cell in a group of its own, holding
    the rows given there (the other cells the rest of ``n``)."""
    out: list[Measurement] = []
    scale = float(sigma) / SHARPNESS
    if not (np.isfinite(scale) and scale > 0):
        return out  # no 1-way released: nothing to be sharper than
    for column in discretiser.numeric:
        mask = empty.get(column.name)
        if mask is None or not np.any(mask):
            continue
        grouping = [int(not mask[b]) for b in range(discretiser.bins)]
        counts = [0.0, float(n)]
        if column.nullable and missing is not None and column.name in missing:
            grouping.append(2)
            held = min(max(missing[column.name], 0.0), float(n))
            counts = [0.0, float(n) - held, held]
        elif column.nullable:
            grouping.append(1)
        query = MarginalQuery((column.name,), (tuple(grouping),))
        noisy = np.array(counts)
        noisy.setflags(write=False)
        event = GaussianEvent(0.0, scale, label=label + column.name)
        out.append(Measurement(query, noisy, scale, event))
    return out


__all__ = [
    "FOLDED",
    "SHARPNESS",
    "VACANT",
    "closed_ends",
    "empty_measurements",
    "folded_measurements",
    "vacant_bins",
    "vacant_measurements",
]
