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
numeric column whose fine partition is not one cell per value (a column's declared
``atoms`` are cells of that partition, and it is searched for others), the multiples of a
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
whose noisy count is at least :data:`~dpevolve.data.atoms.ATOM_SHARE` of the ``n``
rows and :data:`~dpevolve.engine.bins.THRESHOLD` noise scales, and stand out among
their neighbours (:func:`~dpevolve.data.atoms.spikes`); the
:func:`~dpevolve.engine.bins.most_atoms` largest (their bins:
:func:`~dpevolve.engine.bins.atom_bins`). Each becomes an atom
of its column's fine partition (``Discretiser(..., atoms=...)``) and keeps a bin of its
own (:func:`~dpevolve.engine.bins.released_edges`), so it decodes to itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.backends.local import LocalBackend
from dpevolve.data.atoms import ATOM_SHARE, spikes
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.bins import THRESHOLD, most_atoms
from dpevolve.engine.discretise import atom_tolerance
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
    step = column.step
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
        values = candidate_values(column, max(spec.fine_cells, spec.numeric_bins))
        if values.size:
            out[column.name] = values
    return out


class CandidateCounts:
    """The exact counts of rows at each candidate value, all columns in one vector (a
    :class:`~dpevolve.backends.base.CountQuery`). Private: release before use."""

    def __init__(
        self,
        schema: Schema,
        candidates: Mapping[str, np.ndarray],
        rows: int = BATCH_ROWS,
        halfwidths: Mapping[str, float] | None = None,
    ) -> None:
        layout = Layout.of(schema)
        self.columns = [
            (k, c, np.sort(np.asarray(candidates[c.name], dtype=np.float64)))
            for k, c in enumerate(layout.numeric)
            if c.name in candidates
        ]
        # how far from a candidate a row still counts there (default: at it)
        self.halfwidths = {
            c.name: float((halfwidths or {}).get(c.name, atom_tolerance(c)))
            for _, c, _ in self.columns
        }
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
            step = column.step
            if step is not None:
                raw = np.round(raw, max(0, round(-math.log10(step))))
            raw = raw[np.isfinite(raw)]  # a missing cell is at no candidate
            # the nearest candidate (one at most: replace-one moves two counts by one)
            right = np.clip(np.searchsorted(values, raw), 0, values.size - 1)
            left = np.maximum(right - 1, 0)
            index = np.where(np.abs(values[left] - raw) <= np.abs(values[right] - raw), left, right)
            at = np.abs(raw - values[index]) <= self.halfwidths[column.name]
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


def zoom_spacings(column: NumericColumn, values: np.ndarray, most: int) -> list[float]:
    """The spacings of a column's zoom levels after the first (public: from the schema
    and the candidates alone); none where the candidates are already the column's
    values. Each level divides the spacing by the largest power of ten that keeps the
    ``most`` kept cells' children within :data:`CANDIDATES`, down to the value step."""
    step = column.step
    if step is None or values.size < 2:
        return []
    spacing = float(values[1] - values[0])
    ratio = 10.0 ** max(1, math.floor(math.log10(CANDIDATES / max(most, 1))))
    out: list[float] = []
    while spacing > step * (1.0 + 1e-9):
        spacing = max(step, spacing / ratio)
        out.append(_rounded(spacing, step))
    return out


def children(parents: np.ndarray, width: float, spacing: float) -> np.ndarray:
    """The multiples of ``spacing`` in ``[c - width / 2, c + width / 2)`` for each
    parent ``c`` (sorted; public: a function of released cells)."""
    out = []
    for c in np.sort(np.asarray(parents, dtype=np.float64)):
        first = math.ceil((c - width / 2.0) / spacing - 1e-9)
        last = math.ceil((c + width / 2.0) / spacing - 1e-9)
        out.append(np.arange(first, last) * spacing)
    values = np.concatenate(out) if out else np.empty(0)
    return np.unique(_rounded(values, spacing))


def _rounded(values: Any, spacing: float) -> Any:
    digits = max(0, round(-math.log10(spacing))) if spacing < 1.0 else 0
    return np.round(values, digits) if digits else np.round(values)


def kept_cells(noisy: np.ndarray, sigma: float, n: int, most: int) -> np.ndarray:
    """The indices of the cells a zoom level refines: noisy count at least
    ``ATOM_SHARE * n`` and the noise floor (:func:`noise_floor`), the ``most`` largest
    (post-processing of a release; no spike needed: an atom may sit in a dense cell)."""
    counts = np.asarray(noisy, dtype=np.float64)
    heavy = (counts >= ATOM_SHARE * n) & (counts >= noise_floor(counts.size) * sigma)
    index = np.flatnonzero(heavy)
    return index[np.argsort(-counts[index], kind="stable")][:most]


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
    """Release the candidate counts, zooming where the candidates are coarser than the
    column's values, and return the atoms found in each column (largest first).

    ``rho`` goes in equal shares to the columns, a column's share in equal parts to its
    planned levels (one, and one per :func:`zoom_spacings` entry; public); each level
    is one Gaussian per column, charged, recorded (``atoms:<column>``, its ``level``)
    and appended to ``measurements``. A zoom level counts the rows within half its spacing of each
    candidate; the next counts the multiples of the next spacing inside the kept cells
    (:func:`kept_cells`, :func:`children`); the last, at the value step, the rows at
    each value. A column whose level keeps no cell stops there (its later levels are
    not spent)."""
    if not candidates or rho <= 0:
        return {}
    most = most_atoms(bins)
    columns = {c.name: c for c in Layout.of(schema).numeric if c.name in candidates}
    levels = {a: zoom_spacings(c, np.asarray(candidates[a]), most) for a, c in columns.items()}
    # each column's equal share, split over its levels: a column without zoom keeps
    # the noise it had with one level
    sigmas = {a: sigma_for(rho / len(columns) / (1 + len(v))) for a, v in levels.items()}
    current = {a: np.asarray(candidates[a], dtype=np.float64) for a in columns}
    half = {a: _half(candidates[a]) for a in columns if levels[a]}
    reader = backend if backend is not None else LocalBackend()
    n = int(source.n)
    out: dict[str, list[float]] = {}
    level = 0
    while current:
        query = CandidateCounts(schema, current, halfwidths=half)
        exact = query.split(reader.count(source.batches(), query))
        after: dict[str, np.ndarray] = {}
        for name, counts in exact.items():
            sigma = sigmas[name]
            noisy = _released(name, counts, sigma, level, spend, noise, ledger, measurements)
            if level < len(levels[name]):
                kept = kept_cells(noisy, sigma, n, most)
                if kept.size:
                    width = 2.0 * half[name]
                    after[name] = children(current[name][kept], width, levels[name][level])
                    if level + 1 < len(levels[name]):
                        half[name] = levels[name][level] / 2.0
                    else:
                        half.pop(name)  # the last level: the values themselves
                continue
            found = found_atoms(current[name], noisy, sigma, n, most)
            if found:
                out[name] = found
        current, level = after, level + 1
    return out


def _half(values: np.ndarray) -> float:
    """Half the spacing of a zoom column's first candidates."""
    values = np.asarray(values, dtype=np.float64)
    return float(values[1] - values[0]) / 2.0


def _released(
    name: str,
    counts: np.ndarray,
    sigma: float,
    level: int,
    spend: Spend,
    noise: NoiseSource,
    ledger: Ledger,
    measurements: MeasurementList,
) -> np.ndarray:
    """One column's counts at one level: charged, released, listed and recorded."""
    event = marginal_event(sigma, ATOMS + name)
    spend.charge(event)
    measured = release(counts, (name,), event, noise)
    listed = HistogramQuery(name, int(counts.size))
    measurements.append(Measurement(listed, measured.noisy, measured.sigma, event))
    ledger.record(event, round=0, clique=[name], cells=int(counts.size), level=level)
    return np.asarray(measured.noisy, dtype=np.float64)


__all__ = [
    "ATOMS",
    "CANDIDATES",
    "FALSE_ATOMS",
    "CandidateCounts",
    "atom_candidates",
    "candidate_values",
    "children",
    "found_atoms",
    "kept_cells",
    "noise_floor",
    "release_atoms",
    "zoom_spacings",
]
