"""Ex-post epsilon of an exactly calibrated run: a description, not a guarantee.

With ``calibration="exact"`` every round is charged at the sensitivity fixed before the
run (the closed-form bound), which is the guarantee. The exact search also finds, per
round, the sensitivity of that round's (public) population; rounds where it is 0 would
have cost nothing. But which rounds come out free depends on earlier *noisy* outputs,
so a figure built from them is data-dependent: publishing it as the guarantee would
under-state the privacy loss. It is reported apart, as ``ex_post_epsilon``, marked as
not a guarantee.

This is the function the ledger calls (or will call) to compute it; it reads the
events and the ``exact_sensitivity`` each Gaussian release put in its ``info``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dpevolve.privacy.accounting import Accountant, GaussianEvent

EX_POST_NOTE = (
    "ex_post_epsilon recomputes the loss with each round's exact sensitivity; which "
    "rounds are free depends on earlier noisy outputs, so it is NOT a privacy guarantee. "
    "The guarantee is the top-level epsilon (every round charged at the calibrated bound)."
)


def ex_post_events(events: Sequence[Any], infos: Sequence[dict[str, Any]]) -> list[Any]:
    """The events with each Gaussian's sensitivity replaced by ``info["exact_sensitivity"]``.

    Parameters
    ----------
    events
        The charged events, in order.
    infos
        The per-event info dictionaries (same length); events without an
        ``exact_sensitivity`` are kept as charged.

    Returns
    -------
    list
        Events to compose for the ex-post figure.
    """
    if len(events) != len(infos):
        raise ValueError("one info per event")
    out: list[Any] = []
    for event, info in zip(events, infos, strict=True):
        exact = info.get("exact_sensitivity")
        if isinstance(event, GaussianEvent) and exact is not None:
            if exact > event.sensitivity + 1e-12:
                raise ValueError("an exact sensitivity above the charged one")
            event = GaussianEvent(sensitivity=float(exact), sigma=event.sigma, label=event.label)
        out.append(event)
    return out


def ex_post_summary(
    events: Sequence[Any], infos: Sequence[dict[str, Any]], delta: float
) -> dict[str, Any]:
    """``{"epsilon", "delta", "free_rounds", "guarantee": False, "note"}`` for the ledger.

    Parameters
    ----------
    events, infos
        As for :func:`ex_post_events`.
    delta
        The run's target delta.
    """
    recomputed = ex_post_events(events, infos)
    free = [
        i
        for i, (event, info) in enumerate(zip(events, infos, strict=True))
        if isinstance(event, GaussianEvent) and info.get("exact_sensitivity") == 0.0
    ]
    result = Accountant(delta).epsilon(recomputed)
    return {
        "epsilon": float(result.epsilon),
        "delta": float(result.delta),
        "free_rounds": len(free),
        "guarantee": False,
        "note": EX_POST_NOTE,
    }


__all__ = ["EX_POST_NOTE", "ex_post_events", "ex_post_summary"]
