"""The estimation objective: weighted squared L2 distance between the model's marginals
and the noisy measurements.

A measurement ``y`` of clique ``C`` with noise scale ``sigma`` and confidence ``w``
contributes ``(w / sigma)^2 * ||mu_C - y||^2``: the Gaussian log-likelihood up to a
constant, the loss of McKenna, Sheldon & Miklau (2019, sec. 3). Repeated measurements of
one clique add up to one term around their precision-weighted mean plus a constant, so
the fit touches every clique once per step whatever the number of repeats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpevolve.errors import InputError
from dpevolve.measurements import Clique, Domain, Measurement


@dataclass(frozen=True)
class Target:
    """All measurements of one clique: ``precision * ||mu - mean||^2 + offset``."""

    clique: Clique
    mean: np.ndarray
    precision: float
    offset: float

    def loss(self, mu: np.ndarray) -> float:
        return self.precision * float(np.sum((mu - self.mean) ** 2)) + self.offset

    def gradient(self, mu: np.ndarray) -> np.ndarray:
        return 2.0 * self.precision * (mu - self.mean)


def _checked(domain: Domain, m: Measurement) -> tuple[Clique, np.ndarray, float]:
    clique = domain.canonical(m.clique)
    if clique != tuple(m.clique):
        raise InputError(f"measurement of {list(m.clique)}: attributes not in domain order")
    noisy = np.asarray(m.noisy, dtype=float)
    if noisy.shape != domain.shape(clique):
        raise InputError(
            f"measurement of {list(clique)}: shape {noisy.shape}, "
            f"the domain says {domain.shape(clique)}"
        )
    if not np.all(np.isfinite(noisy)):
        raise InputError(f"measurement of {list(clique)}: non-finite counts")
    if not (math.isfinite(m.sigma) and m.sigma > 0):
        raise InputError(f"measurement of {list(clique)}: sigma must be positive and finite")
    if not (math.isfinite(m.weight) and m.weight >= 0):
        raise InputError(f"measurement of {list(clique)}: weight must be >= 0 and finite")
    return clique, noisy, (m.weight / m.sigma) ** 2


def targets(domain: Domain, measurements: Sequence[Measurement]) -> list[Target]:
    """One :class:`Target` per measured clique, in order of first measurement.

    Cliques whose every measurement has weight 0 carry no information and are left out.
    """
    sums: dict[Clique, list] = {}
    for m in measurements:
        clique, noisy, a = _checked(domain, m)
        acc = sums.setdefault(clique, [0.0, np.zeros(noisy.shape), 0.0])
        acc[0] += a
        acc[1] = acc[1] + a * noisy
        acc[2] += a * float(np.sum(noisy**2))
    out = []
    for clique, (a, weighted, squares) in sums.items():
        if a <= 0:
            continue
        mean = weighted / a
        offset = max(squares - a * float(np.sum(mean**2)), 0.0)
        out.append(Target(clique, mean, a, offset))
    return out
