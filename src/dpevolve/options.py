"""Options dataclasses from what a user writes: the object, a mapping of its fields, or
nothing (the defaults); one error names every unknown key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

from dpevolve.errors import InputError

T = TypeVar("T")


def options_of(cls: type[T], value: T | Mapping[str, Any] | None, what: str) -> T:
    """``value`` as a ``cls`` (a dataclass); ``what`` names the options in the error,
    e.g. ``"engine options"``."""
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    assert isinstance(value, Mapping)
    known = sorted(f.name for f in fields(cls))  # type: ignore[arg-type]
    unknown = sorted(set(value) - set(known))
    if unknown:
        raise InputError(f"unknown {what} {unknown}; use {known}")
    return cls(**value)


__all__ = ["options_of"]
