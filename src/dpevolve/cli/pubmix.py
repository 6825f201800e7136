"""``dpevolve pubmix``: M DP samples of a discrete table, public data as the noise."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from dpevolve.cli.common import (
    NOISE_SEED_WARNING,
    Delta,
    Epsilon,
    Force,
    InvalidOption,
    NoiseSeed,
    OnInvalid,
    Quiet,
    SchemaPath,
    Seed,
    ShowValues,
    app,
    check_outputs,
    require_budget,
    say,
)
from dpevolve.cli.interrupt import accounted, at_stake
from dpevolve.data.io import read_table, write_table


class Noise(StrEnum):
    pubmix = "pubmix"
    linmix = "linmix"
    gaussian = "gaussian"


class Floor(StrEnum):
    wf = "wf"
    mifr = "mifr"


@app.command(
    help="Release M DP samples of PRIVATE over the product domain of its columns.\n\n"
    "Examples:\n\n\b\n"
    "  dpevolve pubmix private.csv --public public.csv -s schema.yaml -m 3000 \\\n"
    "      -e 5 -d 1e-4 -o samples.csv\n"
    "  dpevolve pubmix private.csv -s schema.yaml -m 1000 --noise gaussian --rho 0.5 -o s.csv"
)
@accounted
def pubmix(
    private: Annotated[
        Path, typer.Argument(metavar="PRIVATE", help="Private table (.csv or .parquet).")
    ],
    schema: SchemaPath,
    output: Annotated[Path, typer.Option("--output", "-o", help="Samples to write.")],
    m: Annotated[int, typer.Option("--samples", "-m", min=1, help="Samples to release.")],
    epsilon: Epsilon = None,
    delta: Delta = None,
    rho: Annotated[
        float | None, typer.Option("--rho", help="zCDP budget; only with --noise gaussian.")
    ] = None,
    public: Annotated[
        Path | None, typer.Option("--public", help="Public table of the same kind.")
    ] = None,
    noise: Annotated[Noise, typer.Option("--noise", help="Noise distribution.")] = Noise.pubmix,
    floor: Annotated[Floor, typer.Option("--floor", help="Floor raising.")] = Floor.wf,
    gamma: Annotated[
        float | None,
        typer.Option("--gamma", help="Bound on TV(public, private); default from public folds."),
    ] = None,
    gamma_epsilon: Annotated[
        float | None,
        typer.Option(
            "--gamma-epsilon",
            help="Estimate gamma = TV(public, private) privately with this share of epsilon.",
        ),
    ] = None,
    floor_epsilon: Annotated[
        float | None,
        typer.Option(
            "--floor-epsilon",
            help="Choose the floor privately (exponential mechanism) with this share of epsilon.",
        ),
    ] = None,
    on_invalid: InvalidOption = OnInvalid.error,
    seed: Seed = None,
    noise_seed: NoiseSeed = None,
    show_values: ShowValues = False,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve.data.schema import Schema
    from dpevolve.data.sources import FrameSource
    from dpevolve.pe.pubmix.discrete import sample_discrete
    from dpevolve.privacy.budget import DEFAULT_DELTA_RULE, Budget, default_delta

    ledger_out = check_outputs(output, force)
    require_budget(epsilon, rho, delta)
    table_schema = Schema.load(schema)
    from dpevolve.cli.preflight import preflight  # schema and pandas: not for -h

    preflight(inputs=[private, public, schema], outputs=[output, ledger_out], force=force,
              schema=table_schema, rows=m, table=output)  # fmt: skip
    stake = at_stake(ledger_out, outputs=(output,), epsilon=epsilon)
    # The one door: every row read counts in n (public), an invalid one as a fixed record.
    source = FrameSource(
        read_table(private, "private table"), table_schema, on_invalid=on_invalid.value
    )
    public_table = read_table(public, "public table") if public is not None else None
    if delta is None:
        delta = default_delta(source.n)
        say(quiet, f"delta: {delta:.3g} = {DEFAULT_DELTA_RULE} (--delta not given)")
    if noise is not Noise.gaussian and gamma is None and gamma_epsilon is None:
        say(quiet, "gamma: estimated from folds of the public table (--gamma not given)")
    release = sample_discrete(
        source,
        public_table,
        table_schema,
        m,
        Budget.from_args(epsilon=epsilon, delta=delta, rho=rho),
        noise=noise.value,
        floor=floor.value,
        gamma=gamma,
        gamma_epsilon=gamma_epsilon,
        floor_epsilon=floor_epsilon,
        random_state=seed,
        noise_seed=noise_seed,
    )
    stake.ledger = release.ledger
    if noise_seed is not None:
        typer.echo(NOISE_SEED_WARNING, err=True)
    validation = source.report
    if validation is not None and validation.changed:
        say(
            quiet,
            f"private table: --on-invalid {on_invalid.value} counted "
            f"{validation.rows_in - validation.rows_out} of {validation.rows_in} rows as the "
            f"stand-in record and clipped {sum(validation.clipped.values())} cells (counts "
            "from the private data: in the ledger, not shareable)",
        )
    write_table(release.samples, output)
    release.ledger.write(ledger_out)
    details = ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in release.details.items()
    )
    say(quiet, f"wrote {output} ({m} samples; {details}) and {ledger_out}")
