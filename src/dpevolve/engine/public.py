"""Public data in the engine: a prior for the model, at no privacy cost.

A public table (rows of the same kind as the private ones, given by the user; public
like the schema) enters the engine as *pseudo-measurements*: marginals of the public
rows, scaled to the private row count ``n``, put beside the private measurements when
the estimator fits. They read no private record, so they cost nothing: each carries a
:class:`~dpevolve.privacy.events.GaussianEvent` of sensitivity 0 (free) and none of
them is charged, recorded as a release or appended to the measurement list. The ledger
says what was used (:meth:`PublicPrior.facts`: public rows, cliques and scales).

Which public marginals (public facts only):

* every 1-way marginal, and
* the pairs of a maximum spanning tree of the public pairwise mutual information
  (Chow & Liu 1968, as MST picks its pairs; McKenna, Miklau & Sheldon 2021), so the
  model starts with the public table's main dependencies while its size stays that of
  a tree.

How much to trust them. A public table may be a shifted population or a small sample.
The pseudo-noise of a public marginal on clique ``C`` with ``k_C`` cells is

``sigma_C^2 = scale * (max_{a in C} D_a + n^2 / n_public) / k_C``

with ``n^2 / n_public`` the sampling variance of the scaled public counts summed over
the cells, and ``D_a = max(0, ||n p_pub(a) - y_a||^2 - k_a sigma_a^2)`` the debiased
squared distance between the scaled public 1-way of ``a`` and its *released* private
1-way ``y_a`` (noise scale ``sigma_a``): post-processing of releases, so the prior
trusts a public table less where it visibly disagrees with the released marginals.
A clique's total squared error is spread over its cells.

Warm start. The estimator is first fitted to the pseudo-measurements alone, then to the
private measurements with them (:func:`warm_start`), so where the private measurements
leave the model free, it stays near the public table's structure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals
from dpevolve.engine.spec import PUBLIC_PRIORS
from dpevolve.measurements import Clique, Domain, Estimator, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

#: Tail probability outside the public central range (:func:`public_edges`).
TAIL = 0.005

PUBLIC = "public:"
"""Prefix of a pseudo-measurement's label (never a ledger entry: nothing is released)."""



@dataclass(frozen=True)
class PublicPrior:
    """The public pseudo-measurements of one run.

    Attributes
    ----------
    rows
        Rows of the public table (public).
    measurements
        One free pseudo-measurement per public clique, counts scaled to ``n``.
    """

    rows: int
    measurements: tuple[Measurement, ...]

    def cliques(self) -> list[Clique]:
        return [m.clique for m in self.measurements]

    def facts(self) -> dict[str, Any]:
        """What the ledger says of the prior: public facts and released-value scales."""
        return {
            "rows": self.rows,
            "privacy": "public input: no budget, not a release",
            "cliques": [list(m.clique) for m in self.measurements],
            "sigma": [float(m.sigma) for m in self.measurements],
        }


def public_edges(
    public: pd.DataFrame, schema: Schema, bins: int, mode: str = "range"
) -> dict[str, np.ndarray]:
    """Bin edges of every numeric column from the public table (public facts only).

    ``range``: ``bins - 2`` equal-width bins over the public values' central range
    (quantiles :data:`TAIL` and ``1 - TAIL``) and one tail bin on each side out to the
    declared end points, so the model's resolution lies where the data are instead of
    over a declared range that may be far wider. ``quantile``: edges at the public
    quantiles. Either way a column keeps exactly ``bins`` bins from ``lo`` to ``hi``:
    repeated edges (point masses, a tail already at the end point) are dropped and the
    widest bins inside the central range split in two until there are ``bins``. Integer
    and ``decimals`` columns cut half-way between representable values.
    """
    frame, _ = schema.validate(public, on_invalid="error", what="public table")
    out: dict[str, np.ndarray] = {}
    for column in schema.columns:
        if not isinstance(column, NumericColumn):
            continue
        values = pd.to_numeric(frame[column.name], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        lo, hi = float(column.lo), float(column.hi)
        a, b = (float(v) for v in np.quantile(values, [TAIL, 1.0 - TAIL]))
        if not b > a:
            continue  # a constant public column: no range to resolve
        if mode == "quantile":
            inner = np.quantile(values, np.linspace(TAIL, 1.0 - TAIL, bins - 1))
        else:
            inner = np.linspace(a, b, bins - 1)
        step = 1.0 if column.integer else getattr(column, "decimals", None)
        if isinstance(step, int) and not isinstance(step, bool) and not column.integer:
            step = 10.0 ** (-step)
        if isinstance(step, float):
            inner = (np.floor(inner / step) + 0.5) * step
        points = np.unique(np.clip(np.concatenate([[lo, hi], inner]), lo, hi))
        out[column.name] = _filled(points, bins + 1, a, b)
    return out


def _filled(points: np.ndarray, size: int, a: float, b: float) -> np.ndarray:
    """``points`` grown to ``size`` by splitting the widest gap (inside ``[a, b]`` while
    one is there, else anywhere) at its midpoint; or thinned to ``size`` evenly."""
    edges = list(points)
    while len(edges) < size:
        gaps = np.diff(edges)
        inside = np.array([x >= a and y <= b for x, y in pairwise(edges)])
        pick = int(np.argmax(np.where(inside, gaps, -1.0))) if inside.any() else int(np.argmax(gaps))
        edges.insert(pick + 1, 0.5 * (edges[pick] + edges[pick + 1]))
    if len(edges) > size:
        keep = np.round(np.linspace(0, len(edges) - 1, size)).astype(int)
        edges = [edges[k] for k in keep]
    return np.asarray(edges, dtype=float)


def public_counts(
    public: pd.DataFrame, schema: Schema, discretiser: Discretiser
) -> tuple[int, dict[Clique, np.ndarray]]:
    """The public table's rows and its 1- and 2-way counts (cell shape), one pass.

    The public table is validated against the schema like the private one (a one-line
    error names the column), then counted with the engine's own discretiser.
    """
    source = FrameSource(public, schema, on_invalid="error", what="public table")
    names = discretiser.domain.names
    cliques: list[Clique] = [(a,) for a in names]
    cliques += [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    counts, _ = count_marginals(source, discretiser, cliques)
    return int(source.n), counts


def mutual_information(counts: np.ndarray) -> float:
    """Mutual information (nats) of a 2-way count table (0 for an empty one)."""
    total = float(counts.sum())
    if total <= 0:
        return 0.0
    joint = counts / total
    rows = joint.sum(axis=1, keepdims=True)
    cols = joint.sum(axis=0, keepdims=True)
    inside = joint > 0
    return float(np.sum(joint[inside] * np.log(joint[inside] / (rows @ cols)[inside])))


def spanning_tree(domain: Domain, pairs: dict[Clique, np.ndarray]) -> list[Clique]:
    """The pairs of a maximum spanning tree (forest) of the pairs' mutual information
    (Kruskal; ties in domain order)."""
    names = domain.names
    scored = sorted(
        ((mutual_information(counts), domain.canonical(c)) for c, counts in pairs.items()),
        key=lambda item: (-item[0], [names.index(a) for a in item[1]]),
    )
    parent = {a: a for a in names}

    def root(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    tree: list[Clique] = []
    for _, (a, b) in scored:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[ra] = rb
            tree.append((a, b))
    return tree


def pseudo_sigma(
    clique: Clique,
    cells: int,
    distance: dict[str, float],
    n: int,
    n_public: int,
    scale: float,
) -> float:
    """The pseudo-noise of a public marginal (the module docstring's formula)."""
    total = max(distance.get(a, 0.0) for a in clique) + n * n / max(n_public, 1)
    return float(np.sqrt(scale * total / cells))


def one_way_distance(
    scaled: dict[Clique, np.ndarray], released: Sequence[Measurement]
) -> dict[str, float]:
    """``D_a`` per attribute from its released 1-ways (pooled by precision), debiased."""
    out: dict[str, float] = {}
    for name in {m.clique[0] for m in released if len(m.clique) == 1 and not m.coarse}:
        same = [m for m in released if m.clique == (name,) and not m.coarse]
        precision = np.array([1.0 / m.sigma**2 for m in same])
        pooled = sum(p * m.noisy for p, m in zip(precision, same, strict=True)) / precision.sum()
        variance = 1.0 / float(precision.sum())
        gap = float(np.sum((scaled[(name,)] - pooled) ** 2)) - pooled.size * variance
        out[name] = max(gap, 0.0)
    return out


def public_prior(
    public: pd.DataFrame,
    schema: Schema,
    discretiser: Discretiser,
    n: int,
    released: Sequence[Measurement],
    *,
    cliques: str = "tree",
    scale: float = 1.0,
) -> PublicPrior | None:
    """The pseudo-measurements of ``public`` (``None`` when ``cliques`` is ``off``).

    Parameters
    ----------
    public
        The public table (same schema).
    schema, discretiser
        The declared domains and the engine's cells.
    n
        The private row count (public under replace-one): the counts are scaled to it.
    released
        The released private measurements so far (the 1-ways calibrate the scale).
    cliques
        One of :data:`PUBLIC_PRIORS`.
    scale
        Multiplies every pseudo-variance (larger: trust the public table less).
    """
    if cliques not in PUBLIC_PRIORS:
        raise ValueError(f"unknown public prior {cliques!r}; use one of {PUBLIC_PRIORS}")
    if cliques == "off":
        return None
    domain = discretiser.domain
    rows, counts = public_counts(public, schema, discretiser)
    if rows == 0:
        return None
    factor = n / rows
    scaled = {c: v * factor for c, v in counts.items()}
    chosen: list[Clique] = [(a,) for a in domain.names]
    if cliques == "tree":
        chosen += spanning_tree(domain, {c: v for c, v in counts.items() if len(c) == 2})
    distance = one_way_distance(scaled, released)
    out = []
    for clique in chosen:
        sigma = pseudo_sigma(clique, domain.cells(clique), distance, n, rows, scale)
        event = GaussianEvent(0.0, sigma, label=PUBLIC + "-".join(clique))
        noisy = scaled[clique].copy()
        noisy.setflags(write=False)
        out.append(Measurement(MarginalQuery(clique), noisy, sigma, event))
    return PublicPrior(rows, tuple(out))


def warm_start(model: Estimator, prior: PublicPrior | None) -> Estimator:
    """``model`` fitted to the public pseudo-measurements alone (the warm start)."""
    if prior is None:
        return model
    return model.fit(list(prior.measurements))


__all__ = [
    "PUBLIC",
    "PublicPrior",
    "mutual_information",
    "one_way_distance",
    "public_counts",
    "pseudo_sigma",
    "public_prior",
    "spanning_tree",
    "warm_start",
]
