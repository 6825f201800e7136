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
    from dpevolve.data.schema import Schema
    from dpevolve.data.sources import PrivateSource
    from dpevolve.engine.model import EngineModel
    from dpevolve.privacy import Budget


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
        from dpevolve.engine.loop import fit_engine
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


__all__ = ["AdaptiveMethod"]
