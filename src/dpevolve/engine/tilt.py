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

Larger cliques. A label tree's triple (two numbers and the label) or a coarse
candidate of three or four columns holds its pairs of numbers in groups as well: each
such pair's counts are the release summed over the clique's other columns (noise scale
``sigma`` times the root of the cells summed), its tilt the same for every cell of the
other columns. The estimator adds every tilt it is given, so a pair held by several
releases (its own and a triple's, or a repeat in other groups) gets one:
the precision-weighted mean of their associations, carried by the most precise
(:func:`tilts`; before, a pair released twice in different groups was tilted twice).

Flags. A flag (a category of two values and no missing cell) released with a number
in groups is a pair of the same kind, its two values its two ordered cells
(:func:`ordered_columns`): the tilt makes the flag's log-odds rise or fall along the
number's bins within each group, as a logistic relation does, where the groups alone
hold its share flat across a group's bins. Only on the label tree's tables: on the
wide tables, whose label is a logistic of a quarter of the columns released with it
in three groups, TSTR rose on 11 of 12 runs (+0.004); on the suite's, whose flags meet
numbers in 4-7 groups, it cost TSTR (black_politicians 0.570 -> 0.554) (docs/engine.md).

Privacy. Post-processing: a function of the releases holding the pair, the columns' released
counts and the public groupings; the releases stay in the measurement list and the
ledger as made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations

import numpy as np
from scipy.optimize import brentq

from dpevolve.engine.association import midrank_scores, shrink_pair, value_cells
from dpevolve.engine.counts import released_counts
from dpevolve.engine.discretise import Discretiser
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


@dataclass(frozen=True)
class PairAssociation:
    """One release's estimate of a pair of numbers' association at the bins'
    resolution: the ``pair``'s ``axes`` in the release's clique, the association
    ``fine`` (:func:`fine_association`), the ``precision`` of the pair's counts summed
    over the clique's other columns, and the ``scores`` of each column's value bins."""

    pair: tuple[str, str]
    axes: tuple[int, int]
    fine: float
    precision: float
    scores: tuple[np.ndarray, np.ndarray]


def _cells(query: MarginalQuery, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Each axis's cells in the model (a grouped axis: its grouping's length)."""
    groups = query.groups or (None,) * len(query.clique)
    return tuple(len(g) if g is not None else n for g, n in zip(groups, shape, strict=True))


def associations(
    measurement: Measurement[MarginalQuery],
    values: Mapping[str, int],
    counts: Callable[[str], np.ndarray],
) -> list[PairAssociation]:
    """Every coarse ordered pair in ``measurement``'s clique: two columns of
    ``values`` (numbers, or a number and a flag), one of them grouped at least, each in
    two groups of value cells or more (module docstring). The pair's counts are the
    release summed over the clique's other columns, their noise scale ``sigma`` times
    the root of the cells summed.

    Parameters
    ----------
    measurement
        The release as made.
    values
        Each ordered column's value cells (:func:`ordered_columns`; a nullable
        number's missing cell comes after them).
    counts
        An ordered column's released counts of its value cells, by name (asked only
        of the pairs' columns).
    """
    query = measurement.query
    if not query.coarse or query.groups is None or measurement.weight <= 0:
        return []
    noisy = np.asarray(measurement.noisy, dtype=np.float64)
    out = []
    for i, j in combinations(range(len(query.clique)), 2):
        pair = (query.clique[i], query.clique[j])
        grouped = (query.groups[i], query.groups[j])
        if grouped == (None, None) or not all(a in values for a in pair):
            continue
        ordered = value_cells(MarginalQuery(pair, grouped), values)
        if ordered is None or min(ordered) < 2:
            continue
        others = tuple(k for k in range(noisy.ndim) if k not in (i, j))
        summed = noisy.sum(axis=others)
        sigma = measurement.sigma * float(np.sqrt(np.prod([noisy.shape[k] for k in others])))
        rows, cols = ordered
        target = rank_correlation(shrink_pair(summed, sigma, (rows, cols))[:rows, :cols])
        masses = [
            np.clip(np.asarray(counts(a), dtype=np.float64)[: values[a]], FLOOR, None) for a in pair
        ]
        value_groups = tuple(
            None if g is None else tuple(g[: values[a]]) for a, g in zip(pair, grouped, strict=True)
        )
        fine = fine_association(target, masses[0], masses[1], MarginalQuery(pair, value_groups))
        scores = (midrank_scores(masses[0]), midrank_scores(masses[1]))
        precision = (measurement.weight / sigma) ** 2
        out.append(PairAssociation(pair, (i, j), fine, precision, scores))
    return out


def tilts(
    measurements: Sequence[Measurement[MarginalQuery]],
    values: Mapping[str, int],
    counts: Callable[[str], np.ndarray],
) -> list[np.ndarray | None]:
    """The log tilt each release carries to the estimator (module docstring), ``None``
    where it carries none. A pair of numbers held coarse by several releases (a pair
    and a triple with the label, or repeats) gets one tilt, not one per release (the
    estimator adds the tilts it is given): the precision-weighted mean of their
    associations (:func:`associations`), carried by the most precise of them over its
    value cells, broadcast over the clique's other columns.

    Parameters
    ----------
    measurements
        The releases as made, in order.
    values, counts
        As for :func:`associations`.
    """
    found = [associations(m, values, counts) for m in measurements]
    by_pair: dict[tuple[str, str], list[tuple[int, PairAssociation]]] = {}
    for k, pairs in enumerate(found):
        for a in pairs:
            by_pair.setdefault(a.pair, []).append((k, a))
    out: list[np.ndarray | None] = [None] * len(measurements)
    for pair, held in by_pair.items():
        weights = np.array([a.precision for _, a in held])
        fine = float(np.dot(weights, [a.fine for _, a in held]) / weights.sum())
        k, carrier = held[int(np.argmax(weights))]
        m = measurements[k]
        tilt = out[k]
        if tilt is None:
            tilt = np.zeros(_cells(m.query, np.shape(m.noisy)))
        shape, at = [1] * tilt.ndim, [slice(None)] * tilt.ndim
        for axis, name in zip(carrier.axes, pair, strict=True):
            shape[axis] = values[name]
            at[axis] = slice(0, values[name])
        tilt[tuple(at)] += fine * np.outer(*carrier.scores).reshape(shape)
        out[k] = tilt
    for tilt in out:
        if tilt is not None:
            tilt.setflags(write=False)
    return out


def ordered_columns(discretiser: Discretiser, flags: bool = False) -> dict[str, int]:
    """The columns a tilt orders, each with its value cells: a numeric column's value
    bins and, with ``flags``, a flag's two values (a category of two values and no
    missing cell: a public fact of the schema), whose one order is as good as the
    other (the tilt's sign follows it)."""
    domain = discretiser.domain
    values = {c.name: discretiser.bins for c in discretiser.numeric}
    two = [a for a in domain.names if a not in values and domain.shape((a,))[0] == 2]
    return {**values, **{a: 2 for a in two if flags}}


def flag_counts(name: str, released: Sequence[Measurement]) -> np.ndarray:
    """A flag's two counts as every release shows them: each release holding it summed
    over its other columns, weighted by its precision (post-processing)."""
    total, weight = np.zeros(2), 0.0
    for m in released:
        if name not in m.clique or not np.isfinite(m.sigma) or m.sigma <= 0:
            continue
        noisy = np.moveaxis(np.asarray(m.noisy, dtype=np.float64), m.clique.index(name), 0)
        precision = 1.0 / (float(m.sigma) ** 2 * (noisy.size / 2))
        total += precision * noisy.reshape(2, -1).sum(axis=1)
        weight += precision
    return total / weight if weight > 0 else np.ones(2)


def release_tilts(
    discretiser: Discretiser, released: Sequence[Measurement[MarginalQuery]], flags: bool
) -> list[np.ndarray | None]:
    """:func:`tilts` of the run's ``released`` marginals over the ordered columns
    (:func:`ordered_columns`, the flags where ``flags``: on the label tree's tables),
    their counts as every release shows them
    (:func:`~dpevolve.engine.counts.released_counts` for a number, :func:`flag_counts`
    for a flag)."""
    numeric = {c.name for c in discretiser.numeric}

    @cache
    def counts(name: str) -> np.ndarray:
        if name in numeric:
            return released_counts(discretiser, name, released)[0]
        return flag_counts(name, released)

    return tilts(released, ordered_columns(discretiser, flags), counts)


__all__ = [
    "FLOOR",
    "MOST",
    "PairAssociation",
    "associations",
    "fine_association",
    "flag_counts",
    "ordered_columns",
    "raked",
    "rank_correlation",
    "release_tilts",
    "tilts",
]
