"""``dpevolve demo``: the main job end to end on a built-in dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dpevolve.cli.common import Force, Quiet, Seed, app, ledger_path, say
from dpevolve.cli.interrupt import accounted, at_stake
from dpevolve.data.io import write_json, write_table
from dpevolve.errors import InputError
from dpevolve.extras import require


@app.command(
    help="Synthesize a built-in dataset end to end: table, ledger, evaluation, reports.\n\n"
    "Writes synthetic.csv, synthetic.ledger.json, evaluation.json, report.html (for the "
    "data owner) and report-public.html (safe to share) into the output folder.\n\n"
    "Examples:\n\n\b\n"
    "  dpevolve demo\n"
    "  dpevolve demo --dataset adult --epsilon 1 -o adult-demo   # needs the Adult files"
)
@accounted
def demo(
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder for the outputs.")] = Path(
        "demo-output"
    ),
    dataset: Annotated[
        str, typer.Option("--dataset", help="demo (built in), adult, ... (dpevolve datasets list)")
    ] = "demo",
    epsilon: Annotated[float, typer.Option("--epsilon", "-e", help="Privacy budget.")] = 1.0,
    delta: Annotated[float, typer.Option("--delta", "-d", help="Privacy budget delta.")] = 1e-5,
    method: Annotated[
        str | None,
        typer.Option(
            "--method",
            "--preset",
            "-p",
            help="adaptive (default), tabpe, bfsoft or hybrid (see the user guide).",
        ),
    ] = None,
    seed: Seed = 0,
    force: Force = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve import datasets
    from dpevolve.reporting.evaluation import evaluate as run_evaluation
    from dpevolve.reporting.evaluation import format_report
    from dpevolve.reporting.report import write_report
    from dpevolve.synthesizer import Synthesizer

    # Every check before the folder is made: a failed demo leaves nothing behind.
    require("matplotlib", "dpevolve demo (it writes HTML reports)")
    require("sklearn", "dpevolve demo (it scores the synthetic table)")
    if output.exists() and not output.is_dir():
        raise InputError(f"--output {output} is a file: give a folder")
    table_out = output / "synthetic.csv"
    ledger_out = ledger_path(table_out)
    eval_out = output / "evaluation.json"
    report_out = output / "report.html"
    public_out = output / "report-public.html"
    outputs = [table_out, ledger_out, eval_out, report_out, public_out]
    if output.is_dir():
        from dpevolve.cli.preflight import check_paths  # schema and pandas: not for -h

        check_paths([], outputs, force)
    data = datasets.load(dataset)
    test = _maybe_split(dataset, "test")
    # The public table of the same kind a steward has (where a schema comes from), passed
    # as --public would be: it places the numeric bins at no privacy cost.
    public = _maybe_split(dataset, "public")
    output.mkdir(parents=True, exist_ok=True)
    stake = at_stake(ledger_out, outputs=(table_out, eval_out, report_out, public_out),
                     epsilon=epsilon)  # fmt: skip
    model = Synthesizer(
        data.schema,
        epsilon=epsilon,
        delta=delta,
        method=method,
        random_state=seed,
        progress=not quiet,
        public=public,
    )
    say(
        quiet,
        f"{data.name}: {len(data.frame)} private rows, {len(data.schema)} columns; "
        f"epsilon={epsilon}, delta={delta}, method={model.resolved_method().name}"
        + ("" if public is None else f"; public table: {len(public)} rows of the same kind"),
    )
    model.fit(data.frame)
    stake.ledger = model.ledger_
    synthetic = model.sample()  # as many rows as the private table (n is public)
    write_table(synthetic, table_out)
    model.ledger_.write(ledger_out)
    result = run_evaluation(data.frame, synthetic, data.schema, label=data.label, test=test)
    write_json(result, eval_out)
    ledger = model.ledger_.to_dict()
    write_report(
        report_out,
        ledger=ledger,
        evaluation=result,
        real=data.frame,
        synthetic=synthetic,
        schema=data.schema,
        title=f"dpevolve demo: {data.name}",
        force=force,
    )
    write_report(
        public_out,
        ledger=ledger,
        synthetic=synthetic,
        schema=data.schema,
        title=f"dpevolve demo: {data.name}",
        public_safe=True,
        force=force,
    )
    say(quiet, format_report(result))
    say(quiet, f"wrote {table_out}, {ledger_out}, {eval_out}, {report_out} and {public_out}")
    say(quiet, "")
    say(quiet, headline(result, model.resolved_method().name))


def headline(result: dict[str, Any], method: str) -> str:
    """The demo's last line: TSTR beside the majority class and the real table's model,
    and whether it beats the majority class."""
    from dpevolve.reporting.evaluation import verdict

    tstr = result.get("tstr") or {}
    accuracy, majority = tstr.get("accuracy"), tstr.get("baseline_accuracy")
    if accuracy is None or majority is None:
        return f"headline ({method}): {verdict(result)}"
    real = (tstr.get("real") or {}).get("accuracy")
    where = "held-out" if tstr.get("test") == "held-out" else "private (optimistic)"
    text = (
        f"headline ({method}): TSTR accuracy {accuracy:.3f} on {where} rows; "
        f"majority class {majority:.3f}"
    )
    if real is not None:
        text += f"; the real table's own model {real:.3f}"
    beats = accuracy > majority
    text += ". It " + ("beats" if beats else "does NOT beat") + " the majority class"
    if real is not None:
        text += f" and is {abs(real - accuracy) * 100:.1f} points "
        text += "below the real table's." if accuracy <= real else "above the real table's."
    return text


def _maybe_split(name: str, split: str) -> Any:
    from dpevolve import datasets

    try:
        return datasets.load(name, split=split).frame
    except InputError:
        return None
