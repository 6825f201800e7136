"""Votes (docs/math.md §3): how one private record spreads its unit of weight over candidates.

The histogram is ``H = sum_{x in D} vote(x)``; a protected substitution changes it by
``vote(x') - vote(x)``. Each vote states the L2 norm bound of that change given the
policy's reach ``r`` (the most one substitution moves any distance).
"""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from dpevolve.backends.base import VoteRule
from dpevolve.errors import InputError


class Vote(Protocol):
    """A vote rule: per-row votes (rows sum to 1) and its sensitivity bounds."""

    name: str

    def row_votes(self, distances: np.ndarray) -> np.ndarray:
        """(b, m) votes from (b, m) distances; every row sums to 1."""
        ...

    def histogram(self, distances: np.ndarray) -> np.ndarray:
        """The column sums of :meth:`row_votes`, float64, shape (m,)."""
        ...

    def l1_bound(self, reach: float) -> float:
        """Bound on ``||vote(x') - vote(x)||_1`` when distances move by at most ``reach``."""
        ...

    def l2_sensitivity(self, reach: float) -> float:
        """Bound on ``||vote(x') - vote(x)||_2`` (what the Gaussian noise is calibrated to)."""
        ...

    def rule(self) -> VoteRule | None:
        """The canonical rule every backend computes, or ``None`` (see :class:`VoteRule`)."""
        ...


class HardVote:
    """PE's vote: one-hot on ``argmin_j d(x, c_j)``, ties to the lowest index.

    Sensitivity: L1 = 2 and L2 = sqrt(2) whenever a substitution can change an argmin,
    which any reach > 0 can on some population; exact per-population checks live in
    :mod:`dpevolve.pe.policy.sensitivity`.
    """

    name = "hard"

    def row_votes(self, distances: np.ndarray) -> np.ndarray:
        out = np.zeros_like(distances, dtype=np.float64)
        out[np.arange(distances.shape[0]), np.argmin(distances, axis=1)] = 1.0
        return out

    def histogram(self, distances: np.ndarray) -> np.ndarray:
        nearest = np.argmin(distances, axis=1)
        return np.bincount(nearest, minlength=distances.shape[1]).astype(np.float64)

    def l1_bound(self, reach: float) -> float:
        return 2.0 if reach > 0 else 0.0

    def l2_sensitivity(self, reach: float) -> float:
        return math.sqrt(2.0) if reach > 0 else 0.0

    def rule(self) -> VoteRule | None:
        # Exact type only: a subclass may redefine the vote the kernels hard-code.
        return VoteRule("hard") if type(self) is HardVote else None


class SoftVote:
    """BF-Soft's vote: ``v_j(x) = softmax_j(-d(x, c_j) / tau)`` (docs/math.md §3).

    A substitution moves every logit by at most ``r / tau``, so the logit spread moves
    by at most ``D = 2 r / tau`` and ``||p - p'||_1 <= 2 tanh(D / 4) = 2 tanh(r / (2 tau))``;
    the change sums to zero, so ``||p - p'||_2 <= sqrt(2) tanh(r / (2 tau))``. Both are tight.
    """

    name = "soft"

    def __init__(self, temperature: float) -> None:
        if not (math.isfinite(temperature) and temperature > 0):
            raise InputError(f"temperature must be a positive number, got {temperature}")
        self.temperature = float(temperature)

    def row_votes(self, distances: np.ndarray) -> np.ndarray:
        logits = -np.asarray(distances, dtype=np.float64) / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        weights = np.exp(logits)
        weights /= weights.sum(axis=1, keepdims=True)
        return weights

    def histogram(self, distances: np.ndarray) -> np.ndarray:
        return self.row_votes(distances).sum(axis=0)

    def l1_bound(self, reach: float) -> float:
        return 2.0 * math.tanh(reach / (2.0 * self.temperature))

    def l2_sensitivity(self, reach: float) -> float:
        return math.sqrt(2.0) * math.tanh(reach / (2.0 * self.temperature))

    def rule(self) -> VoteRule | None:
        # Exact type only, as HardVote.rule.
        return VoteRule("soft", self.temperature) if type(self) is SoftVote else None


def noise_ratio(reach: float, temperature: float) -> float:
    """``q = tanh(r / (2 tau))``: soft L2 bound over hard L2 sensitivity (docs/math.md §3)."""
    return math.tanh(reach / (2.0 * temperature))


def make_vote(name: str, temperature: float | None = None) -> Vote:
    """``hard`` or ``soft`` (which needs a temperature)."""
    if name == "hard":
        return HardVote()
    if name == "soft":
        if temperature is None:
            raise InputError("a soft vote needs a temperature (--temperature TAU)")
        return SoftVote(temperature)
    raise InputError(f"unknown vote '{name}' (choose hard or soft)")
