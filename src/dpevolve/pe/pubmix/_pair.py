"""Shared pieces of the worst-case pair of a PubMix release (docs/math.md §5).

With ``g = (1-beta)/n`` the pair is ``P = Mult(m; a, b, rest)``, ``Q = Mult(m; c, d, rest)``::

    a = beta z1 + g,  b = beta z2,  c = beta z1,  d = beta z2 + g,
    rest = 1 - beta (z1 + z2) - g.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import gammaln, xlog1py, xlogy

from dpevolve.errors import InputError

PRUNE_MASS = 1e-30
"""Cells whose binomial marginal is below this are dropped; their mass is added back
as an upper bound, so pruning never lowers h1 or h2."""

LOG_PRUNE = math.log(PRUNE_MASS)


def check_common(n: int, m: int, epsilon: float, z1: float, z2: float) -> None:
    """Raise InputError unless n, m >= 1 are integers, epsilon > 0 and z1, z2 are masses."""
    if int(n) != n or n < 1:
        raise InputError(f"n (number of private records) must be a positive integer, got {n}")
    if int(m) != m or m < 1:
        raise InputError(f"m (number of released samples) must be a positive integer, got {m}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise InputError(f"epsilon must be finite and > 0, got {epsilon}")
    for name, z in (("z1", z1), ("z2", z2)):
        if not (math.isfinite(z) and 0.0 <= z <= 1.0):
            raise InputError(f"{name} (a noise-bin mass) must lie in [0, 1], got {z}")
    if z1 + z2 > 1.0 + 1e-12:
        raise InputError(f"z1 + z2 must be <= 1 (two bins of one distribution), got {z1 + z2}")


def check_beta(beta: float) -> None:
    """Raise InputError unless beta is in [0, 1]."""
    if not (math.isfinite(beta) and 0.0 <= beta <= 1.0):
        raise InputError(f"beta must lie in [0, 1], got {beta}")


def check_delta(delta: float) -> None:
    """Raise InputError unless delta is in (0, 1)."""
    # delta = 0 is excluded: the pruned tail (~1e-30) is counted as privacy loss, so a
    # pure-DP beta could not be certified anyway.
    if not (math.isfinite(delta) and 0.0 < delta < 1.0):
        raise InputError(f"delta must lie in (0, 1), got {delta}")


def cell_masses(
    beta: float, n: int, z1: float, z2: float
) -> tuple[float, float, float, float, float]:
    """(a, b, c, d, rest) of the worst-case pair."""
    g = (1.0 - beta) / n
    a = beta * z1 + g
    b = beta * z2
    c = beta * z1
    d = beta * z2 + g
    # a + b + rest = 1 exactly in real arithmetic; clip the rounding so rest is a mass.
    rest = max(0.0, 1.0 - beta * (z1 + z2) - g)
    return a, b, c, d, rest


def binom_logpmf(log_coef: np.ndarray, m: int, p: float) -> np.ndarray:
    """log Bin(m, p)(k) for k = 0..m, given log_coef[k] = log C(m, k)."""
    k = np.arange(m + 1)
    # xlog1py keeps log(1-p) accurate for p ~ 1/n.
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = log_coef + xlogy(k, p) + xlog1py(m - k, -p)
    return out


def support(logpmf: np.ndarray) -> tuple[int, int, float]:
    """Index range holding every pmf value >= PRUNE_MASS, and the mass outside it."""
    keep = np.flatnonzero(logpmf >= LOG_PRUNE)
    if keep.size == 0:  # pragma: no cover - a pmf always has a value >= 1/(m+1)
        raise AssertionError("binomial pmf with no mass above the prune level")
    lo, hi = int(keep[0]), int(keep[-1])
    outside = np.concatenate([logpmf[:lo], logpmf[hi + 1 :]])
    tail = float(np.exp(outside).sum()) if outside.size else 0.0
    return lo, hi, tail


class Grid:
    """log m!/(k!(m-k)!) and log k! for one m, shared by every beta of a bisection."""

    def __init__(self, m: int) -> None:
        self.m = m
        self.log_fact = gammaln(np.arange(m + 1) + 1.0)
        self.log_coef = self.log_fact[m] - self.log_fact - self.log_fact[::-1]


@functools.lru_cache(maxsize=8)
def grid_for(m: int) -> Grid:
    """The (cached) Grid of m."""
    return Grid(m)
