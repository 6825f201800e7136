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
from functools import lru_cache
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from dpevolve.errors import InputError
from dpevolve.privacy import Event

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


Grouping = tuple[int, ...]
"""A public grouping of one attribute's cells: ``grouping[cell]`` is the cell's group."""


@dataclass(frozen=True)
class MarginalQuery:
    """The counts of one marginal: every record adds 1 to the cell of its clique values.

    ``groups`` (optional) coarsens it: one public :data:`Grouping` per attribute of the
    clique (``None`` for an attribute kept at full resolution), and the query counts
    records per group combination instead of per cell: the fine marginal aggregated by
    a fixed linear map (:meth:`project`).

    Sensitivity. Under replace-one adjacency one record leaves one cell and enters
    another, so the fine count vector moves by ``e_{c'} - e_c``; a grouping sends each
    fine cell to exactly one group, so the coarse vector moves by ``e_{g(c')} - e_{g(c)}``
    (zero when both land in one group): at most ``sqrt(2)`` in L2 and 2 in L1 whatever
    the grouping (docs/math.md, marginals). A record turned invalid and dropped leaves
    one cell: 1.
    """

    clique: Clique
    groups: tuple[Grouping | None, ...] | None = None

    def __post_init__(self) -> None:
        if self.groups is None:
            return
        if len(self.groups) != len(self.clique):
            raise InputError(f"query on {list(self.clique)}: one grouping per attribute")
        for name, grouping in zip(self.clique, self.groups, strict=True):
            if grouping is None:
                continue
            used = set(grouping)
            if not grouping or used != set(range(len(used))):
                raise InputError(f"query on {list(self.clique)}: {name}'s groups must be 0..k-1")

    @property
    def l2_sensitivity(self) -> float:
        return math.sqrt(2.0)

    @property
    def coarse(self) -> bool:
        """Whether any attribute is grouped."""
        return self.groups is not None and any(g is not None for g in self.groups)

    def shape(self, domain: Domain) -> tuple[int, ...]:
        """The answer's cell shape: groups per grouped attribute, else cells."""
        fine = domain.shape(self.clique)
        if self.groups is None:
            return fine
        return tuple(
            size if g is None else max(g) + 1 for size, g in zip(fine, self.groups, strict=True)
        )

    def project(self, counts: np.ndarray) -> np.ndarray:
        """The fine marginal ``counts`` (clique's cell shape) aggregated by the groups."""
        out = np.asarray(counts, dtype=np.float64)
        if self.groups is None:
            return out
        for axis, (index, starts) in enumerate(_plans(self.groups)):
            if index is None:
                continue
            if len(index) != out.shape[axis]:
                raise InputError(f"query on {list(self.clique)}: grouping and domain disagree")
            if starts is not None:
                # runs of consecutive cells (the usual case): one reduceat
                out = np.add.reduceat(out, starts, axis=axis)
                continue
            moved = np.moveaxis(out, axis, 0)
            summed = np.zeros((int(index.max()) + 1, *moved.shape[1:]))
            np.add.at(summed, index, moved)
            out = np.moveaxis(summed, 0, axis)
        return out

    def expand(self, values: np.ndarray) -> np.ndarray:
        """``values`` on the groups broadcast back to the clique's cells (the adjoint of
        :meth:`project`: every cell takes its group's value)."""
        out = np.asarray(values, dtype=np.float64)
        if self.groups is None:
            return out
        for axis, (index, _) in enumerate(_plans(self.groups)):
            if index is not None:
                out = np.take(out, index, axis=axis)
        return out


Plan = tuple[np.ndarray | None, np.ndarray | None]


@lru_cache(maxsize=65536)
def _plans(groups: tuple[Grouping | None, ...]) -> tuple[Plan, ...]:
    """Per attribute of a query's groups: its grouping as an index array (``None``: kept
    cell by cell) and, where the groups are runs of consecutive cells, each run's first
    cell (else ``None``). Made once per grouping: the estimator projects and expands
    every coarse query at every step (docs/scale.md, columns)."""
    out: list[Plan] = []
    for grouping in groups:
        if grouping is None:
            out.append((None, None))
            continue
        index = np.asarray(grouping, dtype=np.int64)
        index.setflags(write=False)
        steps = np.diff(index)
        starts = None
        if np.all(steps == (steps > 0)):
            starts = np.flatnonzero(np.diff(index, prepend=-1))
            starts.setflags(write=False)
        out.append((index, starts))
    return tuple(out)


def even_grouping(cells: int, groups: int) -> Grouping:
    """``cells`` consecutive cells in ``groups`` runs of (nearly) equal length: on equal-
    width bins of a declared range, equal-width groups of that range (public)."""
    groups = max(1, min(int(groups), int(cells)))
    return tuple(i * groups // cells for i in range(cells))


@dataclass(frozen=True)
class VoteQuery:
    """Private Evolution's vote histogram over ``candidates`` synthetic records: each
    private record votes for its nearest candidates (docs/math.md, the vote)."""

    candidates: int


@dataclass(frozen=True)
class WorkloadQuery:
    """A stacked workload of marginals released by one mechanism (the hybrid tail's
    marginal release: one event for all of ``cliques``)."""

    cliques: tuple[Clique, ...]


@dataclass(frozen=True)
class HistogramQuery:
    """A numeric column's 1-way histogram on ``cells`` public cells, before the bins are
    placed (docs/engine.md): its fine cells, or the rows at each of its candidate values
    (the atom release; a row sits at one candidate at most). Replace-one moves one
    record from one cell to another: L2 sensitivity ``sqrt(2)``."""

    column: str
    cells: int


@dataclass(frozen=True)
class SelectionQuery:
    """Which of ``candidates`` public candidates an exponential mechanism picked (the
    engine's selections): the released answer is the pick's index (one value), drawn
    with Gumbel noise on private scores, not Gaussian noise on an answer."""

    candidates: int


Query = MarginalQuery | VoteQuery | WorkloadQuery | HistogramQuery | SelectionQuery
Q = TypeVar("Q", MarginalQuery, VoteQuery, WorkloadQuery, HistogramQuery, SelectionQuery)


@dataclass(frozen=True)
class Measurement(Generic[Q]):
    """One released answer: ``noisy = answer(query) + N(0, sigma^2)`` per cell.

    ``noisy`` has the query's answer shape (a clique's cells, a vote histogram, a
    stacked workload, a selection's pick); ``sigma`` is ``nan`` for a release that is
    not Gaussian noise on the answer (PubMix's sampled votes, a selection); ``event`` is
    what the release cost (the accountant composes it); ``weight`` is the estimator's
    confidence relative to ``1 / sigma`` (1: as measured); ``tilt``, where given, is a
    fixed log potential over the clique's cells that an estimator keeps beside the
    fitted one, so that a coarse query's groups take its shape inside them
    (post-processing of releases: :mod:`dpevolve.engine.tilt`).
    """

    query: Q
    noisy: np.ndarray
    sigma: float
    event: Event
    weight: float = 1.0
    tilt: np.ndarray | None = None

    @property
    def clique(self) -> Clique:
        """The marginal's clique (marginal measurements only)."""
        if not isinstance(self.query, MarginalQuery):
            raise TypeError(f"a {type(self.query).__name__} measurement has no clique")
        return self.query.clique

    @property
    def coarse(self) -> bool:
        return isinstance(self.query, MarginalQuery) and self.query.coarse


MarginalMeasurement = Measurement[MarginalQuery]


def selection(index: int, candidates: int, event: Event) -> Measurement[SelectionQuery]:
    """The release of an exponential mechanism's pick: ``index`` among ``candidates``
    (``sigma`` ``nan``: no Gaussian noise on an answer), what ``event`` cost."""
    noisy = np.array([float(index)])
    noisy.setflags(write=False)
    return Measurement(SelectionQuery(int(candidates)), noisy, math.nan, event)


@dataclass
class MeasurementList:
    """The run's measurements, in release order (append-only): every release of every
    method (the engine's fine histograms, marginals and selections and its PE stage's
    votes; PE's votes, the hybrid tail's workload), one per ledger event."""

    items: list[Measurement[Any]] = field(default_factory=list)

    def append(self, measurement: Measurement[Any]) -> None:
        self.items.append(measurement)

    def __iter__(self) -> Iterator[Measurement[Any]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def marginals(self) -> list[MarginalMeasurement]:
        """The marginal measurements, in release order: what an estimator reconciles."""
        return [m for m in self.items if isinstance(m.query, MarginalQuery)]

    def cliques(self) -> list[Clique]:
        """Measured cliques (the fine attributes, for coarse queries too), in release order
        (repeats kept); marginal measurements only."""
        return [m.clique for m in self.items if isinstance(m.query, MarginalQuery)]

    def events(self) -> list[Event]:
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
