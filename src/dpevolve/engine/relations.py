"""The relations phase: pairs joining the numeric columns, on quantile groups.

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

Closing triangles (``EngineSpec.relation_width`` 2). A tree carries the relation of two
columns it does not pair only as the product along its path: on black_politicians'
seven numbers, even the best spanning tree of the real rank correlations implies them
0.11 off on average, 0.17 for the tree the picks found. So ``k - 2`` more picks follow,
each among the pairs that close a triangle with two picked pairs and keep the picked
graph of treewidth two (:func:`closing_pairs`, :func:`width_two`): a 2-tree, as
PrivBayes' networks of degree two (Zhang, Cormode, Procopiuc, Srivastava & Xiao 2017,
ACM TODS 42(4)), whose model cliques hold three numeric columns at most. Each is
scored against the model refitted to the tree's releases (what the tree already
carries does not count again).

Privacy. The groups are cut at the quantiles of the model's 1-way answer, a function of
the released 1-ways (post-processing, fixed before this phase reads a record; the
ledger records each grouping). A pick is the tree phase's exponential-mechanism draw:
:func:`~dpevolve.engine.select.quality` of the coarse counts against the coarse
independent model (the same public grouping applied to both, so its sensitivity is
``2 w`` as for any coarse query), the candidate set public (earlier picks), one
:class:`~dpevolve.privacy.events.ExponentialEvent` per pick; each picked pair is a
coarse :class:`~dpevolve.measurements.MarginalQuery` released with the discrete
Gaussian at sensitivity ``sqrt(2)`` whatever its grouping. A closing pick's candidates
depend only on earlier picks (public), its scores on the model fitted to released
values (post-processing) and the exact coarse counts: the same sensitivity. The plan
(:mod:`~dpevolve.engine.plan`) gives the phase ``relation_share`` of the rounds' rho,
in equal parts to its :func:`relation_picks` picks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations

import numpy as np

from dpevolve.measurements import Clique, Domain, Grouping, MarginalQuery


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


def relation_picks(numeric: int, width: int) -> int:
    """The picks of the relations phase on ``numeric`` numeric columns (public): ``k - 1``
    joining them, and with ``width`` 2 the ``k - 2`` that close triangles (a 2-tree's
    ``2 k - 3`` pairs); none below two columns."""
    if numeric < 2:
        return 0
    return numeric - 1 + (numeric - 2 if width >= 2 else 0)


def width_two(edges: Iterable[Clique]) -> bool:
    """Whether the graph of ``edges`` has treewidth at most two: it reduces to nothing by
    removing a vertex of degree at most two, joining its two neighbours when it has two
    (a series-parallel reduction; a graph of treewidth three or more is left with every
    vertex of degree three or more)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:  # pairs
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set()).add(a)
    while graph:
        low = next((v for v, near in graph.items() if len(near) <= 2), None)
        if low is None:
            return False
        near = graph.pop(low)
        for u in near:
            graph[u].discard(low)
        if len(near) == 2:
            u, w = near
            graph[u].add(w)
            graph[w].add(u)
    return True


def closing_pairs(picked: Sequence[Clique], candidates: Sequence[Clique]) -> list[int]:
    """The indices of the ``candidates`` not yet ``picked`` whose two columns are each
    paired with a third column by the picks, and that keep the picked graph of
    treewidth two (:func:`width_two`; public: earlier picks)."""
    near: dict[str, set[str]] = {}
    for a, b in picked:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    taken = {frozenset(p) for p in picked}
    out = []
    for i, (a, b) in enumerate(candidates):
        if frozenset((a, b)) in taken or not near.get(a, set()) & near.get(b, set()):
            continue
        if width_two([*picked, (a, b)]):
            out.append(i)
    return out


__all__ = ["closing_pairs", "quantile_grouping", "relation_picks", "relation_queries", "width_two"]
