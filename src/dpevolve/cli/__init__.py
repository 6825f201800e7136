"""The command line, thin over the Python API.

Exit status: 0 on success, 2 on bad input or usage (one line on stderr naming the
problem), 1 on an internal error. Outputs are written atomically and never replace an
existing file without ``--force``.
"""

from __future__ import annotations

import sys
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from dpevolve.data.io import TABLE_SUFFIXES, check_writable, read_table, write_json, write_table
from dpevolve.data.messages import internal_error, show_values
from dpevolve.errors import InputError

app = typer.Typer(
    name="dpevolve",
    help="Differentially private synthetic tables by Private Evolution.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
schema_app = typer.Typer(help="Write and check schemas.", no_args_is_help=True)
app.add_typer(schema_app, name="schema")
policy_app = typer.Typer(help="Blowfish policies: reach, bounds, savings.", no_args_is_help=True)
app.add_typer(policy_app, name="policy")
datasets_app = typer.Typer(help="Built-in datasets and their schemas.", no_args_is_help=True)
app.add_typer(datasets_app, name="datasets")


class OnInvalid(StrEnum):
    error = "error"
    drop = "drop"
    clip = "clip"


def ledger_path(output: Path) -> Path:
    """``OUT.csv`` -> ``OUT.ledger.json`` (the table suffix replaced)."""
    name = output.name
    for suffix in sorted(TABLE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return output.with_name(name[: -len(suffix)] + ".ledger.json")
    return output.with_name(name + ".ledger.json")


def _check_outputs(output: Path, force: bool, *extras: Path | None) -> Path:
    """Refuse, before any work, to replace the table, its ledger or an extra output."""
    ledger_out = ledger_path(output)
    for path in (output, ledger_out, *extras):
        if path is not None:
            check_writable(path, force)
    return ledger_out


def _require_budget(epsilon: float | None, rho: float | None) -> None:
    if epsilon is None and rho is None:
        raise InputError("give a budget: --epsilon (with --delta) or --rho")


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        typer.echo(message, err=True)


Seed = Annotated[
    int | None,
    typer.Option(
        "--seed",
        help="Seed of everything but the privacy noise (population, mutation, selection).",
    ),
]
NoiseSeed = Annotated[
    int | None,
    typer.Option(
        "--noise-seed",
        help="Research only: reproducible privacy noise. Anyone holding it can remove the "
        "noise; it never enters the ledger or report.",
    ),
]
NOISE_SEED_WARNING = (
    "warning: --noise-seed makes the privacy noise reproducible; anyone who holds the "
    "noise seed can remove it. Use it for research reproduction only."
)
Force = Annotated[bool, typer.Option("--force", help="Overwrite existing outputs.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or messages.")]
# Read by main() before the command runs, so every message of the run can see it.
ShowValues = Annotated[
    bool, typer.Option("--show-values", help="Let error messages quote private cells.")
]


@app.command()
def synth(
    private: Annotated[Path, typer.Argument(help="Private table (.csv, .csv.gz or .parquet).")],
    schema: Annotated[Path, typer.Option("--schema", "-s", help="Schema YAML.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Synthetic table to write.")],
    epsilon: Annotated[float | None, typer.Option("--epsilon", "-e")] = None,
    delta: Annotated[
        float | None, typer.Option("--delta", "-d", help="Default 1/(n ln n).")
    ] = None,
    rho: Annotated[float | None, typer.Option("--rho", help="zCDP budget instead of eps.")] = None,
    preset: Annotated[str, typer.Option("--preset", "-p", help="bfsoft or tabpe.")] = "tabpe",
    vote: Annotated[str | None, typer.Option("--vote", help="hard or soft.")] = None,
    temperature: Annotated[
        str | None,
        typer.Option(
            "--temperature", "-t", help="Soft-vote tau, or 'auto' (public pilot; needs --public)."
        ),
    ] = None,
    policy: Annotated[Path | None, typer.Option("--policy", help="Blowfish policy YAML.")] = None,
    public: Annotated[Path | None, typer.Option("--public", help="Public table.")] = None,
    mechanism: Annotated[
        str, typer.Option("--mechanism", help="gaussian, or pubmix (needs --public).")
    ] = "gaussian",
    pubmix_accounting: Annotated[
        str, typer.Option("--pubmix-accounting", help="tight PLD composition or basic split.")
    ] = "tight",
    pubmix_noise: Annotated[str, typer.Option("--pubmix-noise", help="wf, mifr or linmix.")] = "wf",
    gamma: Annotated[
        float | None,
        typer.Option("--gamma", help="Bound on TV(public, private); default from public folds."),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream", help="Read PRIVATE in batches each round (tables larger than memory)."
        ),
    ] = False,
    batch_rows: Annotated[int, typer.Option("--batch-rows", help="Rows per batch.")] = 250_000,
    backend: Annotated[
        str,
        typer.Option("--backend", help="auto, local, fused, gpu or dask (DASK_SCHEDULER_ADDRESS)."),
    ] = "auto",
    calibration: Annotated[
        str,
        typer.Option(
            "--calibration", help="bound, or exact (hard votes under a policy; small domains)."
        ),
    ] = "bound",
    population: Annotated[int | None, typer.Option("--population", help="Override N.")] = None,
    rounds: Annotated[int | None, typer.Option("--rounds", help="Override rounds.")] = None,
    on_invalid: Annotated[OnInvalid, typer.Option("--on-invalid")] = OnInvalid.error,
    secure_noise: Annotated[
        bool,
        typer.Option(
            "--secure-noise", help="Deprecated: secure noise is the default.", hidden=True
        ),
    ] = False,
    report: Annotated[
        Path | None,
        typer.Option(
            "--report",
            help="Also write an HTML report (utility measured on the private table: "
            "for the data owner).",
        ),
    ] = None,
    share_ledger: Annotated[
        Path | None,
        typer.Option(
            "--share-ledger",
            help="Also write a ledger safe to publish (no seed, notes or validation counts).",
        ),
    ] = None,
    seed: Seed = None,
    noise_seed: NoiseSeed = None,
    force: Force = False,
    quiet: Quiet = False,
    show_values: ShowValues = False,
) -> None:
    """Synthesize a DP table from PRIVATE; the ledger goes to OUT.ledger.json."""
    from dpevolve.data.schema import Schema
    from dpevolve.synthesizer import Synthesizer

    ledger_out = _check_outputs(output, force, report, share_ledger)
    _require_budget(epsilon, rho)
    table_schema = Schema.load(schema)
    public_table = read_table(public, "public table") if public is not None else None
    if policy is not None:
        from dpevolve.core.distance import make_distance
        from dpevolve.core.policy import Policy
        from dpevolve.presets import get_preset

        loaded = Policy.load(policy, table_schema)
        for warning in loaded.warnings(make_distance(get_preset(preset).distance, table_schema)):
            _say(quiet, f"warning: {warning}")
    model = Synthesizer(
        table_schema,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        preset=preset,
        vote=vote,
        temperature=_temperature(temperature),
        policy=policy,
        public=public_table,
        mechanism=mechanism,  # type: ignore[arg-type]
        pubmix_accounting=pubmix_accounting,  # type: ignore[arg-type]
        pubmix_noise=pubmix_noise,  # type: ignore[arg-type]
        gamma=gamma,
        calibration=calibration,  # type: ignore[arg-type]
        population_size=population,
        rounds=rounds,
        random_state=seed,
        noise_seed=noise_seed,
        on_invalid=on_invalid.value,
        progress=not quiet,
        backend=_backend(backend),
    )
    if noise_seed is not None:
        typer.echo(NOISE_SEED_WARNING, err=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        if stream:
            model.fit_file(private, batch_rows)
        else:
            model.fit(read_table(private, "private table"))
    for caught_warning in caught:  # policy warnings were already said above
        if not str(caught_warning.message).startswith("policy:"):
            _say(quiet, f"warning: {caught_warning.message}")
    write_table(model.synthetic_, output)
    model.ledger_.write(ledger_out)
    if share_ledger is not None:
        model.ledger_.write(share_ledger, shareable=True)
    if report is not None:
        from dpevolve.reporting.evaluation import evaluate as run_evaluation
        from dpevolve.reporting.report import write_report

        private_table = read_table(private, "private table")
        # Measure utility on the rows that voted (evaluation refuses invalid cells).
        private_table, _ = table_schema.validate(private_table, on_invalid=on_invalid.value)
        evaluation = run_evaluation(
            private_table, model.synthetic_, table_schema, label=table_schema.label
        )
        write_report(
            report,
            ledger=model.ledger_.to_dict(),
            evaluation=evaluation,
            real=private_table,
            synthetic=model.synthetic_,
            schema=table_schema,
            force=force,
        )
    result = model.ledger_.result()
    _say(
        quiet,
        f"wrote {output} ({len(model.synthetic_)} rows) and {ledger_out}: "
        f"(epsilon={result.epsilon:.4g}, delta={result.delta:.3g})",
    )


def _backend(name: str) -> Any:
    if name == "dask":
        import os

        from dask.distributed import Client

        from dpevolve.backends.dask import DaskBackend

        address = os.environ.get("DASK_SCHEDULER_ADDRESS")
        return DaskBackend(Client(address) if address else Client(processes=False))
    from dpevolve.backends import make_backend

    return make_backend(name)


def _temperature(text: str | None) -> float | Literal["auto"] | None:
    if text is None:
        return None
    if text == "auto":
        return "auto"
    try:
        return float(text)
    except ValueError:
        raise InputError(f"temperature must be a number or 'auto', got '{text}'") from None


@app.command()
def pubmix(
    private: Annotated[Path, typer.Argument(help="Private table (.csv or .parquet).")],
    schema: Annotated[Path, typer.Option("--schema", "-s")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Samples to write.")],
    m: Annotated[int, typer.Option("-m", "--samples", help="Samples to release.")],
    epsilon: Annotated[float | None, typer.Option("--epsilon", "-e")] = None,
    delta: Annotated[float | None, typer.Option("--delta", "-d")] = None,
    rho: Annotated[float | None, typer.Option("--rho", help="Only for --noise gaussian.")] = None,
    public: Annotated[Path | None, typer.Option("--public", help="Public table.")] = None,
    noise: Annotated[str, typer.Option("--noise", help="pubmix, linmix or gaussian.")] = "pubmix",
    floor: Annotated[str, typer.Option("--floor", help="wf or mifr floor raising.")] = "wf",
    gamma: Annotated[float | None, typer.Option("--gamma")] = None,
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
    seed: Seed = None,
    noise_seed: NoiseSeed = None,
    force: Force = False,
    quiet: Quiet = False,
    show_values: ShowValues = False,
) -> None:
    """Release M DP samples of PRIVATE over the product domain of its columns."""
    from dpevolve.data.schema import Schema
    from dpevolve.privacy import Budget
    from dpevolve.release.discrete import sample_discrete

    ledger_out = _check_outputs(output, force)
    _require_budget(epsilon, rho)
    private_table = read_table(private, "private table")
    if delta is None and epsilon is not None:
        import math

        n = max(len(private_table), 3)
        delta = 1.0 / (n * math.log(n))
    release = sample_discrete(
        private_table,
        read_table(public, "public table") if public is not None else None,
        Schema.load(schema),
        m,
        Budget.from_args(epsilon=epsilon, delta=delta, rho=rho),
        noise=noise,  # type: ignore[arg-type]
        floor=floor,  # type: ignore[arg-type]
        gamma=gamma,
        gamma_epsilon=gamma_epsilon,
        floor_epsilon=floor_epsilon,
        random_state=seed,
        noise_seed=noise_seed,
    )
    if noise_seed is not None:
        typer.echo(NOISE_SEED_WARNING, err=True)
    write_table(release.samples, output)
    release.ledger.write(ledger_out)
    details = ", ".join(
        f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in release.details.items()
    )
    _say(quiet, f"wrote {output} ({m} samples; {details}) and {ledger_out}")


@schema_app.command("infer")
def schema_infer(
    public: Annotated[Path, typer.Argument(help="PUBLIC table (.csv or .parquet).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Schema YAML to write.")],
    label: Annotated[str | None, typer.Option("--label", help="Label column.")] = None,
    max_categories: Annotated[int, typer.Option("--max-categories")] = 50,
    force: Force = False,
) -> None:
    """Write a schema from PUBLIC data (never run this on private data)."""
    from dpevolve.data.io import atomic_write
    from dpevolve.data.schema import Schema

    check_writable(output, force)
    table = read_table(public, "public table")
    if label is not None and label not in table.columns:
        raise InputError(f"label '{label}' is not a column of {public}")
    inferred = Schema.infer(table, label=label, max_categories=max_categories)
    text = (
        "# Inferred from public data: "
        + str(public)
        + "\n# Check every declared range and value list before using it.\n"
        + inferred.to_yaml()
    )
    atomic_write(output, lambda tmp: tmp.write_text(text))
    typer.echo(f"wrote {output} ({len(inferred)} columns)", err=True)


@schema_app.command("check")
def schema_check(
    table: Annotated[Path, typer.Argument(help="Table to check.")],
    schema: Annotated[Path, typer.Option("--schema", "-s")],
    show_values: ShowValues = False,
) -> None:
    """Check that TABLE fits SCHEMA (one line per problem found, exit 2 on the first)."""
    from dpevolve.data.schema import Schema

    frame, _ = Schema.load(schema).validate(read_table(table), on_invalid="error")
    typer.echo(f"{table}: {len(frame)} rows fit the schema")


@app.command()
def evaluate(
    real: Annotated[Path, typer.Argument(help="Real table.")],
    synthetic: Annotated[Path, typer.Argument(help="Synthetic table.")],
    schema: Annotated[Path, typer.Option("--schema", "-s")],
    label: Annotated[
        str | None, typer.Option("--label", help="Label column for TSTR (default: the schema's).")
    ] = None,
    test: Annotated[Path | None, typer.Option("--test", help="Held-out real test table.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="JSON to write.")] = None,
    force: Force = False,
    show_values: ShowValues = False,
) -> None:
    """k-way marginal TV (k = 1, 2, 3) and train-on-synthetic-test-on-real scores."""
    from dpevolve.data.schema import Schema
    from dpevolve.reporting.evaluation import evaluate as run_evaluation
    from dpevolve.reporting.evaluation import format_report

    if output is not None:
        check_writable(output, force)
    table_schema = Schema.load(schema)
    result = run_evaluation(
        read_table(real, "real table"),
        read_table(synthetic, "synthetic table"),
        table_schema,
        label=label if label is not None else table_schema.label,
        test=read_table(test, "test table") if test is not None else None,
    )
    typer.echo(format_report(result))
    if output is not None:
        write_json(result, output)


@app.command()
def demo(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the outputs.")] = Path(
        "demo-output"
    ),
    dataset: Annotated[str, typer.Option("--dataset", help="demo (built in), adult, ...")] = "demo",
    epsilon: Annotated[float, typer.Option("--epsilon", "-e")] = 1.0,
    delta: Annotated[float, typer.Option("--delta", "-d")] = 1e-5,
    preset: Annotated[str, typer.Option("--preset", "-p")] = "tabpe",
    seed: Seed = 0,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    """The main job end to end: synthesize, write the ledger, evaluate, report."""
    from dpevolve import datasets
    from dpevolve.reporting.evaluation import evaluate as run_evaluation
    from dpevolve.reporting.evaluation import format_report
    from dpevolve.reporting.report import write_report
    from dpevolve.synthesizer import Synthesizer

    output.mkdir(parents=True, exist_ok=True)
    table_out = output / "synthetic.csv"
    ledger_out = ledger_path(table_out)
    eval_out = output / "evaluation.json"
    report_out = output / "report.html"
    for path in (table_out, ledger_out, eval_out, report_out):
        check_writable(path, force)
    data = datasets.load(dataset)
    test = _maybe_test_split(dataset)
    _say(
        quiet,
        f"{data.name}: {len(data.frame)} private rows, {len(data.schema)} columns; "
        f"epsilon={epsilon}, delta={delta}, preset={preset}",
    )
    model = Synthesizer(
        data.schema,
        epsilon=epsilon,
        delta=delta,
        preset=preset,
        random_state=seed,
        progress=not quiet,
    ).fit(data.frame)
    write_table(model.synthetic_, table_out)
    model.ledger_.write(ledger_out)
    result = run_evaluation(data.frame, model.synthetic_, data.schema, label=data.label, test=test)
    write_json(result, eval_out)
    write_report(
        report_out,
        ledger=model.ledger_.to_dict(),
        evaluation=result,
        real=data.frame,
        synthetic=model.synthetic_,
        schema=data.schema,
        title=f"dpevolve demo: {data.name}",
        force=force,
    )
    _say(quiet, format_report(result))
    _say(quiet, f"wrote {table_out}, {ledger_out}, {eval_out} and {report_out}")


@policy_app.command("show")
def policy_show(
    policy: Annotated[Path, typer.Argument(help="Policy YAML.")],
    schema: Annotated[Path, typer.Option("--schema", "-s")],
    temperature: Annotated[
        list[float] | None,
        typer.Option("--temperature", "-t", help="Soft-vote temperature (repeatable)."),
    ] = None,
    distance: Annotated[str, typer.Option("--distance", help="gower or tabpe.")] = "gower",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Per-attribute and record reach, soft-vote bounds, q and the budget saving (1/q^2)."""
    import json

    from dpevolve.core.distance import make_distance
    from dpevolve.core.policy import Policy, summarize
    from dpevolve.data.schema import Schema

    table_schema = Schema.load(schema)
    temperatures = tuple(temperature) if temperature else (0.015, 0.03, 0.06)
    for tau in temperatures:
        if not tau > 0:
            raise InputError(f"temperature must be > 0, got {tau}")
    summary = summarize(
        Policy.load(policy, table_schema), make_distance(distance, table_schema), temperatures
    )
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    typer.echo(f"record reach r = {summary['reach']:.6g}  ({distance} distance)")
    for name, info in summary["attributes"].items():
        typer.echo(f"  {name:20s} {info['graph']:28s} r_k = {info['reach']:.6g}")
    typer.echo(f"{'tau':>8} {'q':>8} {'L1 bound':>10} {'L2 bound':>10} {'saving 1/q^2':>13}")
    for row in summary["temperatures"]:
        saving = row["budget_saving"]
        typer.echo(
            f"{row['tau']:8.4g} {row['q']:8.4f} {row['l1_bound']:10.4f} "
            f"{row['l2_bound']:10.4f} {'inf' if saving is None else f'{saving:.3g}':>13}"
        )
    for warning in summary.get("warnings", []):
        typer.echo(f"warning: {warning}", err=True)


@policy_app.command("audit")
def policy_audit(
    policy: Annotated[Path, typer.Argument(help="Policy YAML.")],
    schema: Annotated[Path, typer.Option("--schema", "-s")],
    population: Annotated[
        Path, typer.Option("--population", help="A released table (the candidates: public).")
    ],
    temperature: Annotated[
        list[float] | None, typer.Option("--temperature", "-t", help="Repeatable.")
    ] = None,
    distance: Annotated[str, typer.Option("--distance", help="gower or tabpe.")] = "gower",
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """Exact hard and soft sensitivity of POPULATION by search over protected edges.

    Audits the closed-form bounds on a released population over the whole (small)
    domain; the population is public, so this spends no budget.
    """
    import json

    from dpevolve.core.distance import make_distance
    from dpevolve.core.policy import Policy
    from dpevolve.core.sensitivity import exact_hard_sensitivity, exact_soft_sensitivity, soft_bound
    from dpevolve.data.encoding import encode
    from dpevolve.data.schema import Schema

    table_schema = Schema.load(schema)
    rule = Policy.load(policy, table_schema)
    metric = make_distance(distance, table_schema)
    frame, _ = table_schema.validate(read_table(population, "population"), what="population")
    candidates = encode(frame, table_schema)
    reach = rule.reach(metric)
    hard = exact_hard_sensitivity(rule, metric, candidates)
    rows = [{"vote": "hard", "bound": 2**0.5 if reach > 0 else 0.0, **hard.to_dict()}]
    for tau in temperature or (0.015, 0.03, 0.06):
        soft = exact_soft_sensitivity(rule, metric, candidates, tau)
        rows.append(
            {
                "vote": "soft",
                "tau": tau,
                "bound": soft_bound(reach, tau),
                **{k: v for k, v in soft.to_dict().items() if k != "vote"},
            }
        )
    if as_json:
        typer.echo(
            json.dumps({"reach": reach, "candidates": len(candidates), "audit": rows}, indent=2)
        )
        return
    typer.echo(f"reach r = {reach:.6g}; {len(candidates)} candidates ({distance} distance)")
    typer.echo(
        f"{'vote':>6} {'tau':>7} {'exact L2':>9} {'bound':>9} {'ratio':>6} "
        f"{'edges':>10} {'seconds':>8}"
    )
    for row in rows:
        ratio = row["value"] / row["bound"] if row["bound"] > 0 else float("nan")
        tau_text = f"{row['tau']:.4g}" if "tau" in row else "-"
        typer.echo(
            f"{row['vote']:>6} {tau_text:>7} {row['value']:9.4f} {row['bound']:9.4f} "
            f"{ratio:6.3f} {row['edges_checked']:10d} {row['seconds']:8.2f}"
        )


@datasets_app.command("list")
def datasets_list() -> None:
    """Dataset names, their splits and column presets."""
    from dpevolve import datasets

    for name in datasets.names():
        presets = ", ".join(datasets.presets(name)) or "-"
        typer.echo(f"{name:24s} splits: {', '.join(datasets.splits(name)):16s} presets: {presets}")


@datasets_app.command("fetch")
def datasets_fetch(
    name: Annotated[str, typer.Argument(help="Dataset name (see `dpevolve datasets list`).")],
    force: Force = False,
) -> None:
    """Download a dataset from its original source into the cache and check its sha256."""
    from dpevolve import datasets

    for path in datasets.fetch(name, force=force):
        typer.echo(f"ok {path}")


@datasets_app.command("schema")
def datasets_schema(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Schema YAML to write.")],
    columns: Annotated[str | None, typer.Option("--columns", help="Column preset.")] = None,
    force: Force = False,
) -> None:
    """Write a dataset's shipped schema (documented domains) to a YAML file."""
    from dpevolve import datasets
    from dpevolve.data.io import atomic_write

    check_writable(output, force)
    text = datasets.schema(name, columns=columns).to_yaml()
    atomic_write(output, lambda tmp: tmp.write_text(text))


def _maybe_test_split(name: str) -> Any:
    from dpevolve import datasets

    try:
        return datasets.load(name, split="test").frame
    except InputError:
        return None


def main(argv: list[str] | None = None) -> int:
    """Console entry point: maps errors to exit codes 2 (input) and 1 (internal)."""
    args = sys.argv[1:] if argv is None else list(argv)
    with show_values("--show-values" in args):
        return _main(args)


def _main(argv: list[str]) -> int:
    try:
        app(args=argv, standalone_mode=False)
    except InputError as exc:
        typer.echo(f"dpevolve: error: {exc}", err=True)
        return 2
    except typer.Abort:
        typer.echo("dpevolve: aborted", err=True)
        return 130
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.TyperException as exc:  # usage errors: bad option, missing argument
        format_message = getattr(exc, "format_message", None)
        text = format_message() if format_message is not None else str(exc)
        typer.echo(f"dpevolve: error: {' '.join(text.split())} (see --help)", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("dpevolve: interrupted", err=True)
        return 130
    except Exception as exc:
        typer.echo(f"dpevolve: internal error: {internal_error(exc)}", err=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
