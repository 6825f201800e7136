"""Gaussian release (docs/math.md §4, §6): noisy histogram, clip below H, then select.

``H~ = H + N(0, sigma^2 I)`` with ``sigma = z * S`` for the vote's L2 sensitivity ``S``;
the noise is a discrete Gaussian on a fine grid (:mod:`dpevolve.privacy.noise`). One
round is ``rho = S^2 / (2 sigma^2)``-zCDP. Thresholding and selection only read ``H~``:
they are post-processing.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.pe.release.base import Selection, SelectionMode
from dpevolve.privacy import GaussianEvent
from dpevolve.privacy.ledger import EXACT_SENSITIVITY
from dpevolve.privacy.noise import NoiseSource


class GaussianRelease:
    """Gaussian noise on the vote histogram, clipped below ``threshold``, then selection.

    ``sample`` draws ``k`` parents with probability proportional to the clipped counts
    (uniform if every count is clipped); ``rank`` keeps the ``k`` largest noisy counts.

    ``sensitivity_of`` (optional) computes the exact sensitivity of this round's
    population, at most ``sensitivity``; the population is public, so the search costs no
    budget, it goes into ``selection.info["exact_sensitivity"]`` for the ex-post figure;
    the event is always charged at ``sensitivity``, the bound fixed before the run.

    ``noise`` draws every noise value (:mod:`dpevolve.privacy.noise`). It rounds
    real-valued histograms to a fine grid, which can add ``rounding_slack`` (e.g.
    ``noise.rounding_slack(d)``; 0 for integer hard-vote counts) to the sensitivity: the
    event records ``sensitivity + rounding_slack``, so ``sigma`` should be calibrated
    for that sum.
    """

    name = "gaussian"

    def __init__(
        self,
        sigma: float,
        sensitivity: float,
        threshold: float = 0.0,
        *,
        noise: NoiseSource,
        sensitivity_of: Callable[[Records], float] | None = None,
        rounding_slack: float = 0.0,
        postprocess: Callable[[np.ndarray, Records], np.ndarray] | None = None,
    ) -> None:
        self.sigma = float(sigma)
        # Reads only the noisy histogram and the public population: post-processing.
        self.postprocess = postprocess
        self.sensitivity_of = sensitivity_of
        self.sensitivity = float(sensitivity)
        self.threshold = float(threshold)
        self.noise = noise
        self.rounding_slack = float(rounding_slack)

    def event(self) -> GaussianEvent:
        # Every noise source draws the discrete Gaussian: accounted in zCDP/RDP.
        return GaussianEvent(
            sensitivity=self.sensitivity + self.rounding_slack, sigma=self.sigma, discrete=True
        )

    def noisy(self, histogram: np.ndarray) -> np.ndarray:
        return self.noise.gaussian(histogram, self.sigma)

    def select(
        self,
        histogram: np.ndarray,
        k: int,
        rng: np.random.Generator,
        *,
        population: Records,
        mode: SelectionMode,
    ) -> Selection:
        if 0 < self.rounding_slack < self.noise.rounding_slack(histogram.size):
            raise AssertionError("rounding slack calibrated for a shorter histogram")
        released = noisy = self.noisy(histogram)
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
        if self.sensitivity_of is not None:
            # The round is charged at the calibrated bound all the same: which rounds a
            # search finds cheap depends on earlier noisy outputs, so the exact value is
            # reported apart (the ledger's ex_post_epsilon), never as the guarantee.
            start = time.perf_counter()
            exact = self.sensitivity_of(population)
            if exact > self.sensitivity + 1e-12:
                raise AssertionError("exact sensitivity above the calibrated bound")
            # Rounding moves only coordinates that differ: none when exact is 0.
            slack = self.rounding_slack if exact > 0 else 0.0
            info[EXACT_SENSITIVITY] = exact + slack
            info["calibration_seconds"] = time.perf_counter() - start
        return Selection(
            parents=np.asarray(parents, dtype=np.int64), event=self.event(), info=info,
            noisy=np.asarray(released, dtype=np.float64), sigma=self.sigma,
        )  # fmt: skip
