"""Identifier columns: declared, never modelled, written fresh (docs/guide.md#identifiers).

A column whose every value is distinct (a customer number, a UUID) carries no
distribution worth learning, and modelling it would spend budget on a histogram of
labels and write plausible copies of real ids. A schema declares it ``type: id``:

* synthesis spends nothing on it: validation drops the column before anything is
  encoded, so no release, marginal or model ever sees it;
* the synthetic table gets **fresh** ids that cannot equal a private one by
  construction, or no such column with ``drop: true``:

  - integer ids (``integer: true``) declare the range ``[lo, hi]`` every real id lies
    in (checked on the private table before anything is spent, like any declared
    range); synthetic ids count up from ``hi + 1``;
  - text ids get ``prefix`` (default ``syn-``) and a running number; a private id that
    starts with the prefix is refused before anything is spent.

The check reads only whether each private id fits the declared form (the same kind
of check every declared range gets); no value, count or extreme of the private ids
is kept or released. ``schema infer`` proposes an identifier for a public column whose
values are all distinct and which is text, or whole numbers that are named like an id
(``id``, ``*_id``, ``key``, ``uuid``) or a running count of at least 200 rows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.errors import InputError

__all__ = [
    "DEFAULT_PREFIX",
    "IdentifierColumn",
    "check_private_id_file",
    "check_private_ids",
    "fresh_ids",
    "id_problems",
    "identifier_from_dict",
    "propose_identifier",
    "with_identifiers",
]

#: What synthetic text ids start with, unless the schema says otherwise.
DEFAULT_PREFIX = "syn-"
# Rows of a file's id columns read at a time.
_CHUNK_ROWS = 1 << 18
# Fewest public rows for an all-distinct column to be taken for an identifier.
_MIN_ROWS = 20
# Fewest public rows for an unnamed running count to be taken for an identifier.
_MIN_COUNTER_ROWS = 200
# Names that mark an identifier: id, user_id, customerID, key, uuid, guid, ...
_NAME_HINT = re.compile(r"(^|[_\W])(id|key|uuid|guid)$|[a-z]ID$|^(id|key|uuid|guid)([_\W]|$)", re.I)


@dataclass(frozen=True)
class IdentifierColumn:
    """An identifier column: dropped before synthesis, written fresh (see the module).

    Attributes
    ----------
    name
        The column.
    integer
        Whole-number ids in ``[lo, hi]`` (synthetic ones from ``hi + 1``); else text ids.
    lo, hi
        The declared range of the real integer ids.
    prefix
        What synthetic text ids start with (no private id may).
    drop
        Leave the column out of the synthetic table.
    position
        Where the column stands among all the schema's columns (the output's order).
    """

    name: str
    integer: bool = False
    lo: int | None = None
    hi: int | None = None
    prefix: str = DEFAULT_PREFIX
    drop: bool = False
    position: int = 0

    def __post_init__(self) -> None:
        if self.integer:
            if self.lo is None or self.hi is None or not self.hi >= self.lo:
                raise InputError(
                    f"column '{self.name}': integer ids need a declared range lo <= hi"
                )
        elif self.lo is not None or self.hi is not None:
            raise InputError(f"column '{self.name}': 'lo' and 'hi' are only for integer ids")
        if not self.integer and not self.prefix:
            raise InputError(f"column '{self.name}': text ids need a non-empty 'prefix'")

    def describe(self) -> str:
        """What synthesis does with the column, in one clause."""
        if self.drop:
            return "left out of the synthetic table (drop: true)"
        if self.integer:
            return (
                f"fresh ids from {self.hi + 1 if self.hi is not None else '?'} (real ids "
                f"must lie in [{self.lo}, {self.hi}], so none can match one)"
            )
        return f"fresh ids '{self.prefix}' and a running number (no real id may start so)"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "id"}
        if self.integer:
            out.update(integer=True, lo=self.lo, hi=self.hi)
        elif self.prefix != DEFAULT_PREFIX:
            out["prefix"] = self.prefix
        if self.drop:
            out["drop"] = True
        return out


def identifier_from_dict(name: str, decl: Mapping[str, Any], position: int) -> IdentifierColumn:
    """The YAML form ``{type: id, integer: true, lo: 0, hi: 999999, drop: false}``."""
    extra = sorted(set(decl) - {"type", "integer", "lo", "hi", "prefix", "drop", "name"})
    if extra:
        raise InputError(f"column '{name}': '{extra[0]}' is not a key of an id column")
    flags = {}
    for key in ("integer", "drop"):
        value = decl.get(key, False)
        if not isinstance(value, bool):
            raise InputError(f"column '{name}': '{key}' must be true or false, got {value!r}")
        flags[key] = value
    bounds = {}
    for key in ("lo", "hi"):
        value = decl.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value)
        ):
            raise InputError(f"column '{name}': '{key}' must be a whole number, got {value!r}")
        bounds[key] = None if value is None else int(value)
    prefix = decl.get("prefix", DEFAULT_PREFIX)
    if not isinstance(prefix, str):
        raise InputError(f"column '{name}': 'prefix' must be text, got {prefix!r}")
    return IdentifierColumn(name, flags["integer"], bounds["lo"], bounds["hi"], prefix,
                            flags["drop"], position)  # fmt: skip


def propose_identifier(name: str, values: pd.Series, rows: int) -> IdentifierColumn | None:
    """An identifier for a **public** column that looks like one (see the module), or
    ``None``. ``values`` are the column's non-missing cells, ``rows`` the table's rows."""
    if len(values) != rows or rows < _MIN_ROWS or values.nunique() != rows:
        return None
    hinted = bool(_NAME_HINT.search(name))
    if pd.api.types.is_bool_dtype(values):
        return None
    if pd.api.types.is_numeric_dtype(values):
        numbers = values.to_numpy(dtype=np.float64)
        if not np.all(np.isfinite(numbers) & (numbers == np.round(numbers))):
            return None
        lo, hi = float(numbers.min()), float(numbers.max())
        # Every number of a long span taken once: a running count (row numbers). Short
        # spans are left alone: 80 distinct years or ages are data, not identifiers.
        counter = hi - lo + 1 == rows >= _MIN_COUNTER_ROWS
        if not (hinted or counter):
            return None
        # Out to the next power of ten: a range a person checks at a glance, and room for
        # the private ids beyond the public ones.
        top = 10 ** len(str(int(max(abs(lo), abs(hi)))))
        return IdentifierColumn(name, True, -(top - 1) if lo < 0 else 0, top - 1)
    texts = values.astype(str)
    prefix = DEFAULT_PREFIX
    while texts.str.startswith(prefix).any():
        prefix = "x" + prefix
    return IdentifierColumn(name, prefix=prefix)


def id_problems(table: pd.DataFrame, identifiers: Sequence[IdentifierColumn]) -> list[str]:
    """Every id column of a private table that breaks its declared form (fresh ids could
    then equal one), one line each naming the column and the count, never a value."""
    lines = []
    for column in identifiers:
        if column.drop or column.name not in table.columns:
            continue
        cells = table[column.name].dropna()
        if column.integer:
            numbers = pd.to_numeric(cells, errors="coerce").to_numpy(dtype=np.float64)
            bad = ~np.isfinite(numbers) | (numbers != np.round(numbers))
            bad |= (numbers < float(column.lo or 0)) | (numbers > float(column.hi or 0))
            problem = f"are not whole numbers in the declared range [{column.lo}, {column.hi}]"
        else:
            bad = cells.astype(str).str.startswith(column.prefix).to_numpy()
            problem = f"start with '{column.prefix}', the prefix of the fresh ids"
        if bad.any():
            lines.append(
                f"column '{column.name}' (an id): {int(bad.sum())} of {len(table)} ids "
                f"{problem}; fix the schema's declaration"
            )
    return lines


def check_private_ids(table: pd.DataFrame, identifiers: Sequence[IdentifierColumn]) -> None:
    """Refuse a private table with an id that breaks its declared form (see
    :func:`id_problems`), before anything is spent."""
    problems = id_problems(table, identifiers)
    if problems:
        raise InputError(f"private table {problems[0]}")


def check_private_id_file(path: Path, identifiers: Sequence[IdentifierColumn]) -> None:
    """:func:`check_private_ids` on a file, reading only its id columns, in chunks."""
    from dpevolve.data.io import csv_separator, table_suffix

    checked = [c for c in identifiers if not c.drop]
    if not checked:
        return
    if table_suffix(path) in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        present = [c.name for c in checked if c.name in pq.read_schema(path).names]
        if present:
            check_private_ids(pd.read_parquet(path, columns=present), checked)
        return
    header = pd.read_csv(path, sep=csv_separator(path), nrows=0).columns
    present = [c.name for c in checked if c.name in header]
    if present:
        chunks = pd.read_csv(path, sep=csv_separator(path), usecols=present, dtype=str,
                             chunksize=_CHUNK_ROWS)  # fmt: skip
        for chunk in chunks:
            check_private_ids(chunk, checked)


def fresh_ids(
    column: IdentifierColumn, rows: int, start: int = 0, total: int | None = None
) -> np.ndarray | list[str]:
    """``rows`` distinct ids of the column's fresh form (see the module): those of rows
    ``start`` to ``start + rows`` of a table of ``total`` rows (default ``rows``), so a
    table drawn in blocks gets the ids it would get whole.
    """
    total = start + rows if total is None else total
    if column.integer:
        first = (column.hi or 0) + 1 + start
        return np.arange(first, first + rows, dtype=np.int64)
    width = len(str(total)) if total else 1
    return [f"{column.prefix}{k:0{width}d}" for k in range(start + 1, start + rows + 1)]


def with_identifiers(
    frame: pd.DataFrame,
    identifiers: Sequence[IdentifierColumn],
    start: int = 0,
    total: int | None = None,
) -> pd.DataFrame:
    """``frame`` (synthetic rows ``start`` on, of ``total``) with the fresh ids inserted
    where the schema has them."""
    kept = sorted((c for c in identifiers if not c.drop), key=lambda c: c.position)
    if not kept:
        return frame
    dropped = [c.position for c in identifiers if c.drop]
    out = frame.copy()
    for column in kept:
        # Its place among the columns written: dropped ones before it leave a gap.
        at = column.position - sum(p < column.position for p in dropped)
        ids = fresh_ids(column, len(out), start, total)
        out.insert(min(at, len(out.columns)), column.name, ids)
    return out
