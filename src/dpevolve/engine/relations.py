"""The relations phase: a spanning tree over the numeric columns, on quantile groups.

Why (issue 25, the relations between numbers). The spanning-tree phase
(:mod:`~dpevolve.engine.tree`) joins every column, but on a table with a label it joins
most numeric columns through the label, and a pair of numbers measured on ``bins x
bins`` fine cells at a small table's noise is mostly noise: the model then makes two
numbers that move together (income and wealth, a father's and a mother's schooling)
nearly independent. Their rank order lives in few cells: which third of one column goes
with which third of the other.

What. After the 1-ways, the engine picks ``k - 1`` pairs joining the ``k`` numeric
columns, as Kruskal's algorithm would build a maximum spanning tree (the tree phase's
way), each among the pairs of numeric columns joining two components, and measures
each picked pair *coarse*: each column's bins in ``groups`` contiguous groups of about
equal mass (:func:`quantile_grouping`), a nullable column's missing cell a group of its
own. ``groups x groups`` cells carry the pair's rank order at a noise a fine pair
cannot afford.

Privacy. The groups are cut at the quantiles of the model's 1-way answer, a function of
the released 1-ways (post-processing, fixed before this phase reads a record; the
ledger records each grouping). A pick is the tree phase's exponential-mechanism draw:
:func:`~dpevolve.engine.select.quality` of the coarse counts against the coarse
independent model (the same public grouping applied to both, so its sensitivity is
``2 w`` as for any coarse query), the candidate set public (earlier picks), one
:class:`~dpevolve.privacy.events.ExponentialEvent` per pick; each picked pair is a
coarse :class:`~dpevolve.measurements.MarginalQuery` released with the discrete
Gaussian at sensitivity ``sqrt(2)`` whatever its grouping. The plan
(:mod:`~dpevolve.engine.plan`) gives the phase ``relation_share`` of the rounds' rho.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from dpevolve.measurements import Domain, Grouping, MarginalQuery


def quantile_grouping(mass: np.ndarray, bins: int, groups: int) -> Grouping:
    """Contiguous groups of ``bins`` value bins, cut where the cumulative ``mass`` (the
    model's 1-way answer: released, post-processing) crosses ``j / groups``.

    Parameters
    ----------
    mass
        One column's cell masses: its ``bins`` value bins in value order, then a
        nullable column's missing cell (its own group).
    bins
        The column's value bins.
    groups
        Most groups; fewer where one bin holds more than a group's share (an atom).

    Returns
    -------
    Grouping
        The group of every cell (``0 .. k - 1``).
    """
    mass = np.clip(np.asarray(mass, dtype=np.float64).ravel(), 0.0, None)
    values = mass[:bins]
    total = float(values.sum())
    if total <= 0.0:
        share = np.arange(1, bins + 1) / bins  # nothing released: equal-width
    else:
        share = np.cumsum(values) / total
    # bin b starts a new group where the mass before it has crossed the next quantile
    before = np.concatenate([[0.0], share[:-1]])
    group = np.minimum(np.floor(before * groups + 1e-9), groups - 1).astype(np.int64)
    # renumber to 0..k-1 (an atom may skip a group)
    _, codes = np.unique(group, return_inverse=True)
    out = [int(c) for c in codes]
    extra = max(out) + 1
    return tuple(out + [extra] * (mass.size - bins))


def relation_queries(
    domain: Domain,
    numeric: Sequence[str],
    masses: Mapping[str, np.ndarray],
    bins: int,
    groups: int,
) -> list[MarginalQuery]:
    """Every pair of the ``numeric`` columns, each grouped by :func:`quantile_grouping`
    of its mass (public: the released 1-ways' model answer). A pair whose columns both
    keep every bin (no coarser than the fine pair) is left out."""
    grouping = {a: quantile_grouping(masses[a], bins, groups) for a in numeric}
    out: list[MarginalQuery] = []
    for pair in combinations(domain.canonical(numeric), 2):
        ways = tuple(grouping[a] for a in pair)
        if all(len(set(g)) == len(g) for g in ways):
            continue
        out.append(MarginalQuery(pair, ways))
    return out


__all__ = ["quantile_grouping", "relation_queries"]
