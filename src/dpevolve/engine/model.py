"""A fitted engine's released model: what draws rows, and nothing that read a record.

It holds the public discretiser, the released fine histograms of the numeric columns and
the estimator fitted to the released measurements (post-processing), so it may be saved
with a model file and sampled at no privacy cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.refine import SAMPLE_ROWS, Refinement, block_sizes
from dpevolve.engine.tails import Fold
from dpevolve.engine.within import CellValues
from dpevolve.measurements import Estimator


@dataclass(frozen=True)
class EngineModel:
    """Draws fresh rows: codes from the estimator, decoded within their cells.

    Attributes
    ----------
    discretiser
        The schema's cells (public).
    fine
        Released fine 1-way histograms of numeric columns (values drawn within a bin).
    model
        The estimator fitted to the released measurements.
    rows
        The private row count ``n`` (public under replace-one), the default row count.
    inward
        Per numeric column, the bin each of its cells decodes as and the bins that
        decode as its ends: end bins the model gives noise mass past a gap decode
        inward (:class:`~dpevolve.engine.tails.Fold`).
    refinement
        The PE stage's reweighting of the model's rows (:mod:`~dpevolve.engine.refine`).
    within
        Per numeric column, a public table's repeated values within its fine cells,
        where values land (:mod:`~dpevolve.engine.within`; public facts).
    """

    discretiser: Discretiser
    fine: Mapping[str, np.ndarray]
    model: Estimator
    rows: int
    refinement: Refinement | None = None
    inward: Mapping[str, Fold] = field(default_factory=dict)
    # a default, not a factory: a model saved without it decodes as before
    within: Mapping[str, CellValues] | None = None

    def sample(self, rows: int | None, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` (default ``n``) fresh rows drawn from the model (post-processing):
        the blocks of :meth:`blocks`, joined."""
        parts = list(self.blocks(rows, rng))
        if len(parts) == 1:
            return parts[0]
        return pd.concat(parts, ignore_index=True)

    def blocks(self, rows: int | None, rng: np.random.Generator) -> Iterator[pd.DataFrame]:
        """``rows`` (default ``n``) fresh rows in blocks of :data:`SAMPLE_ROWS` (the last
        one shorter), each drawn from ``rng`` in turn: memory is bounded by one block
        whatever ``rows``, and the rows depend on the seed alone, never on how a writer
        groups them (docs/scale.md)."""
        count = self.rows if rows is None else int(rows)
        for size in block_sizes(count, SAMPLE_ROWS):
            if self.refinement is not None:
                yield self.refinement.sample(self.draw, size, rng)
            else:
                yield self.draw(size, rng)

    def draw(self, count: int, rng: np.random.Generator) -> pd.DataFrame:
        """``count`` rows of the model itself (before any PE reweighting)."""
        codes = np.asarray(self.model.sample(count, rng), dtype=np.int64)
        names = [c.name for c in self.discretiser.schema.columns]
        for name, fold in self.inward.items():
            target = np.asarray(fold.target, dtype=np.int64)
            if np.any(target != np.arange(target.size)):  # a pass over the rows only where it moves
                j = names.index(name)
                codes[:, j] = target[codes[:, j]]
        folds = self.inward.items()
        ends = {name: fold.ends for name, fold in folds}
        thin = {name: fold.thin for name, fold in folds}
        held = {name: fold.held for name, fold in folds}
        reach = {name: {b: (lo, hi) for b, lo, hi in fold.reach} for name, fold in folds}
        return self.discretiser.decode(
            codes, rng, dict(self.fine), self.rows, ends, thin, held, reach, self.within
        )
