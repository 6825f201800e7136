"""Secret graphs of Blowfish policies (docs/math.md §2): which values of one attribute are secrets.

==========================  ====================================  ======================
graph                       a ~ b (a != b)                        columns
==========================  ====================================  ======================
``Threshold(theta)``        ``|a - b| <= theta`` (raw units)      numeric
``Partition(blocks)``       a and b in the same block             categorical
``Complete()``              always (standard DP for the column)   any
``HierarchyGraph(theta)``   ``treepath(a, b) <= theta``           categorical with tree
==========================  ====================================  ======================

Each graph knows its reach on a column, ``r_k = max over edges (a, b) of
distance.edge_length(k, a, b)``; :class:`dpevolve.pe.policy.blowfish.Policy` combines them.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NoReturn

import numpy as np

from dpevolve.data.schema import CategoricalColumn, Column, NumericColumn
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance

# Raw-unit tolerance, relative to the column range, for threshold comparisons: encoded
# values are decoded as lo + u * R, which is exact only up to rounding.
_RELATIVE_TOLERANCE = 1e-9


# At most this many declared values are quoted in an error message.
_MAX_QUOTED = 12


GRAPH_KINDS = ("threshold", "partition", "complete", "hierarchy")


def fmt_number(value: float) -> str:
    """``7.0 -> '7'``, ``0.25 -> '0.25'``: numbers as a person would write them."""
    return f"{value:g}"


def _plain_number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def _positive_number(what: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{what} must be a positive number, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and number > 0):
        raise InputError(f"{what} must be a positive number, got {value!r}")
    return number


def column_kind(column: Column) -> str:
    """How a column reads in a message: numeric, binary, flat categorical or with a tree."""
    if isinstance(column, NumericColumn):
        return "numeric"
    if column.hierarchy is not None:
        return "categorical with a tree"
    return "binary" if len(column.values) == 2 else "flat categorical"


def _quote_values(column: CategoricalColumn) -> str:
    keys = list(column.keys)
    shown = ", ".join(keys[:_MAX_QUOTED])
    return shown + (f", ... ({len(keys)} values)" if len(keys) > _MAX_QUOTED else "")


# --------------------------------------------------------------------------- graphs
class SecretGraph(ABC):
    """A Blowfish secret graph over one attribute's values (docs/math.md §2).

    Subclasses say which columns they apply to (:meth:`check`), which value pairs are
    edges (:meth:`adjacent`) and the attribute reach they give under a distance
    (:meth:`reach`).
    """

    kind: ClassVar[str]

    @abstractmethod
    def describe(self) -> str:
        """A short human form, e.g. ``threshold(7)``."""

    @abstractmethod
    def to_spec(self) -> Any:
        """The YAML form (inverse of the policy loader)."""

    @abstractmethod
    def check(self, column: Column) -> None:
        """Raise :class:`InputError` if the graph cannot apply to ``column``."""

    @abstractmethod
    def adjacent(self, column: Column, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Edge indicator ``A[i, j] = a[i] ~ b[j]``, shape ``(len(a), len(b))``, no self loops.

        ``a`` and ``b`` are raw values for a numeric column and integer codes into the
        declared values for a categorical one.
        """

    def reach(self, column: Column, distance: Distance) -> float:
        """``r_k = max over edges (a, b) of distance.edge_length(k, a, b)`` (0 if no edge).

        The default enumerates every edge of a categorical column over its codes.
        """
        if isinstance(column, NumericColumn):  # pragma: no cover - numeric graphs override
            raise NotImplementedError
        codes = np.arange(len(column.values))
        edges = np.argwhere(self.adjacent(column, codes, codes))
        return max(
            (distance.edge_length(column.name, int(i), int(j)) for i, j in edges), default=0.0
        )

    def _require(self, column: Column, needs: str, instead: str) -> NoReturn:
        raise InputError(
            f"{self.kind} needs a {needs} column; '{column.name}' is {column_kind(column)} "
            f"(use {instead})"
        )


@dataclass(frozen=True)
class Threshold(SecretGraph):
    """Numeric values within ``theta`` (raw units of the column) are secrets: ``|a - b| <= theta``.

    Reach: ``r_k = edge_length(k, 0, min(theta, R_k) / R_k)``, i.e. Gower
    ``w_k * min(theta, R_k) / R_k`` (docs/math.md §2). Integer columns are treated as
    continuous, so a non-integer ``theta`` is not rounded down: the bound stays safe.
    """

    theta: float
    kind: ClassVar[str] = "threshold"

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta", _positive_number("threshold theta", self.theta))

    def describe(self) -> str:
        return f"threshold({fmt_number(self.theta)})"

    def to_spec(self) -> Any:
        return {"threshold": _plain_number(self.theta)}

    def check(self, column: Column) -> None:
        if not isinstance(column, NumericColumn):
            self._require(column, "numeric", "partition, complete or hierarchy")

    def adjacent(self, column: Column, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        assert isinstance(column, NumericColumn)
        tol = _RELATIVE_TOLERANCE * column.range
        gap = np.abs(np.asarray(a, dtype=np.float64)[:, None] - np.asarray(b, dtype=np.float64))
        return (gap > tol) & (gap <= self.theta + tol)

    def reach(self, column: Column, distance: Distance) -> float:
        assert isinstance(column, NumericColumn)
        span = min(self.theta, column.range) / column.range
        return float(distance.edge_length(column.name, 0.0, span))


@dataclass(frozen=True)
class Partition(SecretGraph):
    """Categorical values in the same block are secrets; values in no block are not.

    ``blocks`` are stored as the values' string keys (how cells match declared values).
    Reach: the largest ``edge_length`` within a block — ``w_k`` for a flat column with a
    block of two or more values, the largest within-block tree distance for a column
    with a hierarchy.
    """

    blocks: tuple[tuple[str, ...], ...]
    kind: ClassVar[str] = "partition"

    def __post_init__(self) -> None:
        raw = self.blocks
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence) or len(raw) == 0:
            raise InputError(
                f"partition needs a non-empty list of blocks, e.g. [[a, b], [c, d]], got {raw!r}"
            )
        blocks: list[tuple[str, ...]] = []
        seen: set[str] = set()
        for i, block in enumerate(raw, start=1):
            if isinstance(block, (str, bytes)) or not isinstance(block, Sequence):
                raise InputError(f"partition block {i} must be a list of values, got {block!r}")
            if len(block) == 0:
                raise InputError(f"partition block {i} is empty")
            keys = []
            for value in block:
                if isinstance(value, (list, dict, tuple)) or value is None:
                    raise InputError(f"partition block {i} holds {value!r}, not a plain value")
                key = str(value)
                if key in seen:
                    raise InputError(f"partition puts '{key}' in two blocks")
                seen.add(key)
                keys.append(key)
            blocks.append(tuple(keys))
        object.__setattr__(self, "blocks", tuple(blocks))

    def describe(self) -> str:
        return "partition(" + ", ".join("[" + ", ".join(b) + "]" for b in self.blocks) + ")"

    def to_spec(self) -> Any:
        return {"partition": [list(b) for b in self.blocks]}

    def check(self, column: Column) -> None:
        if not isinstance(column, CategoricalColumn):
            self._require(column, "categorical", "threshold or complete")
        declared = set(column.keys)
        for block in self.blocks:
            for key in block:
                if key not in declared:
                    raise InputError(
                        f"partition value '{key}' is not a declared value of "
                        f"'{column.name}' (declared: {_quote_values(column)})"
                    )

    def block_ids(self, column: CategoricalColumn) -> np.ndarray:
        """Block of every code; values in no block get their own negative id (singletons)."""
        ids = -1 - np.arange(len(column.values))
        index = {key: code for code, key in enumerate(column.keys)}
        for b, block in enumerate(self.blocks):
            for key in block:
                ids[index[key]] = b
        return ids

    def adjacent(self, column: Column, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        assert isinstance(column, CategoricalColumn)
        ids = self.block_ids(column)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        return (ids[a][:, None] == ids[b][None, :]) & (a[:, None] != b[None, :])


@dataclass(frozen=True)
class Complete(SecretGraph):
    """Every pair of values is a secret: standard DP for this attribute.

    Reach: the attribute's largest ``edge_length`` (Gower: ``w_k``).
    """

    kind: ClassVar[str] = "complete"

    def describe(self) -> str:
        return "complete"

    def to_spec(self) -> Any:
        return "complete"

    def check(self, column: Column) -> None:
        return None

    def adjacent(self, column: Column, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if isinstance(column, NumericColumn):
            tol = _RELATIVE_TOLERANCE * column.range
            a_, b_ = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            return np.abs(a_[:, None] - b_[None, :]) > tol
        return np.asarray(a)[:, None] != np.asarray(b)[None, :]

    def reach(self, column: Column, distance: Distance) -> float:
        if isinstance(column, NumericColumn):
            return float(distance.edge_length(column.name, 0.0, 1.0))
        return super().reach(column, distance)


@dataclass(frozen=True)
class HierarchyGraph(SecretGraph):
    """Leaves within ``theta`` tree edges are secrets: ``treepath(a, b) <= theta``.

    ``theta`` counts edges through the lowest common ancestor (docs/math.md §1), so in a
    two-level tree ``theta = 2`` links siblings (Gower reach ``w_k / 2``) and
    ``theta = 4`` links cousins too (``w_k``).
    """

    theta: float
    kind: ClassVar[str] = "hierarchy"

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta", _positive_number("hierarchy theta", self.theta))

    def describe(self) -> str:
        return f"hierarchy({fmt_number(self.theta)})"

    def to_spec(self) -> Any:
        return {"hierarchy": _plain_number(self.theta)}

    def check(self, column: Column) -> None:
        if not isinstance(column, CategoricalColumn):
            self._require(column, "categorical", "threshold or complete")
        if column.hierarchy is None:
            raise InputError(
                f"hierarchy needs a tree over '{column.name}' in the schema and it has none "
                "(declare one, or use partition or complete)"
            )

    def adjacent(self, column: Column, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        assert isinstance(column, CategoricalColumn) and column.hierarchy is not None
        paths = column.hierarchy.path_matrix(column.keys)
        a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        return (paths[np.ix_(a, b)] <= self.theta) & (a[:, None] != b[None, :])


def graph_from_spec(spec: Any) -> SecretGraph:
    """One graph from its YAML form: ``complete`` or a one-key mapping ``{kind: argument}``."""
    choose = "choose threshold, partition, complete or hierarchy"
    if isinstance(spec, str):
        if spec == "complete":
            return Complete()
        raise InputError(f"unknown graph '{spec}' ({choose})")
    if not isinstance(spec, Mapping) or len(spec) != 1:
        raise InputError(
            f"a graph is 'complete' or one mapping {{kind: argument}} ({choose}), got {spec!r}"
        )
    ((kind, argument),) = spec.items()
    if kind == "threshold":
        return Threshold(argument)
    if kind == "hierarchy":
        return HierarchyGraph(argument)
    if kind == "partition":
        return Partition(argument)
    if kind == "complete":
        if argument not in (None, True):
            raise InputError(f"complete takes no argument, got {argument!r}")
        return Complete()
    raise InputError(f"unknown graph '{kind}' ({choose})")
