"""``dpevolve schema infer|check``: write a schema from public data, check a table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpevolve.cli.common import Force, SchemaPath, ShowValues, schema_app
from dpevolve.data.io import check_writable, read_table
from dpevolve.errors import InputError


@schema_app.command(
    "infer",
    help="Write a schema from PUBLIC data (never run this on private data).\n\n"
    "Numeric ranges are widened and rounded beyond the public minimum and maximum so "
    "a private table of the same kind fits (a bound at 0 or at a power of ten such as "
    "100 is kept); each is marked in the YAML: check them. Categorical columns get "
    "'other: true': a private value the public data did not show becomes '(other)'. "
    "Decimals and whole numbers are recorded, and synthetic values rounded to them.\n\n"
    "Examples:\n\n\b\n"
    "  dpevolve schema infer public.csv --label income -o schema.yaml\n"
    "  dpevolve schema infer public.csv --na-value '?' --nullable -o schema.yaml",
)
def schema_infer(
    public: Annotated[
        Path, typer.Argument(metavar="PUBLIC", help="PUBLIC table (.csv or .parquet).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Schema YAML to write.")],
    label: Annotated[str | None, typer.Option("--label", help="Label column.")] = None,
    max_categories: Annotated[
        int,
        typer.Option(
            "--max-categories", min=1, help="Integer columns with more values are numeric."
        ),
    ] = 50,
    margin: Annotated[
        float,
        typer.Option(
            "--margin",
            min=0.0,
            help="Widen a numeric bound by at least this share of the public range (at most "
            "twice it, or twice the public tail's spread when larger); 0: the public extremes.",
        ),
    ] = 0.1,
    na_value: Annotated[
        list[str] | None,
        typer.Option("--na-value", help="A cell text meaning 'missing', e.g. '?' (repeatable)."),
    ] = None,
    nullable: Annotated[
        bool,
        typer.Option(
            "--nullable", help="Declare every column nullable (missing is one more value)."
        ),
    ] = False,
    dayfirst: Annotated[
        bool | None,
        typer.Option(
            "--dayfirst/--monthfirst",
            help="Read dates like 01/02/2020 as 1 February / as 2 January (asked only "
            "when no day or month above 12 tells).",
        ),
    ] = None,
    other: Annotated[
        bool,
        typer.Option(
            "--other/--no-other",
            help="Give categorical columns (not the label) an '(other)' bucket.",
        ),
    ] = True,
    force: Force = False,
) -> None:
    from dpevolve.data.infer import infer_schema, schema_yaml
    from dpevolve.data.io import atomic_write

    check_writable(output, force, inputs=[public])
    na_values = tuple(na_value or ())
    table = read_table(public, "public table")
    if label is not None and label not in table.columns:
        raise InputError(f"--label '{label}' is not a column of {public}")
    inferred = infer_schema(
        table,
        label=label,
        max_categories=max_categories,
        margin=margin,
        na_values=na_values,
        nullable=nullable,
        dayfirst=dayfirst,
        other=other,
    )
    text = schema_yaml(inferred, source=str(public))
    atomic_write(output, lambda tmp: tmp.write_text(text))
    idents = len(inferred.schema.identifiers)
    typer.echo(
        f"wrote {output} ({len(inferred.schema)} columns"
        + (f" and {idents} identifier{'s' if idents > 1 else ''}" if idents else "")
        + "); check the ranges marked 'widened' before using it",
        err=True,
    )
    for note in inferred.notes:
        typer.echo(f"note: {note}", err=True)


@schema_app.command(
    "check",
    help="Check that TABLE fits SCHEMA: every problem, one line each (exit 2 if any).\n\n"
    "Example:\n\n\b\n  dpevolve schema check private.csv -s schema.yaml",
)
def schema_check(
    table: Annotated[Path, typer.Argument(metavar="TABLE", help="Table to check.")],
    schema: SchemaPath,
    show_values: ShowValues = False,
) -> None:
    from dpevolve.data.infer import identifier_lines, problems_of
    from dpevolve.data.schema import Schema

    frame = read_table(table)
    declared = Schema.load(schema)
    problems = problems_of(declared, frame, what=str(table))
    if problems:
        for line in problems:
            typer.echo(f"{table}: {line}", err=True)
        raise InputError(
            f"{table}: {len(problems)} problem(s); fix them or use --on-invalid drop|clip"
        )
    typer.echo(f"{table}: {len(frame)} rows fit the schema")
    for line in identifier_lines(declared):
        typer.echo(f"{table}: {line}")
