"""Optional dependencies: import them, or stop with one line naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from dpevolve.errors import InputError

#: Extra that provides each optional top-level module.
EXTRAS = {"pyarrow": "parquet", "matplotlib": "report", "numba": "fast", "dask": "dask"}


def require(module: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`InputError` saying which extra ``feature`` needs.

    >>> require("json", "anything").__name__
    'json'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        extra = EXTRAS.get(top, top)
        raise InputError(f"{feature} needs {top}: pip install 'dpevolve[{extra}]'") from None
