"""``dpevolve synth``: a DP synthetic table from a private one, with its ledger."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

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
    NoiseSeed,
    OnInvalid,
    Quiet,
    Rho,
    SchemaPath,
    Seed,
    app,
    check_outputs,
    read_valid,
    say,
)
from dpevolve.cli.interrupt import accounted, at_stake
from dpevolve.cli.private import PrivatePlace, private_place
from dpevolve.cli.report import write_reports
from dpevolve.data.io import DEFAULT_BATCH_ROWS, read_table
from dpevolve.data.writer import write_blocks
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.presets import METHODS
from dpevolve.privacy.budget import Budget

EXAMPLES = """

Examples:

\b
  dpevolve synth private.csv -s schema.yaml -e 1 -o synthetic.csv
  dpevolve synth private.csv -s schema.yaml -e 1 --rows 5000 -o synthetic.csv \\
      --report report.html --share-report report-public.html
  dpevolve synth private.csv -s schema.yaml --method bfsoft --policy policy.yaml \\
      --public public.csv --rho 1e-4 -o synthetic.csv   # vote auto (the default here)
  dpevolve synth private.csv -s schema.yaml --policy policy.yaml --config run.yaml \\
      --rho 1e-4 -o synthetic.csv
      # run.yaml: {method: bfsoft, vote: {kind: soft, temperature: 0.06, sharpen: 30}}
  dpevolve synth private.csv -s schema.yaml --config old.ledger.json -o synthetic.csv
      # a ledger: its config block (and budget, rows, seed) re-runs the same run

--show-values (any command): let error messages quote private cells.
"""

# ------------------------------------------------------------------ the run's settings
# The method and its settings: a name, or a run file (YAML, or a ledger). Everything a
# method takes beyond its name (votes, PubMix, marginal shares) is in the run file's
# words (docs/guide.md, "Run files"); a flag never switches the method.
MethodOpt = Annotated[
    str | None,
    typer.Option(
        "--method",
        "--config",
        "--preset",
        "-p",
        metavar="NAME|RUN.yaml",
        help=f"{' | '.join(METHODS)}, or a run file. adaptive (default): marginals chosen "
        "round by round, a graphical model, fresh rows; tabpe or bfsoft: Private Evolution "
        "(takes --policy); hybrid: PE's pool weighted to one release of low-order "
        "marginals. A run file: YAML ({method: bfsoft, vote: {kind: soft, temperature: "
        "0.06}}; docs/guide.md) or a ledger (its config block re-runs that run).",
    ),
]
EngineOptionsOpt = Annotated[
    str | None,
    typer.Option(
        "--engine-options",
        metavar="YAML",
        help="The adaptive engine's options laid over the method's, e.g. "
        "'{max_rounds: 60, bins: 16}' (docs/engine.md lists them).",
    ),
]
PopulationOpt = Annotated[
    int | None, typer.Option("--population", min=1, help="Private Evolution: override N.")
]
RoundsOpt = Annotated[
    int | None, typer.Option("--rounds", min=1, help="Private Evolution: override the rounds.")
]
OnInvalidOpt = Annotated[
    OnInvalid | None,
    typer.Option(
        "--on-invalid",
        help="Cells outside the schema: stop with an error (default), drop their rows, or "
        "clip numbers to the declared range (rows that cannot be clipped are dropped).",
    ),
]
BackendOpt = Annotated[
    str | None,
    typer.Option(
        "--backend",
        help="auto | local | fused | gpu | dask | duckdb: where the records are counted "
        "(dask: DASK_SCHEDULER_ADDRESS or local; duckdb: the engine's counts as GROUP BY "
        "queries). Default auto.",
    ),
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


@app.command(
    help="Synthesize a DP table from PRIVATE; the ledger goes to OUT.ledger.json." + EXAMPLES
)
@accounted
def synth(
    private: PrivateArg,
    schema: SchemaPath,
    output: OutputOpt,
    method: MethodOpt = None,
    epsilon: Epsilon = None,
    delta: Delta = None,
    rho: Rho = None,
    rows: RowsOpt = None,
    policy: PolicyOpt = None,
    public: PublicOpt = None,
    engine_options: EngineOptionsOpt = None,
    population: PopulationOpt = None,
    rounds: RoundsOpt = None,
    stream: StreamOpt = False,
    batch_rows: BatchRowsOpt = DEFAULT_BATCH_ROWS,
    backend: BackendOpt = None,
    on_invalid: OnInvalidOpt = None,
    report: ReportOpt = None,
    test: TestOpt = None,
    share_report: ShareReportOpt = None,
    share_ledger: ShareLedgerOpt = None,
    seed: Seed = None,
    noise_seed: NoiseSeed = None,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve.data.schema import Schema
    from dpevolve.engine.method import AdaptiveMethod
    from dpevolve.synthesizer import Synthesizer

    place = private_place(private, report)
    ledger_out = check_outputs(output, force, report, share_ledger, share_report)
    if report is not None or share_report is not None:
        require("matplotlib", "--report and --share-report")
    if stream:
        require("pyarrow", "--stream")
    config = run_file(method)
    overrides = {"engine": _engine_options(engine_options), "population": population,
                 "rounds": rounds}  # fmt: skip
    run = RunSettings.of(config, method=method, epsilon=epsilon, delta=delta, rho=rho,
                         backend=backend, on_invalid=on_invalid, overrides=overrides)  # fmt: skip
    run.check_inputs(policy is not None, public is not None)
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
        _check_test(test, report, table_schema, run.on_invalid)
    if policy is not None:
        _say_policy_warnings(policy, table_schema, run.method, quiet)
    engine = isinstance(run.method, AdaptiveMethod)
    in_duckdb = place.counted_in_duckdb(run.backend, engine)
    on_disk = engine and (stream or place.kind != "file" or in_duckdb)
    chosen_backend, backend_line = choose_backend(
        run.backend, engine_on_disk=on_disk, in_server=engine and place.kind == "postgres"
    )
    stake = at_stake(ledger_out, share_ledger, (output, report, share_report),
                     run.epsilon)  # fmt: skip
    model = Synthesizer(
        table_schema, method=run.method, epsilon=run.epsilon, delta=run.delta, rho=run.rho,
        policy=policy, public=public_table, random_state=seed,
        on_invalid=run.on_invalid, noise_seed=noise_seed, progress=not quiet,
        backend=run.backend if run.backend == "auto" else chosen_backend,
    )  # fmt: skip
    say(quiet, backend_line)
    if noise_seed is not None:
        typer.echo(NOISE_SEED_WARNING, err=True)
    if rerun is not None:
        say(quiet, rerun_warning(config, rerun))
    _fit(model, place, stream or in_duckdb, batch_rows, quiet)
    stake.ledger = model.ledger_
    say_choices(model, quiet)
    synthetic, written = _write_table(model, rows, output, bool(report or share_report))
    # The rows written: what --config LEDGER draws again (public: the table is released).
    model.ledger_.add_metadata(rows_written=written)
    model.ledger_.write(ledger_out)
    if share_ledger is not None:
        model.ledger_.write(share_ledger, shareable=True)
    if report is not None or share_report is not None:
        write_reports(
            model.ledger_.to_dict(), place.file, synthetic, table_schema,
            OnInvalid(run.on_invalid), report, share_report, force, test=test,
            stream_rows=batch_rows if stream else None,
        )  # fmt: skip
    say(quiet, closing_line(model.ledger_.result(), output, written, ledger_out,
                            report, share_report, share_ledger))  # fmt: skip


def _check_test(test: Path, report: Path | None, schema: Any, on_invalid: str) -> None:
    """``--test`` goes with ``--report``, and is read now: a bad test table must stop
    the run before it spends."""
    if report is None:
        raise InputError("--test is for the owner's report: give --report FILE too")
    read_valid(test, schema, OnInvalid(on_invalid), "test table", quiet=True)


def run_file(method: str | None) -> Path | None:
    """``--method``'s value as a run file (``None``: a method's name, or nothing)."""
    if method is None or method in METHODS:
        return None
    path = Path(method)
    if path.suffix.lower() in (".yaml", ".yml", ".json") or path.exists():
        return path
    return None  # an unknown name: the method's own error names the choices


def _engine_options(text: str | None) -> dict[str, Any] | None:
    """``--engine-options``: a YAML mapping."""
    if text is None:
        return None
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        value = None
    if not isinstance(value, dict):
        raise InputError("--engine-options must be a YAML mapping, e.g. '{max_rounds: 60}'")
    return value


@dataclass(frozen=True)
class RunSettings:
    """What the flags and the run file decide: the method, the budget (the numbers as
    given, which the facade makes its :class:`~dpevolve.privacy.Budget` of), the
    backend's name and ``on_invalid``; checked before any table is read."""

    method: Any
    epsilon: float | None
    delta: float | None
    rho: float | None
    backend: str
    on_invalid: Literal["error", "drop", "clip"]

    @classmethod
    def of(
        cls,
        config: Path | None,
        *,
        method: str | None,
        epsilon: float | None,
        delta: float | None,
        rho: float | None,
        backend: str | None,
        on_invalid: OnInvalid | None,
        overrides: dict[str, Any],
    ) -> RunSettings:
        """From the flags, and the run file ``config`` (a YAML mapping or a ledger) for
        what they leave out; a setting in both is an error. ``overrides`` (engine
        options, PE's population and rounds) are laid over the method."""
        from dpevolve.presets import DEFAULT_METHOD, get_method, method_from_dict, overlaid

        words = {} if config is None else _run_file_words(config)
        numbers: tuple[Any, ...] = (epsilon, delta, rho)
        given = [k for k, v in zip(BUDGET, numbers, strict=True) if v is not None]
        both = given if "budget" in words else []
        both += [k for k, v in (("backend", backend), ("on_invalid", on_invalid))
                 if v is not None and k in words]  # fmt: skip
        if both:
            names = ", ".join(f"--{n.replace('_', '-')}" for n in sorted(both))
            raise InputError(f"{names}: give the run's settings in {config} or as flags, not both")
        if config is None:
            chosen = get_method(method or DEFAULT_METHOD, **overrides)
        else:
            chosen = overlaid(method_from_dict(words), **overrides)
        budget = words.get("budget")
        if budget:
            if not isinstance(budget, dict) or set(budget) - set(BUDGET):
                raise InputError(f"run file {config}: budget must be a mapping of epsilon, "
                                 "delta, rho")  # fmt: skip
            numbers = tuple(budget.get(k) for k in BUDGET)
        Budget(*numbers)  # checked now, before any table is read (the fit makes it again)
        mode = OnInvalid(words.get("on_invalid") or on_invalid or "error")
        place = words.get("backend") or backend or "auto"
        return cls(chosen, numbers[0], numbers[1], numbers[2], str(place), mode.value)

    def check_inputs(self, policy: bool, public: bool) -> None:
        """What the method will decide from the inputs, checked now, before any table is
        read (its fit checks it again before it spends)."""
        self.method.check_inputs(policy=policy, public=public)


#: The budget's words, in a run file (``budget: {epsilon: 1}``) and as flags.
BUDGET = ("epsilon", "delta", "rho")


def _run_file_words(config: Path) -> dict[str, Any]:
    """A run file's mapping; a ledger's ``config`` block with its budget."""
    data = read_run_file(config)
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        budget = data.get("budget")  # a ledger: its settings and the budget it was given
        data = {**({"budget": budget} if isinstance(budget, dict) else {}), **data["config"]}
    if not isinstance(data, dict):
        raise InputError(f"run file {config} must hold a mapping of the run's settings")
    return data


def _say_policy_warnings(policy: Path, schema: Any, method: Any, quiet: bool) -> None:
    """A Private Evolution method's policy warnings, said before any table is read (the
    adaptive method refuses a policy when its fit starts, before it spends)."""
    from dpevolve.pe.distance import make_distance
    from dpevolve.pe.policy.blowfish import Policy

    preset = getattr(method, "preset", None)
    if preset is None:
        return
    for warning in Policy.load(policy, schema).warnings(make_distance(preset.distance, schema)):
        say(quiet, f"warning: {warning}")


def _write_table(model: Any, rows: int | None, output: Path, whole: bool) -> tuple[Any, int]:
    """Write the rows block by block (memory bounded in ``rows``, docs/scale.md); with
    ``whole`` (a report evaluates them) drawn as one table first, and returned."""
    synthetic = model.sample(rows) if whole else None
    blocks = [synthetic] if synthetic is not None else model.sample_blocks(rows)
    return synthetic, write_blocks(blocks, output)


def _fit(model: Any, place: PrivatePlace, stream: bool, batch_rows: int, quiet: bool) -> None:
    """Fit on PRIVATE (a file or a database table: :mod:`dpevolve.cli.private`); the
    run's warnings said once each (policy ones were said above)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        # A database table is validated when opened, before anything is spent.
        source = place.open(model.schema, batch_rows, model.on_invalid, stream)
        if source is not None:
            small = small_table_warning(source.n, model.budget())
            if small:
                say(quiet, small)
            model.fit_source(source)
        else:
            assert place.file is not None
            table = read_table(place.file, "private table")
            small = small_table_warning(len(table), model.budget())
            if small:
                say(quiet, small)
            model.fit(table)
    for caught_warning in caught:
        if not str(caught_warning.message).startswith("policy:"):
            say(quiet, f"warning: {caught_warning.message}")
