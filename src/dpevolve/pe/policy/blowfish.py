"""Blowfish policies (docs/math.md §2): which substitutions of one record are secrets.

A policy names, per protected attribute, a *secret graph* over that attribute's values
(the four kinds and their edges: :mod:`dpevolve.pe.policy.graphs`).

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

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from dpevolve.data.encoding import Layout
from dpevolve.data.io import read_yaml
from dpevolve.data.schema import Column, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance, Gower
from dpevolve.pe.policy.graphs import (
    GRAPH_KINDS,
    Complete,
    HierarchyGraph,
    Partition,
    SecretGraph,
    Threshold,
    column_kind,
    fmt_number,
    graph_from_spec,
)
from dpevolve.pe.votes import SoftVote, noise_ratio


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
        return cls.from_dict(read_yaml(path, "policy file"), schema)

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
        ``q = tanh(r / (2 tau))`` near 1 at small tau (docs/math.md §3).
        """
        out: list[str] = []
        reach = self.reach(distance)
        if self.participation:
            out.append(
                "participation protection (standard DP) sets the reach to its maximum, "
                f"the diameter {fmt_number(round(reach, 6))}; soft votes gain little at small tau"
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
                theta, width = fmt_number(graph.theta), fmt_number(column.range)
                what = f"numeric, threshold {theta} >= range {width}"
            elif isinstance(column, NumericColumn):
                what = "numeric, complete graph"
            else:
                what = column_kind(column)
            out.append(
                f"protecting '{name}' ({what}) sets the reach to its maximum "
                f"{weight_word}{fmt_number(round(r_k, 6))}; soft votes gain little at small tau"
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
