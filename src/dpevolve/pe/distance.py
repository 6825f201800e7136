"""Record distances (docs/math.md §1): Gower, and Tab-PE's one-hot/L2 embedding.

A distance works on :class:`~dpevolve.data.encoding.Records` and knows, per attribute, how
far two records that differ only in that attribute can be (:meth:`edge_length`). The
policy module turns that into the reach ``r`` that bounds ``|d(x, c) - d(x', c)|`` for
any candidate ``c`` (both distances satisfy the triangle inequality).

``pairwise`` returns a (len(x), len(c)) block; callers pass chunks of private records
so memory stays O(chunk x population).

Missing numeric cells (NaN, nullable columns) are one more domain value: their
per-attribute distance is 0 to another missing cell and 1 (the maximum) to any present
value, so Gower stays in ``[0, 1]`` per attribute and every reach and sensitivity bound
computed from declared ranges still holds. Categorical columns need nothing: their
missing cells are the reserved category :data:`~dpevolve.data.schema.MISSING`, which the
ordinary tables already put at distance 1 from every other value. The nullable classes
subclass the plain distances; the fused kernels reproduce them term for term
(backends/fused.py); the GPU backend, which hard-codes the plain formulas, hands such
schemas to the numpy reference backend: exact, just slower.
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from dpevolve.backends.base import DistanceTerms
from dpevolve.backends.canonical import tabpe_squared
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError


class Distance(Protocol):
    """What the vote needs from a distance."""

    name: str
    layout: Layout

    def pairwise(self, x: Records, c: Records) -> np.ndarray:
        """Distances between every row of ``x`` and every row of ``c``, float64."""
        ...

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        """``d(x, x')`` for records that differ only in ``column`` (a -> b, encoded units)."""
        ...

    def diameter(self) -> float:
        """The largest distance between two records of the domain."""
        ...

    def terms(self) -> DistanceTerms | None:
        """The distance as the backends' kernels compute it, or ``None`` (numpy only)."""
        ...


class Gower:
    """Gower distance ``d(x, c) = sum_k w_k d_k(x_k, c_k)`` (docs/math.md §1).

    Numeric ``d_k = |a - b| / R_k`` (records are already scaled by ``R_k``); flat
    categorical ``1[a != b]``; hierarchical ``treepath(a, b) / maxpath_k``.
    """

    name = "gower"

    def __init__(self, schema: Schema) -> None:
        self.layout = Layout.of(schema)
        weight_of = dict(zip(schema.names, schema.weights, strict=True))
        self.numeric_weights = np.array([weight_of[c.name] for c in self.layout.numeric])
        self.categorical_weights = np.array([weight_of[c.name] for c in self.layout.categorical])
        # Weighted per-attribute value-distance tables: one gather per attribute in pairwise.
        self.tables = [
            w * c.distance_matrix()
            for w, c in zip(self.categorical_weights, self.layout.categorical, strict=True)
        ]

    def pairwise(self, x: Records, c: Records) -> np.ndarray:
        out = np.zeros((len(x), len(c)), dtype=np.float64)
        for k, w in enumerate(self.numeric_weights):
            out += w * self.numeric_term(k, x.numeric[:, k], c.numeric[:, k])
        for k, table in enumerate(self.tables):
            out += table[x.codes[:, k, None], c.codes[None, :, k]]
        return out

    def numeric_term(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``d_k`` between every value of ``a`` and every value of ``b`` (numeric ``k``)."""
        del k
        return np.abs(a[:, None] - b[None, :])

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        kind, k = self._locate(column)
        if kind == "numeric":
            return float(self.numeric_weights[k] * abs(float(a) - float(b)))
        return float(self.tables[k][int(a), int(b)])

    def diameter(self) -> float:
        return float(self.numeric_weights.sum() + sum(t.max() for t in self.tables))

    def terms(self) -> DistanceTerms | None:
        # Exact types only: a subclass may redefine pairwise(), which the kernels hard-code.
        if type(self) not in (Gower, NullableGower):
            return None
        return DistanceTerms(
            "gower",
            np.asarray(self.numeric_weights, dtype=np.float64),
            tuple(np.asarray(t, dtype=np.float64) for t in self.tables),
            0.0,
            _nullable(self.layout, type(self) is NullableGower),
        )

    def _locate(self, column: str) -> tuple[str, int]:
        for k, col in enumerate(self.layout.numeric):
            if col.name == column:
                return "numeric", k
        for k, cat in enumerate(self.layout.categorical):
            if cat.name == column:
                return "categorical", k
        raise KeyError(column)


class TabPEEmbedding:
    """Tab-PE's embedding distance (docs/math.md §1): L2 between embeddings.

    Numeric columns are min-max scaled by the declared range (weight 1); categorical
    columns are one-hot with weight 1/3, so two different categories are ``sqrt(2)/3``
    apart. ``||e(x) - e(c)||^2 = sum_num (x_k - c_k)^2 + (2/9) sum_cat 1[x_k != c_k]``,
    which is what :meth:`pairwise` evaluates without building the one-hot matrix.
    """

    name = "tabpe"
    CATEGORY_WEIGHT = 1.0 / 3.0

    def __init__(self, schema: Schema) -> None:
        self.layout = Layout.of(schema)
        self._mismatch = 2.0 * self.CATEGORY_WEIGHT**2

    def squared(self, x: Records, c: Records) -> np.ndarray:
        """``||e(x) - e(c)||^2`` per pair in the canonical order every backend uses.

        Not the BLAS identity ``||x||^2 + ||c||^2 - 2 x.c``: its rounding depends on the
        batch, and a near tie must resolve the same way in every backend and in the
        exact sensitivity search (see :mod:`dpevolve.backends.canonical`).
        """
        return tabpe_squared(x.numeric, x.codes, c.numeric, c.codes, self._mismatch)

    def pairwise(self, x: Records, c: Records) -> np.ndarray:
        return np.sqrt(self.squared(x, c))

    def embed(self, records: Records) -> np.ndarray:
        """The explicit embedding (numeric block, then one-hot blocks x 1/3)."""
        blocks = [records.numeric]
        for k, size in enumerate(self.layout.cardinalities):
            onehot = np.zeros((len(records), int(size)))
            onehot[np.arange(len(records)), records.codes[:, k]] = self.CATEGORY_WEIGHT
            blocks.append(onehot)
        return np.hstack(blocks)

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        for col in self.layout.numeric:
            if col.name == column:
                return abs(float(a) - float(b))
        for cat in self.layout.categorical:
            if cat.name == column:
                return 0.0 if int(a) == int(b) else math.sqrt(self._mismatch)
        raise KeyError(column)

    def diameter(self) -> float:
        return math.sqrt(len(self.layout.numeric) + self._mismatch * len(self.layout.categorical))

    def terms(self) -> DistanceTerms | None:
        # Exact types only, as Gower.terms.
        if type(self) not in (TabPEEmbedding, NullableTabPEEmbedding):
            return None
        return DistanceTerms(
            "tabpe",
            np.ones(len(self.layout.numeric)),
            tuple(1.0 - np.eye(int(size)) for size in self.layout.cardinalities),
            self._mismatch,
            _nullable(self.layout, type(self) is NullableTabPEEmbedding),
        )


def _nullable(layout: Layout, missing_aware: bool) -> np.ndarray:
    """The numeric attributes whose missing cells a distance handles (none for the plain ones)."""
    if missing_aware:
        return np.asarray(layout.nullable_mask, dtype=bool)
    return np.zeros(len(layout.numeric), dtype=bool)


def _missing_term(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(|a - b| with NaN -> 0, exactly-one-missing indicator)`` for one attribute."""
    na, nb = np.isnan(a), np.isnan(b)
    differ = np.abs(a[:, None] - b[None, :])
    np.nan_to_num(differ, copy=False, nan=0.0)
    return differ, (na[:, None] ^ nb[None, :])


class NullableGower(Gower):
    """Gower distance where a numeric ``d_k`` of a missing cell is 0 to another missing
    cell and 1 (the maximum) to a present value."""

    def __init__(self, schema: Schema) -> None:
        super().__init__(schema)
        self.nullable = self.layout.nullable_mask

    def numeric_term(self, k: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not self.nullable[k]:
            return super().numeric_term(k, a, b)
        differ, one_missing = _missing_term(a, b)
        return np.where(one_missing, 1.0, differ)

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        kind, k = self._locate(column)
        if kind == "numeric" and (np.isnan(a) or np.isnan(b)):
            same = bool(np.isnan(a) and np.isnan(b))
            return 0.0 if same else float(self.numeric_weights[k])
        return super().edge_length(column, a, b)


class NullableTabPEEmbedding(TabPEEmbedding):
    """Tab-PE's embedding distance; a missing numeric coordinate is 1 from any present
    one and 0 from another missing one (squared terms add as for any coordinate)."""

    def __init__(self, schema: Schema) -> None:
        super().__init__(schema)
        self.nullable = self.layout.nullable_mask

    def squared(self, x: Records, c: Records) -> np.ndarray:
        cols = np.flatnonzero(self.nullable)
        xn, cn = x.numeric.copy(), c.numeric.copy()
        xn[:, cols] = 0.0  # the nullable coordinates are added below, exactly
        cn[:, cols] = 0.0
        out = super().squared(Records(xn, x.codes), Records(cn, c.codes))
        for k in cols:
            differ, one_missing = _missing_term(x.numeric[:, k], c.numeric[:, k])
            out += np.where(one_missing, 1.0, differ**2)
        return out

    def edge_length(self, column: str, a: float | int, b: float | int) -> float:
        if np.isnan(a) or np.isnan(b):
            return 0.0 if bool(np.isnan(a) and np.isnan(b)) else 1.0
        return super().edge_length(column, a, b)


def make_distance(name: str, schema: Schema) -> Distance:
    """``gower`` or ``tabpe`` (the one-hot/L2 embedding); their missing-aware versions
    when a numeric column is nullable."""
    nullable = bool(Layout.of(schema).nullable_mask.any())
    if name == "gower":
        return NullableGower(schema) if nullable else Gower(schema)
    if name in ("tabpe", "embedding", "l2"):
        return NullableTabPEEmbedding(schema) if nullable else TabPEEmbedding(schema)
    raise InputError(f"unknown distance '{name}' (choose gower or tabpe)")


__all__ = [
    "Distance",
    "Gower",
    "NullableGower",
    "NullableTabPEEmbedding",
    "TabPEEmbedding",
    "make_distance",
]
