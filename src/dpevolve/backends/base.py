"""The backend interface: the vote histogram over a population, the only private step."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

import numpy as np

from dpevolve.core.distance import Distance
from dpevolve.core.votes import Vote
from dpevolve.data.encoding import Records

PrivateData = Records | Iterable[Records]


class Backend(Protocol):
    """Sums every private record's vote over ``population`` (no noise: releases add it)."""

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H`` (float64, one entry per candidate)."""
        ...
