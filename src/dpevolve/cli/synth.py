"""``dpevolve synth``: a DP synthetic table from a private one, with its ledger."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from dpevolve.backends import BACKENDS
from dpevolve.cli.announce import (
    closing_line,
    read_run_file,
    rerun_of,
    rerun_warning,
    say_choices,
    small_table_warning,
)
from dpevolve.cli.backend import choose_backend
from dpevolve.cli.common import (
    NOISE_SEED_WARNING,
    Delta,
    Epsilon,
    Force,
    InvalidOption,
    NoiseSeed,
    OnInvalid,
    Quiet,
    Rho,
    SchemaPath,
    Seed,
    ShowValues,
    app,
    check_outputs,
    read_valid,
    say,
)
from dpevolve.cli.interrupt import accounted, at_stake
from dpevolve.cli.private import PrivatePlace, private_place
from dpevolve.cli.report import write_reports
from dpevolve.config import (
    MECHANISMS,
    VOTES,
    GaussianSpec,
    MarginalSpec,
    PubMixSpec,
    RunSpec,
    VoteSpec,
    resolve,
)
from dpevolve.data.io import DEFAULT_BATCH_ROWS, read_table
from dpevolve.data.writer import write_blocks
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.presets import DEFAULT_PRESET, PE_PRESET, PRESETS, get_preset

EXAMPLES = """

Examples:

\b
  dpevolve synth private.csv -s schema.yaml -e 1 -o synthetic.csv
  dpevolve synth private.csv -s schema.yaml -e 1 --rows 5000 -o synthetic.csv \\
      --report report.html --share-report report-public.html
  dpevolve synth private.csv -s schema.yaml --policy policy.yaml --preset bfsoft \\
      --vote soft --temperature 0.06 --sharpen 30 --debias 20 --rho 1e-4 -o synthetic.csv
  dpevolve synth private.csv -s schema.yaml --policy policy.yaml --preset bfsoft \\
      --public public.csv --rho 1e-4 -o synthetic.csv   # vote auto (the default here)
  dpevolve synth private.csv -s schema.yaml --config run.yaml -o synthetic.csv
      # run.yaml: a run file, or a ledger (its "config" block re-runs the same run)
"""

# ------------------------------------------------------------------ the run's settings
# Each maps to one field of the run's specs (dpevolve.config); with --config they come
# from the run file instead, and giving one as a flag too is an error.
RunFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        metavar="RUN.yaml",
        help="The run's settings from a YAML run file (RunSpec.to_dict's words) or a "
        "ledger (its config block): any configuration the Python API can express.",
    ),
]
PresetOpt = Annotated[
    str | None,
    typer.Option(
        "--preset",
        "-p",
        help=f"{' | '.join(PRESETS)}. adaptive (default): marginals chosen round by round, "
        "a graphical model, fresh rows; tabpe or bfsoft: Private Evolution (the default "
        "when a policy, vote, PubMix or marginal share is given); hybrid: one release of "
        "low-order marginals and a weighted pool.",
    ),
]
VoteOpt = Annotated[
    str | None,
    typer.Option(
        "--vote",
        help=f"{' | '.join(VOTES)}. auto: a pilot on --public picks hard or a soft "
        "configuration (no private budget) and says which and why. Default: auto with "
        "--policy and --public (and no soft setting or --calibration exact), else hard.",
    ),
]
TemperatureOpt = Annotated[
    str | None,
    typer.Option(
        "--temperature",
        "-t",
        help="Soft-vote temperature TAU, or 'auto' (a pilot on --public picks hard or soft).",
    ),
]
SharpenOpt = Annotated[
    float,
    typer.Option(
        "--sharpen",
        metavar="FACTOR",
        help="Soft vote under --policy: multiply the Gower weights of unprotected "
        "attributes by FACTOR (1: off). Same noise; the vote blurs only protected ones.",
    ),
]
DebiasOpt = Annotated[
    int,
    typer.Option(
        "--debias",
        metavar="STEPS",
        help="Soft vote: STEPS of Richardson-Lucy undoing its blur on the released "
        "histogram (0: off; post-processing, no privacy cost).",
    ),
]
DistanceOpt = Annotated[
    str | None, typer.Option("--distance", help="gower | tabpe: override the preset's.")
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option("--threshold", help="Gaussian: threshold on the noisy counts (preset's)."),
]
MechanismOpt = Annotated[
    str,
    typer.Option(
        "--mechanism", help=f"{' | '.join(c.name for c in MECHANISMS)} (pubmix needs --public)."
    ),
]
AccountingOpt = Annotated[
    str,
    typer.Option("--pubmix-accounting", help="PubMix: tight PLD composition or a basic split."),
]
FillOpt = Annotated[
    str, typer.Option("--pubmix-fill", help="PubMix fill: wf | mifr (floor raising) | linmix.")
]
GammaOpt = Annotated[
    float | None,
    typer.Option("--gamma", help="PubMix: bound on TV(public, private); default from folds."),
]
CalibrationOpt = Annotated[
    str,
    typer.Option(
        "--calibration", help="bound | exact (hard votes under a policy search small domains)."
    ),
]
MarginalsOpt = Annotated[
    float | None,
    typer.Option(
        "--marginals",
        metavar="SHARE",
        help="Share of the budget for one release of low-order marginals after the rounds.",
    ),
]
MarginalOptionsOpt = Annotated[
    str | None,
    typer.Option(
        "--marginal-options",
        metavar="YAML",
        help="Marginal options laid over the preset's, e.g. '{grow_rounds: 2, bins: 8}'.",
    ),
]
EngineOptionsOpt = Annotated[
    str | None,
    typer.Option(
        "--engine-options",
        metavar="YAML",
        help="The adaptive engine's options laid over its defaults, e.g. "
        "'{max_rounds: 60, bins: 16}' (docs/engine.md lists them).",
    ),
]
BackendOpt = Annotated[
    str,
    typer.Option(
        "--backend",
        help=f"{' | '.join(BACKENDS)}: where votes and counts are computed (dask: "
        "DASK_SCHEDULER_ADDRESS or local; duckdb: the engine's counts as GROUP BY queries).",
    ),
]
PopulationOpt = Annotated[
    int | None, typer.Option("--population", min=1, help="Override the preset's N.")
]
RoundsOpt = Annotated[
    int | None, typer.Option("--rounds", min=1, help="Override the preset's rounds.")
]

# ----------------------------------------------------------------- inputs and outputs
PrivateArg = Annotated[
    str,
    typer.Argument(
        metavar="PRIVATE",
        help="Private table (.csv, .csv.gz or .parquet), a DuckDB table as "
        "PATH.duckdb::TABLE (needs dpevolve[duckdb]), or a PostgreSQL table as "
        "postgresql://USER@HOST/DATABASE/TABLE (needs dpevolve[postgres]); a database "
        "validates and counts the table itself.",
    ),
]
OutputOpt = Annotated[Path, typer.Option("--output", "-o", help="Synthetic table to write.")]
RowsOpt = Annotated[
    int | None,
    typer.Option(
        "--rows",
        "-n",
        min=1,
        help="Rows to write, drawn from what was released (no privacy cost); "
        "default: as many as PRIVATE has.",
    ),
]
PolicyOpt = Annotated[Path | None, typer.Option("--policy", help="Blowfish policy YAML.")]
PublicOpt = Annotated[Path | None, typer.Option("--public", help="Public table of the same kind.")]
StreamOpt = Annotated[
    bool, typer.Option("--stream", help="Read PRIVATE in batches each round (larger than memory).")
]
BatchRowsOpt = Annotated[
    int, typer.Option("--batch-rows", min=1, help="Rows per batch with --stream.")
]
ReportOpt = Annotated[
    Path | None,
    typer.Option(
        "--report",
        help="Also write an HTML report with utility measured on PRIVATE (for the data "
        "owner only).",
    ),
]
ShareReportOpt = Annotated[
    Path | None,
    typer.Option(
        "--share-report",
        help="Also write an HTML report safe to publish (nothing computed from PRIVATE).",
    ),
]
TestOpt = Annotated[
    Path | None,
    typer.Option(
        "--test",
        help="Held-out real rows the owner's --report tests utility on (an honest, "
        "out-of-sample estimate; without it the scores are on PRIVATE and optimistic).",
    ),
]
ShareLedgerOpt = Annotated[
    Path | None,
    typer.Option(
        "--share-ledger",
        help="Also write a ledger safe to publish (no seed, notes or validation counts).",
    ),
]

#: The flags that set a field of the run's specs (the rest are inputs and outputs).
RUN_FLAGS = (
    "epsilon", "delta", "rho", "preset", "vote", "temperature", "sharpen", "debias",
    "distance", "threshold", "mechanism", "pubmix_accounting", "pubmix_fill", "gamma",
    "calibration", "marginals", "marginal_options", "engine_options", "backend",
    "population", "rounds", "on_invalid",
)  # fmt: skip


@app.command(
    help="Synthesize a DP table from PRIVATE; the ledger goes to OUT.ledger.json." + EXAMPLES
)
@accounted
def synth(
    ctx: typer.Context,
    private: PrivateArg,
    schema: SchemaPath,
    output: OutputOpt,
    config: RunFile = None,
    epsilon: Epsilon = None,
    delta: Delta = None,
    rho: Rho = None,
    rows: RowsOpt = None,
    preset: PresetOpt = None,
    vote: VoteOpt = None,
    temperature: TemperatureOpt = None,
    sharpen: SharpenOpt = 1.0,
    debias: DebiasOpt = 0,
    distance: DistanceOpt = None,
    threshold: ThresholdOpt = None,
    policy: PolicyOpt = None,
    public: PublicOpt = None,
    mechanism: MechanismOpt = "gaussian",
    pubmix_accounting: AccountingOpt = "tight",
    pubmix_fill: FillOpt = "wf",
    gamma: GammaOpt = None,
    calibration: CalibrationOpt = "bound",
    marginals: MarginalsOpt = None,
    marginal_options: MarginalOptionsOpt = None,
    engine_options: EngineOptionsOpt = None,
    stream: StreamOpt = False,
    batch_rows: BatchRowsOpt = DEFAULT_BATCH_ROWS,
    backend: BackendOpt = "auto",
    population: PopulationOpt = None,
    rounds: RoundsOpt = None,
    on_invalid: InvalidOption = OnInvalid.error,
    report: ReportOpt = None,
    test: TestOpt = None,
    share_report: ShareReportOpt = None,
    share_ledger: ShareLedgerOpt = None,
    seed: Seed = None,
    noise_seed: NoiseSeed = None,
    show_values: ShowValues = False,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve.data.schema import Schema
    from dpevolve.synthesizer import Synthesizer

    place = private_place(private, report)
    ledger_out = check_outputs(output, force, report, share_ledger, share_report)
    if report is not None or share_report is not None:
        require("matplotlib", "--report and --share-report")
    if stream:
        require("pyarrow", "--stream")
    flags = {name: ctx.params[name] for name in RUN_FLAGS}
    spec = run_spec(config, flags, _given(ctx), policy is not None, public is not None, quiet)
    rerun = rerun_of(config)  # a ledger: its rows and seed, unless given
    rows, seed = (rows, seed) if rerun is None else rerun.keep(rows, seed)
    table_schema = Schema.load(schema)
    from dpevolve.cli.preflight import preflight  # schema and pandas: not for -h

    preflight(
        inputs=[place.file, schema, policy, public, test], outputs=[output, ledger_out, report,
        share_report, share_ledger], force=force, schema=table_schema, rows=rows, table=output,
        report=report is not None, share_report=share_report is not None,
    )  # fmt: skip
    public_table = read_table(public, "public table") if public is not None else None
    if test is not None:
        _check_test(test, report, table_schema, spec)
    if policy is not None:
        _say_policy_warnings(policy, table_schema, spec.preset.distance, quiet)
    in_duckdb = place.counted_in_duckdb(spec)
    on_disk = not spec.preset.runs_pe and (stream or place.kind != "file" or in_duckdb)
    chosen_backend, backend_line = choose_backend(spec.backend, engine_on_disk=on_disk)
    stake = at_stake(ledger_out, share_ledger, (output, report, share_report), spec.budget.epsilon)
    model = Synthesizer.from_spec(
        table_schema, spec, policy=policy, public=public_table, random_state=seed,
        noise_seed=noise_seed, progress=not quiet,
        backend=None if spec.backend == "auto" else chosen_backend,
    )  # fmt: skip
    rerun_line = None if rerun is None else rerun_warning(config, rerun)
    _say_before_run(spec, backend_line, noise_seed is not None, rerun_line, quiet)
    _fit(model, place, stream or in_duckdb, batch_rows, quiet, spec)
    stake.ledger = model.ledger_
    ledger = model.ledger_.to_dict()
    say_choices(ledger, spec.vote.temperature, spec.budget, quiet)
    synthetic, written = _write_table(model, rows, output, bool(report or share_report))
    # The rows written: what --config LEDGER draws again (public: the table is released).
    model.ledger_.add_metadata(rows_written=written)
    model.ledger_.write(ledger_out)
    if share_ledger is not None:
        model.ledger_.write(share_ledger, shareable=True)
    if report is not None or share_report is not None:
        invalid = OnInvalid(spec.on_invalid)
        write_reports(
            ledger, place.file, synthetic, table_schema, invalid, report, share_report, force,
            test=test, stream_rows=batch_rows if stream else None,
        )  # fmt: skip
    say(quiet, closing_line(model.ledger_.result(), output, written, ledger_out,
                            report, share_report, share_ledger))  # fmt: skip


def _check_test(test: Path, report: Path | None, schema: Any, spec: RunSpec) -> None:
    """``--test`` goes with ``--report``, and is read now: a bad test table must stop
    the run before it spends."""
    if report is None:
        raise InputError("--test is for the owner's report: give --report FILE too")
    read_valid(test, schema, OnInvalid(spec.on_invalid), "test table", quiet=True)


def _given(ctx: typer.Context) -> set[str]:
    """The run flags given on the command line (not left at their defaults)."""
    given = {name: ctx.get_parameter_source(name) for name in RUN_FLAGS}
    return {name for name, source in given.items() if getattr(source, "name", "") == "COMMANDLINE"}


def run_spec(
    config: Path | None,
    flags: dict[str, Any],
    given: set[str],
    policy: bool,
    public: bool,
    quiet: bool,
) -> RunSpec:
    """The run's specs: from the run file ``config``, or from the flags (``given``: the
    ones on the command line). ``policy``/``public``: whether those inputs are given (the
    default vote depends on them). Checked here, before any table is read."""
    inputs = {"policy": True if policy else None, "public": True if public else None}
    if config is not None:
        if given:
            names = ", ".join(f"--{n.replace('_', '-')}" for n in sorted(given))
            raise InputError(f"{names}: give the run's settings in {config} or as flags, not both")
        data = read_run_file(config)
        if isinstance(data, dict) and isinstance(data.get("config"), dict):
            data = data["config"]  # a ledger: its config block
        if not isinstance(data, dict):
            raise InputError(f"run file {config} must hold a mapping of the run's settings")
        return resolve({**RunSpec.from_dict(data).params(), **inputs})
    params = _spec_params(flags)
    spec = resolve({**params, **inputs})
    if flags["vote"] is None and isinstance(spec.vote.temperature, float):
        say(quiet, f"vote: soft (--temperature {spec.vote.temperature:g} given without --vote)")
    return spec


def _spec_params(flags: dict[str, Any]) -> dict[str, Any]:
    """The Synthesizer's spec arguments from the run flags (each flag to its spec)."""
    overrides = {k: flags[k] for k in ("population", "rounds", "distance")}
    preset = flags["preset"]
    if flags["engine_options"] is not None:
        options = _yaml_mapping(flags["engine_options"], "--engine-options", "{max_rounds: 60}")
        preset = get_preset(preset or DEFAULT_PRESET, **overrides).with_engine(options)
    elif preset is not None or any(v is not None for v in overrides.values()):
        preset = get_preset(preset or PE_PRESET, **overrides)
    if flags["mechanism"] == PubMixSpec.name:
        mechanism: Any = PubMixSpec(accounting=flags["pubmix_accounting"],
                                    fill=flags["pubmix_fill"], gamma=flags["gamma"])  # fmt: skip
    elif flags["mechanism"] == GaussianSpec.name:
        mechanism = GaussianSpec(threshold=flags["threshold"], calibration=flags["calibration"])
    else:
        mechanism = flags["mechanism"]  # resolve names the choices
    marginals = flags["marginals"]
    if flags["marginal_options"] is not None:
        options = _yaml_mapping(flags["marginal_options"], "--marginal-options", "{grow_rounds: 2}")
        marginals = MarginalSpec(share=marginals, options=options)
    vote = VoteSpec(kind=flags["vote"], temperature=_temperature(flags["temperature"]),
                    sharpen=flags["sharpen"], debias=flags["debias"])  # fmt: skip
    return {
        "epsilon": flags["epsilon"], "delta": flags["delta"], "rho": flags["rho"],
        "preset": preset, "vote": vote, "mechanism": mechanism, "marginals": marginals,
        "backend": flags["backend"], "on_invalid": OnInvalid(flags["on_invalid"]).value,
    }  # fmt: skip


def _yaml_mapping(text: str, flag: str, example: str) -> dict[str, Any]:
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise InputError(f"{flag} must be a YAML mapping, e.g. '{example}'")
    return value


def _temperature(text: str | None) -> float | Literal["auto"] | None:
    if text is None:
        return None
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise InputError(f"--temperature must be a number or 'auto', got '{text}'") from None


def _say_policy_warnings(policy: Path, schema: Any, distance: str, quiet: bool) -> None:
    """The policy's warnings, said before any table is read."""
    from dpevolve.pe.distance import make_distance
    from dpevolve.policy.blowfish import Policy

    for warning in Policy.load(policy, schema).warnings(make_distance(distance, schema)):
        say(quiet, f"warning: {warning}")


def _say_before_run(
    spec: RunSpec, backend_line: str, noise_seeded: bool, rerun_line: str | None, quiet: bool
) -> None:
    """What is said once the arguments are known to be valid, before the (long) run."""
    say(quiet, backend_line)
    if isinstance(spec.mechanism, PubMixSpec) and spec.mechanism.gamma is None:
        say(quiet, "gamma: estimated from folds of the public table (--gamma not given)")
    if noise_seeded:
        typer.echo(NOISE_SEED_WARNING, err=True)
    if rerun_line is not None:
        say(quiet, rerun_line)


def _write_table(model: Any, rows: int | None, output: Path, whole: bool) -> tuple[Any, int]:
    """Write the rows block by block (memory bounded in ``rows``, docs/scale.md); with
    ``whole`` (a report evaluates them) drawn as one table first, and returned."""
    synthetic = model.sample(rows) if whole else None
    blocks = [synthetic] if synthetic is not None else model.sample_blocks(rows)
    return synthetic, write_blocks(blocks, output)


def _fit(
    model: Any, place: PrivatePlace, stream: bool, batch_rows: int, quiet: bool, spec: RunSpec
) -> None:
    """Fit on PRIVATE (a file or a database table: :mod:`dpevolve.cli.private`); the
    run's warnings said once each (policy ones were said above)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        # A database table is validated when opened, before anything is spent.
        source = place.open(model.schema, batch_rows, model.on_invalid, stream)
        if source is not None:
            small = small_table_warning(source.n, spec.budget)
            if small:
                say(quiet, small)
            model.fit_source(source)
        else:
            assert place.file is not None
            table = read_table(place.file, "private table")
            small = small_table_warning(len(table), spec.budget)
            if small:
                say(quiet, small)
            model.fit(table)
    for caught_warning in caught:
        if not str(caught_warning.message).startswith("policy:"):
            say(quiet, f"warning: {caught_warning.message}")
