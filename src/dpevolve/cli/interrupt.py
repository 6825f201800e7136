"""A command that spends budget, interrupted (docs/privacy.md, "An interrupted run").

``synth``, ``pubmix`` and ``demo`` are wrapped by :func:`accounted`: while one runs,
SIGTERM raises like Ctrl-C (:func:`~dpevolve.privacy.interrupt.terminate_as_interrupt`),
so both signals take one path. The command says what is at stake with :func:`at_stake`
once its outputs are known to be writable, and hands over its ledger once the releases
are done. On an interrupt, with both signals held off so a second one cannot cut it
short:

1. every output this run wrote or began is removed (the table, the reports, their
   temporary files): an interrupted run leaves no synthetic table;
2. once anything was released, the ledger of what was spent is written atomically (and
   its shareable copy, if one was asked for); before any release nothing was spent and
   no ledger is written;
3. one line says which, with public facts only (releases made, epsilon spent), and the
   exit status is 130 (SIGINT) or 143 (SIGTERM).
"""

from __future__ import annotations

import functools
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import typer

from dpevolve.privacy.interrupt import Interrupted, releases, signal_of, terminate_as_interrupt
from dpevolve.privacy.ledger import Ledger

Command = TypeVar("Command", bound=Callable[..., Any])

#: Exit status of a command stopped by signal ``s``: ``128 + s``, as a shell reports it.
SIGNAL_STATUS = 128


@dataclass
class Stake:
    """What an interrupt must settle for the command under way.

    Attributes
    ----------
    ledger_out, share_ledger
        Where the ledger (and its shareable copy, if asked for) goes.
    outputs
        Everything else the command writes; whatever of it this run wrote is removed.
    epsilon
        The run's epsilon budget, if given as one (said beside the spend).
    ledger
        The complete ledger, once the releases are done (set by the command); during
        them the interrupt itself carries the ledger so far.
    """

    ledger_out: Path
    share_ledger: Path | None
    outputs: tuple[Path, ...]
    epsilon: float | None
    ledger: Ledger | None = None
    before: dict[Path, tuple[int, int, int] | None] = field(default_factory=dict)
    started: float = field(default_factory=time.time)


_STAKES: list[Stake] = []  # the command under way's (one command per process at a time)


def at_stake(
    ledger_out: Path,
    share_ledger: Path | None = None,
    outputs: tuple[Path | None, ...] = (),
    epsilon: float | None = None,
) -> Stake:
    """Declare what the running command writes; set ``.ledger`` once releases are done."""
    kept = tuple(path for path in outputs if path is not None)
    stake = Stake(ledger_out, share_ledger, kept, epsilon)
    stake.before = {path: _identity(path) for path in kept}
    _STAKES[:] = [stake]
    return stake


def accounted(command: Command) -> Command:
    """Wrap a spending command: SIGTERM as an interrupt, and an interrupt settled (see
    the module), then ``typer.Exit(130 or 143)``."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        _STAKES.clear()
        try:
            with terminate_as_interrupt():
                return command(*args, **kwargs)
        except KeyboardInterrupt as exc:
            with _signals_held():
                status = settle(exc, _STAKES[0] if _STAKES else None)
            raise typer.Exit(status) from None
        finally:
            _STAKES.clear()

    return run  # type: ignore[return-value]


def settle(exc: KeyboardInterrupt, stake: Stake | None) -> int:
    """Remove what the run wrote, write the ledger of what it spent, say so in one
    line; the exit status."""
    status = SIGNAL_STATUS + signal_of(exc)
    # Interrupted: during the releases, with the ledger so far; else after all of them.
    during = isinstance(exc, Interrupted)
    ledger = exc.ledger if isinstance(exc, Interrupted) else getattr(stake, "ledger", None)
    if stake is not None:
        _remove_written(stake)
    made = releases(ledger)
    if stake is None or ledger is None or made == 0:
        typer.echo(
            "dpevolve: interrupted before any release: nothing was spent, no ledger written",
            err=True,
        )
        return status
    ledger.write(stake.ledger_out)
    where = str(stake.ledger_out)
    if stake.share_ledger is not None:
        ledger.write(stake.share_ledger, shareable=True)
        where += f" (shareable copy: {stake.share_ledger})"
    spent = f"epsilon {ledger.spent():.4g}" + (
        f" of {stake.epsilon:g}" if stake.epsilon is not None else ""
    )
    plural = f"{made} release{'s' * (made != 1)}"
    when = plural if during else ("its only release" if made == 1 else f"all {plural}")
    typer.echo(
        f"dpevolve: interrupted after {when}: {spent} spent; no other output written; the "
        f"ledger of what was spent is in {where}",
        err=True,
    )
    return status


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_size)


def _remove_written(stake: Stake) -> None:
    """Remove the outputs this run wrote (a file replaced by ``--force`` included) and
    any temporary file an atomic write of this run left (data.io.atomic_write)."""
    for path in stake.outputs:
        if _identity(path) != stake.before.get(path) and path.is_file():
            path.unlink()
    for path in (*stake.outputs, stake.ledger_out):
        for tmp in path.parent.glob(f".{path.name}.*.tmp"):
            if tmp.is_file() and tmp.stat().st_mtime >= stake.started - 1.0:
                tmp.unlink()


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM ignored while the spend is settled (main thread only)."""
    try:
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread: signals are not ours to hold
        previous = {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


__all__ = ["SIGNAL_STATUS", "Stake", "accounted", "at_stake", "settle"]
