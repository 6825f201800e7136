"""The :class:`Dataset` record, shipped schema files and where data files live."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.errors import InputError

DATA_ENV = "DPEVOLVE_DATA"
"""Environment variable naming a data folder laid out like the project's shared data."""


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded table with its declared schema.

    Attributes
    ----------
    name
        Registry name of the data set (``"adult"``, ``"xor3"``, ...).
    frame
        The cleaned table: exactly the schema's columns, in schema order, as returned by
        :meth:`Schema.validate` (categorical cells are the strings of their declared
        values; numeric columns are float64, or int64 where the schema declares
        ``integer``).
    schema
        The declared domains (from the data's documentation, never from the records).
    label
        The label column, or ``None`` when the selected columns do not include it.
    description
        One paragraph on what the table is and how it was cleaned.
    source
        The file the rows were read from, or ``None`` for generated tables.
    split
        The split that was loaded (``None`` for a table without splits).
    """

    name: str
    frame: pd.DataFrame
    schema: Schema
    label: str | None
    description: str
    source: Path | None = None
    split: str | None = None

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        split = f", split={self.split!r}" if self.split is not None else ""
        return (
            f"Dataset(name={self.name!r}{split}, rows={len(self.frame)}, "
            f"columns={self.schema.names}, label={self.label!r})"
        )


# --------------------------------------------------------------------------- schemas
def schema_text(filename: str) -> str:
    """The text of a schema YAML shipped in ``dpevolve/datasets/schemas``."""
    resource = resources.files("dpevolve.datasets").joinpath("schemas", filename)
    try:
        return resource.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"shipped schema file {filename} is missing from dpevolve") from None


@cache
def shipped_schema(filename: str) -> Schema:
    """Parse a shipped schema YAML (cached: schemas are immutable)."""
    return Schema.from_dict(yaml.safe_load(schema_text(filename)) or {})


# ------------------------------------------------------------------------- locations
def cache_dir() -> Path:
    """The user cache for fetched data: ``$XDG_CACHE_HOME/dpevolve/data``.

    Falls back to ``~/.cache/dpevolve/data`` when ``XDG_CACHE_HOME`` is unset or empty.
    """
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base).expanduser() if base else Path.home() / ".cache"
    return root / "dpevolve" / "data"


def data_dirs() -> list[Path]:
    """Folders searched for data files, in order: ``$DPEVOLVE_DATA`` (if set), the cache."""
    dirs: list[Path] = []
    env = os.environ.get(DATA_ENV, "").strip()
    if env:
        dirs.append(Path(env).expanduser())
    dirs.append(cache_dir())
    return dirs


# ------------------------------------------------------------------------ finishing
def finish(frame: pd.DataFrame, schema: Schema, what: str) -> pd.DataFrame:
    """Validate ``frame`` against ``schema`` (``on_invalid="error"``) and tidy dtypes.

    The declared domains must cover the data: a cell outside them is a bug in the
    shipped schema (or a wrong file), so it raises :class:`InputError` naming the column.
    Integer numeric columns come back as int64 (float64 while a cell is missing).
    """
    clean, _ = schema.validate(frame, on_invalid="error", what=what)
    for column in schema.columns:
        # a nullable integer column with a missing cell stays float64 (NaN has no int64)
        whole = isinstance(column, NumericColumn) and column.integer
        if whole and clean[column.name].notna().all():
            clean[column.name] = clean[column.name].to_numpy(dtype=np.float64).astype(np.int64)
    return clean
