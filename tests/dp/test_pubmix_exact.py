"""Exact DP check of PubMix's beta_min by enumeration (spec §5).

For tiny d, n and m: every histogram of n records over d bins, every replace-one
neighbour, and every output sequence of m samples.  At beta = beta_min (z1, z2 the two
smallest masses of P_nse) the largest hockey-stick divergence

    sum_o [P_syn(o) - e^eps P_syn'(o)]_+

must be at most delta, equal to it (the worst case of spec §5 is attained), and above
delta at beta_min - 1e-3.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from dpevolve.pe.pubmix import beta_min

NOISE = {
    "d3": np.array([0.15, 0.25, 0.60]),
    "d4": np.array([0.10, 0.20, 0.30, 0.40]),
    "d4-uniform": np.full(4, 0.25),
    "d3-zero-floor": np.array([0.0, 0.0, 1.0]),
}


def histograms(n: int, d: int) -> list[NDArray[np.int64]]:
    """All count vectors of n records over d bins."""
    out = []
    for bars in itertools.combinations(range(n + d - 1), d - 1):
        edges = (-1, *bars, n + d - 1)
        out.append(np.diff(edges) - 1)
    return out


def neighbours(h: NDArray[np.int64]) -> list[NDArray[np.int64]]:
    """Replace-one: one record moves from bin i to bin j != i."""
    out = []
    for i in np.flatnonzero(h > 0):
        for j in range(h.size):
            if j != i:
                g = h.copy()
                g[i] -= 1
                g[j] += 1
                out.append(g)
    return out


def worst_divergence(noise: NDArray[np.float64], n: int, m: int, eps: float, beta: float) -> float:
    d = noise.size
    outputs = np.array(list(itertools.product(range(d), repeat=m)))  # (d^m, m)
    hs = histograms(n, d)
    probs = {}
    for h in hs:
        p_syn = (1 - beta) * h / n + beta * noise
        probs[tuple(h)] = np.prod(p_syn[outputs], axis=1)
    factor = math.exp(eps)
    worst = 0.0
    for h in hs:
        p = probs[tuple(h)]
        for g in neighbours(h):
            q = probs[tuple(g)]
            worst = max(worst, float(np.maximum(p - factor * q, 0.0).sum()))
    return worst


CONFIGS = [
    (name, n, m, eps, delta)
    for name in NOISE
    for n in (1, 2, 3, 4)
    for m in (1, 2, 3)
    for eps, delta in ((0.5, 0.05), (1.0, 0.01))
]


@pytest.mark.parametrize(("name", "n", "m", "eps", "delta"), CONFIGS)
def test_beta_min_is_exactly_dp(name: str, n: int, m: int, eps: float, delta: float) -> None:
    noise = NOISE[name]
    z1, z2 = np.sort(noise)[:2]
    beta = beta_min(n=n, m=m, epsilon=eps, delta=delta, z1=float(z1), z2=float(z2))
    assert beta > 1e-3  # the configurations are chosen so the constraint is active
    at_min = worst_divergence(noise, n, m, eps, beta)
    assert at_min <= delta + 1e-12
    assert at_min == pytest.approx(delta, abs=1e-9)
    assert worst_divergence(noise, n, m, eps, beta - 1e-3) > delta
