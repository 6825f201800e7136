"""What a fit decides before it reads a private record, and the ledger it opens.

:func:`plan_fit` turns a resolved :class:`~dpevolve.pe.method.PEMethod` and public facts
(the schema, the policy, the public table, the private row count ``n``, public under
replace-one adjacency) into a :class:`FitPlan`: the marginal release's share, the distance, the
vote (a public pilot may choose it), the reach and the sensitivity. :func:`open_ledger`
writes what the run is about to do into a new :class:`~dpevolve.privacy.Ledger`.

The budget stops here: this module works out from it what the rest of the fit needs
(the marginal release's ``rho``, the public pilot's noise multiplier, the rounds'
``rho`` for a zCDP mechanism) and hands on plain numbers; only PubMix, accounted in
``(epsilon, delta)``, is handed its rounds' budget (docs/architecture.md, "One budget,
measured").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import Schema
from dpevolve.data.validation import ValidationReport
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance, make_distance
from dpevolve.pe.invalid_rows import InvalidRowCalibration
from dpevolve.pe.invalid_rows import calibrate as calibrate_invalid
from dpevolve.pe.pilot.choice import ChosenVote
from dpevolve.pe.pilot.run import PilotFit
from dpevolve.pe.release.build import ReleaseInputs
from dpevolve.privacy import Budget, Ledger, calibrate_gaussian, zcdp_budget
from dpevolve.privacy.noise import NoiseSource


@dataclass(frozen=True)
class FitPlan:
    """A fit's public decisions; with a marginal release, ``marginal_rho`` is its share
    (zCDP). The budget is no part of it: the fit hands it to the release's calibration
    and the ledger (:func:`release_inputs`, :func:`open_ledger`), not to the rounds."""

    config: Any  # the resolved PEMethod (which imports this module)
    marginal_rho: float | None
    distance: Distance
    pick: ChosenVote
    policy: Any
    reach: float
    warnings: list[str]
    invalid: InvalidRowCalibration
    public: Records | None
    sensitivity_of: Callable[[Records], float] | None

    @property
    def sensitivity(self) -> float:
        """The per-round L2 bound; also covers a valid row replaced by an invalid one."""
        return self.invalid.sensitivity

    @property
    def marginal_share(self) -> float:
        """The marginal release's share of the budget (0: no marginal release)."""
        marginals = self.config.marginals
        return 0.0 if marginals is None or marginals.share is None else float(marginals.share)

    @property
    def skip_rounds(self) -> bool:
        """The whole budget goes to the marginals: the population is only a pool seed."""
        return self.marginal_rho is not None and self.marginal_share == 1.0


def split_budget(config: Any, budget: Budget) -> tuple[Budget, float | None]:
    """The PE rounds' budget and, with a marginal release, the release's zCDP ``rho``
    (:func:`~dpevolve.pe.hybrid.tail.split_budget`); ``config`` is the resolved
    :class:`~dpevolve.pe.method.PEMethod`."""
    if config.marginals is None or config.marginals.share is None:
        return budget, None
    from dpevolve.pe.hybrid.tail import split_budget as split_tail

    pe_budget, marginal_rho = split_tail(budget, config.marginals.share)
    return (budget if pe_budget is None else pe_budget), marginal_rho


def plan_fit(
    config: Any,
    schema: Schema,
    n: int,
    budget: Budget,
    *,
    marginal_rho: float | None,
    policy: Any,
    public: pd.DataFrame | None,
    on_invalid: str,
    backend: Any,
    fit: PilotFit,
    announce: bool = False,
) -> FitPlan:
    """Every decision of a fit that needs no private record (see the module); with
    ``announce`` an automatic vote choice is said on stderr. ``config`` is the resolved
    :class:`~dpevolve.pe.method.PEMethod`; ``budget`` the run's, delta resolved (the
    public pilot plays runs at its noise multiplier); ``marginal_rho`` from
    :func:`split_budget`."""
    distance = make_distance(config.preset.distance, schema)
    rounds = config.preset.schedule.rounds
    pick = config.vote.pick(
        schema=schema,
        public=public,
        n=n,
        noise_multiplier=calibrate_gaussian(rounds, budget) if config.vote.needs_pilot else None,
        policy=policy,
        fit=fit,
        rounds=rounds,
        distance=distance,
        announce=announce,
    )
    if pick.sharpen != 1.0:
        from dpevolve.pe.policy.sharpen import sharpen_unprotected

        if policy is None:
            raise InputError("sharpening needs a Blowfish policy (--policy)")
        distance = sharpen_unprotected(distance, policy, float(pick.sharpen))
    reach = distance.diameter() if policy is None else policy.reach(distance)
    if not reach > 0:
        raise InputError(
            "the policy protects no substitution (reach 0): votes would be "
            "released without noise; protect at least one attribute"
        )
    policy_warnings = [] if policy is None else policy.warnings(distance)
    for warning in policy_warnings:  # said before any budget is spent
        warnings.warn(f"policy: {warning}", UserWarning, stacklevel=4)
    records = None
    if public is not None:
        public_frame, _ = schema.validate(public, on_invalid="error", what="public table")
        records = encode(public_frame, schema)
    invalid = calibrate_invalid(on_invalid, pick.vote.l2_sensitivity(reach))
    if invalid.warning() is not None:
        warnings.warn(str(invalid.warning()), UserWarning, stacklevel=4)
    exact = config.mechanism.exact(pick.vote, policy, distance, backend)
    return FitPlan(
        config=config,
        marginal_rho=marginal_rho,
        distance=distance,
        pick=pick,
        policy=policy,
        reach=reach,
        warnings=policy_warnings,
        invalid=invalid,
        public=records,
        sensitivity_of=invalid.exact(exact),
    )


def open_ledger(
    plan: FitPlan,
    budget: Budget,
    schema: Schema,
    *,
    calibration: dict[str, Any],
    run: dict[str, Any],
    backend: str,
    report: ValidationReport | None,
    config: dict[str, Any],
) -> Ledger:
    """The run's ledger: its budget (once), configuration, calibration and the pilot's
    free events.

    ``run`` holds the facts the facade owns (version, seed, noise, n, fit number),
    written first; ``backend`` names where votes are computed; ``config`` is the run's
    settings in run-file words (:func:`dpevolve.method.config_words`).
    """
    preset, pick = plan.config.preset, plan.pick
    ledger = Ledger(
        budget.delta if budget.delta is not None else 1e-5,
        metadata={
            **run,
            "budget": budget.to_dict(),
            "preset": preset.name,
            "schedule": {
                "population": preset.schedule.population,
                "rounds": preset.schedule.rounds,
                "stages": [vars(s) for s in preset.schedule.stages],
            },
            "distance": plan.distance.name,
            "backend": backend,
            "vote": {
                "name": pick.vote.name,
                "temperature": getattr(pick.vote, "temperature", None),
                "sharpen": pick.sharpen,
                "debias": pick.debias,
            },
            "policy": None if plan.policy is None else plan.policy.to_dict(),
            "reach": plan.reach,
            "l2_sensitivity": plan.sensitivity,
            "invalid_rows": plan.invalid.to_dict(),
            "mechanism": plan.config.mechanism.name,
            **calibration,
            # The run's settings verbatim: ``--config LEDGER`` re-runs it.
            "config": config,
            "schema": schema.to_dict(),
            "validation": None if report is None else report.to_dict(),
        },
    )
    for warning in plan.warnings:
        ledger.note(f"policy: {warning}")
    pick.record(ledger)
    if report is not None and report.changed:
        ledger.note(
            f"on_invalid={report.mode} changed the private table: {report.rows_in} rows, "
            f"{report.rows_in - report.rows_out} invalid (empty votes), clipped cells "
            f"{dict(report.clipped)}. These counts come from the private data and are not "
            "privatised: keep this ledger with the data."
        )
    return ledger


def release_inputs(
    plan: FitPlan, budget: Budget, noise: NoiseSource, backend: Any, n: int
) -> ReleaseInputs:
    """The public facts the plan's release is calibrated from, ``budget`` the rounds'
    (:func:`split_budget`): a mechanism accounted in zCDP is handed its ``rho``, one
    accounted in ``(epsilon, delta)`` (PubMix) the budget itself."""
    zcdp = plan.config.mechanism.zcdp
    return ReleaseInputs(
        noise=noise,
        schedule=plan.config.preset.schedule,
        rho=zcdp_budget(budget) if zcdp else None,
        budget=None if zcdp else budget,
        sensitivity=plan.sensitivity,
        vote=plan.pick.vote,
        distance=plan.distance,
        backend=backend,
        public=plan.public,
        n=n,
        sensitivity_of=plan.sensitivity_of,
        debias=plan.pick.debias,
    )
