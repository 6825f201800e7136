"""The measurement list: the seam between private releases and estimators.

Every private release appends a :class:`Measurement` (what was asked, the noisy answer,
its noise scale and the privacy event it cost); estimators read only this list and
public inputs, so everything they do is post-processing (Dwork & Roth 2014, Prop. 2.1).
The accountant composes the events the list carries. The shape follows private-pgm's
measurement list between measuring and estimation (McKenna, Sheldon & Miklau 2019).

Attributes live on a discrete :class:`Domain` (numeric columns in public bins), and a
query names a *clique*: a tuple of attribute names in domain order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from dpevolve.errors import InputError
from dpevolve.privacy import GaussianEvent

Clique = tuple[str, ...]


@dataclass(frozen=True)
class Domain:
    """Discrete attributes (public): their names and numbers of cells, in table order."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.names) != len(self.sizes) or len(set(self.names)) != len(self.names):
            raise InputError("a domain needs one size per distinct attribute name")
        if any(int(s) < 1 for s in self.sizes):
            raise InputError("every attribute of a domain needs at least one cell")

    def index(self, name: str) -> int:
        """Position of attribute ``name``."""
        return self.names.index(name)

    def canonical(self, attributes: Iterable[str]) -> Clique:
        """``attributes`` as a clique: distinct, in domain order (unknown names refused)."""
        wanted = set(attributes)
        unknown = wanted - set(self.names)
        if unknown:
            raise InputError(f"unknown attributes {sorted(unknown)}")
        return tuple(name for name in self.names if name in wanted)

    def shape(self, clique: Clique) -> tuple[int, ...]:
        """The cell shape of a clique's marginal."""
        return tuple(self.sizes[self.index(name)] for name in clique)

    def cells(self, clique: Clique) -> int:
        """Number of cells of a clique's marginal."""
        return math.prod(self.shape(clique))


@dataclass(frozen=True)
class MarginalQuery:
    """The counts of one marginal: every record adds 1 to the cell of its clique values.

    Under replace-one adjacency one record leaves one cell and enters another, so the
    count vector moves by at most ``sqrt(2)`` in L2 (docs/math.md, marginals).
    """

    clique: Clique

    @property
    def l2_sensitivity(self) -> float:
        return math.sqrt(2.0)


@dataclass(frozen=True)
class Measurement:
    """One released answer: ``noisy = answer(query) + N(0, sigma^2)`` per cell.

    ``noisy`` has the clique's cell shape; ``event`` is what the release cost (the
    accountant composes it); ``weight`` is the estimator's confidence relative to
    ``1 / sigma`` (1: as measured).
    """

    query: MarginalQuery
    noisy: np.ndarray
    sigma: float
    event: GaussianEvent
    weight: float = 1.0

    @property
    def clique(self) -> Clique:
        return self.query.clique


@dataclass
class MeasurementList:
    """The run's measurements, in release order (append-only)."""

    items: list[Measurement] = field(default_factory=list)

    def append(self, measurement: Measurement) -> None:
        self.items.append(measurement)

    def __iter__(self) -> Iterator[Measurement]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def cliques(self) -> list[Clique]:
        """Measured cliques, in release order (repeats kept)."""
        return [m.clique for m in self.items]

    def events(self) -> list[GaussianEvent]:
        """What each release cost, for the accountant."""
        return [m.event for m in self.items]


class Estimator(Protocol):
    """Reconciles measurements into one model of the table and draws fresh rows.

    ``fit`` may warm-start from the previous fit; ``answer`` is the model's marginal of
    a clique (counts, total ``n``), what adaptive selection scores against; ``sample``
    draws ``rows`` fresh records as an ``(rows, len(domain.names))`` int64 array of cell
    codes (post-processing: it reads only the model).
    """

    def fit(self, measurements: Sequence[Measurement]) -> Estimator: ...

    def answer(self, clique: Clique) -> np.ndarray: ...

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray: ...
