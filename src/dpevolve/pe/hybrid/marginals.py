"""Noisy low-order marginals: one Gaussian release of many contingency tables.

The workload (which column sets to count, and how numeric columns are binned) is a
public choice made before any private record is read: by default every 1- and 2-way
set of the schema's columns, numeric columns cut into equal-width bins over their
*declared* range (never a range seen in the data).

Privacy. Stack the ``m`` marginal count vectors into one vector ``c(D)``. Under
replace-one adjacency one record changes: in every marginal, one cell loses 1 and one
cell gains 1 (the same cell when the record's projection does not change). So

``||c(D) - c(D')||_2^2 <= m * (1^2 + 1^2) = 2m``,  ``S = sqrt(2m)``,

and releasing ``c(D) + N(0, sigma^2 I)`` is ``rho = S^2 / (2 sigma^2)``-zCDP (a Gaussian
mechanism with ``mu = S / sigma``). The row count ``n`` is public under replace-one, so
dividing by it is post-processing. A Blowfish policy only removes neighbouring pairs,
so the bound holds under any policy too.

Counting streams over record batches: memory is one batch's cell indices plus the
released vector, never an ``n x cells`` matrix.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.measurements import Measurement, WorkloadQuery
from dpevolve.privacy import GaussianEvent, gaussian_sigma
from dpevolve.privacy.noise import NoiseSource

DEFAULT_BINS = 20
"""Equal-width bins per numeric column (the same cut the evaluation module uses)."""

PrivateRecords = Records | Iterable[Records] | Callable[[], Iterable[Records]]


# ------------------------------------------------------------------------ workload
@dataclass(frozen=True)
class Workload:
    """Which marginals to measure: column sets and the bins of numeric columns.

    Parameters
    ----------
    sets
        Column-name tuples, each a marginal (in schema order within a set).
    bins
        Equal-width bins per numeric column over its declared ``[lo, hi]``.
    set_bins
        Optional bins per set (same length as ``sets``), overriding ``bins``: coarse
        bins keep high-order sets small. Use divisors of ``bins`` so that a value
        redrawn within its fine bin stays in its coarse bin.
    """

    sets: tuple[tuple[str, ...], ...]
    bins: int = DEFAULT_BINS
    set_bins: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.sets:
            raise InputError("a marginal workload needs at least one column set")
        if self.bins < 1:
            raise InputError(f"numeric columns need at least one bin, got {self.bins}")
        for s in self.sets:
            if not s or len(set(s)) != len(s):
                raise InputError(f"marginal {s!r}: a set needs distinct columns")
        if self.set_bins is not None and (
            len(self.set_bins) != len(self.sets) or min(self.set_bins) < 1
        ):
            raise InputError("set_bins needs one bin count >= 1 per set")

    def bins_of(self, i: int) -> int:
        """Numeric bins of set ``i``."""
        return self.bins if self.set_bins is None else int(self.set_bins[i])

    @classmethod
    def all_up_to(
        cls,
        schema: Schema,
        order: int = 2,
        bins: int = DEFAULT_BINS,
        label_order: int = 0,
        one_way: bool = True,
        coarse_order: int = 0,
        coarse_bins: int = 2,
    ) -> Workload:
        """Every set of 1 (or 2, without ``one_way``) to ``order`` columns of ``schema``.

        ``label_order > order`` adds every set of ``label_order`` columns that holds the
        schema's label (the label is declared in the schema: a public choice), and
        ``coarse_order`` every set of that many columns holding the label with numeric
        columns in ``coarse_bins`` bins.
        """
        if order < 1:
            raise InputError(f"marginal order must be at least 1, got {order}")
        names = schema.names
        first = 1 if one_way or order < 2 else 2
        sets = [s for k in range(first, order + 1) for s in combinations(names, k)]
        if label_order > order and schema.label is not None:
            sets += [s for s in combinations(names, label_order) if schema.label in s]
        fine = len(sets)
        if coarse_order > 1 and schema.label is not None:
            sets += [s for s in combinations(names, coarse_order) if schema.label in s]
        if len(sets) == fine:
            return cls(tuple(sets), bins)
        return cls(tuple(sets), bins, (bins,) * fine + (coarse_bins,) * (len(sets) - fine))

    @property
    def sensitivity(self) -> float:
        """Replace-one L2 sensitivity of all counts stacked: ``sqrt(2 m)``."""
        return math.sqrt(2.0 * len(self.sets))


class Binning:
    """Cell codes of encoded records, per schema column.

    Numeric columns are decoded to their raw value (integer columns rounded, as
    :func:`~dpevolve.data.encoding.decode` does) and cut at ``linspace(lo, hi, bins + 1)``
    with the top edge in the last bin; a nullable numeric column has one more cell, its
    missing cells (so the release measures how many are missing, as it does for a
    categorical column's reserved missing value); categorical columns keep their code.
    """

    def __init__(self, schema: Schema, bins: int = DEFAULT_BINS) -> None:
        self.layout = Layout.of(schema)
        self.bins = int(bins)
        self._where: dict[str, tuple[str, int]] = {}
        sizes: dict[str, int] = {}
        for k, col in enumerate(self.layout.numeric):
            self._where[col.name] = ("numeric", k)
            sizes[col.name] = self.bins + int(col.nullable)
        for k, cat in enumerate(self.layout.categorical):
            self._where[cat.name] = ("categorical", k)
            sizes[cat.name] = len(cat.values)
        self.sizes = sizes
        self._edges = [np.linspace(c.lo, c.hi, self.bins + 1) for c in self.layout.numeric]

    def raw(self, records: Records, k: int) -> np.ndarray:
        """Raw values of numeric column ``k`` as the decoder writes them."""
        col: NumericColumn = self.layout.numeric[k]
        raw = np.clip(col.lo + records.numeric[:, k] * col.range, col.lo, col.hi)
        return np.round(raw) if col.integer else raw

    def codes(self, records: Records, column: str) -> np.ndarray:
        """int64 cell codes of ``column`` in ``[0, sizes[column])``."""
        kind, k = self._where[column]
        if kind == "categorical":
            return records.codes[:, k].astype(np.int64)
        raw = self.raw(records, k)
        cut = np.searchsorted(self._edges[k][1:-1], raw, side="right").astype(np.int64)
        if self.layout.numeric[k].nullable:
            cut[np.isnan(raw)] = self.bins  # the missing cell, never the top bin
        return cut

    def bin_bounds(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Encoded ``[lower, upper]`` of every bin of numeric column ``k`` (in [0, 1])."""
        edges = np.linspace(0.0, 1.0, self.bins + 1)
        return edges[:-1], edges[1:]


class CellIndex:
    """Maps records to their cell in every marginal of a workload (flat, offset)."""

    def __init__(self, schema: Schema, workload: Workload) -> None:
        self.workload = workload
        self.binning = Binning(schema, workload.bins)
        unknown = {c for s in workload.sets for c in s} - set(self.binning.sizes)
        if unknown:
            raise InputError(f"marginal workload names unknown columns {sorted(unknown)}")
        self._set_bins = [workload.bins_of(i) for i in range(len(workload.sets))]
        self._binnings = {b: Binning(schema, b) for b in set(self._set_bins)}
        self._binnings[workload.bins] = self.binning
        self.shapes = tuple(
            tuple(self._binnings[b].sizes[c] for c in s)
            for s, b in zip(workload.sets, self._set_bins, strict=True)
        )
        self.cells = np.array([math.prod(shape) for shape in self.shapes], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.cells)]).astype(np.int64)

    @property
    def total_cells(self) -> int:
        return int(self.offsets[-1])

    def index(self, records: Records) -> np.ndarray:
        """(sets, rows) int64: each record's flat cell, offset into the stacked vector."""
        per_column: dict[tuple[str, int], np.ndarray] = {}
        for s, b in zip(self.workload.sets, self._set_bins, strict=True):
            for c in s:
                if (c, b) not in per_column:
                    per_column[(c, b)] = self._binnings[b].codes(records, c)
        out = np.empty((len(self.workload.sets), len(records)), dtype=np.int64)
        for i, (s, shape) in enumerate(zip(self.workload.sets, self.shapes, strict=True)):
            flat = np.zeros(len(records), dtype=np.int64)
            for column, size in zip(s, shape, strict=True):
                flat = flat * size + per_column[(column, self._set_bins[i])]
            out[i] = flat + self.offsets[i]
        return out

    def part(self, stacked: np.ndarray, i: int) -> np.ndarray:
        """Marginal ``i`` of a stacked count vector (flat, row-major order of its columns)."""
        return stacked[self.offsets[i] : self.offsets[i + 1]]

    def counts(self, records: Records) -> np.ndarray:
        """Stacked marginal counts of ``records`` (float64, length ``total_cells``)."""
        idx = self.index(records)
        return np.bincount(idx.ravel(), minlength=self.total_cells).astype(np.float64)


# ------------------------------------------------------------------------- release
#: Most cell indices (int64) one counting slice holds: 32 MiB, whatever the workload.
INDEX_CELLS = 1 << 22


class WorkloadCounts:
    """A workload's stacked counts as a :class:`~dpevolve.backends.base.CountQuery`: a
    backend hands it slices of at most ``rows`` records and adds the int64 vectors."""

    def __init__(self, index: CellIndex, rows: int) -> None:
        self.index = index
        self.rows = int(rows)

    @property
    def size(self) -> int:
        return self.index.total_cells

    def counts(self, records: Records) -> np.ndarray:
        idx = self.index.index(records)
        return np.bincount(idx.ravel(), minlength=self.size).astype(np.int64)


def count_workload(
    private: PrivateRecords,
    index: CellIndex,
    batch_rows: int | None = None,
    backend: Backend | None = None,
) -> tuple[np.ndarray, int]:
    """Exact stacked counts and the row count, streaming over record batches (a
    callable ``private`` is called once for them). Like the engine's marginals
    (:func:`~dpevolve.engine.measure.count_marginals`), the counts are one
    :class:`~dpevolve.backends.base.CountQuery` read through ``Backend.count``, the one
    counting path; the workload's binning is the hybrid's own.

    Each batch is cut into slices of at most ``batch_rows`` rows (default: as many as
    keep ``sets x rows`` cell indices within :data:`INDEX_CELLS`), so memory stays
    bounded whatever the batch size and the number of sets. ``backend`` (default:
    this process) reads the records: a :class:`~dpevolve.backends.dask.DaskBackend`
    counts on its workers and returns only the sums, the same integers.
    """
    if batch_rows is None:
        batch_rows = max(1, min(65_536, INDEX_CELLS // max(1, len(index.workload.sets))))
    reader = backend if backend is not None else LocalBackend()
    data = private() if callable(private) else private
    exact = reader.count(data, WorkloadCounts(index, batch_rows))
    # every record lands in one cell of each set: the first set's cells count the rows
    rows = int(exact[index.offsets[0] : index.offsets[1]].sum()) if index.offsets.size > 1 else 0
    return exact.astype(np.float64), rows


def measure_marginals(
    private: PrivateRecords,
    schema: Schema,
    workload: Workload,
    rho: float,
    noise: NoiseSource,
    *,
    backend: Backend | None = None,
) -> Measurement[WorkloadQuery]:
    """Release the workload's marginals of ``private`` as one ``rho``-zCDP Gaussian.

    Parameters
    ----------
    private
        Encoded private records: one :class:`Records`, an iterable of batches, or a
        callable returning a fresh iterable of batches (read once).
    schema
        The declared domains (bins come from here, never from the data).
    workload
        The public choice of marginals.
    rho
        zCDP cost of the release, ``> 0``: ``sigma = sqrt(2 m) / sqrt(2 rho)``.
    noise
        The one noise source (:mod:`dpevolve.privacy.noise`).
    backend
        Where the records are counted (default: this process; see
        :func:`count_workload`).

    Returns
    -------
    Measurement
        The released stacked counts (read-only; marginal ``i`` is
        :meth:`CellIndex.part`), its ``sigma`` and its ``event`` (``sigma`` on the
        replace-one L2 sensitivity ``sqrt(2 m)``) for the ledger and the run's list.
    """
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho > 0):
        raise InputError(f"the marginal release needs rho > 0, got {rho!r}")
    index = CellIndex(schema, workload)
    # The count of valid rows is private: it never leaves this function.
    exact, _ = count_workload(private, index, backend=backend)
    sensitivity = workload.sensitivity
    sigma = gaussian_sigma(sensitivity, rho)
    noisy = np.asarray(noise.gaussian(exact, sigma), dtype=np.float64)
    del exact  # only the noisy vector leaves this function
    noisy.setflags(write=False)
    # Integer counts plus the noise source's discrete Gaussian: accounted in zCDP.
    event = GaussianEvent(sensitivity, sigma, label="marginals", discrete=True)
    return Measurement(WorkloadQuery(workload.sets), noisy, sigma, event)


def l2_change(index: CellIndex, a: Records, b: Records) -> float:
    """``||c(a) - c(b)||_2`` of two tables' stacked counts (for audits and tests)."""
    return float(np.linalg.norm(index.counts(a) - index.counts(b)))


__all__: Sequence[str] = [
    "DEFAULT_BINS",
    "Binning",
    "CellIndex",
    "Workload",
    "WorkloadCounts",
    "count_workload",
    "l2_change",
    "measure_marginals",
]
