"""The typer side of the entry point: every command registered, the root options, and
exit codes for what a command raises (imported by :func:`dpevolve.cli.main` when a
command, or its help, is asked for).
"""

from __future__ import annotations

from typing import Annotated

import typer

from dpevolve.cli import datasets, demo, evaluate, policy, pubmix, report, schema, synth
from dpevolve.cli.common import app
from dpevolve.cli.interrupt import SIGNAL_STATUS
from dpevolve.data.messages import internal_error
from dpevolve.errors import InputError
from dpevolve.privacy.interrupt import signal_of

# Registered on import.
_COMMANDS = (datasets, demo, evaluate, policy, pubmix, report, schema, synth)


def _version(value: bool) -> None:
    if value:
        from dpevolve import __version__

        typer.echo(f"dpevolve {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Differentially private synthetic tables by Private Evolution.

    Start with `dpevolve demo`; `dpevolve COMMAND -h` explains one command. Exit
    status: 0 success, 2 bad input or usage, 1 internal error, 130/143 interrupted
    (Ctrl-C/SIGTERM; what was spent stays in the ledger).
    """


def _kind(exc: BaseException) -> set[str]:
    """Class names up the MRO: typer vendors click in new releases and reuses it in old
    ones, so its exceptions are recognised by name, not by one import."""
    return {cls.__name__ for cls in type(exc).__mro__}


def run(argv: list[str]) -> int:
    """Run one command line; errors become exit codes 2 (input) and 1 (internal), an
    interrupt 130 (SIGINT) or 143 (SIGTERM) (:mod:`dpevolve.cli.interrupt`)."""
    try:
        # typer returns the status of a typer.Exit (an interrupted command's included).
        status = app(args=argv, prog_name="dpevolve", standalone_mode=False)
    except InputError as exc:
        typer.echo(f"dpevolve: error: {exc}", err=True)
        return 2
    except KeyboardInterrupt as exc:
        typer.echo("dpevolve: interrupted", err=True)
        return SIGNAL_STATUS + signal_of(exc)
    except Exception as exc:
        kind = _kind(exc)
        ctx = getattr(exc, "ctx", None)
        if "NoArgsIsHelpError" in kind and ctx is not None:  # bare `dpevolve`, `dpevolve schema`
            typer.echo(ctx.get_help())
            return 0
        if "Exit" in kind:
            return int(getattr(exc, "exit_code", 0))
        if "Abort" in kind:
            typer.echo("dpevolve: aborted", err=True)
            return 130
        if "ClickException" in kind:  # bad option, missing argument, bad choice
            text = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
            hint = f" (see `{ctx.command_path} -h`)" if "UsageError" in kind and ctx else ""
            typer.echo(f"dpevolve: error: {text}{hint}", err=True)
            return 2
        typer.echo(f"dpevolve: internal error: {internal_error(exc)}", err=True)
        return 1
    return status if isinstance(status, int) else 0


__all__ = ["app", "run"]
