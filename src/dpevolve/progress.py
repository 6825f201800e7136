"""Progress of a run's long phases, on stderr (rich), or nothing.

A phase that can take more than a couple of seconds (PE rounds, the marginal release,
the pool fit) shows a bar with elapsed time. Bars go to stderr, so stdout stays for
results, and they carry only public text: phase names, counts fixed by the schema and
the settings (rounds, marginal sets, cells, solver iterations) and the budget spent.
Never a private value or a count read from private records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Advance = Callable[..., None]


def _silent(*_args: Any, **_fields: Any) -> None:
    return None


@contextmanager
def phase(
    enabled: bool, label: str, total: float | None, *columns: Any, **fields: Any
) -> Iterator[Advance]:
    """A progress bar for one phase, on stderr; ``advance(completed, **fields)`` moves it.

    Parameters
    ----------
    enabled
        ``False`` yields a no-op (``--quiet``, or ``progress=False`` in the API).
    label
        Public text shown before the bar.
    total
        Units of work (``None``: unknown, the bar pulses while the phase runs).
    *columns
        Extra rich columns after the bar (e.g. the budget spent, from ``fields``).
    **fields
        Initial values of the fields those columns show.

    Yields
    ------
    callable
        ``advance(completed, **fields)``: the units done so far, and updated fields.
    """
    if not enabled:
        yield _silent
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    shown: list[Any] = [TextColumn(f"[bold]{label}")]
    if total is not None:
        shown.append(MofNCompleteColumn())
    with Progress(
        *shown,
        BarColumn(),
        *columns,
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    ) as bar:
        task = bar.add_task(label, total=total, **fields)

        def advance(completed: float, **changed: Any) -> None:
            bar.update(task, completed=completed, **changed)

        yield advance
        if total is not None:
            bar.update(task, completed=total)


def text_column(template: str) -> Any:
    """A rich column showing ``template`` formatted with the task (``{task.fields[x]}``)."""
    from rich.progress import TextColumn

    return TextColumn(template)


__all__ = ["Advance", "phase", "text_column"]
