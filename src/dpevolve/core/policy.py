"""Blowfish policies (docs/math.md §2): which substitutions of one record are secrets.

A policy names, per protected attribute, a *secret graph* over that attribute's values:

==========================  ====================================  ======================
graph                       a ~ b (a != b)                        columns
==========================  ====================================  ======================
``Threshold(theta)``        ``|a - b| <= theta`` (raw units)      numeric
``Partition(blocks)``       a and b in the same block             categorical
``Complete()``              always (standard DP for the column)   any
``HierarchyGraph(theta)``   ``treepath(a, b) <= theta``           categorical with tree
==========================  ====================================  ======================

Unnamed attributes are unprotected. A *protected substitution* replaces a record ``x`` by
``x'`` that differs in exactly one protected attribute ``k``, along an edge of graph
``k``. ``participation=True`` adds the complete graph on whole records (any record may
become any record: standard bounded DP).

The **reach** bounds how far one protected substitution moves any distance to a
candidate, ``|d(x, c) - d(x', c)| <= r`` (triangle inequality)::

    r_k = max over edges (a, b) of graph k of distance.edge_length(k, a, b)   (0 if no edge)
    r   = max_k r_k                       (one substitution moves one attribute)
    r   = distance.diameter()             with participation

For Gower this is ``r_k = w_k * max d_k(a, b)``: a threshold gives
``w_k * min(theta, R_k) / R_k``, a flat categorical with any edge ``w_k``, a hierarchy
graph with ``theta = 2`` in a two-level tree ``w_k / 2``.

YAML form::

    participation: false
    attributes:
      age: {threshold: 7}
      workclass: {partition: [[Private, Self-emp-inc], [Federal-gov, State-gov]]}
      income: complete
      job: {hierarchy: 2}
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, NoReturn

import numpy as np
import yaml

from dpevolve.core.distance import Distance, Gower
from dpevolve.core.votes import SoftVote, noise_ratio
from dpevolve.data.encoding import Layout
from dpevolve.data.schema import CategoricalColumn, Column, NumericColumn, Schema
from dpevolve.errors import InputError

# Raw-unit tolerance, relative to the column range, for threshold comparisons: encoded
# values are decoded as lo + u * R, which is exact only up to rounding.
_RELATIVE_TOLERANCE = 1e-9
# At most this many declared values are quoted in an error message.
_MAX_QUOTED = 12

GRAPH_KINDS = ("threshold", "partition", "complete", "hierarchy")


def _fmt(value: float) -> str:
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


def _kind_of(column: Column) -> str:
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
            f"{self.kind} needs a {needs} column; '{column.name}' is {_kind_of(column)} "
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
        return f"threshold({_fmt(self.theta)})"

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
        return f"hierarchy({_fmt(self.theta)})"

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


# --------------------------------------------------------------------------- policy
@dataclass(frozen=True)
class Policy:
    """A Blowfish policy: a secret graph per protected attribute, plus participation.

    Parameters
    ----------
    attributes
        Attribute name -> :class:`SecretGraph`. Unnamed attributes are unprotected.
    participation
        Also protect whole-record replacement (standard bounded DP); the reach is then
        the distance's diameter (``sum_k w_k`` for Gower).

    Notes
    -----
    Construction checks only the graphs themselves; :meth:`validate` (called by
    :meth:`from_dict`, :meth:`load` and every reach computation) checks them against
    the columns.
    """

    attributes: Mapping[str, SecretGraph] = field(default_factory=dict)
    participation: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.attributes, Mapping):
            raise InputError("policy attributes must map attribute names to graphs")
        for name, graph in self.attributes.items():
            if not isinstance(graph, SecretGraph):
                raise InputError(
                    f"policy attribute '{name}': expected a secret graph, got {graph!r}"
                )
        if not isinstance(self.participation, bool):
            raise InputError(
                f"policy participation must be true or false, got {self.participation!r}"
            )
        # Read-only view: a frozen policy must not change under a ledger that recorded it.
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    def __hash__(self) -> int:
        return hash((tuple(self.attributes.items()), self.participation))

    # ------------------------------------------------------------ constructors
    @classmethod
    def standard(cls) -> Policy:
        """Standard bounded DP: participation, no attribute graphs."""
        return cls({}, participation=True)

    @classmethod
    def from_dict(cls, spec: Mapping[str, Any] | None, schema: Schema) -> Policy:
        """Parse the YAML form (module docstring) and validate it against ``schema``."""
        if spec is None:
            spec = {}
        if not isinstance(spec, Mapping):
            raise InputError("policy must be a mapping with 'attributes' and/or 'participation'")
        extra = sorted(str(k) for k in set(spec) - {"participation", "attributes"})
        if extra:
            raise InputError(
                f"policy has unknown key '{extra[0]}' (expected participation, attributes)"
            )
        participation = spec.get("participation", False)
        if not isinstance(participation, bool):
            raise InputError(f"policy participation must be true or false, got {participation!r}")
        raw = spec.get("attributes") or {}
        if not isinstance(raw, Mapping):
            raise InputError("policy 'attributes' must map attribute names to graphs")
        graphs: dict[str, SecretGraph] = {}
        for name, graph_spec in raw.items():
            name = str(name)
            if name not in schema:
                raise InputError(
                    f"policy names unknown attribute '{name}' "
                    f"(schema has: {', '.join(schema.names)})"
                )
            try:
                graphs[name] = graph_from_spec(graph_spec)
            except InputError as exc:
                raise InputError(f"policy attribute '{name}': {exc}") from None
        return cls(graphs, participation=participation).validate(schema)

    @classmethod
    def load(cls, path: str | Path, schema: Schema) -> Policy:
        """Read a policy YAML file and validate it against ``schema``."""
        path = Path(path)
        if not path.exists():
            raise InputError(f"policy file not found: {path}")
        try:
            spec = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise InputError(f"policy file {path} is not valid YAML{where}") from None
        return cls.from_dict(spec, schema)

    def to_dict(self) -> dict[str, Any]:
        """The YAML form; ``Policy.from_dict(p.to_dict(), schema) == p``."""
        return {
            "participation": self.participation,
            "attributes": {name: g.to_spec() for name, g in self.attributes.items()},
        }

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    # -------------------------------------------------------------- validation
    def validate(self, schema: Schema | Layout) -> Policy:
        """Check every graph against its column; returns ``self`` for chaining."""
        for name in self.attributes:
            self._column(name, schema)
        return self

    def _column(self, name: str, schema: Schema | Layout) -> Column:
        columns: Sequence[Column] = (
            schema.columns if isinstance(schema, Schema) else (*schema.numeric, *schema.categorical)
        )
        found = next((c for c in columns if c.name == name), None)
        if found is None:
            raise InputError(
                f"policy names unknown attribute '{name}' "
                f"(schema has: {', '.join(c.name for c in columns)})"
            )
        try:
            self.attributes[name].check(found)
        except InputError as exc:
            raise InputError(f"policy attribute '{name}': {exc}") from None
        return found

    def columns(self, layout: Layout) -> Iterator[tuple[str, Column, SecretGraph]]:
        """``(name, column, graph)`` for every protected attribute, validated."""
        for name, graph in self.attributes.items():
            yield name, self._column(name, layout), graph

    # -------------------------------------------------------------------- reach
    def attribute_reach(self, name: str, distance: Distance) -> float:
        """``r_k = max over edges (a, b) of graph k of distance.edge_length(k, a, b)``.

        See docs/math.md §2.

        0 for an attribute the policy does not name, or whose graph has no edge.
        """
        if name not in self.attributes:
            self._column_exists(name, distance.layout)
            return 0.0
        column = self._column(name, distance.layout)
        return float(self.attributes[name].reach(column, distance))

    def attribute_reaches(self, distance: Distance) -> dict[str, float]:
        """``{name: r_k}`` for every named attribute, in policy order."""
        return {name: self.attribute_reach(name, distance) for name in self.attributes}

    def reach(self, distance: Distance) -> float:
        """Record reach ``r = max_k r_k``, or ``distance.diameter()`` with participation.

        A substitution moves one attribute, hence the max (not the sum); participation
        lets a record become any record, which can move a distance by the diameter.
        """
        if self.participation:
            self.validate(distance.layout)
            return float(distance.diameter())
        return max(self.attribute_reaches(distance).values(), default=0.0)

    def floors(self, distance: Distance) -> list[str]:
        """Warnings when the reach sits at a maximum that soft votes cannot improve on.

        Participation, or a protected attribute whose graph already reaches the
        attribute's largest distance (a flat categorical or binary column with any
        edge, a complete graph, a threshold wider than the range) and sets ``r``, put
        ``q = tanh(r / (2 tau))`` near 1 at small tau (docs/math.md §3, "Floors").
        """
        out: list[str] = []
        reach = self.reach(distance)
        if self.participation:
            out.append(
                "participation protection (standard DP) sets the reach to its maximum, "
                f"the diameter {_fmt(round(reach, 6))}; soft votes gain little at small tau"
            )
            return out
        weight_word = "w_k=" if isinstance(distance, Gower) else ""
        for name, column, graph in self.columns(distance.layout):
            r_k = graph.reach(column, distance)
            if r_k <= 0 or r_k < reach - 1e-12:
                continue
            largest = Complete().reach(column, distance)
            if r_k < largest - 1e-12:
                continue
            if isinstance(column, NumericColumn) and isinstance(graph, Threshold):
                what = f"numeric, threshold {_fmt(graph.theta)} >= range {_fmt(column.range)}"
            elif isinstance(column, NumericColumn):
                what = "numeric, complete graph"
            else:
                what = _kind_of(column)
            out.append(
                f"protecting '{name}' ({what}) sets the reach to its maximum "
                f"{weight_word}{_fmt(round(r_k, 6))}; soft votes gain little at small tau"
            )
        return out

    def warnings(self, distance: Distance) -> list[str]:
        """:meth:`floors`, plus a warning when the policy protects nothing (reach 0)."""
        out = self.floors(distance)
        if self.reach(distance) == 0.0:
            out.append(
                "the policy has no protected edge (reach 0): votes would be released "
                "without noise; name an attribute graph or set participation: true"
            )
        return out

    @staticmethod
    def _column_exists(name: str, layout: Layout) -> None:
        columns: tuple[Column, ...] = (*layout.numeric, *layout.categorical)
        names = [c.name for c in columns]
        if name not in names:
            raise InputError(f"unknown attribute '{name}' (schema has: {', '.join(names)})")

    def __str__(self) -> str:
        parts = [f"{n}: {g.describe()}" for n, g in self.attributes.items()]
        if self.participation:
            parts.append("participation")
        return "policy(" + ("; ".join(parts) if parts else "nothing protected") + ")"


def load_policy(path: str | Path, schema: Schema) -> Policy:
    """Read a policy YAML file (see the module docstring for the format)."""
    return Policy.load(path, schema)


# ------------------------------------------------------------------------ summary
@dataclass(frozen=True)
class PolicySummary:
    """What ``dpevolve policy show`` reports: reaches, noise ratios and floor warnings.

    For each temperature ``tau``: ``q = tanh(r / (2 tau))``, the soft-vote bounds
    ``l1 = 2 q`` and ``l2 = sqrt(2) q`` (docs/math.md §3), and ``budget_saving = 1 / q^2``, the
    factor by which equal noise costs less rho than hard votes (``None`` when q = 0).
    """

    reach: float
    attributes: Mapping[str, tuple[float, str]]
    temperatures: tuple[tuple[float, float, float, float], ...]
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, policy: Policy, distance: Distance, temperatures: Sequence[float]) -> PolicySummary:
        reach = policy.reach(distance)
        attributes = {
            name: (policy.attribute_reach(name, distance), graph.describe())
            for name, graph in policy.attributes.items()
        }
        rows = []
        for tau in temperatures:
            vote = SoftVote(float(tau))
            rows.append(
                (
                    vote.temperature,
                    noise_ratio(reach, vote.temperature),
                    vote.l1_bound(reach),
                    vote.l2_sensitivity(reach),
                )
            )
        return cls(reach, attributes, tuple(rows), tuple(policy.warnings(distance)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "reach": self.reach,
            "attributes": {
                name: {"reach": r_k, "graph": graph}
                for name, (r_k, graph) in self.attributes.items()
            },
            "temperatures": [
                {
                    "tau": tau,
                    "q": q,
                    "l1_bound": l1,
                    "l2_bound": l2,
                    "budget_saving": (1.0 / (q * q)) if q > 0 else None,
                }
                for tau, q, l1, l2 in self.temperatures
            ],
            "warnings": list(self.warnings),
        }


def summarize(
    policy: Policy, distance: Distance, temperatures: Sequence[float] = (0.015, 0.03, 0.06)
) -> dict[str, Any]:
    """The ``policy show --json`` dictionary (see :class:`PolicySummary`).

    Default temperatures are the BF-Soft study's (docs/math.md §3).
    """
    return PolicySummary.of(policy, distance, temperatures).to_dict()


__all__ = [
    "GRAPH_KINDS",
    "Complete",
    "HierarchyGraph",
    "Partition",
    "Policy",
    "PolicySummary",
    "SecretGraph",
    "Threshold",
    "graph_from_spec",
    "load_policy",
    "summarize",
]
