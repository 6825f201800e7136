"""Schema inference from **public** data, and a full list of a table's problems.

:func:`infer_schema` proposes a schema a *private* table of the same kind will fit:
numeric ranges are the public minimum and maximum widened by a margin (a share of the
public range) and rounded outward to a round number, never below 0 for a column whose
public values are all non-negative; columns with missing cells (or ``na_values``) are
declared ``nullable``; ISO dates become ``date``/``datetime`` columns. Widening costs
a little resolution (distances are scaled by the declared range) and buys a schema that
does not reject the private rows just past the public extremes. :func:`schema_yaml`
writes it with a comment on every widened range, to check against what the data owner
knows about the column.

Never infer from the private table itself: the declared domain would leak it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import yaml

from dpevolve.data.messages import first_at, plain_cell
from dpevolve.data.schema import CategoricalColumn, Column, NumericColumn, Schema
from dpevolve.data.types import DateColumn, to_units
from dpevolve.errors import InputError

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?$")


@dataclass(frozen=True)
class InferredSchema:
    """A proposed schema, the public extremes of each widened range, and notes."""

    schema: Schema
    public_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def round_outward(lo: float, hi: float, margin: float, non_negative: bool) -> tuple[float, float]:
    """``[lo, hi]`` widened by ``margin * (hi - lo)`` each side, then rounded outward.

    The rounding step is the power of ten (or half of one) just below a fifth of the
    widened span, so ``[13769, 1366120]`` becomes ``[0, 1600000]`` and ``[17, 90]``
    becomes ``[0, 100]``: a range a person can check at a glance.
    """
    span = hi - lo if hi > lo else max(abs(hi), 1.0)
    wide_lo, wide_hi = lo - margin * span, hi + margin * span
    if non_negative:
        wide_lo = max(wide_lo, 0.0)
    step = 10.0 ** math.floor(math.log10((wide_hi - wide_lo) / 5.0))
    if (wide_hi - wide_lo) / step > 20:
        step *= 5
    elif (wide_hi - wide_lo) / step > 10:
        step *= 2
    # floor(x / step) * step can land an ulp inside the range: never narrower than asked.
    out_lo = min(math.floor(wide_lo / step) * step, wide_lo)
    out_hi = max(math.ceil(wide_hi / step) * step, wide_hi)
    if out_hi <= out_lo:
        out_hi = out_lo + step
    return float(out_lo), float(out_hi)


def infer_schema(
    public: pd.DataFrame,
    label: str | None = None,
    max_categories: int = 50,
    categorical: Sequence[str] = (),
    margin: float = 0.1,
    na_values: Sequence[str] = (),
    nullable: bool = False,
) -> InferredSchema:
    """Propose a schema from a **public** table (see the module docstring).

    Parameters
    ----------
    public
        A public table of the same kind as the private one.
    label
        The label column (declared categorical).
    max_categories
        Integer columns with at most this many distinct values are categorical.
    categorical
        Columns to declare categorical whatever their values.
    margin
        Share of the public range added on each side of a numeric range (0: the exact
        public extremes, which a private table will often exceed).
    na_values
        Cell texts that mean "missing" (e.g. ``"?"``); recorded in the schema.
    nullable
        Declare every column nullable; otherwise only columns with missing public cells.
    """
    if len(public) == 0:
        raise InputError("public table is empty (0 rows); cannot infer a schema")
    if margin < 0:
        raise InputError(f"margin must be >= 0, got {margin}")
    if na_values:
        public = public.replace(list(na_values), np.nan)
    columns: list[Column] = []
    ranges: dict[str, tuple[float, float]] = {}
    notes: list[str] = []
    for name in public.columns:
        key = str(name)
        raw = public[name]
        values = raw.dropna()
        if len(values) == 0:
            raise InputError(f"public column '{key}' has only missing values")
        has_missing = nullable or bool(raw.isna().any())
        if has_missing and not nullable:
            notes.append(f"column '{key}' has missing public cells: declared nullable")
        date = _date_column(key, values, margin, has_missing)
        if date is not None and key not in categorical and key != label:
            columns.append(date)
            notes.append(f"column '{key}' read as {date.kind}s ({date.pattern})")
            continue
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if numeric and key not in categorical and name != label:
            as_float = values.to_numpy(dtype=np.float64)
            integral = bool(np.all(np.equal(np.round(as_float), as_float)))
            if values.nunique() > max_categories or not integral:
                lo, hi = float(as_float.min()), float(as_float.max())
                wide = round_outward(lo, hi, margin, non_negative=lo >= 0)
                if margin == 0:
                    wide = (lo, hi if hi > lo else lo + 1.0)
                ranges[key] = (lo, hi)
                columns.append(NumericColumn(key, *wide, integer=integral, nullable=has_missing))
                continue
        uniques = sorted(pd.unique(values), key=lambda v: (str(type(v)), v))
        # The label stays non-nullable: a missing class label makes TSTR meaningless.
        columns.append(
            CategoricalColumn(
                key,
                tuple(plain_cell(v) for v in uniques),
                nullable=has_missing and key != label,
            )
        )
    schema = Schema(tuple(columns), label=label, na_values=tuple(str(v) for v in na_values))
    return InferredSchema(schema, ranges, notes)


def _date_column(name: str, values: pd.Series, margin: float, nullable: bool) -> DateColumn | None:
    """A date or datetime column when every public cell is an ISO date (time)."""
    if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
        return None
    texts = values.astype(str)
    if texts.str.match(_ISO_DATE).all():
        kind, fmt = "date", None
    elif texts.str.match(_ISO_DATETIME).all():
        kind = "datetime"
        fmt = "%Y-%m-%dT%H:%M:%S" if texts.str.contains("T").all() else "%Y-%m-%d %H:%M:%S"
        if not texts.str.match(r".*\d{2}:\d{2}:\d{2}$").all():
            fmt = fmt[:-3]
    else:
        return None
    probe = DateColumn(name, 0.0, 1.0, True, kind=kind, fmt=fmt)
    units = probe.parse(values)
    if np.isnan(units).any():
        return None
    lo, hi = float(units.min()), float(units.max())
    # Widen by the margin, then out to whole years: a range a person checks at a glance.
    span = max(hi - lo, 1.0)
    first = pd.Timestamp(probe.text(lo - margin * span)).replace(month=1, day=1)
    last = pd.Timestamp(probe.text(hi + margin * span)).replace(month=12, day=31)
    if kind == "datetime":
        last = last.replace(hour=23, minute=59, second=59)
    bounds = to_units(pd.DatetimeIndex([first.normalize(), last]), kind)
    return DateColumn(
        name, float(bounds[0]), float(bounds[1]), True, None, nullable, kind=kind, fmt=fmt
    )


def schema_yaml(inferred: InferredSchema, source: str) -> str:
    """The schema as YAML with a header and a comment on every widened range."""
    lines = yaml.safe_dump(inferred.schema.to_dict(), sort_keys=False, allow_unicode=True)
    out = [
        f"# Inferred from public data: {source}",
        "# Numeric ranges are the public minimum and maximum, widened and rounded so a",
        "# private table of the same kind fits (marked 'widened'). Check every range and",
        "# value list against what you know of the column before synthesizing: a value",
        "# outside them stops the run, or is dropped with --on-invalid drop (numbers:",
        "# clipped with --on-invalid clip).",
    ]
    for line in lines.splitlines():
        match = re.match(r"^  (\S.*?):\s*$", line) or re.match(r"^  (\S.*?): \{", line)
        name = None if match is None else match.group(1).strip("'\"")
        if name in inferred.public_ranges:
            lo, hi = inferred.public_ranges[name]
            line += f"  # widened: public data spans [{plain_cell(lo)}, {plain_cell(hi)}]"
        elif (
            name is not None
            and name in inferred.schema
            and isinstance(inferred.schema[name], CategoricalColumn)
        ):
            line += "  # values seen in the public data: add any others the private table holds"
        out.append(line)
    return "\n".join(out) + "\n"


def problems_of(schema: Schema, table: pd.DataFrame, what: str = "table") -> list[str]:
    """Every way ``table`` breaks ``schema``, one line each (empty when it fits)."""
    unknown = [str(c) for c in table.columns if str(c) not in schema]
    missing = [n for n in schema.names if n not in table.columns]
    lines = [f"column '{c}' is not declared in the schema" for c in unknown]
    lines += [f"column '{c}' declared in the schema is absent" for c in missing]
    if len(table) == 0:
        lines.append("the table is empty (0 rows)")
    if lines:
        return lines
    _, problems, _ = schema.check(table, what=what)
    # The cell itself only with show_values: messages end up in logs.
    return [
        f"column '{p.column}': {p.count} of {len(table)} rows {p.problem} "
        f"{first_at(p.first_row, p.example)}"
        for p in problems
    ]
