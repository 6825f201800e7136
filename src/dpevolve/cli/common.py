"""What every command shares: the Typer apps, common options, and small helpers.

Each command lives in its own module (``synth``, ``pubmix``, ``schema``, ...) and
registers itself on the apps defined here; :mod:`dpevolve.cli` imports them all.
"""

from __future__ import annotations

import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from dpevolve.data.io import TABLE_SUFFIXES, check_writable, read_table
from dpevolve.errors import InputError

# Plain click-style help (no rich boxes): flags show as flags, choices as [a|b], and the
# text wraps in any terminal width.
_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    name="dpevolve",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=_SETTINGS,
)
schema_app = typer.Typer(
    help="Write (from public data) and check schemas.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_SETTINGS,
)
policy_app = typer.Typer(
    help="Blowfish policies: reach, sensitivity bounds, budget savings.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_SETTINGS,
)
datasets_app = typer.Typer(
    help="Built-in datasets and their schemas.",
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings=_SETTINGS,
)
app.add_typer(schema_app, name="schema")
app.add_typer(policy_app, name="policy")
app.add_typer(datasets_app, name="datasets")


class OnInvalid(StrEnum):
    """What to do with cells outside the schema."""

    error = "error"
    drop = "drop"
    clip = "clip"


class Distance(StrEnum):
    """Record distances."""

    gower = "gower"
    tabpe = "tabpe"


# ------------------------------------------------------------------ shared options
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
# Read by main() before the command runs, so every message of the run can see it.
ShowValues = Annotated[
    bool, typer.Option("--show-values", help="Let error messages quote private cells.")
]
Force = Annotated[bool, typer.Option("--force", help="Replace existing output files.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar or messages.")]
SchemaPath = Annotated[
    Path, typer.Option("--schema", "-s", help="Schema YAML (declared domains of every column).")
]
InvalidOption = Annotated[
    OnInvalid,
    typer.Option(
        "--on-invalid",
        help="Cells outside the schema: stop with an error, drop their rows, or clip numbers "
        "to the declared range (rows that cannot be clipped are dropped).",
    ),
]
Epsilon = Annotated[
    float | None,
    typer.Option("--epsilon", "-e", help="Privacy budget epsilon (with --delta), or give --rho."),
]
Delta = Annotated[
    float | None,
    typer.Option(
        "--delta", "-d", help="Privacy budget delta; default min(1e-5, 1/(n ln n)), n = rows."
    ),
]
Rho = Annotated[
    float | None, typer.Option("--rho", help="Privacy budget as zCDP rho, instead of epsilon.")
]


# ------------------------------------------------------------------------ helpers
def ledger_path(output: Path) -> Path:
    """``OUT.csv`` -> ``OUT.ledger.json`` (the table suffix replaced)."""
    name = output.name
    for suffix in sorted(TABLE_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return output.with_name(name[: -len(suffix)] + ".ledger.json")
    return output.with_name(name + ".ledger.json")


def check_outputs(output: Path, force: bool, *extras: Path | None) -> Path:
    """Refuse, before any work, to replace the table, its ledger or an extra output."""
    check_writable(output, force)  # first: a folder has no ledger path
    ledger_out = ledger_path(output)
    for path in (ledger_out, *extras):
        if path is not None:
            check_writable(path, force)
    return ledger_out


def require_budget(epsilon: float | None, rho: float | None, delta: float | None = None) -> None:
    """A run must be given a valid budget (there is no silent default), checked before
    anything is read or said."""
    if epsilon is None and rho is None:
        raise InputError("give a budget: --epsilon (with --delta) or --rho")
    for flag, value in (("--epsilon", epsilon), ("--rho", rho)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise InputError(f"{flag} must be > 0 and finite, got {value}")
    if delta is not None and not 0 < delta < 1:
        raise InputError(f"--delta must be in (0, 1), got {delta}")


def say(quiet: bool, message: str) -> None:
    """One line on stderr (stdout stays for results), unless ``--quiet``."""
    if not quiet:
        typer.echo(message, err=True)


def read_valid(
    path: Path, schema: Any, on_invalid: OnInvalid, what: str, quiet: bool = False
) -> Any:
    """Read a table and fit it to ``schema`` the same way in every command.

    The repaired table is returned; what was dropped or clipped is said in one line
    (those counts describe the table read, so they are printed, not released).
    """
    frame, report = schema.validate(read_table(path, what), on_invalid=on_invalid.value, what=what)
    if report.changed:
        dropped = sum(report.dropped.values())
        clipped = sum(report.clipped.values())
        say(
            quiet,
            f"{what}: --on-invalid {on_invalid.value} kept {report.rows_out} of "
            f"{report.rows_in} rows ({dropped} bad cells dropped, {clipped} clipped)",
        )
    return frame
