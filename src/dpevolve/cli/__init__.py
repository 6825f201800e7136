"""The command line, thin over the Python API: one module per command.

Exit status: 0 on success, 2 on bad input or usage (one line on stderr naming the
problem), 1 on an internal error, 130 or 143 when interrupted by SIGINT (Ctrl-C) or
SIGTERM (a run that spent budget leaves the ledger of what it spent:
:mod:`dpevolve.cli.interrupt`). Outputs are written atomically and never replace an
existing file without ``--force``.

Start-up is kept short: importing this package loads nothing heavy (no typer, pandas,
numba, OpenDP, matplotlib or scikit-learn); ``--version`` answers from the package
metadata alone, and each command imports what it needs when it runs.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpevolve.cli.common import app, check_outputs, ledger_path

__all__ = ["app", "check_outputs", "ledger_path", "main"]

_VERSION_ONLY = (["--version"], ["-V"])


def main(argv: list[str] | None = None) -> int:
    """Console entry point: maps errors to exit codes 2 (input) and 1 (internal)."""
    args = sys.argv[1:] if argv is None else [str(a) for a in argv]
    if args in _VERSION_ONLY:
        from dpevolve import __version__

        print(f"dpevolve {__version__}")
        return 0
    try:  # Ctrl-C while the command's modules load: nothing has run yet
        from dpevolve.cli.entry import run
        from dpevolve.data.messages import rows_as_file_lines, show_values
    except KeyboardInterrupt:
        print("dpevolve: interrupted", file=sys.stderr)
        return 130
    # Read here, before the command runs, so every message of the run can see it (and
    # taken out: a command need not declare it).
    shown = "--show-values" in args
    args = [a for a in args if a != "--show-values"]
    # Every table a command reads comes from a file: rows are named by their line.
    with show_values(shown), rows_as_file_lines():
        return run(args)


def __getattr__(name: str) -> Any:
    # The typer app (with every command registered) and the helpers it shares, built on
    # first use.
    if name in ("app", "check_outputs", "ledger_path"):
        from dpevolve.cli import common, entry  # noqa: F401  (entry registers the commands)

        return getattr(common, name)
    raise AttributeError(name)


if __name__ == "__main__":
    sys.exit(main())
