"""The vote a run uses, and ``vote="auto"``: hard or a soft configuration chosen on
public data alone.

Each *arm* is a vote configuration: the hard vote, or a soft vote at a temperature,
with the distance sharpened on unprotected attributes (:mod:`dpevolve.policy.sharpen`)
and optionally debiased after release (:mod:`dpevolve.pe.debias`). The public pilot
runs the synthesizer on public data standing in for the private table, at the private
run's noise-to-signal ratio (see :mod:`dpevolve.pilot.run`), once per arm and seed, and
picks the arm with the lowest mean pilot error, unless that arm is soft and loses to the
hard vote on some seed (then it is within the pilot's noise of hard, and hard is kept).
Nothing here reads private records, so the choice costs no private budget.
:class:`ChosenVote` is what a run uses, however it was decided (see
:meth:`dpevolve.config.VoteSpec.pick`).
"""

from __future__ import annotations

import statistics
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.pe.votes import Vote, make_vote
from dpevolve.pilot.run import PilotFit, PilotResult, PilotRun, VoteArm, pilot_error, pilot_rounds
from dpevolve.privacy import Budget, Ledger, ZeroCostEvent, calibrate_gaussian

# Seed of the split of the public table into a stand-in private half and a seed half.
_SPLIT_SEED = 12345


def default_arms(policy: Any, distance: Any = "gower") -> tuple[VoteArm, ...]:
    """Hard; soft at tau in {0.015, 0.03, 0.06}; soft at tau 0.06 with 20 debias steps.

    Under a Blowfish policy without participation and the Gower ``distance`` the soft
    arms are sharpened (:mod:`dpevolve.policy.sharpen`: the reach, hence the noise, is
    unchanged): x10, and x30 for the debiased arm, the configuration that cut the error
    most at small budgets on Adult and Bank (debiasing is post-processing: no budget).
    Otherwise every soft arm is plain.
    """
    gower = getattr(distance, "name", distance) == "gower"  # a name or a Distance
    sharp = policy is not None and not policy.participation and gower
    soft = [VoteArm("soft", tau, sharpen=10.0 if sharp else 1.0) for tau in (0.015, 0.03, 0.06)]
    debiased = VoteArm("soft", 0.06, sharpen=30.0 if sharp else 1.0, debias=20)
    return (VoteArm("hard"), *soft, debiased)


@dataclass(frozen=True)
class VoteChoice:
    """The pilot's mean error per arm and the chosen arm."""

    errors: dict[VoteArm, float]
    noise_scale: float
    seeds: tuple[int, ...]
    per_seed: dict[str, list[float]] = field(default_factory=dict)

    @property
    def best(self) -> VoteArm:
        """The arm with the lowest mean pilot error."""
        return min(self.errors, key=lambda arm: self.errors[arm])

    @property
    def tie_to_hard(self) -> bool:
        """Whether the best arm is soft but does not beat hard on every pilot seed.

        The seeds pair the runs (same split, same population randomness); an arm that
        loses to hard on one of them is within the pilot's noise of hard, and then the
        hard vote is kept: a soft arm has to win clearly to be used.
        """
        best = self.best
        hard = next((a for a in self.errors if a.vote == "hard"), None)
        if hard is None or best == hard:
            return False
        ours, theirs = self.per_seed.get(best.label), self.per_seed.get(hard.label)
        if not ours or not theirs:
            return False
        return not all(a < b for a, b in zip(ours, theirs, strict=True))

    @property
    def chosen(self) -> VoteArm:
        if self.tie_to_hard:
            return next(a for a in self.errors if a.vote == "hard")
        return self.best

    @property
    def hard_error(self) -> float | None:
        return next((e for a, e in self.errors.items() if a.vote == "hard"), None)

    def reason(self) -> str:
        """One line: which vote, and the pilot errors that decided it."""
        chosen, best = self.chosen, self.errors[self.chosen]
        runner = (
            min((e, a.label) for a, e in self.errors.items() if a != chosen)
            if len(self.errors) > 1
            else None
        )
        text = f"vote auto: chose {chosen.label} (public pilot error {best:.4f}"
        if self.tie_to_hard:
            text += (
                f"; best {self.best.label} {self.errors[self.best]:.4f} did not beat hard "
                "on every pilot seed"
            )
        elif runner is not None:
            text += f"; next best {runner[1]} {runner[0]:.4f}"
        return text + "; no private budget spent)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "chosen": self.chosen.to_dict(),
            "reason": self.reason(),
            "errors": {a.label: e for a, e in self.errors.items()},
            "noise_scale": self.noise_scale,
            "seeds": list(self.seeds),
            "per_seed": self.per_seed,
            "private_budget_spent": 0.0,
        }


def choose_vote(
    schema: Schema,
    public: pd.DataFrame,
    n_private: int,
    budget: Budget,
    *,
    arms: Sequence[VoteArm] | None = None,
    seeds: Sequence[int] = (0, 1, 2),
    public_init: bool = True,
    fit: PilotFit | None = None,
    rounds: int | None = None,
    policy: Any = None,
    distance: Any = "gower",
) -> VoteChoice:
    """Run every arm on public data at the private run's noise-to-signal ratio.

    Parameters
    ----------
    schema, public
        The schema and the public table.
    n_private
        The private row count (public under replace-one adjacency).
    budget
        The private run's budget.
    arms
        Candidate configurations; default :func:`default_arms` of the policy.
    public_init
        Whether the private run seeds its population from public data; the pilot then
        splits the public table into a stand-in private half and a seed half.
    fit, rounds
        One pilot run (:data:`~dpevolve.pilot.run.PilotFit`) and the private run's
        number of rounds; ``policy`` and ``distance`` pick the default arms.
    """
    fit, rounds = pilot_rounds(fit, rounds, "choose_vote")

    frame, _ = schema.validate(public, on_invalid="error", what="public table")
    seed_pool = None
    if public_init:
        order = np.random.default_rng(_SPLIT_SEED).permutation(len(frame))
        half = len(frame) // 2
        seed_pool, frame = frame.iloc[order[:half]], frame.iloc[order[half:]]
    if len(frame) < 2:
        raise InputError("the pilot needs a public table of at least 4 rows")
    chosen_arms = tuple(arms) if arms is not None else default_arms(policy, distance)
    if not chosen_arms:
        raise InputError("the pilot needs at least one arm")
    multiplier = calibrate_gaussian(rounds, budget)
    noise_scale = len(frame) / n_private
    # The same noise per record: z_pub = z * N_pub / n, i.e. rho_pub = T / (2 z_pub^2).
    pilot_rho = rounds / (2.0 * (multiplier * noise_scale) ** 2)

    def error(arm: VoteArm, seed: int) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # policy floors are said once, by the private run
            synthetic = fit(PilotRun(frame, arm, pilot_rho, seed_pool, seed))
        return pilot_error(frame, synthetic, schema)

    per_seed = {arm.label: [error(arm, s) for s in seeds] for arm in chosen_arms}
    return VoteChoice(
        errors={arm: statistics.fmean(per_seed[arm.label]) for arm in chosen_arms},
        noise_scale=noise_scale,
        seeds=tuple(seeds),
        per_seed=per_seed,
    )


@dataclass(frozen=True)
class ChosenVote:
    """The run's vote, its sharpening and debiasing, and the pilot that chose them (if any)."""

    vote: Vote
    sharpen: float = 1.0
    debias: int = 0
    pilot: PilotResult | None = None
    choice: VoteChoice | None = None

    @classmethod
    def of_choice(cls, choice: VoteChoice, announce: bool = False) -> ChosenVote:
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
