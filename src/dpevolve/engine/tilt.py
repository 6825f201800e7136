"""A coarse pair's shape within its groups: a pair of numbers released in groups keeps
its association inside them.

Why (issue 25, the relations between numbers). The relations phase and the coarse
candidates release a pair of numeric columns in 4-7 quantile groups each, while the
model's cells are the columns' bins. Fitted to the groups' counts, the estimator holds
the rows of each group independent across its bins (the maximum-entropy answer), but
within a group of a strong relation the rows lie along its diagonal too, so the rank
correlation falls: Gaussian pairs of Spearman 0.286, 0.579, 0.783, 0.889, counted
exactly in 5 x 5 quantile groups of 20 x 20 bins and fitted with their 1-ways, keep
0.258, 0.529, 0.720, 0.821 (with the tilt below 0.278, 0.568, 0.771, 0.878:
``tests/engine/test_tilt.py``); black_politicians' measured income pair, refitted to its
exact counts, 0.742 of the data's 0.816.

What. The linear-by-linear association model of :mod:`~dpevolve.engine.association` at
the bins' resolution, ``m_ij`` proportional to ``r_i c_j exp(phi_f u_i v_j)``, ``u, v``
the midrank scores of the columns' released bin counts ``r, c``
(:func:`~dpevolve.engine.counts.released_counts`). ``phi_f`` is the association whose
table, raked to ``r`` and ``c`` and summed into the query's groups, has the rank
correlation of the release's value cells as the estimator sees them (shrunk toward
their association fit: :func:`~dpevolve.engine.association.shrink_pair`), found by
Brent's method (:func:`fine_association`: the grouped rank correlation rises with
``phi_f``). The rank correlation, not the release's fitted association, sets it: on
alcohol's state taxes, which take a few values each, the groups' table is a pattern of
states the association model fits only at associations of 5-20, and a tilt that strong
doubled the pairs' rank correlations (cigarette tax and ethanol 0.14 -> 0.36). The
measurement reaches the estimator with the log tilt ``phi_f u_i v_j`` over its value
cells (0 at a missing cell), which the estimator keeps beside the pair's fitted
potential (:class:`~dpevolve.estimate.MarkovRandomField`); that potential is constant
within each group, so the groups' totals are still fitted to the release and within
each group the bins follow the tilt. The last fits alone carry it, once every pick is
made: the picks score candidates against the model, and a tilt in the refits between
them moved injury's picks (TSTR -0.014 over 6 seeds) (docs/engine.md, A pair's shape
within its groups).

Privacy. Post-processing: a function of the pair's release, the columns' released
counts and the public groupings; the releases stay in the measurement list and the
ledger as made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from scipy.optimize import brentq

from dpevolve.engine.association import midrank_scores, shrink_pair, value_cells
from dpevolve.measurements import MarginalQuery, Measurement

#: Raking sweeps of a bins' table to its margins: a 20 x 20 table of association 12
#: meets its margins to 1e-6 of a count well within them.
SWEEPS = 50

#: The largest association carried to the bins: Gaussian pairs need 0.3-12 (Spearman
#: 0.28-0.97); past it a release's noise, not a relation, is being followed.
MOST = 20.0

#: The floor of a bin's released count for its scores and its raking (counts are
#: noisy, and a negative one is no mass).
FLOOR = 0.5


def raked(phi: float, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The table ``r_i c_j exp(phi u_i v_j)`` raked to margins ``rows`` and ``cols``
    (positive counts of equal totals)."""
    u, v = midrank_scores(rows), midrank_scores(cols)
    log_tilt = phi * np.outer(u, v)
    table = np.outer(rows, cols) * np.exp(log_tilt - log_tilt.max())
    for _ in range(SWEEPS):
        table *= (rows / table.sum(axis=1))[:, None]
        table *= (cols / table.sum(axis=0))[None, :]
    return table


def rank_correlation(table: np.ndarray) -> float:
    """Spearman's correlation of a 2-way table of counts over ordered cells (negative
    counts read as none), ties at their midranks."""
    mass = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    if mass.sum() <= 0:
        return 0.0
    mass = mass / mass.sum()
    u, v = midrank_scores(mass.sum(axis=1)), midrank_scores(mass.sum(axis=0))
    return float((mass * np.outer(u, v)).sum())


def fine_association(
    target: float, rows: np.ndarray, cols: np.ndarray, groups: MarginalQuery
) -> float:
    """The association of the bins' table whose grouped table has rank correlation
    ``target`` (module docstring), within ``[-MOST, MOST]``.

    Parameters
    ----------
    target
        The grouped table's rank correlation (:func:`rank_correlation`).
    rows, cols
        The bins' counts of each column (positive).
    groups
        The pair's query over its value bins: how it sums them into groups.
    """
    end = float(np.copysign(MOST, target))

    def excess(fine: float) -> float:
        return rank_correlation(groups.project(raked(fine, rows, cols))) - target

    with np.errstate(all="ignore"):
        far = excess(end)
    if target == 0.0 or not np.isfinite(far):
        return 0.0  # no relation, or scores so skewed that the bins' table degenerates
    if np.sign(far) != np.sign(end):  # no bins' table is that strong
        return end
    return float(brentq(excess, 0.0, end, xtol=1e-3))


def pair_tilt(
    measurement: Measurement[MarginalQuery],
    values: Mapping[str, int],
    counts: Callable[[str], np.ndarray],
) -> np.ndarray | None:
    """The log tilt over ``measurement``'s clique cells (module docstring), or ``None``
    unless it is a coarse pair of two numeric columns, each in two groups of value
    cells or more.

    Parameters
    ----------
    measurement
        The release as made.
    values
        Each numeric column's number of value bins (a nullable one's missing cell
        comes after them).
    counts
        A numeric column's released counts of its value bins, by name (asked only of
        the pair's columns).
    """
    query = measurement.query
    ordered = value_cells(query, values) if len(query.clique) == 2 and query.coarse else None
    if ordered is None or min(ordered) < 2 or query.groups is None:
        return None
    rows, cols = ordered
    shrunk = shrink_pair(measurement.noisy, measurement.sigma, (rows, cols))
    target = rank_correlation(shrunk[:rows, :cols])
    masses, scores, groups, cells = [], [], [], []
    for name, grouping, size in zip(
        query.clique, query.groups, np.shape(measurement.noisy), strict=True
    ):
        bins = values[name]
        mass = np.clip(np.asarray(counts(name), dtype=np.float64)[:bins], FLOOR, None)
        masses.append(mass)
        scores.append(midrank_scores(mass))
        groups.append(tuple(grouping[:bins]) if grouping is not None else None)
        cells.append(len(grouping) if grouping is not None else size)
    values_only = MarginalQuery(query.clique, (groups[0], groups[1]))
    fine = fine_association(target, masses[0], masses[1], values_only)
    tilt = np.zeros(tuple(cells))
    tilt[: values[query.clique[0]], : values[query.clique[1]]] = fine * np.outer(*scores)
    tilt.setflags(write=False)
    return tilt


__all__ = ["FLOOR", "MOST", "fine_association", "pair_tilt", "raked", "rank_correlation"]
