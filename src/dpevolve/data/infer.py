"""Schema inference from **public** data, and a full list of a table's problems.

:func:`infer_schema` proposes a schema a *private* table of the same kind will fit
(the rules: :mod:`dpevolve.data.proposal`, :mod:`dpevolve.data.ranges`,
:mod:`dpevolve.data.date_formats`). Widening costs a little resolution (distances are
scaled by the declared range) and buys a schema that does not reject the private rows
just past the public extremes. :func:`schema_yaml` writes it with a comment on every
widened range, to check against what the data owner knows about the column.

Never infer from the private table itself: the declared domain would leak it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
import yaml

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.identifiers import id_problems
from dpevolve.data.messages import first_at, plain_cell
from dpevolve.data.proposal import propose_columns
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema


@dataclass(frozen=True)
class InferredSchema:
    """A proposed schema, the public extremes of each widened range, and notes."""

    schema: Schema
    public_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def infer_schema(
    public: pd.DataFrame,
    label: str | None = None,
    max_categories: int = 50,
    categorical: Sequence[str] = (),
    margin: float = 0.1,
    na_values: Sequence[str] = (),
    nullable: bool = False,
    dayfirst: bool | None = None,
    other: bool = True,
) -> InferredSchema:
    """Propose a schema from a **public** table, with the public extremes of each
    widened range and notes (parameters: :func:`dpevolve.data.proposal.propose_columns`)."""
    proposal = propose_columns(
        public,
        label=label,
        max_categories=max_categories,
        categorical=categorical,
        margin=margin,
        na_values=na_values,
        nullable=nullable,
        dayfirst=dayfirst,
        other=other,
    )
    return InferredSchema(Schema.from_proposal(proposal), proposal.public_ranges, proposal.notes)


def schema_yaml(inferred: InferredSchema, source: str) -> str:
    """The schema as YAML with a header and a comment on every widened range."""
    lines = yaml.safe_dump(inferred.schema.to_dict(), sort_keys=False, allow_unicode=True)
    out = [
        f"# Inferred from public data: {source}",
        "# Numeric ranges are the public minimum and maximum, widened and rounded so a",
        "# private table of the same kind fits (marked 'widened'; a bound at 0 or at a",
        "# power of ten such as 100 is kept). Check every range and value list against",
        "# what you know of the column before synthesizing: a number outside its range",
        "# stops the run, or is dropped with --on-invalid drop (clipped with --on-invalid",
        "# clip). A value outside a list marked 'other: true' becomes '(other)'.",
        f"# 'atoms' lists the values holding {ATOM_SHARE:.0%} or more of a column's public",
        "# rows: the engine keeps each as a value of its own, and still looks for",
        "# others in the private rows. 'values' on a numeric column lists the only values",
        "# it takes (few, each seen often in the public rows): a private number at",
        "# none of them is refused like a number outside the range, and nothing is",
        "# drawn between them.",
    ]
    for line in lines.splitlines():
        match = re.match(r"^  (\S.*?):\s*$", line) or re.match(r"^  (\S.*?): \{", line)
        name = None if match is None else match.group(1).strip("'\"")
        if name in inferred.public_ranges:
            lo, hi = inferred.public_ranges[name]
            line += f"  # widened: public data spans [{plain_cell(lo)}, {plain_cell(hi)}]"
            column = inferred.schema[name]
            if isinstance(column, NumericColumn) and column.values:
                line += "; its values are those seen: add any others the private data hold"
        elif name is not None and name in inferred.schema.identifier_names:
            line += "  # identifier: not modelled; fresh ids (drop: true leaves it out)"
        elif name is not None and name in inferred.schema:
            column = inferred.schema[name]
            if isinstance(column, CategoricalColumn):
                line += (
                    "  # values seen in the public data; any other becomes '(other)'"
                    if column.other
                    else "  # values seen in the public data: add any others the private data hold"
                )
        out.append(line)
    return "\n".join(out) + "\n"


def problems_of(schema: Schema, table: pd.DataFrame, what: str = "table") -> list[str]:
    """Every way ``table`` breaks ``schema``, one line each (empty when it fits)."""
    unknown = [
        str(c)
        for c in table.columns
        if str(c) not in schema and str(c) not in schema.identifier_names
    ]
    missing = [n for n in schema.names if n not in table.columns]
    lines = [f"column '{c}' is not declared in the schema" for c in unknown]
    lines += [f"column '{c}' declared in the schema is absent" for c in missing]
    if len(table) == 0:
        lines.append("the table is empty (0 rows)")
    if lines:
        return lines
    lines = id_problems(table, schema.identifiers)
    _, problems, _ = schema.check(table, what=what)
    # The cell itself only with show_values: messages end up in logs.
    return lines + [
        f"column '{p.column}': {p.count} of {len(table)} rows {p.problem} "
        f"{first_at(p.first_row, p.example)}"
        for p in problems
    ]


def identifier_lines(schema: Schema) -> list[str]:
    """What synthesis does with each identifier column, one line each."""
    return [
        f"column '{c.name}': an identifier, not modelled (nothing is spent on it); " + c.describe()
        for c in sorted(schema.identifiers, key=lambda c: c.position)
    ]
