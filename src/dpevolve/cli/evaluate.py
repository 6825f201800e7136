"""``dpevolve evaluate``: how close a synthetic table is to a real one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dpevolve.cli.common import (
    Force,
    InvalidOption,
    OnInvalid,
    SchemaPath,
    ShowValues,
    app,
    read_valid,
)
from dpevolve.data.io import write_json


@app.command(
    help="k-way marginal TV (k = 1, 2, 3) and train-on-synthetic, test-on-real scores.\n\n"
    "Give --test (held-out real rows) for an honest TSTR estimate; without it TSTR is "
    "tested on REAL itself.\n\n"
    "Examples:\n\n\b\n"
    "  dpevolve evaluate private.csv synthetic.csv -s schema.yaml\n"
    "  dpevolve evaluate private.csv synthetic.csv -s schema.yaml --test test.csv -o eval.json"
)
def evaluate(
    real: Annotated[
        Path, typer.Argument(metavar="REAL", help="Real table the synthetic one was made from.")
    ],
    synthetic: Annotated[Path, typer.Argument(metavar="SYNTHETIC", help="Synthetic table.")],
    schema: SchemaPath,
    label: Annotated[
        str | None, typer.Option("--label", help="Label column for TSTR (default: the schema's).")
    ] = None,
    test: Annotated[
        Path | None, typer.Option("--test", help="Held-out real rows to test TSTR on.")
    ] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="JSON to write.")] = None,
    on_invalid: InvalidOption = OnInvalid.error,
    force: Force = False,
    show_values: ShowValues = False,
) -> None:
    from dpevolve.cli.preflight import check_paths  # schema and pandas: not for -h
    from dpevolve.data.schema import Schema
    from dpevolve.reporting.evaluation import evaluate as run_evaluation
    from dpevolve.reporting.evaluation import format_report

    check_paths([real, synthetic, test, schema], [output], force)
    table_schema = Schema.load(schema)
    real_frame = read_valid(real, table_schema, on_invalid, "real table")
    synthetic_frame = read_valid(synthetic, table_schema, on_invalid, "synthetic table")
    test_frame = (
        read_valid(test, table_schema, on_invalid, "test table") if test is not None else None
    )
    result = run_evaluation(
        real_frame,
        synthetic_frame,
        table_schema,
        label=label if label is not None else table_schema.label,
        test=test_frame,
        validated=True,
    )
    typer.echo(format_report(result))
    if output is not None:
        write_json(result, output)
