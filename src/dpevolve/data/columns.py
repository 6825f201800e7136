"""Column types: the declared domain of one column (docs/math.md §1).

A numeric column carries a declared range ``[lo, hi]`` (so ``R_k = hi - lo`` never
comes from private data); a categorical column a declared list of values and,
optionally, a :class:`Hierarchy` tree over them. Each may carry an explicit Gower
weight ``w_k``. Dates are numeric columns in disguise (:mod:`dpevolve.data.types`);
the collection of columns is a :class:`~dpevolve.data.schema.Schema`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from dpevolve.data.atoms import ATOM_SHARE, MOST_ATOMS
from dpevolve.data.messages import plain_cell
from dpevolve.errors import InputError

Scalar = str | int | float | bool

#: The reserved category a ``nullable`` categorical column gives to missing cells. It is
#: appended to the declared values (so it is one more domain value everywhere: encoding,
#: distance, variation, votes) and decodes back to a missing cell.
MISSING = "(missing)"

#: The reserved category an ``other: true`` categorical column gives to every cell
#: outside its declared values (values the public data did not show). Which cells map
#: to it depends only on the declared values, never on the private table, so the
#: mapping costs no budget; it decodes to the text ``(other)``.
OTHER = "(other)"

#: The most decimals a numeric column may declare (float64 holds about 15 digits).
MAX_DECIMALS = 12

#: The most ``values`` a numeric column may list: each is a cell of the engine's fine
#: partition (its ``fine_cells`` default).
MOST_VALUES = 128


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column on the declared range ``[lo, hi]``; ``d_k(a, b) = |a - b| / (hi - lo)``.

    An ``integer`` column holds whole numbers only: a cell like ``30.5`` is invalid, never
    rounded (rounding is not a contraction: it can push two values within a policy's
    threshold further apart than the noise was calibrated for). ``decimals`` is how many
    decimals the column's values carry: synthetic values are rounded to it on output
    (post-processing; input cells are never rounded). ``float32``: the values are
    stored in single precision (a Stata or Parquet float32 column: 4.2 reads as
    4.19999980926514), and synthetic values are written the same way, so a value of the
    output equals the same value of the input. ``atoms``: values known, from public
    knowledge, to hold a large share of the rows (0 spent, a state's tax rate, a
    bracket's midpoint; ``schema infer`` lists the public table's,
    :func:`dpevolve.data.atoms.heavy_values`): each is a cell of the engine's fine
    partition, so its count is released with the column's and it decodes to itself;
    the engine still searches the private rows for others (docs/engine.md, Atoms).
    ``values``: the only values the column takes, when it takes few (a bracket's
    midpoint, a coded survey answer: years married 0.5, 2.5, 6, ..., 23; ``schema
    infer`` lists them where the public table shows few values, none of them rare,
    :func:`dpevolve.data.proposal.listed_values`). A cell at no listed value is invalid,
    as a fraction is in an integer column; the engine gives each value a cell of its
    own and never draws between them, and every method's output lands on them
    (:meth:`format`).
    """

    name: str
    lo: float
    hi: float
    integer: bool = False
    weight: float | None = None
    nullable: bool = False
    decimals: int | None = None
    float32: bool = False
    atoms: tuple[float, ...] = ()
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            raise InputError(f"column '{self.name}': lo and hi must be finite numbers")
        if not self.hi > self.lo:
            raise InputError(
                f"column '{self.name}': hi must be greater than lo, got [{self.lo}, {self.hi}]"
            )
        if self.integer and math.ceil(self.lo) > math.floor(self.hi):
            raise InputError(
                f"column '{self.name}': an integer column needs a whole number in "
                f"[{self.lo}, {self.hi}]"
            )
        if self.decimals is not None and (
            isinstance(self.decimals, bool)
            or not isinstance(self.decimals, int)
            or not 0 <= self.decimals <= MAX_DECIMALS
        ):
            raise InputError(
                f"column '{self.name}': 'decimals' must be a whole number from 0 to "
                f"{MAX_DECIMALS}, got {self.decimals!r}"
            )
        if self.integer and self.float32:
            raise InputError(f"column '{self.name}': an integer column has no 'float32'")
        if self.decimals is not None:
            grid_lo, grid_hi = self.grid_range
            if grid_lo > grid_hi:
                raise InputError(
                    f"column '{self.name}': no number with {self.decimals} decimals lies in "
                    f"[{self.lo}, {self.hi}]"
                )
        self._check_atoms(self.atoms)
        self._check_values(self.values)
        _check_weight(self.name, self.weight)

    def _check_atoms(self, atoms: tuple[float, ...]) -> None:
        if len(atoms) > MOST_ATOMS:
            raise InputError(
                f"column '{self.name}': at most {MOST_ATOMS} 'atoms' (values holding "
                f"{ATOM_SHARE:.0%} of the rows or more), got {len(atoms)}"
            )
        self._on_grid(atoms, "atom")
        if len(set(atoms)) < len(atoms):
            raise InputError(f"column '{self.name}': an atom is listed twice")

    def _check_values(self, values: tuple[float, ...]) -> None:
        if not values:
            return
        if len(values) > MOST_VALUES:
            raise InputError(
                f"column '{self.name}': at most {MOST_VALUES} 'values', got {len(values)}"
            )
        if any(b <= a for a, b in pairwise(values)):
            raise InputError(f"column '{self.name}': 'values' must be listed once each, ascending")
        self._on_grid(values, "value")
        listed = np.asarray(values, dtype=np.float64)
        if any(np.abs(listed - a).min() > 1e-9 * max(1.0, abs(a)) for a in self.atoms):
            raise InputError(f"column '{self.name}': every atom must be one of its 'values'")

    def _on_grid(self, values: Iterable[float], what: str) -> None:
        step = self.step
        for value in values:
            if not (math.isfinite(value) and self.lo <= value <= self.hi):
                raise InputError(
                    f"column '{self.name}': {what} {value!r} lies outside [{self.lo}, {self.hi}]"
                )
            # on the grid up to float error, which grows with the value in steps (25,243.550781
            # at 6 decimals is 25,243,550,781 steps, a few millionths of a step off)
            grid = round(value / step) * step if step is not None else value
            if not math.isclose(value, grid, rel_tol=1e-12, abs_tol=1e-6 * (step or 0.0)):
                kind = "whole" if self.integer else f"a number of {self.decimals} decimals"
                raise InputError(f"column '{self.name}': {what} {value!r} is not {kind}")

    def is_listed(self, numbers: np.ndarray) -> np.ndarray:
        """Per number, whether it is one of the declared ``values`` exactly (compared in
        single precision for a ``float32`` column, as it was stored)."""
        kind = np.float32 if self.float32 else np.float64
        listed = np.asarray(self.values, dtype=kind)
        with np.errstate(over="ignore"):  # a huge number is at no value, in any precision
            return np.isin(np.asarray(numbers, dtype=np.float64).astype(kind), listed)

    def listed(self, numbers: np.ndarray) -> np.ndarray:
        """``numbers`` each at the nearest of the declared ``values`` (NaN stays NaN;
        unchanged where none are declared)."""
        if not self.values:
            return numbers
        listed = np.asarray(self.values, dtype=np.float64)
        x = np.asarray(numbers, dtype=np.float64)
        return np.where(np.isnan(x), np.nan, listed[nearest(listed, x)])

    @property
    def step(self) -> float | None:
        """Spacing of the values the column can hold: 1 (integer), 10^-decimals, or
        None."""
        if self.integer:
            return 1.0
        return None if self.decimals is None else 10.0 ** (-int(self.decimals))

    @property
    def grid_range(self) -> tuple[float, float]:
        """``[lo, hi]`` shrunk to numbers written with ``decimals`` (where output lies)."""
        if self.decimals is None:
            return self.lo, self.hi
        scale = 10.0**self.decimals
        # round(.., 6) first: 0.7 * 10 is 7.000000000000001, still 7 on the grid
        low = math.ceil(round(self.lo * scale, 6))
        high = math.floor(round(self.hi * scale, 6))
        # a grid point the rounding above put just outside the range: the next one in
        low += int(low / scale < self.lo)
        high -= int(high / scale > self.hi)
        return low / scale, high / scale

    @property
    def whole_range(self) -> tuple[float, float]:
        """Where ``clip`` puts out-of-range cells: ``[lo, hi]``, shrunk to whole numbers
        for an integer column (so a clipped cell is always valid)."""
        if self.values:
            return self.values[0], self.values[-1]
        if self.integer:
            return float(math.ceil(self.lo)), float(math.floor(self.hi))
        return self.lo, self.hi

    @property
    def range(self) -> float:
        """The declared range ``R_k = hi - lo``."""
        return self.hi - self.lo

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "numeric",
            "lo": plain_cell(self.lo),
            "hi": plain_cell(self.hi),
        }
        if self.integer:
            out["integer"] = True
        elif self.decimals is not None:
            out["decimals"] = self.decimals
        if self.float32:
            out["float32"] = True
        if self.weight is not None:
            out["weight"] = self.weight
        if self.nullable:
            out["nullable"] = True
        if self.atoms:
            out["atoms"] = [plain_cell(v) for v in self.atoms]
        if self.values:
            out["values"] = [plain_cell(v) for v in self.values]
        return out

    def format(self, numbers: np.ndarray) -> Any:
        """Decoded numbers (clipped, NaN for missing) as the column's table values:
        whole numbers for an integer column, rounded to ``decimals`` when declared, in
        single precision where ``float32``; at the nearest declared value where
        ``values`` lists them."""
        numbers = self.listed(numbers)
        if self.integer:
            rounded = np.clip(np.round(numbers), *self.whole_range)
            if self.nullable:
                import pandas as pd

                return pd.array(rounded, dtype="Int64")  # NaN -> <NA>, not garbage
            return rounded.astype(np.int64)
        if self.decimals is not None:
            # Rounding can step past a bound that is off the grid: clip to the grid's ends.
            numbers = np.clip(np.round(numbers, self.decimals), *self.grid_range)
        return _single(numbers, self.lo, self.hi) if self.float32 else numbers


def nearest(points: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Per number of ``x``, the index of the nearest of ``points`` (sorted, once each;
    the lower one at a tie)."""
    if points.size == 1:
        return np.zeros(np.shape(x), dtype=np.int64)
    right = np.clip(np.searchsorted(points, x), 1, points.size - 1)
    return np.where(x - points[right - 1] <= points[right] - x, right - 1, right)


def _single(numbers: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """``numbers`` as single-precision values read back, none past ``[lo, hi]`` (the
    nearest single inward where rounding crossed a bound)."""
    single = np.asarray(numbers, dtype=np.float32)
    wide = single.astype(np.float64)  # compared as doubles: the bounds need not be singles
    single = np.where(wide > hi, np.nextafter(single, np.float32(-np.inf)), single)
    single = np.where(wide < lo, np.nextafter(single, np.float32(np.inf)), single)
    return single.astype(np.float64)


@dataclass(frozen=True)
class Hierarchy:
    """A tree over a categorical column's values (the leaves).

    ``treepath(a, b)`` counts the edges between two leaves through their lowest common
    ancestor; ``d_k(a, b) = treepath(a, b) / maxpath`` with ``maxpath`` the largest
    treepath between two leaves (docs/math.md §1). A two-level tree gives siblings 0.5 and
    cousins 1.

    Parameters
    ----------
    parent
        Maps every node but the (implicit) root to its parent; leaves are the values.
    """

    parent: Mapping[str, str]
    spec: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def from_nested(cls, column: str, tree: Any, values: Sequence[str]) -> Hierarchy:
        """Build from the YAML form: ``{inner: [leaf, ...] | {inner: ...}}``."""
        parent: dict[str, str] = {}
        root = "\x00root"

        def walk(node: str, children: Any) -> None:
            if isinstance(children, Mapping):
                items: Iterable[tuple[str, Any]] = children.items()
            elif isinstance(children, list):
                items = ((str(c), None) for c in children)
            else:
                raise InputError(
                    f"column '{column}': hierarchy nodes must map to a list or a mapping"
                )
            for child, grandchildren in items:
                child = str(child)
                if child in parent:
                    raise InputError(f"column '{column}': hierarchy repeats node '{child}'")
                parent[child] = node
                if grandchildren is not None:
                    walk(child, grandchildren)

        walk(root, tree)
        leaves = {p for p in parent if p not in set(parent.values())}
        declared = {str(v) for v in values}
        if leaves != declared:
            missing = sorted(declared - leaves)
            extra = sorted(leaves - declared)
            problem = (
                f"values not in the tree: {missing}"
                if missing
                else f"leaves not in values: {extra}"
            )
            raise InputError(
                f"column '{column}': hierarchy leaves must equal its values ({problem})"
            )
        return cls(parent=parent, spec=tree)

    def _ancestors(self, leaf: str) -> list[str]:
        chain = [leaf]
        while chain[-1] in self.parent:
            chain.append(self.parent[chain[-1]])
        return chain

    def treepath(self, a: str, b: str) -> int:
        """Edges on the path between leaves ``a`` and ``b`` through their lowest common ancestor."""
        up_a = self._ancestors(a)
        up_b = self._ancestors(b)
        depth_b = {node: i for i, node in enumerate(up_b)}
        for i, node in enumerate(up_a):
            if node in depth_b:
                return i + depth_b[node]
        raise AssertionError("a tree always has a common root")

    def path_matrix(self, values: Sequence[str]) -> np.ndarray:
        """``treepath`` between every pair of leaves, in the order of ``values``."""
        keys = [str(v) for v in values]
        return np.array([[self.treepath(a, b) for b in keys] for a in keys], dtype=np.float64)


@dataclass(frozen=True)
class CategoricalColumn:
    """A categorical column over declared ``values`` (flat, or with a hierarchy tree).

    ``values`` holds the declared values followed by the reserved categories:
    :data:`OTHER` when ``other`` (every undeclared cell), then :data:`MISSING` when
    ``nullable`` (every missing cell). Each is one more domain value everywhere
    (encoding, distance, variation, votes, marginals).
    """

    name: str
    values: tuple[Scalar, ...]
    hierarchy: Hierarchy | None = None
    weight: float | None = None
    nullable: bool = False
    other: bool = False

    def __post_init__(self) -> None:
        declared = list(self.values)
        # Built again from its own values (dataclasses.replace): reserved ones go first.
        if self.nullable and declared and declared[-1] == MISSING:
            declared.pop()
        if self.other and declared and declared[-1] == OTHER:
            declared.pop()
        if len(declared) == 0:
            raise InputError(f"column '{self.name}': a categorical column needs at least one value")
        texts = {str(v) for v in declared}
        flags = ((self.other, OTHER, "other"), (self.nullable, MISSING, "missing"))
        for flag, reserved, meaning in flags:
            if flag and reserved in texts:
                raise InputError(f"column '{self.name}': '{reserved}' is reserved for {meaning}")
        reserved_values = ((OTHER,) if self.other else ()) + ((MISSING,) if self.nullable else ())
        object.__setattr__(self, "values", (*declared, *reserved_values))
        keys = [str(v) for v in self.values]
        if len(set(keys)) != len(keys):
            raise InputError(f"column '{self.name}': categorical values must be distinct")
        _check_weight(self.name, self.weight)

    @property
    def keys(self) -> tuple[str, ...]:
        """Values as strings: how table cells are matched against the declared set."""
        return tuple(str(v) for v in self.values)

    def distance_matrix(self) -> np.ndarray:
        """``d_k`` between every pair of values: flat 0/1, or tree path over maxpath."""
        size = len(self.values)
        if self.hierarchy is None:
            return 1.0 - np.eye(size)
        declared = len(self.declared)
        paths = self.hierarchy.path_matrix([str(v) for v in self.declared])
        maxpath = paths.max()
        paths = paths / maxpath if maxpath > 0 else paths
        # other and missing are 1 from every value (the maximum), 0 from themselves
        extra = size - declared
        if extra:
            paths = np.pad(paths, ((0, extra), (0, extra)), constant_values=1.0)
            paths[declared:, declared:] = 1.0 - np.eye(extra)
        return paths

    @property
    def reserved(self) -> int:
        """How many reserved categories (other, missing) follow the declared values."""
        return int(self.other) + int(self.nullable)

    @property
    def declared(self) -> tuple[Scalar, ...]:
        """The declared values, without the reserved other and missing categories."""
        return self.values[: len(self.values) - self.reserved]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "categorical",
            "values": [plain_cell(v) for v in self.declared],
        }
        if self.hierarchy is not None:
            out["hierarchy"] = self.hierarchy.spec
        if self.weight is not None:
            out["weight"] = self.weight
        if self.other:
            out["other"] = True
        if self.nullable:
            out["nullable"] = True
        return out


Column = NumericColumn | CategoricalColumn


def _check_weight(name: str, weight: float | None) -> None:
    if weight is not None and not (math.isfinite(weight) and weight > 0):
        raise InputError(f"column '{name}': weight must be a positive number, got {weight}")


__all__ = [
    "MISSING",
    "OTHER",
    "CategoricalColumn",
    "Column",
    "Hierarchy",
    "NumericColumn",
    "Scalar",
]
