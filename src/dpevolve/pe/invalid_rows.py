"""Invalid private rows: an empty vote, a public ``n``, and a sensitivity that covers them.

With ``on_invalid="drop"`` or ``"clip"`` a private row that breaks the schema (and that
clipping cannot repair) is not removed from the table: it stays one of the ``n`` rows,
``n = len(table)`` stays public, and the row casts an **empty vote** (the zero vector).
Dropping it instead would make ``n`` private (and ``n`` sets the default delta, sigma,
PubMix's beta, and appears in ledgers and reports), and would turn a replacement into a
removal that no replace-one analysis covers.

What the neighbouring relation gains is one kind of replacement: a valid row ``x`` by an
invalid one. The histogram then changes by ``-vote(x)``, whose L2 norm is at most
``||vote(x)||_1 = 1`` (hard: exactly 1; soft: ``||softmax||_2 <= 1``). Under replace-one
every other change is bounded by the vote's own bound ``S`` (``sqrt(2)`` for hard votes,
``sqrt(2) tanh(r / 2 tau)`` for soft ones, ``r`` the policy's reach), so a run whose mode
admits invalid rows calibrates for ``max(S, 1)``. For hard votes that is ``S`` again;
for soft votes under a policy ``S`` is often below 1, and admitting invalid rows then
costs noise: :func:`calibrate` says so in a warning and the ledger records it. The
choice depends only on the mode, never on whether the table holds invalid rows.

Clipping an out-of-range number to the declared range is a contraction
(``|clip(a) - clip(b)| <= |a - b|``), so a pair a policy protects stays protected and
the vote's bound still holds; rounding is not (``30.5, 37.5 -> 30, 38`` under
``threshold: 7``), which is why a non-integer in an integer column is invalid rather
than rounded.

PubMix's analysis moves one vote between two bins and needs all ``n`` votes cast, so
there an invalid row votes as one fixed, data-independent record instead
(:func:`fill_empty_votes`): replacing a valid row by an invalid one is then an ordinary
replacement, which PubMix covers whatever the policy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.data.encoding import Layout, Records
from dpevolve.pe.distance import Distance

#: Bound on ``||vote(x)||_2`` for any vote whose entries are non-negative and sum to 1.
EMPTY_VOTE_L2 = 1.0

#: ``on_invalid`` modes in which an invalid row casts an empty vote (``error`` refuses).
EMPTY_VOTE_MODES = ("drop", "clip")


@dataclass(frozen=True)
class InvalidRowCalibration:
    """The sensitivity a run calibrates its noise for, given its ``on_invalid`` mode.

    Attributes
    ----------
    on_invalid
        ``error``, ``drop`` or ``clip``.
    vote_bound
        The vote's L2 bound for a substitution the policy protects.
    sensitivity
        What the noise is calibrated for: ``max(vote_bound, 1)`` when invalid rows cast
        an empty vote, else ``vote_bound``.
    """

    on_invalid: str
    vote_bound: float
    sensitivity: float

    @property
    def empty_votes(self) -> bool:
        """Whether an invalid row casts an empty vote in this mode."""
        return self.on_invalid in EMPTY_VOTE_MODES

    @property
    def raised(self) -> bool:
        """Whether covering empty votes raised the sensitivity above the vote's bound."""
        return self.sensitivity > self.vote_bound

    def warning(self) -> str | None:
        """A line for the user when covering invalid rows costs noise (public: it depends
        on the configuration only)."""
        if not self.raised:
            return None
        # The budget for the same noise grows with the squared ratio (inf for a zero bound).
        ratio = self.sensitivity / self.vote_bound if self.vote_bound > 1e-100 else math.inf
        cost = ratio * ratio
        return (
            f"on_invalid={self.on_invalid}: an invalid row casts an empty vote, which changes "
            f"the histogram by up to {EMPTY_VOTE_L2:g} in L2, more than the vote's bound "
            f"{self.vote_bound:.4g}; the noise is calibrated for {self.sensitivity:.4g} "
            f"(about {cost:.3g}x the budget for the same noise). Use on_invalid=error on a "
            "clean table to keep the smaller bound"
        )

    def exact(
        self, sensitivity_of: Callable[[Records], float] | None
    ) -> Callable[[Records], float] | None:
        """A per-round exact sensitivity that also covers an empty vote.

        Exact calibration searches the protected edges of the domain; a round where no
        edge changes a vote still changes by 1 when a valid row becomes invalid.
        """
        if sensitivity_of is None or not self.empty_votes:
            return sensitivity_of
        inner = sensitivity_of
        return lambda population: max(inner(population), EMPTY_VOTE_L2)

    def to_dict(self) -> dict[str, Any]:
        """Public ledger metadata: the mode and the bounds, no count from the data."""
        return {
            "on_invalid": self.on_invalid,
            "invalid_row_vote": "empty (zero vector)" if self.empty_votes else "refused",
            "vote_bound": self.vote_bound,
            "empty_vote_l2": EMPTY_VOTE_L2 if self.empty_votes else None,
            "sensitivity": self.sensitivity,
        }


def calibrate(on_invalid: str, vote_bound: float) -> InvalidRowCalibration:
    """The sensitivity for mode ``on_invalid`` and the vote's bound (see the module)."""
    sensitivity = (
        max(float(vote_bound), EMPTY_VOTE_L2)
        if on_invalid in EMPTY_VOTE_MODES
        else float(vote_bound)
    )
    return InvalidRowCalibration(on_invalid, float(vote_bound), sensitivity)


def stand_in_record(layout: Layout) -> Records:
    """One fixed record of the domain, chosen without looking at any data: every numeric
    column at its lowest whole value (its ``lo`` when not integer), every categorical
    column at its first declared value."""
    numeric = np.array(
        [[(c.whole_range[0] - c.lo) / c.range for c in layout.numeric]], dtype=np.float64
    ).reshape(1, len(layout.numeric))
    codes = np.zeros((1, len(layout.categorical)), dtype=np.int32)
    return Records(numeric, codes)


def fill_empty_votes(
    histogram: np.ndarray, n: int, population: Records, distance: Distance
) -> np.ndarray:
    """Hard-vote counts with every missing vote cast by :func:`stand_in_record`.

    Parameters
    ----------
    histogram
        Hard-vote counts of the valid rows (they sum to the valid row count).
    n
        The public row count.
    population
        The candidates voted over.
    distance
        The distance the votes use.

    Returns
    -------
    numpy.ndarray
        Counts summing to ``n``: the ``n - sum(histogram)`` invalid rows vote for the
        candidate nearest the stand-in record (ties to the lowest index, as hard votes).
    """
    counts = np.asarray(histogram, dtype=np.float64)
    missing = round(n - float(counts.sum()))
    if missing < 0:
        raise AssertionError("more votes than rows: n must count every row")
    if missing == 0:
        return counts
    nearest = int(np.argmin(distance.pairwise(stand_in_record(distance.layout), population)[0]))
    out = counts.copy()
    out[nearest] += missing
    return out


__all__ = [
    "EMPTY_VOTE_L2",
    "EMPTY_VOTE_MODES",
    "InvalidRowCalibration",
    "calibrate",
    "fill_empty_votes",
    "stand_in_record",
]
