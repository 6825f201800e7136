"""Public pilot: choose the soft vote's temperature without spending private budget.

The pilot runs the synthesizer with public data standing in for the private table, once
with the hard vote and once per candidate temperature, at the user's budget, and
forecasts which vote wins on the private run (docs/math.md §3).

Noise-to-signal is matched: vote counts grow with the number of records, so with
``N_pub`` public records standing in for ``n`` private ones the pilot's noise is
``sigma_pub = sigma * N_pub / n``; the private ``n`` is public under replace-one
adjacency. Nothing here reads private records, so it costs no private budget.
"""

from __future__ import annotations

import statistics
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.metrics import marginal_tv

DEFAULT_TEMPERATURES = (0.015, 0.03, 0.06)
# Seed of the split of the public table into a stand-in private half and a seed half.
_SPLIT_SEED = 12345


@dataclass(frozen=True)
class VoteArm:
    """One vote configuration the pilot can choose.

    ``sharpen`` multiplies the Gower weights of unprotected attributes (1: off);
    ``debias`` is the number of Richardson-Lucy steps after release (0: off).
    """

    vote: str
    temperature: float | None = None
    sharpen: float = 1.0
    debias: int = 0

    def __post_init__(self) -> None:
        if self.vote not in ("hard", "soft"):
            raise InputError(f"an arm's vote is hard or soft, got '{self.vote}'")
        if (self.vote == "soft") != (self.temperature is not None):
            raise InputError("a soft arm needs a temperature and a hard arm none")

    @property
    def label(self) -> str:
        if self.vote == "hard":
            return "hard"
        text = f"soft tau={self.temperature:g}"
        if self.sharpen != 1.0:
            text += f" sharpen={self.sharpen:g}"
        if self.debias:
            text += f" debias={self.debias}"
        return text

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class PilotRun:
    """One pilot run: fit on ``table`` (public data standing in for the private table)
    with the vote ``arm`` at zCDP ``rho``, the population seeded from ``public`` (or
    random), post-processing seeded by ``seed``."""

    table: pd.DataFrame
    arm: VoteArm
    rho: float
    public: pd.DataFrame | None
    seed: int


#: The callback a pilot runs: it fits a model configured like the private run for one
#: :class:`PilotRun` and returns its synthetic table (``Synthesizer.pilot_fit`` makes one).
PilotFit = Callable[[PilotRun], pd.DataFrame]


def pilot_rounds(fit: PilotFit | None, rounds: int | None, caller: str) -> tuple[PilotFit, int]:
    """The pilot's ``fit`` callback and the private run's number of rounds, both required."""
    if fit is None or rounds is None:
        raise InputError(
            f"{caller}: give fit= (e.g. Synthesizer.pilot_fit(schema, ...)) and rounds= "
            "(the private run's rounds)"
        )
    return fit, rounds


def pilot_error(
    real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, ks: Sequence[int] = (1, 2, 3)
) -> float:
    """Mean over ``k`` of the mean k-way marginal TV (docs/math.md §7); the pilot's yardstick."""
    ks = [k for k in ks if k <= len(schema)]
    return statistics.fmean(marginal_tv(real, synthetic, schema, k).mean for k in ks)


@dataclass(frozen=True)
class PilotResult:
    """The pilot's mean error per vote arm, the arm it chooses and its forecast."""

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

    @property
    def soft_errors(self) -> dict[float, float]:
        """The plain soft arms' errors (no sharpening or debiasing), by temperature."""
        return {
            float(a.temperature): e
            for a, e in self.errors.items()
            if a.vote == "soft" and a.temperature is not None and a.sharpen == 1 and not a.debias
        }

    @property
    def best_temperature(self) -> float | None:
        """The plain soft arm's temperature with the lowest error (``None``: none ran)."""
        soft = self.soft_errors
        return min(soft, key=lambda tau: soft[tau]) if soft else None

    @property
    def soft_wins(self) -> bool:
        """The temperature forecast: does the best plain soft vote beat the hard vote?"""
        tau, hard = self.best_temperature, self.hard_error
        return tau is not None and hard is not None and self.soft_errors[tau] < hard

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
            "hard_error": self.hard_error,
            "soft_errors": {str(t): e for t, e in self.soft_errors.items()},
            "best_temperature": self.best_temperature,
            "soft_wins": self.soft_wins,
            "noise_scale": self.noise_scale,
            "seeds": list(self.seeds),
            "per_seed": self.per_seed,
            "private_budget_spent": 0.0,
        }


def run_arms(
    schema: Schema,
    public: pd.DataFrame,
    n_private: int,
    noise_multiplier: float,
    arms: Sequence[VoteArm],
    *,
    seeds: Sequence[int],
    public_init: bool,
    fit: PilotFit | None,
    rounds: int | None,
) -> PilotResult:
    """Every arm on public data at the private run's noise-to-signal ratio, per seed.

    ``public_init``: the private run seeds its population from public data, so the pilot
    splits the public table into a stand-in private half and a seed half (it is then not
    flattered by seeing its target). ``noise_multiplier`` is the private run's ``z``
    (``sigma = z * sensitivity``; :func:`~dpevolve.privacy.calibrate_gaussian` of its
    rounds and budget, worked out by the caller's plan), ``fit`` one pilot run
    (:data:`PilotFit`) and ``rounds`` the private run's number of Gaussian rounds.
    """
    fit, rounds = pilot_rounds(fit, rounds, "the pilot")
    if not arms:
        raise InputError("the pilot needs at least one arm")
    frame, _ = schema.validate(public, on_invalid="error", what="public table")
    seed_pool = None
    if public_init:
        order = np.random.default_rng(_SPLIT_SEED).permutation(len(frame))
        half = len(frame) // 2
        seed_pool, frame = frame.iloc[order[:half]], frame.iloc[order[half:]]
    if len(frame) < 2:
        raise InputError("the pilot needs a public table of at least 4 rows")
    noise_scale = len(frame) / n_private
    # The same noise per record: z_pub = z * N_pub / n, i.e. rho_pub = T / (2 z_pub^2).
    pilot_rho = rounds / (2.0 * (noise_multiplier * noise_scale) ** 2)

    def error(arm: VoteArm, seed: int) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # policy floors are said once, by the private run
            synthetic = fit(PilotRun(frame, arm, pilot_rho, seed_pool, seed))
        return pilot_error(frame, synthetic, schema)

    per_seed = {arm.label: [error(arm, s) for s in seeds] for arm in arms}
    return PilotResult(
        errors={arm: statistics.fmean(per_seed[arm.label]) for arm in arms},
        noise_scale=noise_scale,
        seeds=tuple(seeds),
        per_seed=per_seed,
    )


def run_pilot(
    schema: Schema,
    public: pd.DataFrame,
    n_private: int,
    noise_multiplier: float,
    *,
    temperatures: Sequence[float] = DEFAULT_TEMPERATURES,
    seeds: Sequence[int] = (0, 1),
    public_init: bool = False,
    fit: PilotFit | None = None,
    rounds: int | None = None,
) -> PilotResult:
    """Forecast hard vs soft and the best temperature from public data alone.

    Parameters
    ----------
    schema, public
        The schema and the public table (validated against it).
    n_private
        The private table's row count (public under replace-one adjacency).
    noise_multiplier
        The private run's noise multiplier ``z`` (``sigma = z * sensitivity``):
        :func:`~dpevolve.privacy.calibrate_gaussian` of its rounds and budget. The pilot
        runs at the same noise-to-signal ratio.
    public_init
        Whether the private run seeds its population from public data. The pilot then
        splits the public table in two: one half stands in for the private table, the
        other seeds the population, so the pilot is not flattered by seeing its target.
    fit
        One pilot run (:data:`PilotFit`), e.g. ``Synthesizer.pilot_fit(schema, "bfsoft",
        policy=...)``; the private run's facade passes its own.
    rounds
        The private run's number of Gaussian rounds.

    Returns
    -------
    PilotResult
        Its ``best_temperature`` and ``soft_wins`` are the forecast.
    """
    if not temperatures:
        raise InputError("the pilot needs at least one temperature")
    arms = (VoteArm("hard"), *(VoteArm("soft", tau) for tau in temperatures))
    return run_arms(schema, public, n_private, noise_multiplier, arms, seeds=seeds,
                    public_init=public_init, fit=fit, rounds=rounds)  # fmt: skip
