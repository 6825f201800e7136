"""The vote a run uses, and ``vote="auto"``: hard or a soft configuration chosen on
public data alone.

Each *arm* is a vote configuration: the hard vote, or a soft vote at a temperature,
with the distance sharpened on unprotected attributes (:mod:`dpevolve.pe.policy.sharpen`)
and optionally debiased after release (:mod:`dpevolve.pe.debias`). The public pilot
runs the synthesizer on public data standing in for the private table, at the private
run's noise-to-signal ratio (see :mod:`dpevolve.pe.pilot.run`), once per arm and seed, and
picks the arm with the lowest mean pilot error, unless that arm is soft and loses to the
hard vote on some seed (then it is within the pilot's noise of hard, and hard is kept).
Nothing here reads private records, so the choice costs no private budget.
:class:`ChosenVote` is what a run uses, however it was decided (see
:meth:`dpevolve.pe.specs.VoteSpec.pick`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.pe.pilot.run import PilotFit, PilotResult, VoteArm, run_arms
from dpevolve.pe.votes import Vote, make_vote
from dpevolve.privacy import Ledger, ZeroCostEvent


def default_arms(policy: Any, distance: Any = "gower") -> tuple[VoteArm, ...]:
    """Hard; soft at tau in {0.015, 0.03, 0.06}; soft at tau 0.06 with 20 debias steps.

    Under a Blowfish policy without participation and the Gower ``distance`` the soft
    arms are sharpened (:mod:`dpevolve.pe.policy.sharpen`: the reach, hence the noise, is
    unchanged): x10, and x30 for the debiased arm, the configuration that cut the error
    most at small budgets on Adult and Bank (debiasing is post-processing: no budget).
    Otherwise every soft arm is plain.
    """
    gower = getattr(distance, "name", distance) == "gower"  # a name or a Distance
    sharp = policy is not None and not policy.participation and gower
    soft = [VoteArm("soft", tau, sharpen=10.0 if sharp else 1.0) for tau in (0.015, 0.03, 0.06)]
    debiased = VoteArm("soft", 0.06, sharpen=30.0 if sharp else 1.0, debias=20)
    return (VoteArm("hard"), *soft, debiased)


def choose_vote(
    schema: Schema,
    public: pd.DataFrame,
    n_private: int,
    noise_multiplier: float,
    *,
    arms: Sequence[VoteArm] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    public_init: bool = True,
    fit: PilotFit | None = None,
    rounds: int | None = None,
    policy: Any = None,
    distance: Any = "gower",
) -> PilotResult:
    """Run every arm on public data at the private run's noise-to-signal ratio.

    Parameters
    ----------
    schema, public
        The schema and the public table.
    n_private
        The private row count (public under replace-one adjacency).
    noise_multiplier
        The private run's noise multiplier ``z`` (``sigma = z * sensitivity``):
        :func:`~dpevolve.privacy.calibrate_gaussian` of its rounds and budget.
    arms
        Candidate configurations; default :func:`default_arms` of the policy.
    public_init
        Whether the private run seeds its population from public data; the pilot then
        splits the public table into a stand-in private half and a seed half.
    fit, rounds
        One pilot run (:data:`~dpevolve.pe.pilot.run.PilotFit`) and the private run's
        number of rounds; ``policy`` and ``distance`` pick the default arms.
    """
    chosen = tuple(arms) if arms is not None else default_arms(policy, distance)
    return run_arms(schema, public, n_private, noise_multiplier, chosen, seeds=seeds,
                    public_init=public_init, fit=fit, rounds=rounds)  # fmt: skip


@dataclass(frozen=True)
class ChosenVote:
    """The run's vote, its sharpening and debiasing, and the pilot that chose them (if any)."""

    vote: Vote
    sharpen: float = 1.0
    debias: int = 0
    pilot: PilotResult | None = None
    choice: PilotResult | None = None

    @classmethod
    def of_choice(cls, choice: PilotResult, announce: bool = False) -> ChosenVote:
        """The arm ``choice`` chose; with ``announce`` one line on stderr says which and why
        (stdout may carry a table or JSON)."""
        arm = choice.chosen
        if announce:
            print(choice.reason(), file=sys.stderr)
        return cls(make_vote(arm.vote, arm.temperature), arm.sharpen, arm.debias, None, choice)

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
