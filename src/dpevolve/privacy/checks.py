"""Argument checks and JSON helpers shared by the privacy modules."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpevolve.errors import InputError


def as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise InputError(f"{name} must be a number, got nan")
    return x


def positive(name: str, value: object) -> float:
    x = as_float(name, value)
    if not (0.0 < x < math.inf):
        raise InputError(f"{name} must be > 0 and finite, got {value}")
    return x


def nonnegative(name: str, value: object) -> float:
    x = as_float(name, value)
    if not (0.0 <= x < math.inf):
        raise InputError(f"{name} must be >= 0 and finite, got {value}")
    return x


def open_unit(name: str, value: object) -> float:
    x = as_float(name, value)
    if not (0.0 < x < 1.0):
        raise InputError(f"{name} must be in (0, 1), got {value}")
    return x


def half_open_unit(name: str, value: object) -> float:
    x = as_float(name, value)
    if not (0.0 <= x < 1.0):
        raise InputError(f"{name} must be in [0, 1), got {value}")
    return x


def json_float(x: float) -> float | None:
    """JSON has no infinities: an unbounded quantity is written as null."""
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return json_float(float(obj))
    if isinstance(obj, Path):
        return str(obj)
    return obj


def json_checked(what: str, values: Mapping[str, Any]) -> dict[str, Any]:
    # Fail when the value is recorded, not at the end of a run when the ledger is written.
    out: dict[str, Any] = jsonable(values)
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serialisable: {exc}") from None
    return out
