"""The spanning-tree phase: ``d - 1`` pairs that join every column (docs/engine.md).

After the 1-ways and before the adaptive rounds, the engine picks pairs as Kruskal's
algorithm would build a maximum spanning tree, as in McKenna, Sheldon & Miklau's MST
mechanism (2021, "Winning the NIST Contest", section 3): each pick is one draw of the
exponential mechanism (:mod:`~dpevolve.engine.select`) among the pairs that join two
components of the pairs picked so far, and each picked pair is then measured. A table
of ``d`` columns so holds at least ``d - 1`` pairs beyond its 1-ways, with every column
in one of them, whatever the adaptive rounds then add.

Privacy. The score of a pair is :func:`~dpevolve.engine.select.quality` against the
independent model of the released 1-ways (:func:`independent`: post-processing), with
its selection weight; its sensitivity is the adaptive rounds' (``2 max w_c``). Which
pairs join two components depends only on earlier picks (released), so the candidate
set of each draw is public, and each draw is an
:class:`~dpevolve.privacy.events.ExponentialEvent` charged and recorded like a round's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpevolve.engine.select import numeric_grouping
from dpevolve.measurements import Clique, Domain, MarginalQuery


class Forest:
    """Components of the columns under the pairs joined so far (union-find by label)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.index = {a: i for i, a in enumerate(names)}
        self.component = np.arange(len(names))

    def open_mask(self, pairs: Sequence[Clique]) -> np.ndarray:
        """Which ``pairs`` join two different components (public: earlier picks)."""
        first = np.array([self.index[p[0]] for p in pairs])
        second = np.array([self.index[p[1]] for p in pairs])
        return np.asarray(self.component[first] != self.component[second])

    def join(self, pair: Clique) -> None:
        """Merge the components of the pair's two columns."""
        keep, gone = (self.component[self.index[a]] for a in pair)
        self.component[self.component == gone] = keep

    def joined(self) -> bool:
        """Whether every column is in one component."""
        return bool(np.all(self.component == self.component[0]))


def independent(first: np.ndarray, second: np.ndarray, total: float) -> np.ndarray:
    """The pair's counts if its two columns were independent, from their (released,
    model-reconciled) 1-way counts: ``x_a x_b^T / n`` (post-processing)."""
    return np.outer(first, second) / max(total, 1.0)


def joined(
    domain: Domain, pair: Clique, label: str | None, numeric: dict[str, int], groups: int
) -> MarginalQuery:
    """What the tree measures for a picked ``pair``: the pair cell by cell, or (``label``
    given) the pair with the label, each numeric (``numeric`` maps its name to its bins)
    in ``groups`` equal-width groups of its bins: public, a function of the pick."""
    if label is None:
        return MarginalQuery(pair)
    clique = domain.canonical((*pair, label))
    grouping = tuple(
        numeric_grouping(domain.shape((a,))[0], numeric[a], groups)
        if a in numeric and groups < numeric[a]
        else None
        for a in clique
    )
    return MarginalQuery(clique, grouping if any(g is not None for g in grouping) else None)


__all__ = ["Forest", "independent", "joined"]
