"""Public data in the engine: where the bins go, and a prior for the model, for free.

A public table (rows of the same kind as the private ones, given by the user; public
like the schema) costs no budget and is no release: nothing here reads a private record
or anything derived from one except released values. Two uses (:class:`PublicInputs`):

**Bins** (``EngineSpec.public_bins``, default ``range``). A declared range may be far
wider than the data (Person Activity's coordinates are declared on [-10, 10] and lie in
about [0, 5]), so equal-width bins over it leave the model a handful of occupied bins.
Where the public values' central range spans at most :data:`LOOSE` of the declared
range, :func:`public_edges` puts the bins over it (two tail bins out to the declared
end points). The discretiser stays a function of the schema and public data only.
Measured (docs/engine.md): Person Activity A with person B public, TSTR 0.567 -> about
0.645; on Adult the declared ranges are tight and nothing changes.

**Prior** (``EngineSpec.public_prior``, default ``off``): *pseudo-measurements*,
marginals of the public rows scaled to the private row count ``n``, fitted beside the
private measurements (and first alone: the warm start, :func:`warm_start`). Each
carries a :class:`~dpevolve.privacy.events.GaussianEvent` of sensitivity 0 (free), and
none is charged, recorded as a release or appended to the measurement list. The
cliques: every 1-way and, for ``tree``, the pairs of a maximum spanning tree of the
public pairwise mutual information (Chow & Liu 1968, as MST picks its pairs; McKenna,
Miklau & Sheldon 2021). The pseudo-noise of a public marginal on clique ``C`` with
``k_C`` cells is

``sigma_C^2 = scale * (max_{a in C} D_a + n^2 / n_public) / k_C``

with ``n^2 / n_public`` the sampling variance of the scaled public counts summed over
the cells, and ``D_a = max(0, ||n p_pub(a) - y_a||^2 - k_a sigma_a^2)`` the debiased
squared distance between the scaled public 1-way of ``a`` and its *released* private
1-way ``y_a`` (noise scale ``sigma_a``): post-processing of releases, so the prior
trusts a public table less where it visibly disagrees with the released marginals. It
measured no gain beyond the seeds' spread (Person Activity, Adult), hence off.

The ledger's ``public`` metadata says what was used (:meth:`PublicInputs.facts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.atoms import heavy_values, on_grid
from dpevolve.data.encoding import encode
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.bins import LOOSE, TAIL, atom_bins, loose_edges
from dpevolve.engine.boundaries import own_bins
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals
from dpevolve.engine.spec import PUBLIC_PRIORS, EngineSpec
from dpevolve.engine.within import CellValues, cell_values
from dpevolve.measurements import Clique, Domain, Estimator, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

PUBLIC = "public:"
"""Prefix of a pseudo-measurement's label (never a ledger entry: nothing is released)."""


@dataclass(frozen=True)
class PublicPrior:
    """The public pseudo-measurements of one run (free; never released or charged).

    Attributes
    ----------
    measurements
        One pseudo-measurement per public clique, counts scaled to ``n``.
    """

    measurements: tuple[Measurement, ...]

    def cliques(self) -> list[Clique]:
        return [m.clique for m in self.measurements]


@dataclass
class PublicInputs:
    """A public table, validated, and what the engine takes from it.

    Build it with :meth:`of` before anything is released (a bad public table fails
    first); :meth:`read` once the discretiser exists; :meth:`prior` once the 1-ways
    are released; :meth:`facts` for the ledger.
    """

    frame: pd.DataFrame
    schema: Schema
    spec: EngineSpec
    edges: dict[str, np.ndarray]
    counts: dict[Clique, np.ndarray] | None = None
    #: Every public value holding at least ``ATOM_SHARE`` of the public rows, per
    #: numeric column: each a cell of its column's fine partition
    #: (``Discretiser(..., atoms=...)``), so it decodes to itself.
    atoms: dict[str, list[float]] | None = None
    #: Per numeric column, the public repeated values within its fine cells, where
    #: decoded values land (:mod:`~dpevolve.engine.within`; set by :meth:`read`).
    within: dict[str, CellValues] | None = None
    #: Per numeric column, the public rows in each of its fine cells: the shape values
    #: take within a bin (:func:`~dpevolve.engine.within.public_shape`; set by :meth:`read`).
    fine: dict[str, np.ndarray] | None = None

    @classmethod
    def of(cls, public: pd.DataFrame, schema: Schema, spec: EngineSpec) -> PublicInputs:
        """Validate ``public`` against ``schema`` (a one-line error names the column)
        and place the numeric bins (:func:`public_edges`, per ``spec.public_bins``)."""
        frame, _ = schema.validate(public, on_invalid="error", what="public table")
        atoms: dict[str, list[float]] = {}
        edges = (
            {}
            if spec.public_bins == "off"
            else public_edges(frame, schema, spec.numeric_bins, spec.public_bins, atoms)
        )
        return cls(frame, schema, spec, edges, atoms=atoms)

    @property
    def rows(self) -> int:
        return len(self.frame)

    def value_bins(self, discretiser: Discretiser) -> dict[str, tuple[int, ...]]:
        """Per numeric column, the value bins holding at least :data:`TAIL` of the
        public rows: where the public table shows data (free;
        :func:`~dpevolve.engine.tails.released_inward`)."""
        if self.rows == 0:
            return {}
        ones = self.counts or public_counts(self.frame, self.schema, discretiser, pairs=False)
        out: dict[str, tuple[int, ...]] = {}
        for column in discretiser.numeric:
            counts = np.asarray(ones[(column.name,)], dtype=np.float64)[: discretiser.bins]
            out[column.name] = tuple(int(b) for b in np.flatnonzero(counts >= TAIL * self.rows))
        return out

    def read(self, discretiser: Discretiser) -> None:
        """What the engine takes from the public table once the bins are placed: its
        counts per fine cell (:attr:`fine`), its repeated values within the cells
        (:attr:`within`) and the prior's counts (none when the spec has no prior)."""
        self.within, self.fine = {}, {}
        records = encode(self.frame, self.schema)
        for column in discretiser.numeric:
            codes = discretiser.fine_codes(records, column.name)
            cells = discretiser.fine[column.name]
            self.fine[column.name] = np.bincount(codes, minlength=cells.size).astype(float)
            values = pd.to_numeric(self.frame[column.name], errors="coerce").to_numpy(float)
            found = cell_values(cells, codes, on_grid(values, column.step))
            if found is not None:
                self.within[column.name] = found
        if self.spec.public_prior != "off" and self.rows > 0:
            pairs = self.spec.public_prior == "tree"
            self.counts = public_counts(self.frame, self.schema, discretiser, pairs)

    def prior(self, domain: Domain, n: int, released: Sequence[Measurement]) -> PublicPrior | None:
        """The pseudo-measurements (``None`` without a prior); ``released``: the private
        releases so far (their 1-ways calibrate the scales)."""
        if self.counts is None:
            return None
        return public_prior(
            self.counts, domain, n, self.rows, released, self.spec.public_prior,
            self.spec.public_scale,
        )  # fmt: skip

    def facts(self, prior: PublicPrior | None) -> dict[str, Any]:
        """What the ledger says of the public inputs: public facts, and the prior's
        scales (post-processing of releases). No budget: not a release."""
        out: dict[str, Any] = {
            "rows": self.rows,
            "privacy": "public input: no budget, not a release",
            "bins": {name: [float(e) for e in edges] for name, edges in self.edges.items()},
            "shape_within_bins": sorted(self.fine or {}),
            "values_within_cells": sorted(self.within or {}),
        }
        if prior is not None:
            out["prior"] = {
                "cliques": [list(c) for c in prior.cliques()],
                "sigma": [float(m.sigma) for m in prior.measurements],
            }
        return out


def public_edges(
    frame: pd.DataFrame,
    schema: Schema,
    bins: int,
    mode: str = "range",
    atoms_out: dict[str, list[float]] | None = None,
) -> dict[str, np.ndarray]:
    """Bin edges of the numeric columns from a (validated) public table.

    Where the declared range is loose or crowded, or a value holds a large share of
    the public rows (:func:`~dpevolve.data.atoms.heavy_values`, a bin of its own),
    :func:`loose_edges` places them over the public values' quantiles. ``range``:
    ``bins - 2`` equal-width bins over the central range and one tail bin on each side
    out to the declared end points (crowded bins, or ``quantile``: the inner edges at
    public quantiles). Integer and ``decimals`` columns cut half-way between
    representable values.
    Public facts only: free. ``atoms_out``, when given, receives each column's heavy
    values, all of them (not only those :func:`~dpevolve.engine.bins.atom_bins` gives
    bins of their own).
    """
    out: dict[str, np.ndarray] = {}
    for column in schema.columns:
        if not isinstance(column, NumericColumn) or own_bins(column.values, bins):
            continue
        values = pd.to_numeric(frame[column.name], errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        if values.size == 0:
            continue
        step = column.step
        heavy = heavy_values(values, step)
        atoms = sorted(v for v, _ in heavy[: atom_bins(bins, [s for _, s in heavy])])
        if atoms_out is not None and heavy:
            atoms_out[column.name] = sorted(v for v, _ in heavy)
        rest = values[~np.isin(values, atoms)]
        rest = rest if rest.size else values

        def between(points: np.ndarray, step: float | None = step) -> np.ndarray:
            return points if step is None else (np.floor(points / step) + 0.5) * step

        def quantile(q: np.ndarray, values: np.ndarray = rest) -> np.ndarray:
            return np.asarray(np.quantile(values, q), dtype=float)

        edges = loose_edges(column, quantile, bins, mode, between, None, atoms)
        if edges is not None:
            out[column.name] = edges
    return out


def public_counts(
    frame: pd.DataFrame, schema: Schema, discretiser: Discretiser, pairs: bool = True
) -> dict[Clique, np.ndarray]:
    """A (validated) public table's 1-way and, with ``pairs``, 2-way counts, one pass."""
    source = FrameSource(frame, schema, on_invalid="error", what="public table")
    names = discretiser.domain.names
    cliques: list[Clique] = [(a,) for a in names]
    if pairs:
        cliques += [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    counts, _ = count_marginals(source, discretiser, cliques)
    return counts


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
    counts: dict[Clique, np.ndarray],
    domain: Domain,
    n: int,
    rows: int,
    released: Sequence[Measurement],
    cliques: str = "tree",
    scale: float = 1.0,
) -> PublicPrior | None:
    """The public pseudo-measurements (``None`` when ``cliques`` is ``off``).

    Parameters
    ----------
    counts
        The public table's 1-way (and, for ``tree``, 2-way) counts.
    domain
        The engine's cells.
    n, rows
        The private row count (public under replace-one) and the public one: counts
        are scaled by ``n / rows``.
    released
        The released private measurements so far (the 1-ways calibrate the scale).
    cliques
        One of :data:`~dpevolve.engine.spec.PUBLIC_PRIORS`.
    scale
        Multiplies every pseudo-variance (larger: trust the public table less).
    """
    if cliques not in PUBLIC_PRIORS:
        raise ValueError(f"unknown public prior {cliques!r}; use one of {PUBLIC_PRIORS}")
    if cliques == "off" or rows <= 0:
        return None
    scaled = {c: v * (n / rows) for c, v in counts.items()}
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
    return PublicPrior(tuple(out))


def warm_start(model: Estimator, prior: PublicPrior | None) -> Estimator:
    """``model`` fitted to the public pseudo-measurements alone (the warm start)."""
    if prior is None:
        return model
    return model.fit(list(prior.measurements))


__all__ = [
    "LOOSE",
    "PUBLIC",
    "TAIL",
    "PublicInputs",
    "PublicPrior",
    "mutual_information",
    "one_way_distance",
    "pseudo_sigma",
    "public_counts",
    "public_edges",
    "public_prior",
    "spanning_tree",
    "warm_start",
]
