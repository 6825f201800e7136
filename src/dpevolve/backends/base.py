"""The backend interface: the only code that reads private records.

Two measurements, both sums over private records with no noise (releases add it):
the vote histogram over a candidate population, and exact counts (a marginal's cells,
a fine histogram) of a :class:`CountQuery`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.pe.distance import Distance
from dpevolve.pe.votes import Vote

PrivateData = Records | Iterable[Records]


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
