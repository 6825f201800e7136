"""Entropic mirror descent with momentum, for the estimator's fit.

The potentials ``theta`` are the dual (natural) parameters of the model; a mirror step
with the entropy as mirror map is ``theta <- theta - eta * dL/dmu`` (Beck & Teboulle
2003; McKenna, Sheldon & Miklau 2019, Alg. 1). Plain steps follow Armijo's rule (the
loss must fall by half the linear prediction, else the step halves) and the step grows
after each accepted one. On top, a heavy-ball extrapolation along the last move
(Polyak 1964) with the ``k / (k + 3)`` schedule, restarted whenever a step fails to
lower the loss (O'Donoghue & Candes 2015), which takes the slow tail of plain mirror
descent down several-fold at one evaluation per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import numpy as np

Payload = TypeVar("Payload")

GROWTH = 1.2
SHRINK = 0.5
TINY_STEP = 1e-300


@dataclass(frozen=True)
class Evaluation(Generic[Payload]):
    """The loss at some potentials, its gradient in marginal space and the marginals
    (vectors over the measured cells), and whatever the caller keeps (the model)."""

    loss: float
    gradient: np.ndarray
    marginals: np.ndarray
    payload: Payload


@dataclass
class Trace:
    """What a run did: the loss after each accepted step, evaluations, the last step."""

    losses: list[float] = field(default_factory=list)
    iterations: int = 0
    evaluations: int = 0
    step: float = 0.0
    converged: bool = False


def _linear_drop(before: Evaluation, after: Evaluation) -> float:
    """``<dL/dmu(before), mu(before) - mu(after)>``: the drop a linear model predicts."""
    return float(np.sum(before.gradient * (before.marginals - after.marginals)))


def minimise(
    evaluate: Callable[[np.ndarray], Evaluation[Payload]],
    theta: np.ndarray,
    step: float,
    iterations: int,
    stalled: Callable[[list[float]], bool],
    *,
    momentum: bool = True,
) -> tuple[np.ndarray, Evaluation[Payload], Trace]:
    """Run up to ``iterations`` accepted steps from ``theta`` with initial step ``step``.

    Stops early once ``stalled(losses)`` says so or no step lowers the loss.
    """
    trace = Trace()
    current = evaluate(theta)
    trace.evaluations = 1
    trace.losses.append(current.loss)
    previous = theta
    k = 0
    while trace.iterations < iterations and step > 0:
        beta = k / (k + 3) if momentum else 0.0
        proposal = theta - step * current.gradient
        if beta:
            proposal += beta * (theta - previous)
        trial = evaluate(proposal)
        trace.evaluations += 1
        if k > 0:
            accepted = trial.loss < current.loss
        else:
            accepted = current.loss - trial.loss >= 0.5 * _linear_drop(current, trial)
            accepted = accepted and trial.loss <= current.loss
        if not accepted:
            if k > 0:
                k = 0  # restart the momentum and retry with a plain step
            else:
                step = step * SHRINK if step > TINY_STEP else 0.0
            continue
        previous, theta, current = theta, proposal, trial
        k += 1
        step *= GROWTH
        trace.iterations += 1
        trace.losses.append(current.loss)
        if stalled(trace.losses):
            trace.converged = True
            break
    trace.converged = trace.converged or step == 0
    trace.step = step
    return theta, current, trace
