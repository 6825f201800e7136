"""The select-measure-estimate-generate engine (AIM's shape; docs/architecture.md).

``fit_engine`` runs it on a private source within a budget and returns an
:class:`EngineResult` (measurement list, ledger, model, ``sample``); ``synthesize`` is
the one-call form over an in-memory table.
"""

from dpevolve.engine.loop import EngineResult, fit_engine
from dpevolve.engine.run import synthesize
from dpevolve.engine.spec import EngineSpec

__all__ = ["EngineResult", "EngineSpec", "fit_engine", "synthesize"]
