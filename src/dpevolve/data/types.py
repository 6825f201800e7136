"""Column types beyond numbers and categories: dates, and declared missing-value texts.

A ``date`` or ``datetime`` column is a numeric column in disguise: its declared range
and its cells are mapped onto whole days (``date``) or whole seconds (``datetime``)
since 1970-01-01, so encoding, distances, variation and votes treat it as any integer
column; decoding formats the numbers back with the column's ``format``::

    joined:  {type: date, lo: "2000-01-01", hi: "2030-12-31"}               # ISO by default
    seen_at: {type: datetime, lo: "2024-01-01 00:00:00", hi: "2024-12-31 23:59:59",
              format: "%Y-%m-%d %H:%M:%S", nullable: true}

The distance between two dates is then ``|a - b| / (hi - lo)`` in days, like any
numeric column. A schema-level ``na_values`` list names cell texts that mean "missing"
(Adult writes ``?``); they are read as missing before validation, so a column must be
``nullable: true`` to accept them (otherwise they are reported like any missing cell).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.columns import NumericColumn
from dpevolve.errors import InputError

#: Seconds in one unit of each kind.
UNITS = {"date": 86_400, "datetime": 1}
DEFAULT_FORMATS = {"date": "%Y-%m-%d", "datetime": "%Y-%m-%d %H:%M:%S"}
_EPOCH = pd.Timestamp("1970-01-01")


@dataclass(frozen=True)
class DateColumn(NumericColumn):
    """A date (whole days) or datetime (whole seconds) column on a declared range.

    ``lo`` and ``hi`` are stored as numbers of units since 1970-01-01; cells are read
    as such numbers by :func:`dpevolve.data.cells.read_numbers`, and :meth:`format`
    writes them back as dates.
    """

    kind: str = "date"
    fmt: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in UNITS:
            raise InputError(f"column '{self.name}': date kind must be date or datetime")
        super().__post_init__()

    @property
    def pattern(self) -> str:
        """The strftime/strptime format of the column's cells."""
        return self.fmt or DEFAULT_FORMATS[self.kind]

    def format(self, numbers: np.ndarray) -> Any:
        """Units back to date texts in the column's format (missing stays missing)."""
        rounded = np.round(numbers)
        stamps = _EPOCH + pd.to_timedelta(rounded * UNITS[self.kind], unit="s")
        out = pd.Series(stamps).dt.strftime(self.pattern)
        return out.where(~np.isnan(rounded), None).to_numpy(dtype=object)

    def text(self, number: float) -> str:
        """One number of units as a date text."""
        return str(self.format(np.array([number], dtype=np.float64))[0])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.kind,
            "lo": self.text(self.lo),
            "hi": self.text(self.hi),
        }
        if self.fmt is not None:
            out["format"] = self.fmt
        if self.weight is not None:
            out["weight"] = self.weight
        if self.nullable:
            out["nullable"] = True
        return out


def to_units(stamps: pd.DatetimeIndex, kind: str) -> np.ndarray:
    """Timestamps as float64 units since 1970-01-01 (NaT -> NaN), exact to the unit."""
    if stamps.tz is not None:
        stamps = stamps.tz_convert(None)
    seconds = (stamps - _EPOCH) // pd.Timedelta(seconds=1)
    out = np.asarray(seconds, dtype=np.float64)
    return np.floor(out / UNITS[kind])


def date_column(
    name: str, kind: str, decl: Mapping[str, Any], weight: float | None, nullable: bool
) -> DateColumn:
    """Build a :class:`DateColumn` from its YAML declaration."""
    fmt = decl.get("format")
    if fmt is not None and not isinstance(fmt, str):
        raise InputError(f"column '{name}': 'format' must be a text such as '%Y-%m-%d'")
    pattern = fmt or DEFAULT_FORMATS[kind]
    bounds = []
    for key in ("lo", "hi"):
        if key not in decl:
            raise InputError(f"column '{name}': {kind} columns need a declared '{key}'")
        raw = decl[key]
        # YAML reads an unquoted 2020-01-01 as a date object: accept it as well.
        stamp = pd.to_datetime(
            str(raw), format=pattern if isinstance(raw, str) else None, errors="coerce"
        )
        if pd.isna(stamp):
            raise InputError(
                f"column '{name}': '{key}' {raw!r} is not a {kind} in the format {pattern!r}"
            )
        bounds.append(float(to_units(pd.DatetimeIndex([stamp]), kind)[0]))
    if "integer" in decl:
        raise InputError(f"column '{name}': {kind} columns are always whole {kind} units")
    return DateColumn(name, bounds[0], bounds[1], True, weight, nullable, kind=kind, fmt=fmt)


def read_na_values(raw: Any) -> tuple[str, ...]:
    """The schema's ``na_values``: a list of cell texts that mean "missing"."""
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not all(isinstance(v, (str, int, float)) for v in raw):
        raise InputError("schema 'na_values' must be a list of texts, e.g. ['?', 'NA']")
    return tuple(str(v) for v in raw)
