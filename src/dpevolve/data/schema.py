"""Schemas: the declared domain of every column (docs/math.md §1).

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

Missing values and dates (see :mod:`dpevolve.data.types`)::

    na_values: ["?"]              # cell texts that mean "missing" in every column
    columns:
      occupation: {type: categorical, values: [...], nullable: true}
      hours: {type: numeric, lo: 0, hi: 100, nullable: true}
      joined: {type: date, lo: "2000-01-01", hi: "2030-12-31", format: "%Y-%m-%d"}
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import yaml

from dpevolve.data.messages import first_at, plain_cell
from dpevolve.errors import InputError

Scalar = str | int | float | bool

#: The reserved category a ``nullable`` categorical column gives to missing cells. It is
#: appended to the declared values (so it is one more domain value everywhere: encoding,
#: distance, variation, votes) and decodes back to a missing cell.
MISSING = "(missing)"


@dataclass(frozen=True)
class NumericColumn:
    """A numeric column on the declared range ``[lo, hi]``; ``d_k(a, b) = |a - b| / (hi - lo)``.

    An ``integer`` column holds whole numbers only: a cell like ``30.5`` is invalid, never
    rounded (rounding is not a contraction: it can push two values within a policy's
    threshold further apart than the noise was calibrated for).
    """

    name: str
    lo: float
    hi: float
    integer: bool = False
    weight: float | None = None
    nullable: bool = False

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
        _check_weight(self.name, self.weight)

    @property
    def whole_range(self) -> tuple[float, float]:
        """Where ``clip`` puts out-of-range cells: ``[lo, hi]``, shrunk to whole numbers
        for an integer column (so a clipped cell is always valid)."""
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
        if self.weight is not None:
            out["weight"] = self.weight
        if self.nullable:
            out["nullable"] = True
        return out

    def parse(self, values: pd.Series) -> np.ndarray:
        """Table cells as float64 numbers on the declared scale (NaN: not a number)."""
        return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)

    def format(self, numbers: np.ndarray) -> Any:
        """Decoded numbers (clipped, NaN for missing) as the column's table values."""
        if self.integer:
            rounded = np.round(numbers)
            if self.nullable:
                return pd.array(rounded, dtype="Int64")  # NaN -> <NA>, not garbage
            return rounded.astype(np.int64)
        return numbers


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
    """A categorical column over declared ``values`` (flat, or with a hierarchy tree)."""

    name: str
    values: tuple[Scalar, ...]
    hierarchy: Hierarchy | None = None
    weight: float | None = None
    nullable: bool = False

    def __post_init__(self) -> None:
        if len(self.values) == 0:
            raise InputError(f"column '{self.name}': a categorical column needs at least one value")
        if self.nullable and self.values[-1] != MISSING:
            if MISSING in self.values:
                raise InputError(f"column '{self.name}': '{MISSING}' is reserved for missing")
            object.__setattr__(self, "values", (*self.values, MISSING))
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
        keys = self.keys[:-1] if self.nullable else self.keys
        paths = self.hierarchy.path_matrix(keys)
        maxpath = paths.max()
        paths = paths / maxpath if maxpath > 0 else paths
        if self.nullable:  # missing is 1 from every value (the maximum), 0 from itself
            paths = np.pad(paths, ((0, 1), (0, 1)), constant_values=1.0)
            paths[-1, -1] = 0.0
        return paths

    @property
    def declared(self) -> tuple[Scalar, ...]:
        """The declared values, without the reserved missing category."""
        return self.values[:-1] if self.nullable else self.values

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "categorical",
            "values": [plain_cell(v) for v in self.declared],
        }
        if self.hierarchy is not None:
            out["hierarchy"] = self.hierarchy.spec
        if self.weight is not None:
            out["weight"] = self.weight
        if self.nullable:
            out["nullable"] = True
        return out


Column = NumericColumn | CategoricalColumn


@dataclass(frozen=True)
class ValidationReport:
    """What validation changed: invalid rows and clipped cells, per column.

    ``rows_in`` is the table's row count ``n``, public under replace-one adjacency;
    ``rows_out`` counts the valid rows, the ones that vote (an invalid row casts an
    empty vote). Every count but ``rows_in`` is computed from the private table and is
    not privatised: the report belongs in the data steward's ledger, which stays with
    the data, never in anything shared.
    """

    mode: str
    rows_in: int
    rows_out: int
    dropped: Mapping[str, int]
    clipped: Mapping[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "on_invalid": self.mode,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "dropped_by_column": dict(self.dropped),
            "clipped_by_column": dict(self.clipped),
        }

    @property
    def changed(self) -> bool:
        return self.rows_in != self.rows_out or any(self.clipped.values())


@dataclass(frozen=True, eq=False)
class CellProblem:
    """Cells of one column that break the schema in one way (see :meth:`Schema.check`)."""

    column: str
    problem: str
    mask: np.ndarray
    first_row: int
    example: Any

    @property
    def count(self) -> int:
        return int(self.mask.sum())


@dataclass(frozen=True)
class Schema:
    """Ordered columns with declared domains, Gower weights and an optional label."""

    columns: tuple[Column, ...]
    label: str | None = None
    na_values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.columns:
            raise InputError("schema declares no columns")
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise InputError(f"schema declares column '{dup[0]}' twice")
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
        return [c.name for c in self.columns]

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
        columns = tuple(_column_from_dict(str(name), decl) for name, decl in raw.items())
        label = spec.get("label")
        from dpevolve.data.types import read_na_values

        na_values = read_na_values(spec.get("na_values"))
        return cls(columns, label=None if label is None else str(label), na_values=na_values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.label is not None:
            out["label"] = self.label
        if self.na_values:
            out["na_values"] = list(self.na_values)
        out["columns"] = {c.name: c.to_dict() for c in self.columns}
        return out

    @classmethod
    def of(cls, schema: Schema | str | Path) -> Schema:
        """``schema`` itself, or the schema read from its YAML path."""
        return schema if isinstance(schema, Schema) else cls.load(schema)

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        path = Path(path)
        if not path.exists():
            raise InputError(f"schema file not found: {path}")
        try:
            spec = yaml.safe_load(path.read_text())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1})" if mark is not None else ""
            raise InputError(f"schema file {path} is not valid YAML{where}") from None
        return cls.from_dict(spec or {})

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False, allow_unicode=True)

    # ------------------------------------------------------------ validation
    def validate(
        self,
        table: pd.DataFrame,
        on_invalid: Literal["error", "drop", "clip"] = "error",
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
        if on_invalid not in ("error", "drop", "clip"):
            raise InputError(f"on_invalid must be error, drop or clip, got '{on_invalid}'")
        if len(table) == 0 and isinstance(table, pd.DataFrame):
            self._check_columns(table, what)
            raise InputError(f"{what} is empty (0 rows)")
        frame, problems, clipped = self.check(table, clip=on_invalid == "clip", what=what)
        if problems and on_invalid == "error":
            first = problems[0]
            raise InputError(
                f"{what} column '{first.column}': {first.count} of {len(table)} rows "
                f"{first.problem} {first_at(first.first_row, first.example, show_values)}; "
                "fix them or use --on-invalid drop|clip"
            )
        dropped: dict[str, int] = {}
        bad_rows = np.zeros(len(frame), dtype=bool)
        for problem in problems:
            dropped[problem.column] = dropped.get(problem.column, 0) + problem.count
            bad_rows |= problem.mask
        # No valid row left is not an error: whether a run goes ahead must not depend on
        # one private row (the release is then noise only; the ledger notes the counts).
        if bad_rows.any():
            frame = frame.loc[~bad_rows]
        frame = frame.reset_index(drop=True)
        report = ValidationReport(on_invalid, len(table), len(frame), dropped, clipped)
        return frame, report

    def _check_columns(self, table: pd.DataFrame, what: str) -> None:
        names = [str(c) for c in table.columns]
        twice = [c for i, c in enumerate(names) if c in names[:i]]
        if twice:
            raise InputError(f"{what} has column '{twice[0]}' twice (duplicate header)")
        unknown = [c for c in table.columns if str(c) not in self]
        if unknown:
            raise InputError(
                f"{what} has column '{unknown[0]}' that the schema does not declare "
                "(drop it or add it to the schema)"
            )
        missing = [n for n in self.names if n not in table.columns]
        if missing:
            raise InputError(f"{what} lacks column '{missing[0]}' declared in the schema")

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
        if not isinstance(table, pd.DataFrame):
            raise InputError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
        self._check_columns(table, what)
        if self.na_values:  # declared "missing" texts (e.g. Adult's "?") become NaN
            table = table.replace(list(self.na_values), np.nan)
        problems: list[CellProblem] = []
        clipped: dict[str, int] = {}
        out: dict[str, Any] = {}

        def note(column: str, mask: np.ndarray, problem: str, values: pd.Series) -> None:
            if mask.any():
                first = int(np.flatnonzero(mask)[0])
                problems.append(CellProblem(column, problem, mask, first, values.iloc[first]))

        for column in self.columns:
            values = table[column.name]
            nan = values.isna().to_numpy()
            if isinstance(column, NumericColumn):
                numeric = column.parse(values)
                note(column.name, np.isnan(numeric) & ~nan, "are not numbers", values)
                if not column.nullable:
                    note(column.name, nan, "are missing (NaN)", values)
                finite = np.isfinite(numeric)
                outside = ~finite & ~np.isnan(numeric) | (
                    finite & ((numeric < column.lo) | (numeric > column.hi))
                )
                if clip and outside.any():
                    clipped[column.name] = int(outside.sum())
                    numeric = np.clip(numeric, *column.whole_range)
                elif not clip:
                    declared = f"[{plain_cell(column.lo)}, {plain_cell(column.hi)}]"
                    note(column.name, outside, f"lie outside the declared range {declared}", values)
                if column.integer:
                    # Never rounded: see NumericColumn. Out-of-range cells are judged above.
                    inside = np.isfinite(numeric) & ~outside
                    fraction = inside & (numeric != np.round(numeric))
                    note(column.name, fraction, "are not whole numbers (integer column)", values)
                out[column.name] = numeric
            else:
                if not column.nullable:
                    note(column.name, nan, "are missing (NaN)", values)
                keys = _as_keys(values)
                if column.nullable:
                    keys[nan] = MISSING
                undeclared = ~np.isin(keys, np.array(column.keys, dtype=object)) & ~nan
                note(column.name, undeclared, "hold values outside the declared set", values)
                out[column.name] = keys
        return pd.DataFrame(out, index=table.index), problems, clipped

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
    ) -> Schema:
        """Propose a schema from **public** data (see :mod:`dpevolve.data.infer`).

        Numeric ranges are the public extremes widened by ``margin`` of the range and
        rounded outward (``margin=0``: the exact extremes); integer columns with at most
        ``max_categories`` values, text and the label are categorical; columns with
        missing cells are nullable. Never call this on private data: the declared domain
        would leak. Check the proposed domains before use.
        """
        from dpevolve.data.infer import infer_schema

        return infer_schema(
            public,
            label=label,
            max_categories=max_categories,
            categorical=categorical,
            margin=margin,
            na_values=na_values,
        ).schema


def _column_from_dict(name: str, decl: Any) -> Column:
    if not isinstance(decl, Mapping):
        raise InputError(f"column '{name}': declaration must be a mapping with a 'type'")
    kind = decl.get("type")
    known = {"type", "lo", "hi", "integer", "weight", "values", "hierarchy", "name", "nullable"}
    known |= {"format"}
    extra = sorted(set(decl) - known)
    if extra:
        raise InputError(f"column '{name}': unknown key '{extra[0]}'")
    weight = decl.get("weight")
    if weight is not None:
        weight = _number(name, "weight", weight)
    nullable = decl.get("nullable", False)
    if not isinstance(nullable, bool):
        raise InputError(f"column '{name}': 'nullable' must be true or false, got {nullable!r}")
    if kind in ("date", "datetime"):
        from dpevolve.data.types import date_column

        return date_column(name, kind, decl, weight, nullable)
    if "format" in decl:
        raise InputError(f"column '{name}': 'format' is only for date and datetime columns")
    if kind in ("numeric", "int", "integer", "float"):
        for key in ("lo", "hi"):
            if key not in decl:
                raise InputError(f"column '{name}': numeric columns need a declared '{key}'")
        integer = bool(decl.get("integer", kind in ("int", "integer")))
        return NumericColumn(
            name,
            _number(name, "lo", decl["lo"]),
            _number(name, "hi", decl["hi"]),
            integer,
            weight,
            nullable,
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
        return CategoricalColumn(name, tuple(values), hierarchy, weight, nullable)
    raise InputError(
        f"column '{name}': type must be numeric, categorical, date or datetime, got {kind!r}"
    )


def _number(column: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"column '{column}': '{key}' must be a number, got {value!r}")
    return float(value)


def _check_weight(name: str, weight: float | None) -> None:
    if weight is not None and not (math.isfinite(weight) and weight > 0):
        raise InputError(f"column '{name}': weight must be a positive number, got {weight}")


def _as_keys(values: pd.Series) -> np.ndarray:
    """Cells as the strings categorical values are matched by (``1.0`` reads as ``1``)."""
    if pd.api.types.is_float_dtype(values):
        filled = values.fillna(0.0).to_numpy(dtype=np.float64)
        if np.all(np.isfinite(filled) & (filled == np.round(filled))):
            return filled.astype(np.int64).astype(str).astype(object)
    return values.astype(str).to_numpy(dtype=object)


def load_schema(path: str | Path) -> Schema:
    """Read a schema YAML file (see the module docstring for the format)."""
    return Schema.load(path)
