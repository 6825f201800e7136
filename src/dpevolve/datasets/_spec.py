"""What the registry knows about a data set, and the file helpers every family uses.

A data set family is one module in :mod:`dpevolve.datasets` that defines ``SPECS`` (a
tuple of :class:`Spec`) and optionally ``ALIASES`` (preset names usable as data set
names); :mod:`dpevolve.datasets.registry` collects them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.datasets._base import Dataset
from dpevolve.errors import InputError

__all__ = [
    "ColumnSelection",
    "Spec",
    "is_parquet",
    "read_source_file",
    "table_variants",
    "variants",
]


# ----------------------------------------------------------------------- registry
@dataclass(frozen=True)
class ColumnSelection:
    """A named column selection of a data set (with its own schema file, if any)."""

    columns: tuple[str, ...]
    schema_file: str | None = None  # its own schema (weights, hierarchy), else a select


@dataclass(frozen=True)
class Spec:
    """One registered data set: where its files are, how to read or generate them."""

    name: str
    description: str
    default_split: str
    # split -> candidate paths relative to a data folder (the first is the primary one)
    splits: Mapping[str, tuple[str, ...]]
    schema: Callable[[], Schema]
    reader: Callable[[Path, str], pd.DataFrame] | None = None
    generator: Callable[[str], Dataset] | None = None
    presets: Mapping[str, ColumnSelection] = field(default_factory=dict)
    drop_missing: bool = False
    unavailable: Mapping[str, str] = field(default_factory=dict)


def variants(stem: str, *suffixes: str) -> tuple[str, ...]:
    """``stem`` with each suffix, in order."""
    return tuple(stem + s for s in suffixes)


def table_variants(stem: str, primary: str) -> tuple[str, ...]:
    """``stem`` + ``primary`` first, then the other table formats we accept."""
    others = [s for s in (".csv.gz", ".csv", ".parquet") if s != primary]
    return variants(stem, primary, *others)


# ------------------------------------------------------------------------ readers
def read_source_file(path: Path, **csv_kwargs: object) -> pd.DataFrame:
    """Read a CSV (optionally gzipped) or Parquet file with a one-line error."""
    try:
        if path.name.lower().endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        return pd.read_csv(path, **csv_kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError,
            ValueError) as exc:  # fmt: skip
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"could not read {path}: {first}") from None


def is_parquet(path: Path) -> bool:
    """Whether ``path`` names a Parquet file."""
    return path.name.lower().endswith((".parquet", ".pq"))
