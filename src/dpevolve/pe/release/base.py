"""The release interface: the one step that turns private votes into something released."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from dpevolve.data.encoding import Records

SelectionMode = Literal["sample", "rank"]


@dataclass(frozen=True)
class Selection:
    """Parents chosen in one round, the privacy event that paid for them, and details
    (all derived from the released output only) for the ledger and the history."""

    parents: np.ndarray
    event: Any
    info: dict[str, Any] = field(default_factory=dict)
    #: The released answer (the noisy vote histogram; PubMix: its sampled votes per
    #: candidate) and its Gaussian scale (``nan``: not Gaussian noise on the answer),
    #: for the run's measurement list.
    noisy: np.ndarray | None = None
    sigma: float = math.nan


class Release(Protocol):
    """Chooses ``k`` parents from the private vote histogram over ``population``."""

    name: str

    def select(
        self,
        histogram: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        population: Records,
        mode: SelectionMode,
    ) -> Selection: ...
