"""PE plus marginals: split the budget, release the marginals, weight the released pool.

Privacy of the split. Every release of the run adds discrete Gaussian noise (the one
noise source), so each is ``rho_i = S_i^2 / (2 sigma_i^2)``-zCDP and zCDP composes by
adding ``rho`` (Bun & Steinke 2016; Canonne, Kamath & Steinke 2020 for the discrete
Gaussian). Splitting the budget is splitting ``rho``:

* ``rho`` is the budget's zCDP value (given, or the largest whose CKS conversion meets
  ``(epsilon, delta)``: :func:`~dpevolve.privacy.budget.zcdp_budget`);
* the marginals get ``share * rho``: ``sigma_m = S_m / sqrt(2 share rho)``;
* the PE rounds get ``(1 - share) rho``: ``z = sqrt(T / (2 (1 - share) rho))``.

The composed run is then ``rho``-zCDP and meets the target (the ledger's accountant
composes the recorded events). ``share = 1`` runs no PE round: the
pool starts from the random (or public) initial population, which costs nothing.

Everything after the marginal release (fitting weights, growing the pool, drawing the
output rows) reads only released values: post-processing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.data.encoding import Records
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError
from dpevolve.measurements import Measurement, MeasurementList, WorkloadQuery
from dpevolve.options import options_of
from dpevolve.pe.hybrid.fit import FitResult, MarginalFit, NumericMode, Solver, draw_rows
from dpevolve.pe.hybrid.marginals import (
    DEFAULT_BINS,
    CellIndex,
    PrivateRecords,
    Workload,
    measure_marginals,
)
from dpevolve.pe.variation import Variation
from dpevolve.privacy import Budget, Ledger, zcdp_budget
from dpevolve.privacy.noise import NoiseSource
from dpevolve.progress import phase

# Keeps the composed epsilon at or below the target despite rounding in the split.
_SPLIT_SLACK = 1.0 - 1e-9


@dataclass(frozen=True)
class MarginalOptions:
    """How the marginals are measured and the pool fitted (all public choices).

    Attributes
    ----------
    order
        Measure every set of up to ``order`` columns.
    label_order
        Above ``order``: also every set of this many columns holding the schema's label
        (default 3: label triples; about +0.008 TSTR on Adult at the same ``tv_all``).
        No effect without a label.
    coarse_order, coarse_bins
        Also every set of ``coarse_order`` columns holding the label, numeric columns
        in ``coarse_bins`` bins (higher-order structure at a coarse resolution).
    one_way
        Also measure the 1-way sets. Off by default: every 2-way set already holds them,
        and leaving them out lowers the sensitivity from ``sqrt(2 (k + k(k-1)/2))`` to
        ``sqrt(k (k - 1))`` for ``k`` columns.
    bins
        Equal-width bins per numeric column over its declared range.
    grow_rounds, children, rate
        Pool growth: rounds of fit / draw parents by weight / mutate / refit, mutated
        children per round, and their mutation rate.
    numeric
        Output numerics: ``keep`` candidates' exact values or ``jitter`` within bin.
    iterations
        Solver iterations per fit.
    solver
        ``fista`` or ``mw`` (see :class:`~dpevolve.pe.hybrid.fit.MarginalFit`).
    """

    order: int = 2
    bins: int = DEFAULT_BINS
    label_order: int = 3
    one_way: bool = False
    coarse_order: int = 0
    coarse_bins: int = 2
    grow_rounds: int = 10
    children: int = 5000
    rate: float = 0.1
    numeric: NumericMode = "keep"
    iterations: int = 150
    solver: Solver = "fista"

    def __post_init__(self) -> None:
        if self.grow_rounds < 0 or self.children < 1 or self.iterations < 1:
            raise InputError("marginal options: grow_rounds >= 0, children >= 1, iterations >= 1")
        if not 0.0 <= self.rate <= 1.0:
            raise InputError(f"marginal options: rate must lie in [0, 1], got {self.rate}")
        if self.numeric not in ("keep", "jitter"):
            raise InputError(
                f"marginal options: numeric must be keep or jitter, got {self.numeric}"
            )

    @classmethod
    def from_any(cls, value: MarginalOptions | dict[str, Any] | None) -> MarginalOptions:
        return options_of(cls, value, "marginal options")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_budget(budget: Budget, share: float) -> tuple[Budget | None, float]:
    """The PE rounds' budget (``None`` when ``share = 1``) and the marginals' ``rho``.

    See the module docstring for why splitting ``rho`` is exact for Gaussian releases.
    """
    if not (isinstance(share, (int, float)) and 0.0 < share <= 1.0):
        raise InputError(f"the marginal share must lie in (0, 1], got {share!r}")
    rho = zcdp_budget(budget) * _SPLIT_SLACK
    delta = budget.delta if budget.delta is not None else 1e-5
    marginal_rho = share * rho
    if share == 1.0:
        return None, marginal_rho
    return Budget(rho=(1.0 - share) * rho, delta=delta), marginal_rho


@dataclass
class WeightedSupport:
    """The released pool and its fitted weights: what ``sample`` draws from."""

    pool: Records
    weights: np.ndarray
    released: Measurement[WorkloadQuery]
    index: CellIndex
    fit: FitResult
    numeric: NumericMode

    def draw(self, num_rows: int, rng: np.random.Generator) -> Records:
        return draw_rows(self.pool, self.weights, num_rows, rng, self.index, self.numeric)

    def summary(self) -> dict[str, Any]:
        """Facts about the fit for the ledger (post-processing of released values)."""
        return {
            "pool": len(self.pool),
            "support": int(np.count_nonzero(self.weights)),
            "fit_loss": self.fit.loss,
            "fit_iterations": self.fit.iterations,
        }


def release_and_fit(
    private: PrivateRecords,
    schema: Schema,
    population: Records,
    rho: float,
    options: MarginalOptions,
    rng: np.random.Generator,
    noise: NoiseSource,
    rows: int,
    progress: bool = False,
    backend: Backend | None = None,
) -> WeightedSupport:
    """Release the marginals (``rho``-zCDP) and fit weights on the grown pool.

    Parameters
    ----------
    private
        Encoded private records (or batches, or a callable returning batches).
    schema
        Declared domains.
    population
        The released PE population (public): the initial pool.
    rho
        zCDP cost of the marginal release.
    options
        Workload and fitting choices.
    rng
        Post-processing randomness (pool growth and fitting).
    noise
        The one noise source (:mod:`dpevolve.privacy.noise`).
    rows
        The private row count ``n`` (public under replace-one).
    progress
        Show each phase's progress on stderr (:mod:`dpevolve.progress`).
    backend
        Where the private records are counted (default: this process; under Dask, on
        the workers).
    """
    workload = Workload.all_up_to(
        schema,
        options.order,
        options.bins,
        options.label_order,
        options.one_way,
        options.coarse_order,
        options.coarse_bins,
    )
    with phase(progress, f"marginals: count and release {len(workload.sets)} sets", None):
        released = measure_marginals(private, schema, workload, rho, noise, backend=backend)
    index = CellIndex(schema, workload)
    per_fit = options.iterations
    fits = options.grow_rounds + 1
    with phase(progress, f"marginals: fit the pool ({fits} fits)", fits * per_fit) as advance:
        fitter = MarginalFit(
            index,
            released,
            rows,
            iterations=per_fit,
            solver=options.solver,
            progress=lambda fit, iteration: advance(fit * per_fit + iteration),
        )
        pool, result = fitter.grow(
            population,
            variation=Variation(index.binning.layout),
            rng=rng,
            rounds=options.grow_rounds,
            children=options.children,
            rate=options.rate,
        )
    keep = np.flatnonzero(result.weights > 1e-12)
    return WeightedSupport(
        pool.take(keep), result.weights[keep], released, index, result, options.numeric
    )


def fit_and_record(
    private: PrivateRecords,
    schema: Schema,
    population: Records,
    rho: float,
    share: float | None,
    options: MarginalOptions | dict[str, Any] | None,
    ledger: Ledger,
    measurements: MeasurementList,
    rng: np.random.Generator,
    rows: int,
    noise: NoiseSource,
    progress: bool = False,
    backend: Backend | None = None,
) -> WeightedSupport:
    """:func:`release_and_fit`, then the release's event and settings into ``ledger``
    and the release into ``measurements``.

    The event is numbered after the last PE round; the noise comes from the run's one
    noise source.
    """
    chosen = MarginalOptions.from_any(options)
    support = release_and_fit(
        private, schema, population, rho, chosen, rng, noise, rows, progress=progress,
        backend=backend,
    )  # fmt: skip
    released = support.released
    ledger.record(
        released.event,
        marginal_sets=len(support.index.workload.sets),
        numeric_bins=support.index.workload.bins,
        **support.summary(),
    )
    measurements.append(released)
    ledger.add_metadata(
        marginals={"share": share, "pe_rounds_run": share != 1.0, **chosen.to_dict()}
    )
    return support


__all__ = [
    "MarginalOptions",
    "WeightedSupport",
    "fit_and_record",
    "release_and_fit",
    "split_budget",
]
