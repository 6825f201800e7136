"""Atoms from a charged release: noisy counts of a public candidate set of values.

A value holding a large share of a numeric column's rows (0 spent, a state's tax rate
repeated over its residents, a round number of hours) carries rules: "any expense is
yes exactly when spend > 0" lives at the atom 0. The model can keep such a rule only if
the atom is a cell, and a bin, of its own, so that a 2-way marginal with the label
holds it. The fine histograms (:mod:`~dpevolve.engine.bins`) find atoms among the cells
of the fine partition (every value of a column with few; else the declared ends, 0 and
small whole numbers), and a public table gives its heavy values
(:mod:`~dpevolve.engine.public`). This module finds the others without public data.

**Candidates** (public: from the schema alone, :func:`candidate_values`). In every
numeric column whose fine partition is not one cell per value, the multiples of a
spacing ``s`` inside the declared range: ``s`` is the column's value step (1 for an
integer column, ``10^-decimals``), or the smallest power of ten for a column without
one, raised by powers of ten until at most :data:`CANDIDATES` remain.

**Release** (:func:`release_atoms`). One pass counts, per column, the rows at each
candidate (within :func:`~dpevolve.engine.discretise.atom_tolerance`: the values the
fine partition would code to an atom there); a row lies at one candidate at most, so
under replace-one a column's count vector moves by at most ``sqrt(2)`` in L2, and each
column is one discrete Gaussian at ``sigma = sqrt(2) / sqrt(2 rho_c)`` (zCDP
``rho_c = 1 / sigma^2``; docs/math.md, the Gaussian mechanism), ``rho_c`` an equal share
of ``EngineSpec.atom_share``. Every release is charged to the run's
:class:`~dpevolve.engine.plan.Spend` and recorded in the ledger (``atoms:<column>``).

**Found atoms** (:func:`found_atoms`, post-processing of the release): candidates
whose noisy count is at least :data:`~dpevolve.engine.bins.ATOM_SHARE` of the ``n``
rows and :data:`~dpevolve.engine.bins.THRESHOLD` noise scales, and stand out among
their neighbours (:func:`~dpevolve.engine.bins.spikes`); the
:data:`~dpevolve.engine.bins.ATOM_BINS` share of the bins largest. Each becomes an atom
of its column's fine partition (``Discretiser(..., atoms=...)``) and keeps a bin of its
own (:func:`~dpevolve.engine.bins.released_edges`), so it decodes to itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.bins import ATOM_BINS, ATOM_SHARE, THRESHOLD, spikes
from dpevolve.engine.discretise import atom_tolerance, value_step
from dpevolve.engine.measure import BATCH_ROWS, marginal_event, release, sigma_for
from dpevolve.engine.plan import Spend
from dpevolve.engine.spec import EngineSpec
from dpevolve.measurements import HistogramQuery, Measurement, MeasurementList
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import NoiseSource

#: At most this many candidate values per column (the spacing grows by powers of ten;
#: the noise for 4,096 cells takes about a quarter of a second).
CANDIDATES = 4096

#: The expected number of empty candidates of a column whose noise alone clears the
#: threshold of :func:`found_atoms` (a false atom costs a bin).
FALSE_ATOMS = 0.1

ATOMS = "atoms:"
"""Prefix of the ledger label of an atom release."""


def candidate_values(column: NumericColumn, grid_limit: int) -> np.ndarray:
    """The candidate values of ``column`` (sorted, evenly spaced; empty where its fine
    partition already holds every value: at most ``grid_limit`` of them)."""
    lo, hi = float(column.lo), float(column.hi)
    step = value_step(column)
    if step is not None and _count(lo, hi, step) <= grid_limit:
        return np.empty(0)
    spacing = (
        step if step is not None else 10.0 ** math.floor(math.log10(column.range / CANDIDATES))
    )
    while _count(lo, hi, spacing) > CANDIDATES:
        spacing *= 10.0
    first = math.ceil(lo / spacing - 1e-9)
    values = np.arange(first, first + _count(lo, hi, spacing)) * spacing
    digits = max(0, round(-math.log10(spacing)))
    return np.round(values, digits) if digits else np.round(values)


def _count(lo: float, hi: float, spacing: float) -> int:
    return max(0, math.floor(hi / spacing + 1e-9) - math.ceil(lo / spacing - 1e-9) + 1)


def atom_candidates(schema: Schema, spec: EngineSpec) -> dict[str, np.ndarray]:
    """Every numeric column with candidates, and its candidate values (public; none
    where ``spec.atom_share`` is 0)."""
    out: dict[str, np.ndarray] = {}
    if spec.atom_share <= 0:
        return out
    for column in Layout.of(schema).numeric:
        values = candidate_values(column, max(spec.fine_cells, spec.bins))
        if values.size:
            out[column.name] = values
    return out


class CandidateCounts:
    """The exact counts of rows at each candidate value, all columns in one vector (a
    :class:`~dpevolve.backends.base.CountQuery`). Private: release before use."""

    def __init__(
        self, schema: Schema, candidates: Mapping[str, np.ndarray], rows: int = BATCH_ROWS
    ) -> None:
        layout = Layout.of(schema)
        self.columns = [
            (k, c, np.asarray(candidates[c.name], dtype=np.float64))
            for k, c in enumerate(layout.numeric)
            if c.name in candidates
        ]
        sizes = [values.size for _, _, values in self.columns]
        self.offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(int)
        self.rows = int(rows)

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def counts(self, records: Records) -> np.ndarray:
        """The int64 counts of ``records`` (each column's candidates in turn)."""
        out = np.zeros(self.size, dtype=np.int64)
        for j, (k, column, values) in enumerate(self.columns):
            # the value as the decoder writes it (the fine partition codes the same)
            raw = np.clip(column.lo + records.numeric[:, k] * column.range, column.lo, column.hi)
            step = value_step(column)
            if step is not None:
                raw = np.round(raw, max(0, round(-math.log10(step))))
            raw = raw[np.isfinite(raw)]  # a missing cell is at no candidate
            spacing = values[1] - values[0] if values.size > 1 else 1.0
            index = np.clip(np.rint((raw - values[0]) / spacing), 0, values.size - 1)
            index = index.astype(np.int64)
            at = np.abs(raw - values[index]) <= atom_tolerance(column)
            counts = np.bincount(index[at], minlength=values.size)
            out[self.offsets[j] : self.offsets[j + 1]] = counts
        return out

    def split(self, stacked: np.ndarray) -> dict[str, np.ndarray]:
        """Each column's counts, float64."""
        return {
            column.name: np.asarray(stacked[self.offsets[j] : self.offsets[j + 1]], np.float64)
            for j, (_, column, _) in enumerate(self.columns)
        }


def found_atoms(
    values: np.ndarray, noisy: np.ndarray, sigma: float, n: int, most: int
) -> list[float]:
    """Candidates whose noisy count is at least ``ATOM_SHARE * n`` and ``z * sigma``
    and a spike among its neighbours: the ``most`` largest, largest first. ``z`` is
    :data:`~dpevolve.engine.bins.THRESHOLD`, or more where the candidates are so many
    that an empty one's noise would clear it (:func:`noise_floor`). Post-processing of
    a release (``n`` is public under replace-one)."""
    counts = np.asarray(noisy, dtype=np.float64)
    heavy = (counts >= ATOM_SHARE * n) & (counts >= noise_floor(counts.size) * sigma)
    heavy &= spikes(np.clip(counts, 0.0, None))
    index = np.flatnonzero(heavy)
    index = index[np.argsort(-counts[index], kind="stable")][:most]
    return [float(values[i]) for i in index]


def noise_floor(candidates: int) -> float:
    """``max(THRESHOLD, z)`` with ``P(N(0, 1) > z) = FALSE_ATOMS / candidates``: the
    expected number of empty candidates above ``z`` noise scales is ``FALSE_ATOMS``."""
    tail = FALSE_ATOMS / max(candidates, 1)
    return max(THRESHOLD, NormalDist().inv_cdf(1.0 - tail)) if tail < 0.5 else THRESHOLD


def release_atoms(
    source: PrivateSource,
    schema: Schema,
    candidates: Mapping[str, np.ndarray],
    rho: float,
    bins: int,
    spend: Spend,
    noise: NoiseSource,
    ledger: Ledger,
    measurements: MeasurementList,
    backend: Backend | None = None,
) -> dict[str, list[float]]:
    """Release the candidate counts (``rho`` in equal shares, one Gaussian per column,
    charged, recorded and appended to ``measurements``) and return the atoms found in
    each column (largest first)."""
    if not candidates or rho <= 0:
        return {}
    query = CandidateCounts(schema, candidates)
    reader = backend if backend is not None else LocalBackend()
    exact = query.split(reader.count(source.batches(), query))
    sigma = sigma_for(rho / len(exact))
    n = int(source.n)
    out: dict[str, list[float]] = {}
    for name, counts in exact.items():
        event = marginal_event(sigma, ATOMS + name)
        spend.charge(event)
        measured = release(counts, (name,), event, noise)
        listed = HistogramQuery(name, int(counts.size))
        measurements.append(Measurement(listed, measured.noisy, measured.sigma, event))
        ledger.record(event, round=0, clique=[name], cells=int(counts.size))
        found = found_atoms(candidates[name], measured.noisy, sigma, n, _most(bins))
        if found:
            out[name] = found
    return out


def _most(bins: int) -> int:
    """At most this many atoms of a column keep bins of their own."""
    return max(1, int(ATOM_BINS * bins))


__all__ = [
    "ATOMS",
    "CANDIDATES",
    "FALSE_ATOMS",
    "CandidateCounts",
    "atom_candidates",
    "candidate_values",
    "found_atoms",
    "noise_floor",
    "release_atoms",
]
