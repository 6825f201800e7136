"""The select-measure-estimate-generate engine (AIM's shape; docs/architecture.md).

``fit_engine`` runs it on a private source within a budget and returns an
:class:`EngineResult` (measurement list, ledger, model, ``sample``); ``synthesize`` is
the one-call form over an in-memory table.

The names load on first use: the presets read :class:`EngineSpec` (plain data) at
start-up, and ``dpevolve -h`` must not pay for numpy's, pandas' and scipy's import.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpevolve.engine.method import fit_engine
    from dpevolve.engine.model import EngineModel
    from dpevolve.engine.result import EngineResult
    from dpevolve.engine.run import synthesize
    from dpevolve.engine.spec import EngineSpec

_WHERE = {
    "EngineModel": "dpevolve.engine.model",
    "EngineResult": "dpevolve.engine.result",
    "EngineSpec": "dpevolve.engine.spec",
    "fit_engine": "dpevolve.engine.method",
    "synthesize": "dpevolve.engine.run",
}

__all__ = ["EngineModel", "EngineResult", "EngineSpec", "fit_engine", "synthesize"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'dpevolve.engine' has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
