"""The vote a run uses: as configured, or chosen by a public pilot (no private budget).

``temperature="auto"`` asks :func:`~dpevolve.pilot.run.run_pilot` for the soft vote's
temperature (or the hard vote); ``vote="auto"`` asks
:func:`~dpevolve.pilot.choice.choose_vote` for a whole arm (hard, or soft with
sharpening and debiasing). Both run on public data through the ``fit`` callback the
facade passes, so this module never builds a synthesizer itself.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpevolve.config import VoteSpec
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.pe.votes import Vote, make_vote
from dpevolve.pilot.choice import VoteChoice, choose_vote
from dpevolve.pilot.run import PilotFit, PilotResult, run_pilot
from dpevolve.privacy import Budget, Ledger, ZeroCostEvent


@dataclass(frozen=True)
class VotePick:
    """The vote, its sharpening and debiasing, and the pilot that chose them (if any)."""

    vote: Vote
    sharpen: float = 1.0
    debias: int = 0
    pilot: PilotResult | None = None
    choice: VoteChoice | None = None

    def record(self, ledger: Ledger) -> None:
        """The pilot's forecast in the ledger, as a free (public-data) event."""
        if self.choice is not None:
            ledger.add_metadata(vote_choice=self.choice.to_dict())
            ledger.record(ZeroCostEvent("public_pilot", self.choice.reason()), round=0)
        if self.pilot is not None:
            ledger.add_metadata(pilot=self.pilot.to_dict())
            chosen = f" at tau={self.pilot.best_temperature}" if self.pilot.soft_wins else ""
            ledger.record(
                ZeroCostEvent(
                    "public_pilot",
                    f"temperature chosen on public data only: {self.vote.name} vote{chosen}; "
                    "no private budget spent",
                ),
                round=0,
            )


def pick_vote(
    spec: VoteSpec,
    *,
    schema: Schema,
    public: pd.DataFrame | None,
    n: int,
    budget: Budget,
    policy: Any,
    fit: PilotFit,
    rounds: int,
    distance: Any = "gower",
) -> VotePick:
    """The run's vote for ``spec``; ``auto`` settings ask the public pilot.

    Parameters
    ----------
    spec
        The resolved vote (``kind`` set).
    schema, public
        The schema and the public table (needed by the pilot only).
    n, budget, rounds
        The private row count (public under replace-one), the run's budget and its
        number of rounds: the pilot runs at the same noise-to-signal ratio.
    policy
        The loaded Blowfish policy or ``None`` (it sets the default vote arms).
    fit
        One pilot run on public data (:data:`~dpevolve.pilot.run.PilotFit`).
    distance
        The run's distance (sharpened soft arms need Gower).
    """
    if spec.kind == "auto":
        if public is None:
            raise InputError("vote 'auto' needs public data (--public) for the pilot")
        choice = choose_vote(
            schema, public, n, budget, fit=fit, rounds=rounds, policy=policy, distance=distance
        )
        arm = choice.chosen
        # One line on stderr (stdout may carry a table or JSON): what was chosen and why.
        if spec.announce:
            print(choice.reason(), file=sys.stderr)
        return VotePick(make_vote(arm.vote, arm.temperature), arm.sharpen, arm.debias, None, choice)
    if spec.temperature != "auto":
        if spec.kind == "soft" and spec.temperature is None:
            raise InputError("a soft vote needs a temperature (temperature=TAU)")
        return VotePick(make_vote(str(spec.kind), spec.temperature), spec.sharpen, spec.debias)
    if public is None:
        raise InputError("temperature 'auto' needs public data (--public) for the pilot")
    result = run_pilot(schema, public, n, budget, public_init=True, fit=fit, rounds=rounds)
    vote = make_vote("soft", result.best_temperature) if result.soft_wins else make_vote("hard")
    return VotePick(vote, spec.sharpen, spec.debias, pilot=result)
