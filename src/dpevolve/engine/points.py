"""Point bins: a bin holding a single value enters the last fit with that value's count
as the column's fine histogram released it.

Why (issue 25, numbers as they are). The 1-ways are released at a small share of the
budget, split over every column (wagepan's 44 columns: noise 167 per bin), and the pairs
group a column's bins, so a bin of its own for one value (a grid's value, an atom's own
bin) is measured on its own only by the 1-way. The fine histogram counts that value at a
noise three times smaller (57), but the fit never saw it: wagepan's years of experience
4 and 9 (200 rows each, released at 243 +- 53 and 271 +- 53 with the 1-way) were fitted
at 0 rows and drawn nowhere; alcohol's cigarette tax of 26 (212 rows) likewise.

What. Per numeric column with a released fine histogram, per value bin holding exactly
one of its fine cells, that cell a single value: the column's 1-way grouped into that
bin and the rest, answered ``(y, n - y)`` with ``y`` the cell's released count, at noise
``sigma_f sqrt(2)`` (``sigma_f`` the fine histogram's). The model holds ``n`` rows, so
the rest's error is the bin's with its sign turned: the two squared errors are twice
the bin's, and the ``sqrt(2)`` leaves the bin its own weight, ``1 / sigma_f^2``.

Only the last fit (:func:`~dpevolve.engine.loop.run_engine`'s, with the smoothed
1-ways): in every fit they moved the quantile groups of the relations phase and so its
picks, and over the suite's 16 tables x 6 seeds the Spearman error rose by 0.0027 +-
0.0023 against 0.0005 +- 0.0006 for the last fit alone (docs/engine.md, Point bins).

Privacy. Post-processing of the released fine histogram and of ``n`` (public under
replace-one adjacency): a pseudo-measurement whose event has sensitivity 0, never
charged, as a public table's prior.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dpevolve.engine.discretise import Discretiser
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

#: The label of a point bin's (free) event, followed by the column's name.
POINT = "point:"


def point_bins(discretiser: Discretiser, name: str) -> dict[int, int]:
    """Per value bin of numeric column ``name`` holding exactly one fine cell, that
    cell a single value (an atom of the fine partition, or a grid's value): the cell."""
    cells = discretiser.fine[name]
    coarse = cells.coarse[: cells.values]
    held = np.bincount(coarse, minlength=discretiser.bins)[: discretiser.bins]
    single = np.flatnonzero(coarse[: cells.atoms] < discretiser.bins)
    return {int(coarse[i]): int(i) for i in single if held[coarse[i]] == 1}


def point_measurements(
    discretiser: Discretiser, fine: Mapping[str, Measurement], n: int
) -> list[Measurement]:
    """One pseudo-measurement per point bin of every numeric column with a released
    fine histogram (module docstring)."""
    out: list[Measurement] = []
    for column in discretiser.numeric:
        released = fine.get(column.name)
        if released is None or not (np.isfinite(released.sigma) and released.sigma > 0):
            continue
        cells = discretiser.bins + int(column.nullable)
        scale = float(released.sigma) * np.sqrt(2.0)
        counts = np.asarray(released.noisy, dtype=np.float64).ravel()
        for b, cell in point_bins(discretiser, column.name).items():
            grouping = tuple(int(k != b) for k in range(cells))
            noisy = np.array([counts[cell], float(n) - counts[cell]])
            noisy.setflags(write=False)
            event = GaussianEvent(0.0, scale, label=POINT + column.name)
            out.append(Measurement(MarginalQuery((column.name,), (grouping,)), noisy, scale, event))
    return out


__all__ = ["POINT", "point_bins", "point_measurements"]
