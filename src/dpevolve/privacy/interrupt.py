"""An interrupted run accounts for what it spent (docs/privacy.md, "An interrupted run").

Every release is recorded in the run's ledger before anything the run writes depends on
its noisy value, so at any instant the ledger lists every release whose value could
reach an output. :func:`spending` follows the ledger a run opens; when the run is
interrupted (Ctrl-C's ``KeyboardInterrupt``, or :class:`Terminated` under
:func:`terminate_as_interrupt`) it raises :class:`Interrupted`, a ``KeyboardInterrupt``
that carries that ledger: the spend is never lost with the run. Nothing is undone: what
was released stays spent, and running again spends again.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpevolve.privacy.events import ZeroCostEvent
from dpevolve.privacy.ledger import Ledger


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised as an interrupt by :func:`terminate_as_interrupt`'s handler, so
    that both signals take the one path that records the spend."""


class Interrupted(KeyboardInterrupt):
    """A run stopped by an interrupt, with the ledger of what it spent.

    A ``KeyboardInterrupt``, so code that stops on Ctrl-C still stops.

    Attributes
    ----------
    ledger
        The run's ledger: every release made before the interrupt (``None`` when the run
        stopped before it opened one). ``ledger.write(path)`` keeps it.
    signum
        The signal that stopped the run (``signal.SIGINT`` or ``signal.SIGTERM``).
    """

    def __init__(self, ledger: Ledger | None, signum: int = signal.SIGINT) -> None:
        self.ledger = ledger
        self.signum = int(signum)
        super().__init__(self.summary())

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.ledger, self.signum))

    @property
    def releases(self) -> int:
        """Releases that cost privacy, made before the interrupt."""
        return releases(self.ledger)

    def summary(self) -> str:
        """One line, public facts only: how many releases and the epsilon they cost."""
        if self.ledger is None or self.releases == 0:
            return "interrupted before any release: nothing was spent"
        return (
            f"interrupted after {self.releases} release{'s' * (self.releases != 1)}: "
            f"epsilon {self.ledger.spent():.4g} spent; the exception's ledger holds them"
        )


def releases(ledger: Ledger | None) -> int:
    """Events of ``ledger`` that cost privacy (a free event, such as a public pilot's
    choice, spends nothing)."""
    if ledger is None:
        return 0
    return sum(not isinstance(event, ZeroCostEvent) for event in ledger.events)


def signal_of(exc: BaseException) -> int:
    """The signal behind an interrupt: SIGTERM for :class:`Terminated`, else SIGINT."""
    if isinstance(exc, Interrupted):
        return exc.signum
    return signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT


class Spending:
    """The ledger of the run under way: ``None`` until the run opens it."""

    def __init__(self) -> None:
        self.ledger: Ledger | None = None


@contextmanager
def spending() -> Iterator[Spending]:
    """Follow a run's ledger; an interrupt inside becomes :class:`Interrupted` with it.

    The run sets ``spend.ledger`` as soon as it opens its ledger. An :class:`Interrupted`
    from a nested run (a public pilot's fit) is replaced by this run's own: only this
    run's ledger says what this run spent.
    """
    spend = Spending()
    try:
        yield spend
    except KeyboardInterrupt as exc:
        raise Interrupted(spend.ledger, signal_of(exc)) from exc


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``) instead
    of ending the process at once, so a run records its spend on either signal.

    The command line installs it; a Python program may too. Outside the main thread,
    or where SIGTERM's handler is not the default one, it changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        yield
        return

    def terminated(signum: int, frame: Any) -> None:
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


__all__ = [
    "Interrupted",
    "Spending",
    "Terminated",
    "releases",
    "signal_of",
    "spending",
    "terminate_as_interrupt",
]
