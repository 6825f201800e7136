"""Private Evolution's rounds within a fit: the loop of :mod:`dpevolve.pe.evolution`
driven from the fit's plan, each round's release recorded in the run's ledger, with a
progress bar of the epsilon spent (docs/guide.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from dpevolve.backends import Backend
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import Schema
from dpevolve.data.sources import PrivateSource
from dpevolve.measurements import Measurement, MeasurementList, VoteQuery
from dpevolve.pe.evolution import Evolution
from dpevolve.pe.fit_plan import FitPlan
from dpevolve.pe.release.base import Release, Selection
from dpevolve.pe.variation import Variation
from dpevolve.privacy import Ledger

__all__ = ["evolve", "rounds_progress"]


def evolve(
    plan: FitPlan,
    schema: Schema,
    source: PrivateSource,
    release: Release,
    backend: Backend,
    ledger: Ledger,
    measurements: MeasurementList,
    rng: np.random.Generator,
    progress: bool,
) -> tuple[Records, list[dict[str, Any]]]:
    """The PE rounds from the initial population; each release goes to the ledger and
    to ``measurements`` (its vote histogram) before the next round reads the private
    table (docs/privacy.md)."""
    schedule = plan.config.preset.schedule
    variation = Variation(Layout.of(schema))
    initial = (
        variation.random(schedule.population, rng)
        if plan.public is None
        else variation.from_public(plan.public, schedule.population, rng)
    )
    history: list[dict[str, Any]] = []
    if plan.skip_rounds:
        return initial, history
    engine = Evolution(plan.distance, plan.pick.vote, release, schedule, variation, backend)
    with rounds_progress(progress, schedule.rounds) as advance:

        def on_round(t: int, selection: Selection, population: Records) -> None:
            ledger.record(selection.event, round=t, population=len(population), **selection.info)
            if selection.noisy is not None:
                query = VoteQuery(len(population))
                measurements.append(
                    Measurement(query, selection.noisy, selection.sigma, selection.event)
                )
            spent = ledger.spent()
            history.append(
                {
                    "round": t,
                    "population": len(population),
                    "epsilon_spent": spent,
                    **selection.info,
                }
            )
            advance(t, spent)

        return engine.run(source, initial, rng, on_round), history


@contextmanager
def rounds_progress(enabled: bool, rounds: int) -> Iterator[Callable[[int, float], None]]:
    """A callback ``advance(round, epsilon_spent)``: a progress bar when ``enabled``."""
    if not enabled:
        yield lambda t, spent: None
        return
    from dpevolve.progress import phase, text_column

    spent = text_column("ε spent {task.fields[spent]:.4g}")
    with phase(True, "round", rounds, spent, spent=0.0) as advance:
        yield lambda t, spent: advance(t, spent=spent)
