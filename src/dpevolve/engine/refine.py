"""PE's nearest-candidate vote as one more measurement of the engine (docs/engine.md).

A graphical model over marginals of order 2-4 cannot carry structure of higher order
(Person Activity's activity given the tag and three coordinates). Private Evolution's
vote can: each private record votes for its nearest candidate (Lin et al. 2024; Tab-PE's
one-hot/L2 distance), whatever the order of the structure. The stage uses the vote to
correct the fitted model, and the model keeps drawing the rows:

1. ``M`` candidates are drawn from the current sampler (the model, corrected by the
   earlier rounds of this stage): post-processing of released values;
2. the backend sums the hard votes of the private records over the candidates, and the
   existing Gaussian release of PE (:class:`~dpevolve.pe.release.gaussian.GaussianRelease`,
   sensitivity ``sqrt(2)`` under replace-one: a record moves its one vote from one
   candidate to another) adds discrete Gaussian noise from the one noise source, after
   the event is charged to the plan's :class:`~dpevolve.engine.plan.Spend`;
3. the current sampler's expected count ``e_j`` in each candidate's cell (the points
   nearest to candidate ``j``) is estimated from fresh model draws weighted as the
   sampler weighs them, and the cell's density ratio is :func:`cell_ratio` of the noisy
   count: the residual ``H~_j - e_j`` shrunk by how much of the residuals' spread the
   noise explains (post-processing).

Sampling draws ``pool * rows`` rows from the model, weights each by the product of the
ratios of the cells it falls in (raked, if asked, back to the draws' 1-way shares) and
resamples ``rows`` of them systematically: fresh model draws, reweighted (a
sampling-importance-resampling step), never copies of the candidates. With no round
(``pe_share = 0``, a table wider than ``pe_max_columns`` or with fewer numeric columns
than ``pe_min_numeric``) the engine samples the model directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpevolve.backends.base import Backend
from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import Schema
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.nearest import hard_votes, nearest
from dpevolve.engine.plan import Spend
from dpevolve.measurements import Measurement, MeasurementList, VoteQuery
from dpevolve.pe.distance import make_distance
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.pe.votes import HardVote
from dpevolve.privacy import Ledger, gaussian_sigma
from dpevolve.privacy.noise import NoiseSource

#: Draws ``(rows, rng) -> table`` from a sampler (the model, or a corrected one).
Draw = Callable[[int, np.random.Generator], pd.DataFrame]

#: Ledger label of the stage's vote releases (the ledger's ``round`` counts the stage's
#: rounds after the marginal rounds).
VOTE_LABEL = "pe_vote"

#: Model draws per candidate that estimate the model's own share of each cell.
SHARE_DRAWS = 50

#: Most output rows resampled at once (their pool is ``pe_pool`` times as many draws),
#: and the rows of one block of a sample (docs/scale.md).
SAMPLE_ROWS = 1 << 17


def block_sizes(rows: int, block: int = SAMPLE_ROWS) -> list[int]:
    """``rows`` cut into blocks of ``block`` rows, the last one shorter (``[0]`` for 0)."""
    sizes = [block] * (rows // block) + [rows % block]
    return [s for s in sizes if s] or [0]


@dataclass(frozen=True)
class Correction:
    """One released vote, as a density ratio on its candidates' cells.

    Attributes
    ----------
    candidates
        The round's candidates (model draws: post-processing).
    ratio
        ``w_j`` per candidate (from the noisy vote and public draws only).
    """

    candidates: Records
    ratio: np.ndarray


@dataclass(frozen=True)
class Refinement:
    """The stage's corrections; :meth:`sample` draws corrected fresh rows.

    Holds only released values (the candidates are model draws, the ratios read the
    noisy votes), so it travels with the model file.
    """

    schema: Schema
    corrections: tuple[Correction, ...]
    pool: int
    rake: int = 0

    def weights(self, rows: Records) -> np.ndarray:
        """The product of the ratios of the cells ``rows`` fall in."""
        distance = make_distance("tabpe", self.schema)
        out = np.ones(len(rows))
        for c in self.corrections:
            out *= c.ratio[nearest(rows, c.candidates, distance)]
        return out

    def sample(self, base: Draw, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` rows: ``pool * rows`` fresh draws of ``base``, resampled by weight.
        Callers keep ``rows`` to at most :data:`SAMPLE_ROWS` (the engine model draws in
        blocks of that size), which bounds the ``pool * rows`` draws held at once."""
        return resample(base, self, rows, rng)


def encoded_rows(frame: pd.DataFrame, schema: Schema) -> Records:
    """The model's decoded rows as :class:`Records` (missing cells as the schema spells
    them: the validation maps a missing category to its reserved value)."""
    valid, _ = schema.validate(frame, on_invalid="error", what="model rows")
    return encode(valid, schema)


def weighted_draws(
    base: Draw, refinement: Refinement, count: int, rng: np.random.Generator
) -> tuple[pd.DataFrame, Records, np.ndarray]:
    """``count`` draws of ``base``, encoded, and their normalised weights (raked if set)."""
    draws = base(count, rng)
    encoded = encoded_rows(draws, refinement.schema)
    weights = refinement.weights(encoded)
    if refinement.rake:
        weights = rake(encoded, weights, refinement.rake)
    return draws, encoded, weights / weights.sum()


def resample(
    base: Draw, refinement: Refinement, rows: int, rng: np.random.Generator
) -> pd.DataFrame:
    """Sampling-importance-resampling of ``base``'s draws by ``refinement``'s weights.

    Systematic resampling (one uniform offset, ``rows`` equally spaced points on the
    weights' cumulative sum) of the draws sorted by their cells, column after column:
    every run of the sort order, so every cell of the first columns, gets the floor or
    ceiling of its weighted share, the low variance of the model's own stratified draws
    where an independent resample would add its own sampling noise.
    """
    if rows <= 0 or not refinement.corrections:
        return base(rows, rng)
    draws, encoded, weights = weighted_draws(base, refinement, refinement.pool * rows, rng)
    order = np.lexsort(column_cells(encoded)[::-1])
    points = (rng.random() + np.arange(rows)) / rows
    pick = np.minimum(np.searchsorted(np.cumsum(weights[order]), points), len(draws) - 1)
    return draws.iloc[order[pick]].sample(frac=1.0, random_state=rng).reset_index(drop=True)


#: Bins of a numeric column when raking (the model's resolution by default).
RAKE_BINS = 20


def column_cells(rows: Records) -> list[np.ndarray]:
    """Each column's cell per row: its category, or its numeric bin (0: missing)."""
    cells = list(rows.codes.T.astype(np.int64))
    for col in rows.numeric.T:
        present = ~np.isnan(col)
        cell = np.zeros(len(col), dtype=np.int64)
        cell[present] = 1 + np.minimum((col[present] * RAKE_BINS).astype(np.int64), RAKE_BINS - 1)
        cells.append(cell)
    return cells


def rake(rows: Records, weights: np.ndarray, order: int, sweeps: int = 5) -> np.ndarray:
    """Weights scaled per cell of every 1-way (``order`` 1) or 1- and 2-way marginal
    (``order`` 2) towards the unweighted rows' (the model's) shares: the votes then move
    only structure of higher order (iterative proportional fitting, a few sweeps)."""
    cells = column_cells(rows)
    sizes = [int(c.max()) + 1 for c in cells]
    if order >= 2:
        cells += [
            cells[i] * sizes[j] + cells[j]
            for i in range(len(sizes))
            for j in range(i + 1, len(sizes))
        ]
    out = weights / weights.sum()
    for _ in range(sweeps):
        for cell in cells:
            size = int(cell.max()) + 1
            target = np.bincount(cell, minlength=size) / len(cell)
            have = np.bincount(cell, weights=out, minlength=size)
            out = out * (target / np.maximum(have, 1e-300))[cell]
    return out


@dataclass(frozen=True)
class StageInputs:
    """What the stage reads: the private source (votes only), the run's noise, ledger,
    spend and measurement list (each vote goes to it, in ledger order), and its public
    choices."""

    source: PrivateSource
    schema: Schema
    noise: NoiseSource
    ledger: Ledger
    spend: Spend
    rho: float
    rounds: int
    candidates: int
    pool: int
    first_round: int
    rake: int = 0
    backend: Backend | None = None
    """Where the votes are summed (default: this process, by
    :func:`~dpevolve.engine.nearest.hard_votes`: the local numpy reference's histogram)."""
    measurements: MeasurementList = field(default_factory=MeasurementList)


def cell_ratio(noisy: np.ndarray, expected: np.ndarray, sigma: float) -> np.ndarray:
    """``w_j = (max(e_j + lambda r_j, 0) + sigma) / (e_j + sigma)``, ``r = H~ - e``.

    ``lambda`` shrinks the residuals by how much of their spread the noise explains: a
    cell's residual has variance ``sigma^2 + e_j`` when the model is right (the noise,
    and the binomial spread of a count), so ``lambda = 1 - sum(sigma^2 + e) / sum(r^2)``
    (clipped to [0, 1]; James-Stein's factor); a model the votes cannot fault is left
    as it is. Post-processing of the noisy votes and public draws.
    """
    residual = noisy - expected
    spread = float((residual**2).sum())
    null = float((sigma**2 + expected).sum())
    keep = min(1.0, max(0.0, 1.0 - null / spread)) if spread > 0 else 0.0
    return (np.maximum(expected + keep * residual, 0.0) + sigma) / (expected + sigma)


def refine(base: Draw, inputs: StageInputs, rng: np.random.Generator) -> Refinement:
    """Run the stage's vote rounds within ``inputs.rho``; see the module docstring."""
    distance = make_distance("tabpe", inputs.schema)
    vote = HardVote()
    # A hard vote's replace-one L2 sensitivity: the one changed record moves its vote.
    sensitivity = vote.l2_sensitivity(1.0)
    n = int(inputs.source.n)
    corrections: list[Correction] = []
    for t in range(inputs.rounds):
        current = Refinement(inputs.schema, tuple(corrections), inputs.pool, inputs.rake)
        candidates = encoded_rows(resample(base, current, inputs.candidates, rng), inputs.schema)
        sigma = gaussian_sigma(sensitivity, inputs.rho / inputs.rounds)
        release = GaussianRelease(sigma, sensitivity, noise=inputs.noise)
        event = release.event()
        inputs.spend.charge(event)
        histogram = (
            inputs.backend.vote(inputs.source.batches(), candidates, distance, vote)
            if inputs.backend is not None
            else hard_votes(inputs.source.batches(), candidates, distance)
        )
        noisy = np.asarray(release.noisy(histogram), dtype=np.float64)
        inputs.ledger.record(
            event, round=inputs.first_round + t, stage=VOTE_LABEL, population=len(candidates)
        )
        inputs.measurements.append(Measurement(VoteQuery(len(candidates)), noisy, sigma, event))
        # The current sampler's share of each cell: weighted base draws (no resampling).
        _, draws, weights = weighted_draws(base, current, SHARE_DRAWS * len(candidates), rng)
        cell = nearest(draws, candidates, distance)
        expected = n * np.bincount(cell, weights=weights, minlength=len(candidates))
        ratio = cell_ratio(noisy, expected, sigma)
        ratio.setflags(write=False)
        corrections.append(Correction(candidates, ratio))
    return Refinement(inputs.schema, tuple(corrections), inputs.pool, inputs.rake)


__all__ = [
    "SAMPLE_ROWS",
    "SHARE_DRAWS",
    "VOTE_LABEL",
    "Correction",
    "Refinement",
    "StageInputs",
    "block_sizes",
    "cell_ratio",
    "column_cells",
    "encoded_rows",
    "rake",
    "refine",
    "resample",
    "weighted_draws",
]
