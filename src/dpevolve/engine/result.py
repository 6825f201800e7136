"""A fitted engine (:func:`~dpevolve.engine.loop.run_engine`'s result): what it
released, its ledger and model, and the rows it draws."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.model import EngineModel, PublicFacts, released_model
from dpevolve.engine.refine import Refinement
from dpevolve.engine.tails import Fold
from dpevolve.engine.within import CellValues
from dpevolve.measurements import Estimator, Measurement, MeasurementList
from dpevolve.privacy import Ledger
from dpevolve.privacy.events import Event


@dataclass
class EngineResult:
    """A fitted engine: the measurement list, the ledger, the model; ``sample`` rows.

    Attributes
    ----------
    measurements
        Every release, in ledger order, one per event: the fine histograms, the
        selections, the marginals (:meth:`~dpevolve.measurements.MeasurementList.marginals`:
        what the estimator reconciled) and the PE stage's votes.
    fine
        The fine 1-way histograms of the numeric columns (used to decode values).
    ledger
        Every release's event, in release order (selections included).
    model
        The fitted estimator (post-processing of the marginals).
    public_bins
        Per numeric column, the bins a public table shows data in (none without one):
        they hold data when the model's rows are decoded
        (:func:`~dpevolve.engine.tails.released_inward`).
    within, public_fine
        Per numeric column, a public table's repeated values within its fine cells and
        its rows in each cell (none without one): where decoded values land
        (:mod:`~dpevolve.engine.within`).
    folds
        Per numeric column, the folds the rows decode with, read from the fit before the
        last refit held their moved bins empty (``EngineSpec.empty_folds``); ``None``:
        read from ``model``.
    """

    schema: Schema
    discretiser: Discretiser
    measurements: MeasurementList
    fine: dict[str, Measurement]
    ledger: Ledger
    model: Estimator
    rows: int
    history: list[dict[str, Any]] = field(default_factory=list)
    refinement: Refinement | None = None
    public_bins: dict[str, tuple[int, ...]] | None = None
    within: dict[str, CellValues] | None = None
    public_fine: dict[str, np.ndarray] | None = None
    folds: dict[str, Fold] | None = None

    @property
    def events(self) -> tuple[Event, ...]:
        return self.ledger.events

    def sample(
        self, rows: int | None = None, rng: np.random.Generator | None = None
    ) -> pd.DataFrame:
        """``rows`` (default: the private row count) fresh rows drawn from the model."""
        generator = rng if rng is not None else np.random.default_rng()
        return self.released().sample(rows, generator)

    def released(self) -> EngineModel:
        """The part that draws rows (released values and public facts only)."""
        return released_model(
            self.discretiser, self.model, self.rows, self.measurements.marginals(), self.fine,
            self.refinement, PublicFacts(self.public_bins, self.within, self.public_fine),
            self.folds,
        )  # fmt: skip


__all__ = ["EngineResult"]
