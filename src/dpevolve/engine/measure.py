"""Marginal counts from the private source, and their Gaussian release.

Counting runs on the backend (:mod:`dpevolve.backends`): it cuts the records of the
:class:`~dpevolve.data.sources.PrivateSource` into slices of at most ``batch_rows`` rows,
which :class:`MarginalCounts` turns into cell codes and adds up with one ``bincount`` per
marginal, so memory is the requested cells plus one slice's codes, never
``rows x marginals``; on Dask the slices are counted on the workers.

Privacy of one marginal release. Under replace-one adjacency one record leaves one cell
and enters another (the same cell when its projection does not change), so the count
vector moves by at most ``sqrt(1^2 + 1^2) = sqrt(2)`` in L2; a record turned invalid
(``on_invalid="drop"``) leaves one cell, ``1 <= sqrt(2)``. Adding discrete Gaussian noise
of scale ``sigma`` from the one noise source is then ``rho = 2 / (2 sigma^2)``-zCDP
(Canonne, Kamath & Steinke 2020; counts are integers, so no grid slack is needed).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Records
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.errors import InputError
from dpevolve.measurements import Clique, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent, gaussian_sigma
from dpevolve.privacy.noise import NoiseSource

#: Rows per slice when counting (bounds the codes held at once). Small enough that one
#: slice's per-marginal temporaries (8 bytes a row) stay under glibc's default 128 KiB
#: mmap threshold: a Dask worker process starts with MALLOC_TRIM_THRESHOLD_ set, which
#: freezes that threshold, and 256 KiB temporaries then cost a fresh mmap and page faults
#: each (1.7x the CPU; benchmarks/dask_cost.py). Faster in this process too (cache).
BATCH_ROWS = 8_192

#: Replace-one L2 sensitivity of one marginal's counts.
MARGINAL_SENSITIVITY = math.sqrt(2.0)

FINE = "fine:"
"""Prefix of the ledger label of a fine 1-way histogram."""


class MarginalCounts:
    """The exact counts of ``cliques`` (cell codes) and fine histograms, as one vector.

    A :class:`~dpevolve.backends.base.CountQuery`: a backend hands it slices of at most
    ``rows`` records and adds the vectors it returns (integers: exact in any order, on
    any machine). Private: :meth:`split` gives the counts, which must go through
    :func:`release` before they leave the engine.
    """

    def __init__(
        self,
        discretiser: Discretiser,
        cliques: Sequence[Clique],
        fine: Sequence[str] = (),
        rows: int = BATCH_ROWS,
    ) -> None:
        domain = discretiser.domain
        self.discretiser = discretiser
        self.cliques = list(dict.fromkeys(cliques))  # a repeat would be counted twice
        self.fine = list(fine)
        self.rows = int(rows)
        self._shapes = [domain.shape(c) for c in self.cliques]
        self._where = [[domain.index(a) for a in c] for c in self.cliques]
        sizes = [math.prod(s) for s in self._shapes]
        sizes += [discretiser.fine[f].size for f in self.fine]
        self._offsets = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(int)

    @property
    def size(self) -> int:
        return int(self._offsets[-1])

    @property
    def offsets(self) -> np.ndarray:
        """Start of every clique's counts, then every fine histogram's, in the stacked
        vector (its length last)."""
        return self._offsets

    def counts(self, records: Records) -> np.ndarray:
        """The int64 counts of ``records``: every clique's cells, then every fine histogram."""
        fine = [self.discretiser.fine_codes(records, name) for name in self.fine]
        return _tally(
            self.discretiser.codes(records), fine, self._where, self._shapes, self._offsets
        )

    def cell_codes(self, records: Records) -> np.ndarray:
        """Every cell code of ``records`` under this query's discretiser, compact:
        ``(rows, d + f)`` in column order (Fortran), the ``d`` coarse codes in schema
        order then the fine code of each numeric column, in the narrowest unsigned type.

        A record's codes depend on the discretiser alone, not on the cliques, so a
        backend may keep them for every later pass with the same discretiser
        (:meth:`on_codes` counts them; :class:`~dpevolve.backends.dask.DaskBackend`
        keeps them on its workers).
        """
        disc = self.discretiser
        sizes = [*disc.domain.sizes, *(c.size for c in disc.fine.values())]
        dtype = np.min_scalar_type(max(sizes, default=1) - 1)
        out = np.empty((len(records), len(sizes)), dtype=dtype, order="F")
        out[:, : len(disc.domain.names)] = disc.codes(records)
        for j, name in enumerate(disc.fine, start=len(disc.domain.names)):
            out[:, j] = disc.fine_codes(records, name)
        return out

    def on_codes(self) -> CodeCounts:
        """This query over :meth:`cell_codes`' columns, as plain data (small to ship)."""
        first = len(self.discretiser.domain.names)
        column = {name: first + j for j, name in enumerate(self.discretiser.fine)}
        return CodeCounts(
            tuple(tuple(w) for w in self._where),
            tuple(tuple(s) for s in self._shapes),
            tuple(column[f] for f in self.fine),
            self._offsets,
            self.rows,
        )

    def split(self, stacked: np.ndarray) -> tuple[dict[Clique, np.ndarray], dict[str, np.ndarray]]:
        """The stacked counts as float64 arrays: each clique in its cell shape, and each
        fine histogram."""
        parts = [
            np.asarray(stacked[a:b], dtype=np.float64) for a, b in itertools.pairwise(self._offsets)
        ]
        exact = {
            c: parts[k].reshape(shape)
            for k, (c, shape) in enumerate(zip(self.cliques, self._shapes, strict=True))
        }
        return exact, dict(zip(self.fine, parts[len(self.cliques) :], strict=True))


@dataclass(frozen=True, eq=False)
class CodeCounts:
    """A :class:`MarginalCounts` over kept cell codes (:meth:`MarginalCounts.cell_codes`).

    Attributes
    ----------
    where, shapes
        Each clique's code columns and cell shape.
    fine
        The code column of each fine histogram.
    offsets
        Start of every clique's and fine histogram's counts (the length last).
    rows
        Rows counted at once (bounds the temporaries, as :data:`BATCH_ROWS` says).
    """

    where: tuple[tuple[int, ...], ...]
    shapes: tuple[tuple[int, ...], ...]
    fine: tuple[int, ...]
    offsets: np.ndarray
    rows: int

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    def counts(self, codes: np.ndarray) -> np.ndarray:
        """The int64 counts of kept codes, slice by slice: :meth:`MarginalCounts.counts`'
        integers for the records the codes came from."""
        total = np.zeros(self.size, dtype=np.int64)
        for start in range(0, len(codes), self.rows):
            part = codes[start : start + self.rows]
            fine = [part[:, j] for j in self.fine]
            total += _tally(part, fine, self.where, self.shapes, self.offsets)
        return total


def _tally(
    coarse: np.ndarray,
    fine: Sequence[np.ndarray],
    where: Sequence[Sequence[int]],
    shapes: Sequence[tuple[int, ...]],
    offsets: np.ndarray,
) -> np.ndarray:
    """One slice's counts: each clique's cells from the ``coarse`` code columns in
    ``where``, then each ``fine`` code vector's histogram."""
    out = np.zeros(int(offsets[-1]), dtype=np.int64)
    # Column by column (a wide table's pass reads every pair's two columns): strided reads
    # of a row-major array cost several times the counting.
    columns = np.asfortranarray(coarse, dtype=np.int64)
    _check_codes(columns, where, shapes)
    for k, (shape, cols) in enumerate(zip(shapes, where, strict=True)):
        out[offsets[k] : offsets[k + 1]] = np.bincount(
            _cell_index(columns, cols, shape), minlength=offsets[k + 1] - offsets[k]
        )
    for j, codes in enumerate(fine, start=len(where)):
        out[offsets[j] : offsets[j + 1]] = np.bincount(codes, minlength=offsets[j + 1] - offsets[j])
    return out


def _check_codes(
    columns: np.ndarray, where: Sequence[Sequence[int]], shapes: Sequence[tuple[int, ...]]
) -> None:
    """Every code column a clique reads lies within its cells (as
    ``np.ravel_multi_index`` checks), once per column, not once per clique."""
    size: dict[int, int] = {}
    for cols, shape in zip(where, shapes, strict=True):
        size.update(zip(cols, shape, strict=True))
    if not size or not len(columns):
        return
    used = np.fromiter(size, dtype=np.int64, count=len(size))
    limits = np.fromiter(size.values(), dtype=np.int64, count=len(size))
    part = columns[:, used]
    if part.min() < 0 or np.any(part.max(axis=0) >= limits):
        raise ValueError("a cell code lies outside its column's cells")


def _cell_index(columns: np.ndarray, cols: Sequence[int], shape: Sequence[int]) -> np.ndarray:
    """Each row's cell in a clique's C-order flat counts (``np.ravel_multi_index``'s
    index, by Horner's rule), ``columns`` column-major and checked by
    :func:`_check_codes`."""
    if not cols:
        return np.zeros(len(columns), dtype=np.int64)
    flat = columns[:, cols[0]].copy()
    for c, size in zip(cols[1:], shape[1:], strict=True):
        flat *= size
        flat += columns[:, c]
    return flat


def count_marginals(
    source: PrivateSource,
    discretiser: Discretiser,
    cliques: Sequence[Clique],
    fine: Sequence[str] = (),
    batch_rows: int = BATCH_ROWS,
    backend: Backend | None = None,
) -> tuple[dict[Clique, np.ndarray], dict[str, np.ndarray]]:
    """Exact counts of every clique (cell shape) and fine histograms, in one pass.

    ``backend`` reads the records (default
    :class:`~dpevolve.backends.local.LocalBackend`, streaming through this process; a
    :class:`~dpevolve.backends.dask.DaskBackend` counts on its workers and returns only
    the sums). Every backend gives the same integers.

    Private: the results must go through :func:`release` before they leave the engine.
    """
    query = MarginalCounts(discretiser, cliques, fine, batch_rows)
    reader = backend if backend is not None else LocalBackend()
    return query.split(reader.count(source.batches(), query))


def marginal_event(sigma: float, label: str = "marginal") -> GaussianEvent:
    """What one marginal release at ``sigma`` costs: sensitivity ``sqrt(2)``, discrete."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise InputError(f"a marginal release needs sigma > 0, got {sigma!r}")
    return GaussianEvent(MARGINAL_SENSITIVITY, sigma, label=label, discrete=True)


def release(
    exact: np.ndarray,
    clique: Clique,
    event: GaussianEvent,
    noise: NoiseSource,
    *,
    query: MarginalQuery | None = None,
) -> Measurement:
    """``exact + N_Z(0, sigma^2)`` per cell as a :class:`Measurement` carrying ``event``.

    ``query`` (default: the fine marginal of ``clique``) may be a coarse query on the
    same clique, ``exact`` then its aggregated counts: the sensitivity is ``sqrt(2)``
    all the same (:class:`~dpevolve.measurements.MarginalQuery`).
    """
    chosen = query if query is not None else MarginalQuery(clique)
    if chosen.clique != tuple(clique):
        raise InputError("a release's query must be on its clique")
    noisy = np.asarray(noise.gaussian(exact, event.sigma), dtype=np.float64)
    noisy = noisy.reshape(exact.shape)
    noisy.setflags(write=False)
    return Measurement(chosen, noisy, event.sigma, event)


def sigma_for(rho: float) -> float:
    """The noise scale of one marginal release costing ``rho``: ``sqrt(2) / sqrt(2 rho)``."""
    if not (math.isfinite(rho) and rho > 0):
        raise InputError(f"a marginal release needs rho > 0, got {rho!r}")
    return gaussian_sigma(MARGINAL_SENSITIVITY, rho)


__all__ = [
    "BATCH_ROWS",
    "FINE",
    "MARGINAL_SENSITIVITY",
    "CodeCounts",
    "MarginalCounts",
    "count_marginals",
    "marginal_event",
    "release",
    "sigma_for",
]
