"""Gaussian release (spec §4, §6): noisy histogram, clip below H, then select.

``H~ = H + N(0, sigma^2 I)`` with ``sigma = z * S`` for the vote's L2 sensitivity ``S``;
one round is ``rho = S^2 / (2 sigma^2)``-zCDP. Thresholding and selection only read
``H~``: they are post-processing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Protocol

import numpy as np

from dpevolve.accounting import GaussianEvent
from dpevolve.encoding import Records
from dpevolve.release.base import Selection, SelectionMode


class NoiseSource(Protocol):
    def normal(self, size: int) -> np.ndarray: ...


class GeneratorNoise:
    """Noise from the run's seeded numpy Generator: reproducible."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def normal(self, size: int) -> np.ndarray:
        return self.rng.standard_normal(size)


class SystemNoise:
    """Noise from the operating system's cryptographically secure source.

    Runs are then not reproducible: only the release noise changes, the population
    and variation still follow the seed.
    """

    def __init__(self) -> None:
        self._random = random.SystemRandom()

    def normal(self, size: int) -> np.ndarray:
        return np.array([self._random.gauss(0.0, 1.0) for _ in range(size)])


class GaussianRelease:
    """Gaussian noise on the vote histogram, clipped below ``threshold``, then selection.

    ``sample`` draws ``k`` parents with probability proportional to the clipped counts
    (uniform if every count is clipped); ``rank`` keeps the ``k`` largest noisy counts.

    ``sensitivity_of`` (optional) computes the exact sensitivity of this round's
    population, at most ``sensitivity``; the population is public, so the search costs no
    budget, and a round whose exact sensitivity is 0 costs nothing in the ledger.
    """

    name = "gaussian"

    def __init__(
        self,
        sigma: float,
        sensitivity: float,
        threshold: float = 0.0,
        noise: NoiseSource | None = None,
        sensitivity_of: Callable[[Records], float] | None = None,
        postprocess: Callable[[np.ndarray, Records], np.ndarray] | None = None,
    ) -> None:
        self.sigma = float(sigma)
        # Reads only the noisy histogram and the public population: post-processing.
        self.postprocess = postprocess
        self.sensitivity_of = sensitivity_of
        self.sensitivity = float(sensitivity)
        self.threshold = float(threshold)
        self.noise = noise

    def event(self) -> GaussianEvent:
        return GaussianEvent(sensitivity=self.sensitivity, sigma=self.sigma)

    def noisy(self, histogram: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        source = self.noise if self.noise is not None else GeneratorNoise(rng)
        return histogram + self.sigma * source.normal(histogram.shape[0])

    def select(
        self,
        histogram: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        population: Records,
        mode: SelectionMode,
    ) -> Selection:
        noisy = self.noisy(histogram, rng)
        if self.postprocess is not None:
            noisy = self.postprocess(noisy, population)
        clipped = np.where(noisy >= self.threshold, noisy, 0.0)
        clipped = np.maximum(clipped, 0.0)
        if mode == "rank":
            parents = np.argsort(-noisy, kind="stable")[:k]
        else:
            total = clipped.sum()
            weights = clipped / total if total > 0 else None
            parents = rng.choice(len(noisy), size=k, replace=True, p=weights)
        info: dict[str, float | int] = {"kept_candidates": int(np.count_nonzero(clipped))}
        event = self.event()
        if self.sensitivity_of is not None:
            start = time.perf_counter()
            exact = self.sensitivity_of(population)
            if exact > self.sensitivity + 1e-12:
                raise AssertionError("exact sensitivity above the calibrated bound")
            event = GaussianEvent(sensitivity=exact, sigma=self.sigma)
            info["calibration_seconds"] = time.perf_counter() - start
        return Selection(parents=np.asarray(parents, dtype=np.int64), event=event, info=info)
