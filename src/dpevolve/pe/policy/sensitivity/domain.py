"""The record domain the exact sensitivity search ranges over (docs/math.md §3).

Numeric columns on a grid (their integer values by default), categorical columns on
their declared values; records are built, enumerated and edited in encoded form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import Column, NumericColumn
from dpevolve.errors import InputError

DEFAULT_MAX_DOMAIN = 1_000_000


# ---------------------------------------------------------------------- domain
def numeric_grid(column: NumericColumn, grids: Mapping[str, Sequence[float]] | None) -> np.ndarray:
    """Raw grid values of a numeric column: the given grid, else its integers in [lo, hi]."""
    if grids is not None and column.name in grids:
        grid = np.unique(np.asarray(grids[column.name], dtype=np.float64))
        if grid.size == 0:
            raise InputError(f"grid for '{column.name}' is empty")
        if grid[0] < column.lo or grid[-1] > column.hi:
            raise InputError(
                f"grid for '{column.name}' leaves the declared range [{column.lo:g}, {column.hi:g}]"
            )
        return grid
    if not column.integer:
        raise InputError(
            f"column '{column.name}' is not integer: give a grid for it (grids={{name: values}})"
        )
    return np.arange(math.ceil(column.lo), math.floor(column.hi) + 1, dtype=np.float64)


@dataclass(frozen=True)
class Slot:
    """One column's place in :class:`Records` and its enumerated values."""

    column: Column
    numeric: bool
    index: int  # column index inside Records.numeric or Records.codes
    raw: np.ndarray  # values the secret graph compares (raw numbers, or codes)
    encoded: np.ndarray  # the same values as stored in Records


def domain_slots(
    layout: Layout, grids: Mapping[str, Sequence[float]] | None, need: set[str] | None
) -> list[Slot]:
    """Enumerated values of every column (``need``: only those; others get empty grids)."""
    out: list[Slot] = []
    for j, num in enumerate(layout.numeric):
        if need is None or num.name in need:
            raw = numeric_grid(num, grids)
            out.append(Slot(num, True, j, raw, (raw - num.lo) / num.range))
        else:
            out.append(Slot(num, True, j, np.empty(0), np.empty(0)))
    for j, cat in enumerate(layout.categorical):
        codes = np.arange(len(cat.values))
        out.append(Slot(cat, False, j, codes, codes.astype(np.int32)))
    if grids is not None:
        names = {slot.column.name for slot in out}
        unknown = sorted(set(grids) - names)
        if unknown:
            raise InputError(f"grid names unknown column '{unknown[0]}'")
    return out


def build_records(slots: Sequence[Slot], layout: Layout, coords: np.ndarray) -> Records:
    """Records from value indices ``coords`` (n, K) into each slot's enumeration."""
    n = coords.shape[0]
    numeric = np.empty((n, len(layout.numeric)), dtype=np.float64)
    codes = np.empty((n, len(layout.categorical)), dtype=np.int32)
    for k, slot in enumerate(slots):
        target = numeric if slot.numeric else codes
        target[:, slot.index] = slot.encoded[coords[:, k]]
    return Records(numeric, codes)


def domain_size(slots: Sequence[Slot], max_domain: int) -> int:
    """The number of records in the domain of ``slots``, refused above ``max_domain``."""
    size = math.prod(len(s.raw) for s in slots)
    if size > max_domain:
        raise InputError(
            f"the full domain has {size} records (more than max_domain={max_domain}); "
            "pass records=..., coarser grids, or raise max_domain"
        )
    return size


def enumerate_domain(
    layout: Layout,
    grids: Mapping[str, Sequence[float]] | None = None,
    max_domain: int = DEFAULT_MAX_DOMAIN,
) -> Records:
    """Every record of the product domain (numeric columns on their grids), in C order."""
    slots = domain_slots(layout, grids, None)
    size = domain_size(slots, max_domain)
    coords = np.stack(np.unravel_index(np.arange(size), [len(s.raw) for s in slots]), axis=1)
    return build_records(slots, layout, coords)


def raw_values(slot: Slot, records: Records) -> np.ndarray:
    """The raw value of ``slot`` in each record (decoded for numeric columns)."""
    if slot.numeric:
        col = slot.column
        assert isinstance(col, NumericColumn)
        return np.asarray(col.lo + records.numeric[:, slot.index] * col.range)
    return np.asarray(records.codes[:, slot.index])


def replace_values(
    records: Records, slot: Slot, rows: np.ndarray, values_at: np.ndarray
) -> Records:
    """Records ``rows`` with ``slot`` set to its enumerated values ``values_at`` (pairwise)."""
    numeric, codes = records.numeric[rows], records.codes[rows]
    target = numeric if slot.numeric else codes
    target[:, slot.index] = slot.encoded[values_at]
    return Records(numeric, codes)


__all__ = [
    "DEFAULT_MAX_DOMAIN",
    "Slot",
    "build_records",
    "domain_size",
    "domain_slots",
    "enumerate_domain",
    "numeric_grid",
    "raw_values",
    "replace_values",
]
