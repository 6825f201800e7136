"""What passes between the facade and an algorithm: a method fits, a generator samples.

A method is a typed spec, the way OpenDP's algorithm object is its configuration: its
fields are every setting it has, it checks them when made, and it writes them in the
words its reader takes back (a ledger's ``config`` block re-runs it). Two calls are the
whole interface (docs/architecture.md, "Methods"):

* ``Method.fit(source, schema, budget, context) -> Generator`` spends ``budget`` on the
  private records of ``source`` and records every release in the ledger it opens
  (:meth:`FitContext.open`);
* ``Generator.sample(rows, rng) -> DataFrame`` draws rows from what was released
  (post-processing: no privacy cost).

The adaptive engine (:class:`~dpevolve.engine.method.AdaptiveMethod`) is the default
method; Private Evolution (:class:`~dpevolve.pe.method.PEMethod`) is another. A method
that cannot use an input (a policy, public data) refuses it by name
(:func:`refuse_inputs`) instead of handing the run to another algorithm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dpevolve.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from dpevolve.backends import Backend
    from dpevolve.data.schema import Schema
    from dpevolve.data.sources import PrivateSource
    from dpevolve.measurements import MeasurementList
    from dpevolve.privacy import Budget, Ledger
    from dpevolve.privacy.noise import NoiseSource


@runtime_checkable
class Generator(Protocol):
    """What a fit released, ready to draw rows (post-processing)."""

    def sample(self, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` synthetic rows (decoded) drawn with ``rng``."""
        ...  # pragma: no cover


@dataclass
class FitContext:
    """Everything a method's fit is handed besides the records, the schema and the budget.

    Attributes
    ----------
    run
        The facade's facts about the run (version, seed, noise kind, ``n``, fit number),
        the first entries of the ledger the method opens.
    noise
        The one noise source (:func:`~dpevolve.privacy.noise.make_noise`).
    rng
        Post-processing randomness of the fit (never the privacy noise).
    public
        Public records of the same kind, or ``None``.
    policy
        A Blowfish policy (object or YAML path), or ``None``: whole records protected.
    backend
        Where the private records are counted: a name, a backend object or ``None``
        (``auto``).
    on_invalid
        ``error``, ``drop`` or ``clip`` (the source applied it; methods record it).
    progress
        Show progress on stderr (released values only).
    opened
        Called with the ledger as soon as the method opens it, so an interrupted run
        still hands over what it spent (:mod:`dpevolve.privacy.interrupt`).
    ledger, history, warnings, measurements
        What the method hands back beside its generator: the ledger it opened (every
        release), per-round facts from released values, what it said before spending,
        and every release as a measurement, one per ledger event, in ledger order.
    """

    run: dict[str, Any]
    noise: NoiseSource
    rng: np.random.Generator
    public: pd.DataFrame | None = None
    policy: Any = None
    backend: Backend | str | None = None
    on_invalid: str = "error"
    progress: bool = False
    opened: Callable[[Ledger], None] = field(default=lambda ledger: None)
    ledger: Ledger | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    measurements: MeasurementList | None = None

    def open(self, ledger: Ledger) -> Ledger:
        """Hand over the run's ledger the moment it opens (before anything is spent)."""
        self.ledger = ledger
        self.opened(ledger)
        return ledger

    @property
    def backend_name(self) -> str:
        """The backend as a run file names it (``auto`` when none was chosen)."""
        from dpevolve.config import backend_name

        return self.backend if isinstance(self.backend, str) else backend_name(self.backend)


@runtime_checkable
class Method(Protocol):
    """A synthesis algorithm as a typed spec (see the module)."""

    @property
    def name(self) -> str:
        """The method's name (the ledger's ``preset``)."""
        ...  # pragma: no cover

    def fit(
        self, source: PrivateSource, schema: Schema, budget: Budget, context: FitContext
    ) -> Generator:
        """Spend ``budget`` (delta resolved for ``source.n``) on ``source``; the ledger,
        the history and the warnings go to ``context`` (:meth:`FitContext.open`)."""
        ...  # pragma: no cover

    def to_dict(self) -> dict[str, Any]:
        """The settings in the words of a run file (a ledger's ``config`` block)."""
        ...  # pragma: no cover

    def check_inputs(self, *, policy: bool, public: bool) -> None:
        """Refuse, by name, an input this method cannot use (``fit`` calls it first; a
        caller may call it earlier, before reading any table)."""
        ...  # pragma: no cover


def refuse_inputs(method: str, given: Mapping[str, bool], mend: str) -> None:
    """One line naming every input ``method`` cannot use (``given``: input -> given)."""
    refused = [name for name, present in given.items() if present]
    if refused:
        verb = "is" if len(refused) == 1 else "are"
        raise InputError(
            f"the {method} method cannot use {', '.join(refused)}: it {verb} ignored by "
            f"this method, so it is refused ({mend})"
        )


def config_words(method: Method, context: FitContext) -> dict[str, Any]:
    """A ledger's ``config`` block: the method's words, the backend's name and
    ``on_invalid`` (a run file's words: ``--method LEDGER`` re-runs it, with the budget
    the ledger records once, under ``budget``)."""
    return {
        **method.to_dict(),
        "backend": context.backend_name,
        "on_invalid": context.on_invalid,
    }


def blocks_of(generator: Generator, rows: int, size: int, rng: Any) -> Iterator[pd.DataFrame]:
    """``rows`` rows of ``generator`` in blocks of at most ``size``, drawn one at a time
    (memory bounded by a block): its own ``blocks`` when it has them."""
    own = getattr(generator, "blocks", None)
    if own is not None:
        yield from own(rows, rng)
        return
    from dpevolve.engine.refine import block_sizes

    for block in block_sizes(rows, size):
        yield generator.sample(block, rng)


__all__ = ["FitContext", "Generator", "Method", "blocks_of", "config_words", "refuse_inputs"]
