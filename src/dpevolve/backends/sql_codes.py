"""The engine's cell codes as SQL over a database's validated values (docs/scale.md).

The engine turns a validated value ``v`` of a numeric column into a coarse code (its
bin) and a fine code (its fine cell) by float arithmetic: ``(v - lo) / range`` (the
encoding), back to the declared scale, clipped, rounded to the column's step, then
searched among the bin edges and fine cells (:class:`~dpevolve.engine.discretise.
Discretiser`). Restating that arithmetic in SQL would hold only as long as every
database rounds as numpy does. Instead, each code is written as comparisons of ``v``
with float64 constants, which every database evaluates exactly:

* the coarse code, and the fine code outside the atoms' cells, are non-decreasing in
  ``v`` (each step above is), so code ``c`` starts at one float, the least ``v`` whose
  code is at least ``c``; it is found by bisection over the floats' order, asking the
  discretiser itself, so the thresholds are exact by construction;
* an atom (a fine cell that is one value) holds the ``v`` within its tolerance: an
  interval of floats, whose ends are found by the same bisection outward from the atom;
* a missing value (NULL) gets the code the discretiser gives a missing value.

:func:`code_sql` then checks the comparisons against the discretiser on every
threshold, the float below it and a spread of values, and refuses (``ValueError``) a
discretiser whose codes they do not restate; a property test holds the counts equal on
adversarial tables (``tests/test_postgres_counts.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpevolve.data.database import value_records
from dpevolve.data.sql_cells import Dialect

__all__ = ["CodeSQL", "code_sql"]

_SIGN = np.int64(-0x8000000000000000)
_KEY_LO = -0x7FF0000000000000  # the key of -inf
_KEY_HI = 0x7FF0000000000000  # the key of +inf

#: Code columns by attribute (a column's name, or ``fine:NAME``) and their SQL.
CodeSQL = dict[str, str]


def _floats(keys: np.ndarray) -> np.ndarray:
    """Floats from their order keys (a key's order is its float's order)."""
    keys = np.asarray(keys, dtype=np.int64)
    bits = np.where(keys >= 0, keys, (-keys) | _SIGN)
    return bits.view(np.float64)


def _keys(values: np.ndarray) -> np.ndarray:
    bits = np.asarray(values, dtype=np.float64).view(np.int64)
    return np.where(bits >= 0, bits, -(bits & np.int64(0x7FFFFFFFFFFFFFFF)))


def _least(holds: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """For each pair, the least key in ``(lo, hi]`` where ``holds`` (false at ``lo``,
    true at ``hi``, monotone between them) holds."""
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    while True:
        open_ = hi > lo + 1  # (hi - lo may overflow)
        if not open_.any():
            return hi
        mid = np.where(open_, (lo >> 1) + (hi >> 1) + (lo & hi & 1), hi)
        yes = holds(mid)
        hi = np.where(open_ & yes, mid, hi)
        lo = np.where(open_ & ~yes, mid, lo)


class _Column:
    """The discretiser's codes of one numeric column, as functions of ``v``."""

    def __init__(self, discretiser: Any, name: str) -> None:
        self.discretiser = discretiser
        self.name = name
        layout = discretiser.layout
        self.k = [c.name for c in layout.numeric].index(name)
        self.j = discretiser.schema.names.index(name)
        self.width = len(layout.numeric) + len(layout.categorical)

    def records(self, values: np.ndarray) -> Any:
        block = np.zeros((len(values), self.width))
        block[:, self.k] = values
        return value_records(block, self.discretiser.layout)

    def coarse(self, values: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(self.discretiser.codes(self.records(values))[:, self.j])

    def fine(self, values: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(self.discretiser.fine_codes(self.records(values), self.name))


def _steps(code: Callable[[np.ndarray], np.ndarray]) -> tuple[int, np.ndarray]:
    """A non-decreasing code of ``v``: its code at -inf and the float where each next
    code starts (code ``base + i + 1`` from ``starts[i]`` on)."""
    base, top = (int(c) for c in code(np.array([-np.inf, np.inf])))
    targets = np.arange(base + 1, top + 1)
    lo = np.full(targets.size, _KEY_LO)
    hi = np.full(targets.size, _KEY_HI)
    starts = _least(lambda keys: code(_floats(keys)) >= targets, lo, hi)
    return base, _floats(starts)


def _atom_cells(column: _Column, atoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The floats ``[first, last]`` each atom's fine code holds (an interval around it;
    the declared ends' atoms also hold every value beyond them, to -inf or +inf)."""
    codes = np.arange(atoms.size)
    at = _keys(atoms)
    if not np.array_equal(column.fine(atoms), codes):
        raise ValueError(f"{column.name}: an atom is not its own fine cell")
    low = column.fine(np.full(atoms.size, -np.inf)) == codes
    high = column.fine(np.full(atoms.size, np.inf)) == codes
    lo = np.where(low, at, _KEY_LO)  # where it holds at -inf: any start, replaced below
    first = _least(lambda k: column.fine(_floats(k)) == codes, np.minimum(lo, at - 1), at)
    # the last key where it holds: the least key after it where it fails, less one
    hi = np.where(high, at + 1, _KEY_HI)
    after = _least(lambda k: column.fine(_floats(k)) != codes, at, hi)
    first = np.where(low, -np.inf, _floats(first))
    last = np.where(high, np.inf, _floats(after - 1))
    return first, last


def _case(sql: Dialect, v: str, base: int, starts: np.ndarray) -> str:
    """``base`` plus the number of ``starts`` at or below ``v``."""
    if starts.size == 0:
        return str(base)
    whens = " ".join(
        f"WHEN {v} < {sql.double(float(t))} THEN {base + i}" for i, t in enumerate(starts)
    )
    return f"CASE {whens} ELSE {base + starts.size} END"


def _missing(sql: Dialect, v: str) -> str:
    return f"({v} IS NULL OR {sql.is_nan(v)})"


def _numeric_sql(sql: Dialect, column: _Column, v: str) -> tuple[str, str]:
    """The coarse and the fine code of numeric column ``column`` from its value ``v``."""
    nan = np.array([np.nan])
    base, starts = _steps(column.coarse)
    coarse = f"CASE WHEN {_missing(sql, v)} THEN {int(column.coarse(nan)[0])} " \
             f"ELSE {_case(sql, v, base, starts)} END"  # fmt: skip
    cells = column.discretiser.fine[column.name]
    if cells.grid or cells.atoms == 0:
        atoms = np.empty(0)
        fine_base, fine_starts = _steps(column.fine)
        first = last = atoms
    else:
        atoms = np.asarray(cells.lo[: cells.atoms], dtype=np.float64)
        first, last = _atom_cells(column, atoms)
        # outside the atoms' cells: the code right of the cell a value falls in
        # (the last atom's cell may reach +inf: then the code left of it)
        right = column.fine(
            np.where(np.isinf(last), np.nextafter(first, -np.inf), np.nextafter(last, np.inf))
        )
        if (right < cells.atoms).any():
            raise ValueError(f"{column.name}: two atoms' fine cells touch")

        def outside(values: np.ndarray) -> np.ndarray:
            found = column.fine(values)
            return np.where(found < cells.atoms, right[np.minimum(found, cells.atoms - 1)], found)

        fine_base, fine_starts = _steps(outside)
    whens = " ".join(
        f"WHEN {v} BETWEEN {sql.double(float(a))} AND {sql.double(float(b))} THEN {i}"
        for i, (a, b) in enumerate(zip(first, last, strict=True))
    )
    fine = f"CASE WHEN {_missing(sql, v)} THEN {int(column.fine(nan)[0])} {whens} " \
           f"ELSE {_case(sql, v, fine_base, fine_starts)} END"  # fmt: skip
    _check(column, (base, starts), (fine_base, fine_starts), (first, last), atoms)
    return coarse, fine


def _restated(values: np.ndarray, base: int, starts: np.ndarray) -> np.ndarray:
    return base + np.searchsorted(starts, values, side="right")


def _check(
    column: _Column,
    coarse: tuple[int, np.ndarray],
    fine: tuple[int, np.ndarray],
    cells: tuple[np.ndarray, np.ndarray],
    atoms: np.ndarray,
) -> None:
    """The comparisons give the discretiser's codes on every threshold, the float below
    each, and a spread of values over and around the declared range."""
    col = column.discretiser.layout.numeric[column.k]
    points = [coarse[1], fine[1], cells[0], cells[1], atoms]
    probe = np.concatenate([np.asarray(p, dtype=np.float64) for p in points])
    spread = np.linspace(col.lo - col.range, col.hi + col.range, 4001)
    probe = np.concatenate(
        [probe, np.nextafter(probe, -np.inf), np.nextafter(probe, np.inf), spread]
    )
    probe = probe[np.isfinite(probe)]
    if not np.array_equal(_restated(probe, *coarse), column.coarse(probe)):
        raise ValueError(f"{column.name}: the coarse codes are not restated in SQL")
    first, last = cells
    want = _restated(probe, *fine)
    for i in range(first.size):
        want = np.where((probe >= first[i]) & (probe <= last[i]), i, want)
    if not np.array_equal(want, column.fine(probe)):
        raise ValueError(f"{column.name}: the fine codes are not restated in SQL")


def code_sql(discretiser: Any, value: Callable[[str], str], sql: Dialect) -> CodeSQL:
    """Every code of ``discretiser`` as SQL: each column's coarse code (by its name) and
    each numeric column's fine code (by ``fine:NAME``), from ``value(name)``, the SQL of
    the column's validated value (a float64; a categorical column's value is its code;
    NULL: missing).

    Raises
    ------
    ValueError
        A code the comparisons do not restate (see the module): the caller counts
        elsewhere.
    """
    out: CodeSQL = {}
    numeric = {c.name for c in discretiser.layout.numeric}
    for name in discretiser.schema.names:
        v = value(name)
        if name not in numeric:
            out[name] = f"CAST({v} AS INTEGER)"
            continue
        out[name], out[f"fine:{name}"] = _numeric_sql(sql, _Column(discretiser, name), v)
    return out
