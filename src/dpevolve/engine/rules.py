"""Selection rules: how an adaptive round scores its candidates (docs/engine.md).

A round (:mod:`~dpevolve.engine.rounds`) hands its rule the public candidates the pool
kept; the rule may propose more (of any measurement type a round can count and the
estimator can fit: a :class:`~dpevolve.measurements.MarginalQuery`, or a subclass with
its own ``project``/``expand``/``shape``), scores each against the private counts and
the model, and states what one draw among them costs. The draw itself is always the
exponential mechanism of the one noise source (:func:`~dpevolve.engine.select.draw`),
so a rule's privacy rests on one claim: its ``event``'s sensitivity bounds how far any
score moves when one record is replaced (given the public candidates, model and
``sigma``).

A rule is one class; its name in :data:`SELECTION_RULES` lets ``EngineSpec(selection=
NAME)`` (and ``--engine-options '{selection: NAME}'``) pick it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from dpevolve.engine.select import scores, selection_event
from dpevolve.measurements import Domain, MarginalQuery
from dpevolve.privacy.events import ExponentialEvent

#: A candidate's counts: ``query -> array`` (private counts, or the model's).
Answer = Callable[[MarginalQuery], np.ndarray]


class SelectionRule(Protocol):
    """How a round proposes, scores and prices its candidates (see the module)."""

    def propose(self, kept: list[MarginalQuery], domain: Domain) -> list[MarginalQuery]:
        """The candidates to score: the pool's ``kept`` (public), perhaps with more."""
        ...

    def scores(
        self,
        candidates: Sequence[MarginalQuery],
        exact: Answer,
        model: Answer,
        weights: Sequence[float],
        sigma: float,
    ) -> np.ndarray:
        """One score per candidate (private: only a draw from them is released)."""
        ...

    def event(self, epsilon: float, weights: Sequence[float]) -> ExponentialEvent:
        """What one draw at ``epsilon`` among candidates of these weights costs."""
        ...


class AIMRule:
    """AIM's rule (:mod:`~dpevolve.engine.select`): the weighted L1 error of the model
    less the noise a fresh measurement would have, sensitivity ``2 max w_c``."""

    def propose(self, kept: list[MarginalQuery], domain: Domain) -> list[MarginalQuery]:
        del domain
        return kept

    def scores(
        self,
        candidates: Sequence[MarginalQuery],
        exact: Answer,
        model: Answer,
        weights: Sequence[float],
        sigma: float,
    ) -> np.ndarray:
        return scores(candidates, exact, model, weights, sigma)

    def event(self, epsilon: float, weights: Sequence[float]) -> ExponentialEvent:
        return selection_event(epsilon, weights)


#: The rules ``EngineSpec.selection`` names.
SELECTION_RULES: dict[str, SelectionRule] = {"aim": AIMRule()}

#: The rule of the engine's default spec.
DEFAULT_RULE = "aim"


__all__ = ["DEFAULT_RULE", "SELECTION_RULES", "AIMRule", "Answer", "SelectionRule"]
