"""Old module paths (before the rooms of ``docs/architecture.md``) keep importing, with a
:class:`DeprecationWarning`, so user code written against 0.1 does not break."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from types import ModuleType

#: old module -> its home now
MOVED: dict[str, str] = {
    **{f"dpevolve.{m}": f"dpevolve.data.{m}" for m in ("schema", "encoding", "io", "streaming")},
    **{
        f"dpevolve.{m}": f"dpevolve.core.{m}"
        for m in ("distance", "votes", "policy", "evolution", "variation", "sensitivity", "pilot")
    },
    "dpevolve.accounting": "dpevolve.privacy",
    "dpevolve.privacy.accounting": "dpevolve.privacy",
    "dpevolve.evaluation": "dpevolve.reporting.evaluation",
    "dpevolve.report": "dpevolve.reporting.report",
    "dpevolve.pubmix.table": "dpevolve.release.discrete",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(
            f"{spec.name} moved to {self.target}; the old path will be removed",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:
        pass


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Resolves a moved module's old name to the module at its new home."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, _Alias(MOVED[fullname]))


def install() -> None:
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
