"""``dpevolve synth``: a DP synthetic table from a private one, with its ledger."""

from __future__ import annotations

import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

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
    Rho,
    SchemaPath,
    Seed,
    ShowValues,
    app,
    check_outputs,
    read_valid,
    require_budget,
    say,
)
from dpevolve.data.io import read_table, write_table
from dpevolve.errors import InputError
from dpevolve.extras import require


class PresetName(StrEnum):
    tabpe = "tabpe"
    bfsoft = "bfsoft"
    hybrid = "hybrid"


class VoteName(StrEnum):
    hard = "hard"
    soft = "soft"
    auto = "auto"


class Mechanism(StrEnum):
    gaussian = "gaussian"
    pubmix = "pubmix"


class Accounting(StrEnum):
    tight = "tight"
    basic = "basic"


class PubMixNoise(StrEnum):
    wf = "wf"
    mifr = "mifr"
    linmix = "linmix"


class BackendName(StrEnum):
    auto = "auto"
    local = "local"
    fused = "fused"
    gpu = "gpu"
    dask = "dask"


class Calibration(StrEnum):
    bound = "bound"
    exact = "exact"


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
"""


@app.command(
    help="Synthesize a DP table from PRIVATE; the ledger goes to OUT.ledger.json." + EXAMPLES
)
def synth(
    private: Annotated[
        Path, typer.Argument(metavar="PRIVATE", help="Private table (.csv, .csv.gz or .parquet).")
    ],
    schema: SchemaPath,
    output: Annotated[Path, typer.Option("--output", "-o", help="Synthetic table to write.")],
    epsilon: Epsilon = None,
    delta: Delta = None,
    rho: Rho = None,
    rows: Annotated[
        int | None,
        typer.Option(
            "--rows",
            "-n",
            min=1,
            help="Rows to write, drawn from what was released (no privacy cost); "
            "default: as many as PRIVATE has.",
        ),
    ] = None,
    preset: Annotated[
        PresetName | None,
        typer.Option(
            "--preset",
            "-p",
            help="tabpe (default) or bfsoft: Private Evolution; hybrid: one release of "
            "low-order marginals and a weighted pool (closer marginals, see the guide).",
        ),
    ] = None,
    vote: Annotated[
        VoteName | None,
        typer.Option(
            "--vote",
            help="Vote of each private record. auto: a pilot on --public picks hard or a "
            "soft configuration (no private budget) and says which and why. Default: auto "
            "with --policy and --public (and no --temperature, --sharpen, --debias or "
            "--calibration exact), else hard.",
        ),
    ] = None,
    temperature: Annotated[
        str | None,
        typer.Option(
            "--temperature",
            "-t",
            help="Soft-vote temperature TAU, or 'auto' (a pilot on --public picks hard or soft).",
        ),
    ] = None,
    sharpen: Annotated[
        float,
        typer.Option(
            "--sharpen",
            min=1.0,
            metavar="FACTOR",
            help="Soft vote under --policy: multiply the Gower weights of unprotected "
            "attributes by FACTOR (1: off). Same noise; the vote blurs only protected ones.",
        ),
    ] = 1.0,
    debias: Annotated[
        int,
        typer.Option(
            "--debias",
            min=0,
            metavar="STEPS",
            help="Soft vote: STEPS of Richardson-Lucy undoing its blur on the released "
            "histogram (0: off; post-processing, no privacy cost).",
        ),
    ] = 0,
    policy: Annotated[Path | None, typer.Option("--policy", help="Blowfish policy YAML.")] = None,
    public: Annotated[
        Path | None, typer.Option("--public", help="Public table of the same kind.")
    ] = None,
    mechanism: Annotated[
        Mechanism, typer.Option("--mechanism", help="Release mechanism (pubmix needs --public).")
    ] = Mechanism.gaussian,
    pubmix_accounting: Annotated[
        Accounting,
        typer.Option(
            "--pubmix-accounting", help="PubMix: tight PLD composition or a basic even split."
        ),
    ] = Accounting.tight,
    pubmix_noise: Annotated[
        PubMixNoise, typer.Option("--pubmix-noise", help="PubMix floor raising (or LinMix).")
    ] = PubMixNoise.wf,
    gamma: Annotated[
        float | None,
        typer.Option("--gamma", help="PubMix: bound on TV(public, private); default from folds."),
    ] = None,
    stream: Annotated[
        bool,
        typer.Option("--stream", help="Read PRIVATE in batches each round (larger than memory)."),
    ] = False,
    batch_rows: Annotated[
        int, typer.Option("--batch-rows", min=1, help="Rows per batch with --stream.")
    ] = 250_000,
    backend: Annotated[
        BackendName,
        typer.Option(
            "--backend", help="Where votes are computed (dask: DASK_SCHEDULER_ADDRESS or local)."
        ),
    ] = BackendName.auto,
    calibration: Annotated[
        Calibration,
        typer.Option(
            "--calibration", help="exact: hard votes under a policy search small domains."
        ),
    ] = Calibration.bound,
    population: Annotated[
        int | None, typer.Option("--population", min=1, help="Override the preset's N.")
    ] = None,
    rounds: Annotated[
        int | None, typer.Option("--rounds", min=1, help="Override the preset's rounds.")
    ] = None,
    on_invalid: InvalidOption = OnInvalid.error,
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
            help="Also write an HTML report with utility measured on PRIVATE (for the data "
            "owner only).",
        ),
    ] = None,
    share_report: Annotated[
        Path | None,
        typer.Option(
            "--share-report",
            help="Also write an HTML report safe to publish (nothing computed from PRIVATE).",
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
    show_values: ShowValues = False,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve.data.schema import Schema
    from dpevolve.synthesizer import Synthesizer

    ledger_out = check_outputs(output, force, report, share_ledger, share_report)
    if report is not None or share_report is not None:
        require("matplotlib", "--report and --share-report")
    if stream:
        require("pyarrow", "--stream")
    require_budget(epsilon, rho, delta)
    tau = _temperature(temperature)
    vote_name = _vote(vote, tau, public, mechanism, quiet)
    _soft_options(vote_name, sharpen, debias)
    table_schema = Schema.load(schema)
    public_table = read_table(public, "public table") if public is not None else None
    if policy is not None:
        from dpevolve.core.distance import make_distance
        from dpevolve.core.policy import Policy
        from dpevolve.presets import get_preset

        loaded = Policy.load(policy, table_schema)
        preset_distance = get_preset(preset.value if preset is not None else "tabpe").distance
        for warning in loaded.warnings(make_distance(preset_distance, table_schema)):
            say(quiet, f"warning: {warning}")
    chosen_backend, backend_line = _backend(backend)
    model = Synthesizer(
        table_schema,
        epsilon=epsilon,
        delta=delta,
        rho=rho,
        preset=None if preset is None else preset.value,
        vote=vote_name,
        temperature=tau,
        sharpen=sharpen,
        debias=debias,
        policy=policy,
        public=public_table,
        mechanism=mechanism.value,
        pubmix_accounting=pubmix_accounting.value,
        pubmix_noise=pubmix_noise.value,
        gamma=gamma,
        calibration=calibration.value,
        population_size=population,
        rounds=rounds,
        random_state=seed,
        noise_seed=noise_seed,
        on_invalid=on_invalid.value,
        progress=not quiet,
        backend=chosen_backend,
    )
    # Said once the arguments are known to be valid, before the (long) run.
    say(quiet, backend_line)
    if mechanism is Mechanism.pubmix and gamma is None:
        say(quiet, "gamma: estimated from folds of the public table (--gamma not given)")
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
            say(quiet, f"warning: {caught_warning.message}")
    ledger = model.ledger_.to_dict()
    _say_choices(ledger, tau, delta, epsilon, quiet)
    synthetic = model.sample(rows)
    write_table(synthetic, output)
    model.ledger_.write(ledger_out)
    if share_ledger is not None:
        model.ledger_.write(share_ledger, shareable=True)
    if report is not None or share_report is not None:
        _reports(model, private, table_schema, on_invalid, report, share_report, force, quiet)
    result = model.ledger_.result()
    say(
        quiet,
        f"wrote {output} ({len(synthetic)} rows) and {ledger_out} "
        f"(epsilon={result.epsilon:.4g}, delta={result.delta:.3g})",
    )


def _temperature(text: str | None) -> float | Literal["auto"] | None:
    if text is None:
        return None
    if text == "auto":
        return "auto"
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"--temperature must be a number or 'auto', got '{text}'") from None
    if not value > 0:
        raise InputError(f"--temperature must be > 0, got {text}")
    return value


def _vote(
    vote: VoteName | None,
    tau: float | Literal["auto"] | None,
    public: Path | None,
    mechanism: Mechanism,
    quiet: bool,
) -> str | None:
    """The vote, in the command line's words when a combination cannot work."""
    if tau == "auto" and public is None:
        raise InputError("--temperature auto needs --public (the pilot runs on public data)")
    if vote is VoteName.soft and tau is None:
        raise InputError("--vote soft needs --temperature TAU (or --temperature auto --public P)")
    if vote is VoteName.hard and isinstance(tau, float):
        raise InputError("--temperature is for --vote soft; drop it or use --vote soft")
    if vote is None and isinstance(tau, float):
        say(quiet, f"vote: soft (--temperature {tau:g} given without --vote)")
        vote = VoteName.soft
    if mechanism is Mechanism.pubmix and vote in (VoteName.soft, VoteName.auto):
        raise InputError(f"--mechanism pubmix needs hard votes: drop --vote {vote.value}")
    if vote is VoteName.auto and public is None:
        raise InputError("--vote auto needs --public (the pilot runs on public data)")
    if vote is VoteName.auto and tau is not None:
        raise InputError("--vote auto chooses the temperature itself: drop --temperature")
    return None if vote is None else vote.value


def _soft_options(vote: str | None, sharpen: float, debias: int) -> None:
    """--sharpen and --debias shape a soft vote that the user chose."""
    given = [f for f, on in (("--sharpen", sharpen != 1.0), ("--debias", debias > 0)) if on]
    if not given:
        return
    if vote == "auto":
        raise InputError(f"--vote auto chooses {' and '.join(given)} itself: drop it")
    if vote != "soft":
        raise InputError(f"{' and '.join(given)} shape a soft vote: add --temperature TAU")


def _backend(name: BackendName) -> tuple[Any, str]:
    """The backend, and one line saying which and why."""
    if name is BackendName.dask:
        import os

        try:
            from dask.distributed import Client
        except ImportError:
            raise InputError("--backend dask needs dask: pip install 'dpevolve[dask]'") from None

        from dpevolve.backends.dask import DaskBackend

        address = os.environ.get("DASK_SCHEDULER_ADDRESS")
        dask = DaskBackend(Client(address) if address else Client(processes=False))
        return dask, f"backend: dask ({address or 'local in-process cluster'}; {dask.describe()})"
    if name is BackendName.gpu:
        from dpevolve.backends.gpu import GpuBackend

        try:
            return GpuBackend(), "backend: gpu"
        except InputError:
            raise InputError(
                "--backend gpu found no usable GPU (needs torch with CUDA: "
                "pip install 'dpevolve[gpu]', or CuPy); use --backend auto instead"
            ) from None
    from dpevolve.backends import make_backend

    chosen = make_backend(name.value)
    if name is not BackendName.auto:
        return chosen, f"backend: {name.value}"
    why = (
        "fused numba kernels (--backend auto: numba is installed)"
        if type(chosen).__name__ == "FusedBackend"
        else "local numpy reference (--backend auto: numba is not installed; "
        "pip install 'dpevolve[fast]' is faster)"
    )
    return chosen, f"backend: {why}"


def _say_choices(
    ledger: dict[str, Any],
    tau: float | Literal["auto"] | None,
    delta: float | None,
    epsilon: float | None,
    quiet: bool,
) -> None:
    """Automatic choices made inside the run, one line each."""
    if tau == "auto":
        vote = _find(ledger, "vote") or {}
        if vote.get("name") == "soft":
            say(
                quiet,
                f"temperature auto: soft vote at tau={vote.get('temperature')} (the public "
                "pilot forecast it beats the hard vote; no private budget spent)",
            )
        else:
            say(
                quiet,
                "temperature auto: hard vote (the public pilot forecast no soft-vote "
                "temperature beats it at this budget; no private budget spent)",
            )
    validation = _find(ledger, "validation")
    if isinstance(validation, dict) and validation.get("rows_in") != validation.get("rows_out"):
        say(
            quiet,
            f"private table: --on-invalid {validation.get('on_invalid')} kept "
            f"{validation.get('rows_out')} of {validation.get('rows_in')} rows "
            "(counts from the private data: in the ledger, not in --share-ledger)",
        )
    if delta is None and epsilon is not None:
        say(
            quiet,
            f"delta: {ledger.get('delta', float('nan')):.3g} = min(1e-5, 1/(n ln n)) "
            "(--delta not given)",
        )


def _find(ledger: dict[str, Any], key: str) -> Any:
    """A metadata entry of the ledger, top level or under ``metadata``."""
    if key in ledger:
        return ledger[key]
    meta = ledger.get("metadata")
    return meta.get(key) if isinstance(meta, dict) else None


def _reports(
    model: Any,
    private: Path,
    schema: Any,
    on_invalid: OnInvalid,
    report: Path | None,
    share_report: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    from dpevolve.reporting.report import write_report

    ledger = model.ledger_.to_dict()
    if share_report is not None:
        # Renders the ledger's public part only: no private table is passed at all.
        write_report(share_report, ledger=ledger, schema=schema, public_safe=True, force=force)
    if report is None:
        return
    from dpevolve.reporting.evaluation import evaluate as run_evaluation

    private_table = read_valid(private, schema, on_invalid, "private table", quiet=True)
    evaluation = run_evaluation(private_table, model.synthetic_, schema, label=schema.label)
    write_report(
        report,
        ledger=ledger,
        evaluation=evaluation,
        real=private_table,
        synthetic=model.synthetic_,
        schema=schema,
        force=force,
    )
