"""The backend interface: the vote histogram over a population, the only private step."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.pe.distance import Distance
from dpevolve.pe.votes import Vote

PrivateData = Records | Iterable[Records]


class Backend(Protocol):
    """Sums every private record's vote over ``population`` (no noise: releases add it)."""

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H`` (float64, one entry per candidate)."""
        ...
