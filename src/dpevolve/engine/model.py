"""A fitted engine's released model: what draws rows, and nothing that read a record.

It holds the public discretiser, the released fine histograms of the numeric columns and
the estimator fitted to the released measurements (post-processing), so it may be saved
with a model file and sampled at no privacy cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpevolve.engine.bins import TAIL, histogram_quantile
from dpevolve.engine.cells import FineCells
from dpevolve.engine.counts import counted_weights, held_bins, released_counts
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.reach import THINNING
from dpevolve.engine.refine import SAMPLE_ROWS, Refinement, block_sizes
from dpevolve.engine.smoothing import decode_weights
from dpevolve.engine.tails import Fold, public_ends, released_inward
from dpevolve.engine.within import CellValues, public_shape
from dpevolve.measurements import Estimator, Measurement


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
    hidden
        Per numeric column the releases show in no bin, a public table's counts over
        its fine cells: its values take the public distribution, in the order the
        model drew them (:func:`public_ranks`).
    """

    discretiser: Discretiser
    fine: Mapping[str, np.ndarray]
    model: Estimator
    rows: int
    refinement: Refinement | None = None
    inward: Mapping[str, Fold] = field(default_factory=dict)
    # a default, not a factory: a model saved without it decodes as before
    within: Mapping[str, CellValues] | None = None
    hidden: Mapping[str, np.ndarray] | None = None

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
        # a model file written before the reach had a shape holds ``(bin, apex, foot)``
        reach = {
            name: {r[0]: (r[1], r[2], r[3] if len(r) > 3 else THINNING) for r in fold.reach}
            for name, fold in folds
        }
        values = {name: fold.values for name, fold in folds}
        frame = self.discretiser.decode(
            codes, rng, dict(self.fine), self.rows, ends, thin, held, reach, self.within, values
        )
        for name, counts in (self.hidden or {}).items():
            column = next(c for c in self.discretiser.numeric if c.name == name)
            values = frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
            frame[name] = column.format(
                public_ranks(values, self.discretiser.fine[name], counts, rng)
            )
        return frame


@dataclass(frozen=True)
class PublicFacts:
    """What a public table tells the decoding (all public; ``None`` without one): per
    numeric column, the bins it shows data in, its repeated values within the fine
    cells, and its counts over the fine cells."""

    bins: Mapping[str, tuple[int, ...]] | None = None
    within: Mapping[str, CellValues] | None = None
    fine: Mapping[str, np.ndarray] | None = None


def released_model(
    discretiser: Discretiser,
    model: Estimator,
    rows: int,
    marginals: Sequence[Measurement],
    fine: Mapping[str, Measurement],
    refinement: Refinement | None,
    public: PublicFacts,
    folds: Mapping[str, Fold] | None = None,
) -> EngineModel:
    """The model that draws rows from the releases (``marginals``, the fine histograms
    ``fine``, the fitted ``model``) and public facts alone (post-processing): per
    numeric column its decoding weights (smoothed, then kept where the bins' releases
    back them: :func:`~dpevolve.engine.counts.counted_weights`; with a public table,
    blended with its shape within each bin), its folds, and, with a public table, the
    columns the releases show in no bin (:func:`public_ranks`). ``folds``: the folds to
    decode with where they were read already (the engine's, from the fit before the one
    that holds their moved bins empty: docs/engine.md, Folded bins held empty)."""
    given = public.fine or {}
    weights: dict[str, np.ndarray] = {}
    hidden: dict[str, np.ndarray] = {}
    counts = {name: released_counts(discretiser, name, marginals, m) for name, m in fine.items()}
    for name, m in fine.items():
        cells = discretiser.fine[name]
        smooth = decode_weights(m.noisy, m.sigma, cells, name in discretiser.moved)
        weights[name] = counted_weights(smooth, cells, *counts[name])
        if name in given:  # the model's rows per bin weigh a bin its cells show nothing in
            mass = np.asarray(model.answer((name,)), dtype=np.float64)
            weights[name] = public_shape(weights[name], given[name], cells, float(m.sigma), mass)
            if not held_bins(*counts[name]):
                hidden[name] = np.asarray(given[name], dtype=np.float64)
    ends = {
        name: public_ends(discretiser.fine[name], c, discretiser.bins) for name, c in given.items()
    }
    inward = folds
    if inward is None:
        inward = released_inward(
            discretiser, model, marginals, weights, fine, public.bins, counts, rows, ends
        )
    return EngineModel(
        discretiser, weights, model, rows, refinement, inward, public.within, hidden or None
    )


def public_ranks(
    values: np.ndarray, cells: FineCells, counts: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``values`` (missing: NaN, kept) carried in their order onto a public table's
    distribution (its ``counts`` over the fine ``cells``; ties broken at random): the
    ``k``-th smallest of ``m`` takes the public quantile at ``(k + U) / m``, read
    between the public :data:`~dpevolve.engine.bins.TAIL` quantiles (a public table's
    extremes reach past the private data as often as not: cps91's hourly wages reach 200
    publicly, 78.75 privately, and 0.18% of the rows had landed past them). For a
    column the releases show in no bin, each bin's count under its noise (a column
    mostly missing), the model's values are noise in all but their order, and the
    public table, from the same population, shows the rest (public facts: free)."""
    out = np.array(values, dtype=np.float64)
    present = np.flatnonzero(~np.isnan(out))
    quantile = histogram_quantile(cells, np.asarray(counts, dtype=np.float64))
    if present.size == 0 or quantile is None:
        return out
    order = present[np.lexsort((rng.random(present.size), out[present]))]
    u = (np.arange(present.size) + rng.random(present.size)) / present.size
    out[order] = quantile(TAIL + (1.0 - 2.0 * TAIL) * u)
    return out
