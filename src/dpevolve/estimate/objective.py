"""The estimation objective: weighted squared L2 distance between the model's marginals
and the noisy measurements.

A measurement ``y`` of clique ``C`` with noise scale ``sigma`` and confidence ``w``
contributes ``(w / sigma)^2 * ||mu_C - y||^2``: the Gaussian log-likelihood up to a
constant, the loss of McKenna, Sheldon & Miklau (2019, sec. 3). Repeated measurements of
one clique add up to one term around their precision-weighted mean plus a constant, so
the fit touches every clique once per step whatever the number of repeats.

A coarse query (:class:`~dpevolve.measurements.MarginalQuery` with groups) measures
``A mu_C``, the clique's marginal aggregated by a fixed linear map; its term is
``(w / sigma)^2 * ||A mu_C - y||^2`` and the gradient in the fine marginal is
``A^T`` of the coarse one, constant within each group. So the target, its potential and
its part of the stacked vectors all live on the groups; the model expands the potential
to the clique's cells (:meth:`MarginalQuery.expand`) and aggregates its marginal
(:meth:`MarginalQuery.project`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from dpevolve.errors import InputError
from dpevolve.measurements import Clique, Domain, MarginalQuery, Measurement


@dataclass(frozen=True)
class Target:
    """All measurements of one query: ``precision * ||A mu - mean||^2 + offset``;
    ``tilt``: the precision-weighted mean of their fixed log potentials over the
    clique's cells (``None`` where none carries one)."""

    query: MarginalQuery
    mean: np.ndarray
    precision: float
    offset: float
    tilt: np.ndarray | None = None

    @property
    def clique(self) -> Clique:
        return self.query.clique


class Stacked:
    """Every target's cells in one vector, so the loss, its gradient and the optimiser's
    steps are a few vector operations whatever the number of cliques.

    ``view(flat, k)`` is target ``k``'s part of a vector in its cell shape.
    """

    def __init__(self, goals: Sequence[Target]) -> None:
        self.queries = [g.query for g in goals]
        self.shapes = [g.mean.shape for g in goals]
        ends = np.cumsum([0] + [g.mean.size for g in goals])
        self.slices = [slice(int(a), int(b)) for a, b in pairwise(ends)]
        self.size = int(ends[-1])
        self.mean = np.concatenate([g.mean.ravel() for g in goals]) if goals else np.zeros(0)
        self.precision = (
            np.concatenate([np.full(g.mean.size, g.precision) for g in goals])
            if goals
            else np.zeros(0)
        )
        self.offset = float(sum(g.offset for g in goals))

    def view(self, flat: np.ndarray, k: int) -> np.ndarray:
        return flat[self.slices[k]].reshape(self.shapes[k])

    def stack(self, parts: dict[MarginalQuery, np.ndarray]) -> np.ndarray:
        """One vector from per-query arrays (in target order)."""
        out = np.zeros(self.size)
        for k, query in enumerate(self.queries):
            out[self.slices[k]] = parts[query].ravel()
        return out

    def unstack(self, flat: np.ndarray) -> dict[MarginalQuery, np.ndarray]:
        """Per-query copies of a vector's parts."""
        return {q: self.view(flat, k).copy() for k, q in enumerate(self.queries)}

    def loss(self, mu: np.ndarray) -> float:
        # Sums, not np.dot: a BLAS call may spin threads on a shared machine.
        return float(np.sum(self.precision * (mu - self.mean) ** 2)) + self.offset

    def gradient(self, mu: np.ndarray) -> np.ndarray:
        return 2.0 * self.precision * (mu - self.mean)


def _checked(domain: Domain, m: Measurement) -> tuple[MarginalQuery, np.ndarray, float]:
    clique = domain.canonical(m.clique)
    if clique != tuple(m.clique):
        raise InputError(f"measurement of {list(m.clique)}: attributes not in domain order")
    query = m.query if m.coarse else MarginalQuery(clique)
    if query.groups is not None and any(
        g is not None and len(g) != size
        for g, size in zip(query.groups, domain.shape(clique), strict=True)
    ):
        raise InputError(f"measurement of {list(clique)}: groupings and domain disagree")
    noisy = np.asarray(m.noisy, dtype=float)
    if noisy.shape != query.shape(domain):
        raise InputError(
            f"measurement of {list(clique)}: shape {noisy.shape}, "
            f"the domain says {query.shape(domain)}"
        )
    if not np.all(np.isfinite(noisy)):
        raise InputError(f"measurement of {list(clique)}: non-finite counts")
    if not (math.isfinite(m.sigma) and m.sigma > 0):
        raise InputError(f"measurement of {list(clique)}: sigma must be positive and finite")
    if not (math.isfinite(m.weight) and m.weight >= 0):
        raise InputError(f"measurement of {list(clique)}: weight must be >= 0 and finite")
    if m.tilt is not None and (
        np.shape(m.tilt) != domain.shape(clique) or not np.all(np.isfinite(m.tilt))
    ):
        raise InputError(f"measurement of {list(clique)}: its tilt needs the clique's finite cells")
    return query, noisy, (m.weight / m.sigma) ** 2


def targets(domain: Domain, measurements: Sequence[Measurement]) -> list[Target]:
    """One :class:`Target` per measured query (clique and groups), in order of first
    measurement.

    Queries whose every measurement has weight 0 carry no information and are left out.
    """
    sums: dict[MarginalQuery, list] = {}
    for m in measurements:
        query, noisy, a = _checked(domain, m)
        acc = sums.setdefault(query, [0.0, np.zeros(noisy.shape), 0.0, 0.0, 0.0])
        acc[0] += a
        acc[1] = acc[1] + a * noisy
        acc[2] += a * float(np.sum(noisy**2))
        if m.tilt is not None:
            acc[3] += a
            acc[4] = acc[4] + a * np.asarray(m.tilt, dtype=float)
    out = []
    for query, (a, weighted, squares, tilted, tilts) in sums.items():
        if a <= 0:
            continue
        mean = weighted / a
        offset = max(squares - a * float(np.sum(mean**2)), 0.0)
        tilt = tilts / tilted if tilted > 0 else None
        out.append(Target(query, mean, a, offset, tilt))
    return out


def attribute_estimates(domain: Domain, goals: Sequence[Target]) -> dict[str, np.ndarray]:
    """Each measured attribute's distribution, pooled over every target that holds it.

    A target's projection onto one attribute sums ``m`` noisy cells per value, so it
    enters with precision ``precision / m``; the pooled counts are clipped at a floor of
    half a count per cell and normalised. A cheap, robust start for the fit (the
    independent model), not an estimate in its own right. Coarse targets are left out
    (their axes are groups, not cells).
    """
    sums: dict[str, list] = {}
    for g in goals:
        if g.query.coarse:
            continue
        for axis, name in enumerate(g.clique):
            others = tuple(k for k in range(len(g.clique)) if k != axis)
            projected = g.mean.sum(axis=others) if others else g.mean
            weight = g.precision * projected.size / g.mean.size
            acc = sums.setdefault(name, [0.0, np.zeros(projected.shape)])
            acc[0] += weight
            acc[1] = acc[1] + weight * projected
    out = {}
    for name, (weight, weighted) in sums.items():
        counts = np.maximum(weighted / weight, 0.5)
        out[name] = counts / counts.sum()
    return out
