"""``dpevolve report``: the HTML report of a run, made later from the files it wrote.

Nothing is spent: the report reads the ledger (checked), the synthetic table and, for
the owner's version, the private table and an optional held-out test table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from dpevolve.cli.common import (
    Force,
    InvalidOption,
    OnInvalid,
    Quiet,
    ShowValues,
    app,
    read_valid,
    say,
)
from dpevolve.data.io import DEFAULT_BATCH_ROWS, read_table
from dpevolve.errors import InputError
from dpevolve.extras import require

__all__ = ["REPORT_SAMPLE_ROWS", "read_ledger", "write_reports"]

REPORT_SAMPLE_ROWS = 200_000
"""Most private rows a report of a streamed table reads (a uniform sample)."""


@app.command(
    help="HTML report of a run from the files it wrote (no budget is spent).\n\n"
    "Reads the ledger the run wrote beside SYNTHETIC. Give --test (held-out real rows) for "
    "an honest utility estimate; without it the scores are on PRIVATE and optimistic. "
    "--share writes the version safe to publish (PRIVATE is then not read).\n\n"
    "Examples:\n\n\b\n"
    "  dpevolve report private.csv synthetic.csv --ledger synthetic.ledger.json\n"
    "  dpevolve report private.csv synthetic.csv --ledger synthetic.ledger.json "
    "--test test.csv -o report.html\n"
    "  dpevolve report private.csv synthetic.csv --ledger synthetic.ledger.json --share"
)
def report(
    private: Annotated[
        Path, typer.Argument(metavar="PRIVATE", help="Private table the run was made from.")
    ],
    synthetic: Annotated[
        Path, typer.Argument(metavar="SYNTHETIC", help="Synthetic table written.")
    ],
    ledger: Annotated[Path, typer.Option("--ledger", "-l", help="The run's ledger (JSON).")],
    test: Annotated[
        Path | None, typer.Option("--test", help="Held-out real rows to test utility on.")
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="HTML to write (default: SYNTHETIC's name + .report.html)."
        ),
    ] = None,
    share: Annotated[
        bool, typer.Option("--share", help="Write the shareable version (nothing from PRIVATE).")
    ] = False,
    stream: Annotated[
        bool,
        typer.Option(
            "--stream",
            help="Read PRIVATE in batches and evaluate on a uniform sample of "
            f"{REPORT_SAMPLE_ROWS:,} rows (larger than memory).",
        ),
    ] = False,
    on_invalid: InvalidOption = OnInvalid.error,
    force: Force = False,
    show_values: ShowValues = False,
    quiet: Quiet = False,
) -> None:
    from dpevolve.data.schema import Schema

    if share and test is not None:
        raise InputError("--test is for the owner's report; the shared one reads no real rows")
    out = output if output is not None else _default_output(synthetic, share)
    from dpevolve.cli.preflight import check_paths  # schema and pandas: not for -h

    check_paths([private, synthetic, ledger, test], [out], force)
    require("matplotlib", "dpevolve report")
    led = read_ledger(ledger)
    try:
        schema = Schema.from_dict(led["schema"])
    except InputError as exc:
        raise InputError(f"ledger {ledger}: its schema is not valid: {exc}") from None
    if not share and schema.label is not None:
        require("sklearn", "the report's train-on-synthetic, test-on-real scores")
    synthetic_frame = read_table(synthetic, "synthetic table")
    write_reports(
        led, None if share else private, synthetic_frame, schema, on_invalid,
        None if share else out, out if share else None, force, test=test, quiet=quiet,
        stream_rows=DEFAULT_BATCH_ROWS if stream else None,
    )  # fmt: skip
    say(quiet, f"wrote {out}" + ("" if share else " (for the data owner only: not DP)"))


def _default_output(synthetic: Path, share: bool) -> Path:
    name = synthetic.name
    for suffix in (".csv.gz", ".csv", ".parquet", ".pq"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return synthetic.with_name(name + (".report-public.html" if share else ".report.html"))


def read_ledger(path: Path) -> dict[str, Any]:
    """A run's ledger, checked: a JSON object with a guarantee, events and a schema."""
    if not path.is_file():
        raise InputError(f"ledger file not found: {path}")
    try:
        led = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise InputError(
            f"ledger {path} is not JSON (give the .ledger.json the run wrote)"
        ) from None
    if not isinstance(led, dict):
        raise InputError(f"ledger {path} is not a JSON object")
    missing = [k for k in ("epsilon", "delta", "events", "schema") if k not in led]
    if missing:
        raise InputError(f"ledger {path} lacks {', '.join(missing)}: is it a dpevolve ledger?")
    if not isinstance(led["events"], list) or not all(isinstance(e, dict) for e in led["events"]):
        raise InputError(f"ledger {path}: 'events' must be a list of objects")
    for key in ("epsilon", "delta"):
        value = led[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise InputError(f"ledger {path}: '{key}' must be a number")
    if not isinstance(led["schema"], Mapping):
        raise InputError(f"ledger {path}: 'schema' must be an object")
    return led


def write_reports(
    ledger: Mapping[str, Any],
    private: Path | None,
    synthetic: Any,
    schema: Any,
    on_invalid: OnInvalid,
    report: Path | None,
    share_report: Path | None,
    force: bool,
    test: Path | None = None,
    quiet: bool = True,
    stream_rows: int | None = None,
) -> None:
    """Write the owner's and/or the shareable report of the synthetic rows written.

    ``synthetic`` is the table as written (decoded) or already validated; the private
    and test tables are read from their files and validated against ``schema``.
    ``stream_rows`` (the ``--stream`` batch size): read the private table in batches
    and evaluate on a uniform sample of at most :data:`REPORT_SAMPLE_ROWS` of its rows,
    so the report's memory is bounded as the run's was.
    """
    from dpevolve.reporting.evaluation import evaluate
    from dpevolve.reporting.report import write_report

    synth_valid = schema.validate(synthetic, on_invalid="error", what="synthetic table")[0]
    if share_report is not None:
        # The ledger's public part and the released rows only: no private table at all.
        write_report(
            share_report, ledger=ledger, synthetic=synth_valid, schema=schema,
            public_safe=True, force=force, validated=True,
        )  # fmt: skip
    if report is None or private is None:
        return
    raw, rows_in = _private_rows(private, schema, on_invalid, stream_rows)
    n = ledger.get("private_rows")
    if isinstance(n, int) and n != rows_in:  # n is public under replace-one
        raise InputError(
            "the private table's row count differs from the one the ledger records: "
            "is it the table this run was made from?"
        )
    real = schema.validate(raw, on_invalid=on_invalid.value, what="private table")[0]
    held_out = read_valid(test, schema, on_invalid, "test table", quiet=quiet) if test else None
    evaluation = evaluate(
        real, synth_valid, schema, label=schema.label, test=held_out, validated=True
    )
    if len(raw) < rows_in:
        evaluation["private_sample"] = {"rows": len(raw), "of": rows_in}
    write_report(
        report, ledger=ledger, evaluation=evaluation, real=real, synthetic=synth_valid,
        schema=schema, force=force, validated=True,
    )  # fmt: skip


def _private_rows(
    private: Path, schema: Any, on_invalid: OnInvalid, stream_rows: int | None
) -> tuple[Any, int]:
    """The private rows the report evaluates, and the file's row count."""
    if stream_rows is None:
        raw = read_table(private, "private table")
        return raw, len(raw)
    from dpevolve.data.streaming import StreamedTable

    table = StreamedTable(private, schema, batch_rows=stream_rows, on_invalid=on_invalid.value)
    return table.sample_frame(REPORT_SAMPLE_ROWS), table.n
