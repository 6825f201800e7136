"""Schemas: the declared domain of every column (docs/math.md §1), and their YAML form.

A schema names each column's type and domain *before* any private record is read:
numeric columns carry a declared range ``[lo, hi]`` (so ``R_k = hi - lo`` never comes
from private data), categorical columns a declared list of values and, optionally, a
hierarchy tree over them. Each column may carry an explicit Gower weight ``w_k``;
columns without one share ``1/K`` (explicit weights are not renormalised).

YAML form::

    label: income                 # optional
    columns:
      age: {type: numeric, lo: 17, hi: 90, integer: true}
      workclass:
        type: categorical
        values: [Private, Self-emp, State-gov, Without-pay]
        hierarchy:                # optional tree: inner node -> children
          employed: [Private, Self-emp, State-gov]
          not-working: [Without-pay]
      income: {type: categorical, values: ["<=50K", ">50K"], weight: 0.2}
      country:                    # a value not listed becomes "(other)"
        type: categorical
        values: [United-States, Mexico]
        other: true
      spend: {type: numeric, lo: 0, hi: 500, decimals: 2}   # output rounded to cents
      tax: {type: numeric, lo: 0, hi: 1, decimals: 3, atoms: [0.09, 0.36]}  # point masses
      married: {type: numeric, lo: 0, hi: 26, decimals: 1, values: [0.5, 2.5, 6, 9, 13]}
      id: {type: id, integer: true, lo: 0, hi: 999999}       # not modelled; fresh ids

Missing values and dates (see :mod:`dpevolve.data.types`)::

    na_values: ["?"]              # cell texts that mean "missing" in every column
    columns:
      occupation: {type: categorical, values: [...], nullable: true}
      hours: {type: numeric, lo: 0, hi: 100, nullable: true}
      joined: {type: date, lo: "2000-01-01", hi: "2030-12-31", format: "%Y-%m-%d"}

The column types live in :mod:`dpevolve.data.columns`, the cell checks behind
:meth:`Schema.check` and :meth:`Schema.validate` in :mod:`dpevolve.data.validation`;
both are importable from here as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from dpevolve.data.columns import (
    MISSING,
    OTHER,
    CategoricalColumn,
    Column,
    Hierarchy,
    NumericColumn,
    Scalar,
)
from dpevolve.data.identifiers import IdentifierColumn, identifier_from_dict
from dpevolve.data.io import read_yaml
from dpevolve.data.proposal import Proposal, propose_columns
from dpevolve.data.types import date_column, read_na_values
from dpevolve.data.validation import (
    CellProblem,
    OnInvalid,
    ValidationReport,
    check_table,
    validate_table,
)
from dpevolve.errors import InputError


@dataclass(frozen=True)
class Schema:
    """Ordered columns with declared domains, Gower weights and an optional label.

    ``identifiers`` are the ``type: id`` columns (:mod:`dpevolve.data.identifiers`):
    declared, never modelled (validation drops them; ``names`` and ``columns`` leave
    them out), written fresh or left out of the synthetic table.
    """

    columns: tuple[Column, ...]
    label: str | None = None
    na_values: tuple[str, ...] = ()
    identifiers: tuple[IdentifierColumn, ...] = ()

    def __post_init__(self) -> None:
        if not self.columns:
            raise InputError("schema declares no columns other than identifiers")
        names = [c.name for c in self.columns] + [c.name for c in self.identifiers]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"schema declares column '{dup[0]}' twice")
        if self.label is not None and self.label in self.identifier_names:
            raise InputError(f"schema label '{self.label}' cannot be an id column")
        if self.label is not None and self.label not in names:
            raise InputError(f"schema label '{self.label}' is not one of its columns")
        if self.label is not None and not isinstance(self[self.label], CategoricalColumn):
            raise InputError(f"schema label '{self.label}' must be a categorical column")

    def __repr__(self) -> str:
        label = f", label={self.label!r}" if self.label is not None else ""
        return f"Schema({', '.join(self.names)}{label})"

    # ----------------------------------------------------------------- access
    @property
    def names(self) -> list[str]:
        """The modelled columns' names (identifiers apart)."""
        return [c.name for c in self.columns]

    @property
    def identifier_names(self) -> list[str]:
        """The ``type: id`` columns' names: a table may hold them; nothing models them."""
        return [c.name for c in self.identifiers]

    @classmethod
    def of_columns(
        cls,
        columns: Sequence[Column | IdentifierColumn],
        label: str | None = None,
        na_values: tuple[str, ...] = (),
    ) -> Schema:
        """A schema of columns in table order, identifiers among them (positions kept)."""
        modelled = tuple(c for c in columns if not isinstance(c, IdentifierColumn))
        identifiers = tuple(
            dataclasses.replace(c, position=k)
            for k, c in enumerate(columns)
            if isinstance(c, IdentifierColumn)
        )
        return cls(modelled, label=label, na_values=na_values, identifiers=identifiers)

    def __getitem__(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise InputError(f"unknown column '{name}' (schema has: {', '.join(self.names)})")

    def __contains__(self, name: object) -> bool:
        return any(c.name == name for c in self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    @property
    def weights(self) -> np.ndarray:
        """Gower weights ``w_k``: explicit ones as given, the rest ``1/K``."""
        default = 1.0 / len(self.columns)
        return np.array([default if c.weight is None else c.weight for c in self.columns])

    @property
    def numeric_mask(self) -> np.ndarray:
        return np.array([isinstance(c, NumericColumn) for c in self.columns])

    def select(self, names: Sequence[str]) -> Schema:
        """A schema over a subset of columns (weights kept as declared)."""
        label = self.label if self.label in names else None
        return Schema(tuple(self[n] for n in names), label=label, na_values=self.na_values)

    # ------------------------------------------------------------- YAML I/O
    @classmethod
    def from_dict(cls, spec: Mapping[str, Any]) -> Schema:
        if not isinstance(spec, Mapping) or "columns" not in spec:
            raise InputError("schema must be a mapping with a 'columns' key")
        raw = spec["columns"]
        if isinstance(raw, list):  # also accept a list of {name: ..., type: ...}
            raw = {str(c.get("name")): c for c in raw if isinstance(c, Mapping)}
        if not isinstance(raw, Mapping) or not raw:
            raise InputError("schema 'columns' must map column names to their declarations")
        columns = [
            identifier_from_dict(str(name), decl, k)
            if isinstance(decl, Mapping) and decl.get("type") == "id"
            else _column_from_dict(str(name), decl)
            for k, (name, decl) in enumerate(raw.items())
        ]
        label = spec.get("label")
        na_values = read_na_values(spec.get("na_values"))
        return cls.of_columns(columns, None if label is None else str(label), na_values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.label is not None:
            out["label"] = self.label
        if self.na_values:
            out["na_values"] = list(self.na_values)
        ordered: list[Column | IdentifierColumn] = list(self.columns)
        for ident in sorted(self.identifiers, key=lambda c: c.position):
            ordered.insert(min(ident.position, len(ordered)), ident)
        out["columns"] = {c.name: c.to_dict() for c in ordered}
        return out

    @classmethod
    def of(cls, schema: Schema | str | Path) -> Schema:
        """``schema`` itself, or the schema read from its YAML path."""
        return schema if isinstance(schema, Schema) else cls.load(schema)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        return cls.from_dict(read_yaml(path, "schema file") or {})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    # ------------------------------------------------------------ validation
    def validate(
        self,
        table: pd.DataFrame,
        on_invalid: OnInvalid = "error",
        what: str = "table",
        show_values: bool | None = None,
    ) -> tuple[pd.DataFrame, ValidationReport]:
        """Check ``table`` against the declared domains.

        ``error`` raises :class:`InputError` naming the first bad column, how many rows
        are bad and the first bad row; ``drop`` leaves out rows with any bad cell; ``clip``
        clips out-of-range numbers to the declared range (a contraction: it never moves
        two values further apart, so a policy's protected pairs stay protected) and
        leaves out rows it cannot repair (NaN, text in a numeric column, a non-integer in
        an integer column, undeclared categories). Rows left out are the invalid rows:
        they cast an empty vote, and ``n`` stays ``len(table)`` (public).

        Parameters
        ----------
        show_values
            Quote the first bad cell in the error; ``None`` follows
            :func:`dpevolve.data.messages.show_values` (off by default).

        Returns
        -------
        frame : pandas.DataFrame
            The valid rows in schema column order with canonical dtypes (possibly none).
        report : ValidationReport
            ``rows_in`` (public) and the private counts of invalid rows and clipped cells.
        """
        return validate_table(self, table, on_invalid, what, show_values)

    def check(
        self, table: pd.DataFrame, clip: bool = False, what: str = "table"
    ) -> tuple[pd.DataFrame, list[CellProblem], dict[str, int]]:
        """Every bad cell of ``table``, without acting on it.

        Returns the table in schema column order with canonical dtypes (all rows kept;
        numeric cells clipped to the range when ``clip``), the problems in the order
        :meth:`validate` reports them (column by column: not a number, NaN, outside the
        range, not a whole number in an integer column, outside the declared set), and
        the count of clipped cells per column. The union of the problems' masks marks the
        invalid rows.
        """
        return check_table(self, table, clip, what)

    # -------------------------------------------------------------- inference
    @classmethod
    def infer(
        cls,
        public: pd.DataFrame,
        label: str | None = None,
        max_categories: int = 50,
        categorical: Sequence[str] = (),
        margin: float = 0.1,
        na_values: Sequence[str] = (),
        dayfirst: bool | None = None,
        other: bool = True,
    ) -> Schema:
        """Propose a schema from **public** data (the rules:
        :func:`dpevolve.data.proposal.propose_columns`).

        Numeric ranges are the public extremes widened by ``margin`` of the range and
        rounded outward (``margin=0``: the exact extremes), with ``integer`` or
        ``decimals`` as the public values have them; integer columns with at most
        ``max_categories`` values, text and the label are categorical, with an ``other``
        bucket (the label excepted) unless ``other=False``; columns with missing cells
        are nullable; a column whose public values are all distinct, text or id-like
        whole numbers, is declared an identifier (:mod:`dpevolve.data.identifiers`).
        Never call this on private data: the declared domain would leak.
        Check the proposed domains before use.
        """
        proposal = propose_columns(
            public,
            label=label,
            max_categories=max_categories,
            categorical=categorical,
            margin=margin,
            na_values=na_values,
            dayfirst=dayfirst,
            other=other,
        )
        return cls.from_proposal(proposal)

    @classmethod
    def from_proposal(cls, proposal: Proposal) -> Schema:
        """The schema of proposed columns (:func:`~dpevolve.data.proposal.propose_columns`)."""
        return cls.of_columns(proposal.columns, proposal.label, proposal.na_values)


def _column_from_dict(name: str, decl: Any) -> Column:
    if not isinstance(decl, Mapping):
        raise InputError(f"column '{name}': declaration must be a mapping with a 'type'")
    kind = decl.get("type")
    extra = sorted(set(decl) - _KNOWN_KEYS, key=str)
    if extra:
        raise InputError(f"column '{name}': unknown key '{extra[0]}'")
    weight = decl.get("weight")
    if weight is not None:
        weight = _number(name, "weight", weight)
    nullable = _flag(name, decl, "nullable")
    if kind not in _KINDS:
        raise InputError(
            f"column '{name}': type must be numeric, categorical, date, datetime or id, "
            f"got {kind!r}"
        )
    for key, kinds in _KEYS_FOR.items():
        if key in decl and kind not in kinds:
            raise InputError(f"column '{name}': '{key}' is only for {kinds[0]} columns")
    if kind in ("date", "datetime"):
        return date_column(name, kind, decl, weight, nullable)
    if kind in ("numeric", "int", "integer", "float"):
        for key in ("lo", "hi"):
            if key not in decl:
                raise InputError(f"column '{name}': numeric columns need a declared '{key}'")
        integer = _flag(name, decl, "integer", kind in ("int", "integer"))
        decimals = decl.get("decimals")
        if integer and decimals not in (None, 0):
            raise InputError(f"column '{name}': an integer column has no 'decimals'")
        return NumericColumn(
            name,
            _number(name, "lo", decl["lo"]),
            _number(name, "hi", decl["hi"]),
            integer,
            weight,
            nullable,
            None if integer else decimals,
            _flag(name, decl, "float32"),
            _numbers(name, "atoms", decl.get("atoms")),
            _numbers(name, "values", decl.get("values")),
        )
    if kind == "categorical":
        values = decl.get("values")
        if not isinstance(values, list) or not values:
            raise InputError(f"column '{name}': categorical columns need a non-empty 'values' list")
        if any(isinstance(v, (list, dict)) or v is None for v in values):
            raise InputError(f"column '{name}': categorical values must be plain scalars")
        tree = decl.get("hierarchy")
        hierarchy = (
            None if tree is None else Hierarchy.from_nested(name, tree, [str(v) for v in values])
        )
        other = _flag(name, decl, "other")
        return CategoricalColumn(name, tuple(values), hierarchy, weight, nullable, other)
    raise AssertionError(f"unhandled column type {kind!r}")


_KINDS = ("numeric", "int", "integer", "float", "categorical", "date", "datetime")
_KNOWN_KEYS = {"type", "lo", "hi", "integer", "weight", "values", "hierarchy", "name"}
_KNOWN_KEYS |= {"nullable", "format", "decimals", "float32", "other", "atoms"}
# Keys that only some types take (the first type names them in the message).
_KEYS_FOR = {
    "format": ("date", "datetime"),
    "other": ("categorical",),
    "values": ("categorical", "numeric", "int", "integer", "float"),
    "hierarchy": ("categorical",),
    "decimals": ("numeric", "int", "integer", "float"),
    "float32": ("numeric", "int", "integer", "float"),
    "atoms": ("numeric", "int", "integer", "float"),
    "integer": ("numeric", "int", "integer", "float", "date", "datetime"),
}


def _flag(column: str, decl: Mapping[str, Any], key: str, default: bool = False) -> bool:
    value = decl.get(key, default)
    if not isinstance(value, bool):
        raise InputError(f"column '{column}': '{key}' must be true or false, got {value!r}")
    return value


def _numbers(column: str, key: str, value: Any) -> tuple[float, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError(f"column '{column}': '{key}' must be a list of numbers, got {value!r}")
    return tuple(sorted(_number(column, key, v) for v in value))


def _number(column: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"column '{column}': '{key}' must be a number, got {value!r}")
    return float(value)


def load_schema(path: str | Path) -> Schema:
    """Read a schema YAML file (see the module docstring for the format)."""
    return Schema.load(path)


__all__ = [
    "MISSING",
    "OTHER",
    "CategoricalColumn",
    "CellProblem",
    "Column",
    "Hierarchy",
    "IdentifierColumn",
    "NumericColumn",
    "Scalar",
    "Schema",
    "ValidationReport",
    "load_schema",
]
