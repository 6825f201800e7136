"""The scikit-learn estimator protocol without scikit-learn.

``get_params``/``set_params`` read the constructor's signature, as scikit-learn's
``BaseEstimator`` does, so :func:`sklearn.base.clone`, grid searches and pipelines work
when scikit-learn is installed, and the core install does not need it.
"""

from __future__ import annotations

import inspect
from typing import Any

from dpevolve.errors import InputError


class EstimatorParams:
    """``__init__`` only stores its keyword arguments under their own names."""

    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return sorted(
            name
            for name, p in signature.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        )

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their values (``deep`` is accepted for
        scikit-learn compatibility; no parameter is itself an estimator)."""
        del deep
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> EstimatorParams:
        """Set constructor parameters; unknown names are an error."""
        known = set(self._param_names())
        for name, value in params.items():
            if name not in known:
                raise InputError(f"unknown parameter '{name}' (choose from {sorted(known)})")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {
            name: p.default for name, p in inspect.signature(type(self).__init__).parameters.items()
        }
        changed = []
        for name, value in self.get_params().items():
            if not _same(value, defaults.get(name, inspect.Parameter.empty)):
                changed.append(f"{name}={_short_repr(value)}")
        return f"{type(self).__name__}({', '.join(changed)})"


def _same(value: Any, default: Any) -> bool:
    if value is default:
        return True
    try:
        return bool(value == default)
    except (TypeError, ValueError):  # e.g. a DataFrame: no single truth value
        return False


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
