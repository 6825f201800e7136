"""The spanning-tree phase: ``d - 1`` pairs that join every column (docs/engine.md).

After the 1-ways and before the adaptive rounds, the engine picks pairs as Kruskal's
algorithm would build a maximum spanning tree, as in McKenna, Sheldon & Miklau's MST
mechanism (2021, "Winning the NIST Contest", section 3): each pick is one draw of the
exponential mechanism (:mod:`~dpevolve.engine.select`) among the pairs that join two
components of the pairs picked so far, and each picked pair is then measured. A table
of ``d`` columns so holds at least ``d - 1`` pairs beyond its 1-ways, with every column
in one of them, whatever the adaptive rounds then add.

:func:`spanning` makes the picks for this phase and for the relations phase
(:mod:`~dpevolve.engine.relations`), each over its own pairs and columns.

Privacy. The score of a pair is :func:`~dpevolve.engine.select.quality` against the
independent model of the released 1-ways (:func:`independent`: post-processing), with
its selection weight; its sensitivity is the adaptive rounds' (``2 max w_c``). Which
pairs join two components depends only on earlier picks (released), so the candidate
set of each draw is public, and each draw is an
:class:`~dpevolve.privacy.events.ExponentialEvent` charged and recorded like a round's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dpevolve.data.sources import PrivateSource
from dpevolve.engine import select
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.plan import Spend
from dpevolve.measurements import Clique, Estimator, MarginalQuery, Measurement
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import NoiseSource


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


class PickRun(Protocol):
    """What a run lends the picks: its door, noise, spend, ledger and measurements."""

    source: PrivateSource
    discretiser: Discretiser
    noise: NoiseSource
    spend: Spend
    ledger: Ledger

    def counts(self, query: MarginalQuery) -> np.ndarray: ...

    def measure(self, query: MarginalQuery, sigma: float, round_: int, label: str) -> None: ...

    def fitted(self) -> list[Measurement]: ...

    def say(self, text: str) -> None: ...


@dataclass(frozen=True)
class Picks:
    """One phase of spanning picks (public): its candidate ``pairs`` and their selection
    ``weights``, the columns ``names`` to join, each pick's ``(sigma, epsilon)``, the
    round numbered before the first pick, and the ``stage`` the ledger names."""

    pairs: list[MarginalQuery]
    weights: np.ndarray
    names: Sequence[str]
    sigma: float
    epsilon: float
    start: int
    stage: str


def spanning(
    run: PickRun,
    model: Estimator,
    picks: Picks,
    facts: Callable[[MarginalQuery], dict[str, Any]],
) -> tuple[Estimator, list[dict[str, Any]]]:
    """Kruskal's picks over ``picks.names`` (:class:`Forest`): one charged, recorded
    draw per pick among the pairs joining two components, scored against the
    independent model of the released 1-ways (post-processing), each pick then
    released; the model is refitted once at the end (the scores read only the 1-ways),
    so the history entries have no ``moved``. ``facts`` gives a coarse pick's public
    grouping for the ledger and the history."""
    pairs, weights, sigma = picks.pairs, picks.weights, picks.sigma
    ones = {a: np.asarray(model.answer((a,))).ravel() for a in run.discretiser.domain.names}
    values = np.empty(len(pairs))
    for i, q in enumerate(pairs):
        a, b = q.clique
        exact = run.counts(q)
        expected = q.project(independent(ones[a], ones[b], run.source.n)).reshape(exact.shape)
        values[i] = select.quality(exact, expected, sigma, float(weights[i]))  # private
    forest = Forest(picks.names)
    history: list[dict[str, Any]] = []
    round_ = picks.start
    while not forest.joined():
        open_ = np.flatnonzero(forest.open_mask([q.clique for q in pairs]))
        if open_.size == 0:
            break
        round_ += 1
        event = select.selection_event(picks.epsilon, list(weights[open_]))
        run.spend.charge(event)
        pick = pairs[int(open_[select.draw(values[open_], event, run.noise)])]
        run.ledger.record(
            event, round=round_, clique=list(pick.clique), stage=picks.stage, **facts(pick)
        )
        forest.join(pick.clique)
        run.measure(pick, sigma, round_, "marginal")
        history.append({"round": round_, "clique": pick.clique, "groups": None,
                        **facts(pick), "sigma": sigma, "moved": None,
                        "model_mb": None, "stage": picks.stage})  # fmt: skip
    run.say(f"{picks.stage}: {round_ - picks.start} pairs, sigma {sigma:.3g}")
    return model.fit(run.fitted()), history


__all__ = ["Forest", "PickRun", "Picks", "independent", "spanning"]
