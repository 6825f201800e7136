"""The backend interface: the only code that reads private records.

Two measurements, both sums over private records with no noise (releases add it):
the vote histogram over a candidate population, and exact counts (a marginal's cells,
a fine histogram) of a :class:`CountQuery`.

The interface speaks its own small vocabulary, not any method's classes: a vote is
asked with a :class:`Distance` (anything with ``pairwise``) and a :class:`Vote`
(anything with ``histogram``). A distance or vote that the compiled backends can
reproduce term for term says so by describing itself as plain data
(:class:`DistanceTerms`, :class:`VoteRule`); one that does not (``None``) is voted
with the numpy reference. The arithmetic every backend follows is
:mod:`dpevolve.backends.canonical`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from dpevolve.data.encoding import Records

PrivateData = Records | Iterable[Records]


@dataclass(frozen=True, eq=False)
class DistanceTerms:
    """A distance as the compiled kernels compute it, term by term (docs/math.md §1).

    ``kind="gower"``: ``d = sum_k w_k |a_k - b_k| + sum_k table_k[a_k, b_k]`` in that
    order (numeric attributes, then categorical ones). ``kind="tabpe"``:
    ``d = sqrt(sum_k (a_k - b_k)^2 + mismatch * #{k: a_k != b_k})``. A nullable numeric
    attribute's term is ``w`` (Gower) or ``1`` (Tab-PE) when exactly one cell is
    missing (NaN) and ``0`` when both are.

    Attributes
    ----------
    kind
        ``"gower"`` or ``"tabpe"``.
    numeric_weights
        (K_num,) Gower's numeric weights (unused for ``tabpe``).
    tables
        One (v, v) table per categorical attribute: Gower's weighted value distances
        (for ``tabpe`` only their shapes, the cardinalities, are used).
    mismatch
        ``tabpe``'s squared distance per differing category (unused for ``gower``).
    nullable
        (K_num,) bool: the numeric attributes that may hold missing cells.
    """

    kind: Literal["gower", "tabpe"]
    numeric_weights: np.ndarray
    tables: tuple[np.ndarray, ...]
    mismatch: float
    nullable: np.ndarray


@dataclass(frozen=True)
class VoteRule:
    """A vote as every backend computes it (:mod:`dpevolve.backends.canonical`).

    ``"hard"``: one-hot on the nearest candidate, ties to the lowest index.
    ``"soft"``: ``softmax(-d / temperature)`` per record, quantised to the canonical grid.
    """

    kind: Literal["hard", "soft"]
    temperature: float = 0.0


class Distance(Protocol):
    """What a backend needs of a distance."""

    def pairwise(self, x: Records, c: Records) -> np.ndarray:
        """Distances between every row of ``x`` and every row of ``c``, float64."""
        ...

    def terms(self) -> DistanceTerms | None:
        """This distance as plain terms the kernels reproduce, or ``None`` (numpy only)."""
        ...


class Vote(Protocol):
    """What a backend needs of a vote rule."""

    def histogram(self, distances: np.ndarray) -> np.ndarray:
        """The votes of every row of ``distances`` summed per candidate, float64 (m,)."""
        ...

    def rule(self) -> VoteRule | None:
        """This vote as a canonical rule, or ``None`` (then :meth:`histogram` is used)."""
        ...


class CountQuery(Protocol):
    """Exact integer counts over records: one vector per slice, added across slices.

    Counts add over any partition of the records, so a backend may cut them as it likes
    (slices, batches, partitions on workers) and sum in any order: integers, exact.
    """

    @property
    def size(self) -> int:
        """The length of the count vector."""
        ...

    @property
    def rows(self) -> int:
        """The most rows :meth:`counts` should get at once (bounds its memory)."""
        ...

    def counts(self, records: Records) -> np.ndarray:
        """The int64 counts of ``records`` (length :attr:`size`)."""
        ...


class Backend(Protocol):
    """Reads the private records: vote histograms and exact counts (no noise)."""

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H`` (float64, one entry per candidate)."""
        ...

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        """``query``'s exact counts summed over every private record (int64)."""
        ...
