"""Random and variation APIs (docs/math.md §6): where candidates come from. Post-processing only.

* random API: each column independently uniform over its declared values or range
  (integers rounded), or a sample of public records;
* variation API: mutation rate ``r_t = 0.5 - 0.49 (t / T)^0.2``; per cell, a categorical
  value is resampled uniformly with probability ``r_t``; a numeric one moves by
  ``U(-r_t, r_t) * R`` (``U(-r_t, r_t)`` in scaled units), clipped to the range and
  rounded for integer columns.
* missing cells (``nullable`` columns) are one more value: a categorical column's
  reserved category is resampled like any other; a numeric cell's missing state is
  redrawn with probability ``r_t`` (missing with probability :data:`MISSING_PRIOR`, else
  a uniform value), and the random API leaves a cell missing with that probability. It
  is one cell of the 21 the marginal release cuts a nullable numeric column into (20
  bins and missing), not 1/2: the votes tell a missing cell from a present one only
  through one column's share of the distance, so a prior of 1/2 put missing cells into
  the output that no private row held. The missing rate of the release is thus
  selected by the votes, never read from the private data.
"""

from __future__ import annotations

import numpy as np

from dpevolve.data.encoding import Layout, Records

#: The chance a fresh nullable numeric cell is missing (see the module).
MISSING_PRIOR = 1.0 / 21.0


def mutation_rate(
    t: int, rounds: int, start: float = 0.5, end: float = 0.01, power: float = 0.2
) -> float:
    """Tab-PE's schedule ``r_t = start - (start - end) (t / T)^power``."""
    return start - (start - end) * (t / rounds) ** power


class Variation:
    """Samples fresh candidates and mutates parents, within the schema's domain."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._integer = layout.integer_mask
        self._ranges = layout.ranges
        self._lo = np.array([c.lo for c in layout.numeric], dtype=np.float64)
        self._cards = layout.cardinalities
        self._nullable = np.flatnonzero(layout.nullable_mask)

    def _snap(self, numeric: np.ndarray) -> np.ndarray:
        """Clip to [0, 1] and round integer columns on their raw scale."""
        numeric = np.clip(numeric, 0.0, 1.0)
        if self._integer.any():
            cols = self._integer
            raw = np.round(self._lo[cols] + numeric[:, cols] * self._ranges[cols])
            numeric[:, cols] = (raw - self._lo[cols]) / self._ranges[cols]
        return numeric

    def random(self, size: int, rng: np.random.Generator) -> Records:
        """``size`` records uniform over the declared domain."""
        numeric = self._snap(rng.random((size, len(self.layout.numeric))))
        self._redraw_missing(numeric, 1.0, rng)
        codes = np.empty((size, len(self._cards)), dtype=np.int32)
        for k, card in enumerate(self._cards):
            codes[:, k] = rng.integers(0, card, size=size)
        return Records(numeric, codes)

    def from_public(self, public: Records, size: int, rng: np.random.Generator) -> Records:
        """``size`` records drawn with replacement from public records."""
        return public.take(rng.integers(0, len(public), size=size))

    def mutate(self, parents: Records, rate: float, rng: np.random.Generator) -> Records:
        """One mutated child per parent at mutation rate ``rate``."""
        size = len(parents)
        step = rng.uniform(-rate, rate, size=parents.numeric.shape)
        numeric = self._snap(parents.numeric + step)
        self._redraw_missing(numeric, rate, rng)
        codes = parents.codes.copy()
        for k, card in enumerate(self._cards):
            flip = rng.random(size) < rate
            codes[flip, k] = rng.integers(0, card, size=int(flip.sum()))
        return Records(numeric, codes)

    def _redraw_missing(self, numeric: np.ndarray, rate: float, rng: np.random.Generator) -> None:
        """With probability ``rate`` per nullable cell: missing or a fresh uniform value."""
        for k in self._nullable:
            redraw = rng.random(len(numeric)) < rate
            missing = rng.random(len(numeric)) < MISSING_PRIOR
            fresh = self._snap(rng.random((len(numeric), len(self.layout.numeric))))[:, k]
            numeric[redraw, k] = np.where(missing[redraw], np.nan, fresh[redraw])
