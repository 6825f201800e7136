"""The adaptive engine as a method (:mod:`dpevolve.method`): the default.

Marginals chosen round by round where the model is most wrong (AIM's shape), one
graphical model, fresh rows (docs/engine.md). Its one setting is the
:class:`~dpevolve.engine.spec.EngineSpec`; it takes public data as a free prior and
refuses a Blowfish policy (it protects whole records) by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dpevolve.engine.spec import EngineSpec
from dpevolve.errors import InputError
from dpevolve.method import FitContext, config_words, refuse_inputs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np
    import pandas as pd

    from dpevolve.backends.base import Backend
    from dpevolve.data.schema import Schema
    from dpevolve.data.sources import PrivateSource
    from dpevolve.engine.loop import EstimatorFactory
    from dpevolve.engine.model import EngineModel
    from dpevolve.engine.result import EngineResult
    from dpevolve.measurements import Clique, Domain
    from dpevolve.privacy import Budget, Ledger
    from dpevolve.privacy.noise import NoiseSource


@dataclass(frozen=True)
class AdaptiveMethod:
    """The select-measure-estimate-generate engine with the choices of ``spec``."""

    spec: EngineSpec = field(default_factory=EngineSpec)
    name: str = "adaptive"

    def with_options(self, options: Mapping[str, Any]) -> AdaptiveMethod:
        """This method with engine ``options`` laid over its spec (docs/engine.md)."""
        if not isinstance(options, Mapping):
            raise InputError("engine options must be a mapping, e.g. '{max_rounds: 60}'")
        return replace(self, spec=EngineSpec.from_any({**self.spec.to_dict(), **options}))

    def to_dict(self) -> dict[str, Any]:
        """The run-file words (a ledger's ``config`` block): the method's name and every
        field of its spec, nothing of another method's (no vote, mechanism, population)."""
        return {"method": self.name, "engine": self.spec.to_dict()}

    def check_inputs(self, *, policy: bool, public: bool) -> None:
        """Public data is a free prior; a policy is refused by name (the engine protects
        whole records: it would be silently ignored)."""
        del public
        refuse_inputs(self.name, {"policy": policy},
                      "a policy is a Private Evolution input: choose method tabpe, "
                      "hybrid or bfsoft")  # fmt: skip

    def fit(
        self, source: PrivateSource, schema: Schema, budget: Budget, context: FitContext
    ) -> EngineModel:
        """Run the engine on ``source`` within ``budget``; every release in the ledger."""
        from dpevolve.backends import make_backend
        from dpevolve.backends.postgres import counts_where_stored
        from dpevolve.privacy import Ledger, default_delta

        self.check_inputs(policy=context.policy is not None, public=context.public is not None)
        n = source.n
        ledger = context.open(
            Ledger(
                budget.delta if budget.delta is not None else default_delta(n),
                metadata={
                    **context.run,
                    "budget": budget.to_dict(),
                    "preset": self.name,
                    "config": config_words(self, context),
                    "schema": schema.to_dict(),
                    "validation": None if source.report is None else source.report.to_dict(),
                },
            )
        )
        # ``auto``: counted here without loading numba, in DuckDB for a table read
        # from disk each pass, in the server for a PostgreSQL table.
        backend = context.backend
        if backend in (None, "auto"):
            counter: Any = counts_where_stored(source.batches())
        else:
            counter = make_backend(backend) if isinstance(backend, str) else backend
        result = fit_engine(
            source, schema, budget, self.spec, noise=context.noise, rng=context.rng,
            ledger=ledger, public=context.public, progress=context.progress, backend=counter,
        )  # fmt: skip
        context.history.extend(result.history)
        context.measurements = result.measurements
        return result.released()


def fit_engine(
    source: PrivateSource,
    schema: Schema,
    budget: Budget,
    spec: EngineSpec | None = None,
    *,
    noise: NoiseSource,
    rng: np.random.Generator,
    ledger: Ledger | None = None,
    public: pd.DataFrame | None = None,
    progress: bool = False,
    estimator: EstimatorFactory | None = None,
    model_size: Callable[[Domain, Sequence[Clique]], float] | None = None,
    backend: Backend | None = None,
) -> EngineResult:
    """Run the engine on ``source`` within ``budget`` (docs/architecture.md).

    The budget goes no further than the plan (:mod:`~dpevolve.engine.plan`): the run
    (:func:`~dpevolve.engine.loop.run_engine`) is handed its noise scales.

    Parameters
    ----------
    source
        The private records (validated; ``source.n`` is public).
    schema
        The declared domains (the same the source validated against).
    budget
        ``(epsilon, delta)`` or ``rho``; the composed events never exceed it.
    spec
        The engine's public choices (default :class:`EngineSpec`).
    noise
        The one noise source (:func:`dpevolve.privacy.noise.make_noise`).
    rng
        Post-processing randomness (estimator, candidate order, decoding).
    ledger
        Where the events go (default: a new ledger at the budget's delta, or
        :func:`~dpevolve.privacy.default_delta` of ``n`` for a pure ``rho`` budget).
    public
        Public rows of the same kind (public, like the schema): a free prior for the
        model (:mod:`~dpevolve.engine.public`); they cost no budget and are no release.
    progress
        One line per round on stderr (released values only).
    estimator, model_size
        The estimator and its size measure (default: :mod:`dpevolve.estimate`).
    backend
        Where the private records are counted (default: this process; a
        :class:`~dpevolve.backends.dask.DaskBackend` counts on its workers).
    """
    from dpevolve.engine.atoms import atom_candidates
    from dpevolve.engine.discretise import Discretiser
    from dpevolve.engine.loop import run_engine
    from dpevolve.engine.plan import Plan
    from dpevolve.engine.public import PublicInputs
    from dpevolve.engine.zoom import zoomable
    from dpevolve.privacy import Ledger, default_delta

    chosen = EngineSpec.from_any(spec).for_rows(int(source.n))
    given = PublicInputs.of(public, schema, chosen) if public is not None else None
    edges = given.edges if given is not None else {}
    atoms = (given.atoms or {}) if given is not None else {}
    discretiser = Discretiser(schema, chosen.numeric_bins, chosen.fine_cells, edges, atoms=atoms)
    sought = atom_candidates(schema, chosen) if given is None else {}
    columns, numeric = len(discretiser.domain.names), len(discretiser.numeric)
    zooms = zoomable(discretiser) if given is None else 0
    plan = Plan.of(budget, chosen, columns, numeric, len(sought), zooms, int(source.n))
    if ledger is None:
        delta = budget.delta if budget.delta is not None else default_delta(int(source.n))
        ledger = Ledger(delta)
    return run_engine(
        source, discretiser, plan.schedule(), chosen, noise=noise, rng=rng, ledger=ledger,
        given=given, sought=sought, progress=progress, estimator=estimator,
        model_size=model_size, backend=backend,
    )  # fmt: skip


__all__ = ["AdaptiveMethod", "fit_engine"]
