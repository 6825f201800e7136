"""Fused voting on this machine (docs/math.md §1, §3): distance, vote and histogram in one pass.

The vote is nearly all of a run's cost. :class:`~dpevolve.backends.local.LocalBackend`
builds a (chunk x population) distance block, then argmins or softmaxes it; here numba
kernels walk the private records in parallel (``prange`` over blocks of 256 records)
and, for each record, compute its ``m`` distances into a row buffer owned by the block,
take the vote and accumulate it. No chunk x population block is ever built: memory is
O(m) per thread, plus one partial histogram per block for soft votes.

Exactness (what the tests pin down): the kernels follow the canonical arithmetic of
:mod:`dpevolve.backends.canonical`, the same the numpy backend and the exact sensitivity
search use, so votes are bit-identical across backends and chunkings.

* Gower: every distance is summed in the reference's order (numeric attributes, then
  categorical ones, each ``w_k |a - b|`` or a weighted table entry), so distances and
  hence hard votes are bit-identical to :meth:`Gower.pairwise`.
* Tab-PE embedding: ``d = sqrt(sum_num (a - b)^2 + (2/9) #mismatches)`` evaluated per
  pair, as written (numeric squares summed in attribute order, then the mismatch count
  times ``2/9`` added once), exactly as :meth:`TabPEEmbedding.squared` does.
* Nullable numeric columns (missing cells NaN, :mod:`dpevolve.pe.distance`): a Gower
  term is ``w |a - b|``, ``w`` when exactly one cell is missing, ``0`` when both are,
  added in its attribute's place; an embedding term is ``d^2``, ``1`` or ``0``, added
  after the mismatches in attribute order -- the reference's order in both cases.
* Hard vote: first index of the minimum distance (docs/math.md §3);
  each record's index is written out and counted with ``bincount`` (exact integers).
* Soft vote: logits ``-d / tau`` minus their maximum; ``exp`` by the canonical
  polynomial (:func:`~dpevolve.backends.canonical.exp_canonical`, within 1 ulp of libm,
  and vectorised); division by the row total (summed pairwise exactly as numpy sums);
  then each vote rounded to a multiple of ``2^-30`` and summed as integer grid units,
  which is exact, so the histogram is bit-identical to the numpy backend's.

Soft histograms are summed per block of records (the "per-thread" histograms, but per
block), in exact grid units, so a result depends neither on the number of threads nor
on their scheduling.

numba is optional (``pip install dpevolve[fast]``): it is imported on first use, and
without it :class:`FusedBackend` falls back to :class:`LocalBackend` with a warning.
"""

from __future__ import annotations

import math
import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.backends import fused_kernels, fused_tiles
from dpevolve.backends.base import (
    CountQuery,
    Distance,
    DistanceTerms,
    PrivateData,
    Vote,
    VoteRule,
)
from dpevolve.backends.canonical import SOFT_UNIT
from dpevolve.backends.fused_tiles import GOWER, TABPE
from dpevolve.backends.local import LocalBackend, chunks, stream_counts
from dpevolve.data.encoding import Records
from dpevolve.errors import InputError

# ------------------------------------------------------------------ compilation

_compiled = False
_compile_lock = threading.Lock()
_kernel_lock = threading.Lock()
_numba_state: dict[str, Any] = {}


def fused_available() -> bool:
    """Whether numba can be imported (the fused kernels need it).

    Returns
    -------
    bool
        ``False`` when numba is not installed (``pip install dpevolve[fast]``).
    """
    if "ok" not in _numba_state:
        try:
            import numba  # noqa: F401
        except ImportError:
            _numba_state["ok"] = False
        else:
            _numba_state["ok"] = True
    return bool(_numba_state["ok"])


def compile_kernels() -> None:
    """Wrap the kernels with numba (once); each compiles for real on its first call.

    numba resolves a kernel's globals when it compiles it, so the helpers and ``prange``
    are rebound to their numba forms in the module that defines them
    (:mod:`dpevolve.backends.fused_tiles`, :mod:`dpevolve.backends.fused_kernels`)
    before any kernel runs. Closures would avoid the rebinding but defeat numba's
    on-disk cache (``cache=True``), which is what makes every run after the first skip
    the ~10 s of compilation. Kernels and helpers are therefore always called as
    attributes of their module (``fused_kernels.hard_kernel``,
    ``fused_tiles.distance_tile``), never imported by name. The cache keys on the
    kernel's own file: after editing ``fused_tiles.py`` alone, run once with
    ``DPEVOLVE_NUMBA_CACHE=0`` or touch ``fused_kernels.py``.
    """
    global _compiled
    with _compile_lock:
        if _compiled:
            return
        import numba

        namespace = vars(fused_kernels)
        # fastmath stays off: reassociation or FMA contraction would change the sums.
        # DPEVOLVE_NUMBA_CACHE=0 compiles in memory only: a way out should a stale or
        # foreign on-disk cache ever fail to load.
        cache = os.environ.get("DPEVOLVE_NUMBA_CACHE", "1") != "0"
        options: dict[str, Any] = {"fastmath": False, "cache": cache, "nogil": True}
        for module in (fused_tiles, fused_kernels):
            helpers = vars(module)
            for name in module.HELPERS:
                helpers[name] = numba.njit(**options)(helpers[name])
        namespace["prange"] = numba.prange
        for name in fused_kernels.KERNELS:
            namespace[name] = numba.njit(parallel=True, **options)(namespace[name])
        _compiled = True


# --------------------------------------------------------------------- backend


@dataclass(frozen=True)
class _Prepared:
    """The population in kernel layout (built once per ``vote`` call, O(m) memory)."""

    kind: str  # "gower" or "tabpe"
    m: int
    cnum_t: np.ndarray  # (K_num, m) candidate numeric attributes, attribute-major
    table_rows: np.ndarray  # (sum of cardinalities, m): table_k[v, c_jk] per value v
    offsets: np.ndarray  # (K_cat,) first row of attribute k in table_rows
    wnum: np.ndarray  # (K_num,) Gower numeric weights (unused for tabpe)
    mismatch: float  # (2/9) for tabpe (unused for gower)
    nullable: np.ndarray  # (K_num,) uint8: 1 where missing cells (NaN) may occur


def _table_rows(tables: list[np.ndarray], codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per attribute and value ``v``: the row ``table_k[v, c_jk]`` over candidates ``j``.

    A private record then adds whole contiguous rows instead of gathering per pair.
    """
    m = codes.shape[0]
    sizes = [int(t.shape[0]) for t in tables]
    offsets = np.zeros(len(tables), dtype=np.int64)
    if tables:
        offsets[1:] = np.cumsum(sizes)[:-1]
    rows = np.empty((sum(sizes), m), dtype=np.float64)
    for k, table in enumerate(tables):
        rows[offsets[k] : offsets[k] + sizes[k]] = table[:, codes[:, k]]
    return rows, offsets


def _prepare(terms: DistanceTerms, population: Records) -> _Prepared:
    cnum_t = np.ascontiguousarray(population.numeric.T, dtype=np.float64)
    # The slots that may hold NaN: the kernels add those terms as the distance does.
    nullable = np.asarray(terms.nullable, dtype=np.uint8)
    if terms.kind == "gower":
        tables = [np.asarray(t, dtype=np.float64) for t in terms.tables]
        rows, offsets = _table_rows(tables, population.codes)
        wnum = np.ascontiguousarray(terms.numeric_weights, dtype=np.float64)
        return _Prepared("gower", len(population), cnum_t, rows, offsets, wnum, 0.0, nullable)
    flat = [1.0 - np.eye(int(t.shape[0])) for t in terms.tables]
    rows, offsets = _table_rows(flat, population.codes)
    return _Prepared(
        "tabpe", len(population), cnum_t, rows, offsets, np.zeros(0), terms.mismatch, nullable
    )


def _fusable(distance: Distance, vote: Vote) -> bool:
    # Only what describes itself as kernel terms and a canonical rule: anything else
    # (a subclass that redefines pairwise() or the vote among them) says None.
    return distance.terms() is not None and vote.rule() is not None


def fallback_reason(distance: Distance, vote: Vote) -> str | None:
    """Why :class:`FusedBackend` would vote with the numpy reference, or ``None``.

    Parameters
    ----------
    distance, vote
        What a run votes with.

    Returns
    -------
    str or None
        A short clause for the CLI's backend line (``None`` when the kernels run).
    """
    if not fused_available():
        return "numba is not installed"
    if distance.terms() is None:
        return f"no fused kernel for the {type(distance).__name__} distance"
    if vote.rule() is None:
        return f"no fused kernel for the {type(vote).__name__} vote"
    return None


class FusedBackend:
    """Votes with fused numba kernels: no distance matrix, exact, multi-threaded.

    Implements :class:`~dpevolve.backends.base.Backend` for the distances that describe
    themselves as :class:`~dpevolve.backends.base.DistanceTerms` (Gower and the Tab-PE
    embedding of docs/math.md §1, and their missing-aware versions for nullable numeric
    columns) and the votes that describe themselves as a
    :class:`~dpevolve.backends.base.VoteRule` (hard and soft, docs/math.md §3); anything
    else (another distance or vote class, including subclasses) goes to
    ``LocalBackend``, as does everything when numba is not installed.

    Parameters
    ----------
    exact
        ``True`` (default): every vote is computed from canonical per-pair distances,
        so hard votes are bit-identical to every other backend and to what the exact
        sensitivity search assumes. ``False`` lets the hard vote with the embedding
        distance take the argmin of ``||c||^2 - 2 x.c`` from one BLAS matrix multiply
        per chunk, which can differ from the canonical argmin between candidates whose
        distances agree to ~1e-8; exact per-round calibration refuses such a backend.
        Other combinations are unaffected.
    chunk_rows
        Private records handed to a kernel at a time. Memory is O(chunk_rows) for hard
        votes and O(chunk_rows / 256 x m) for soft ones (partial histograms).
    threads
        numba threads for the kernels (default: numba's own setting, all cores).

    Notes
    -----
    The first call of each kernel compiles it (a few seconds); compiled code is cached
    on disk next to :mod:`~dpevolve.backends.fused_kernels` (numba ``cache=True``), so
    later processes load it.
    Call :meth:`warmup` to pay that cost up front.
    """

    def __init__(
        self, exact: bool = True, chunk_rows: int = 65_536, threads: int | None = None
    ) -> None:
        if chunk_rows < 1:
            raise InputError(f"chunk_rows must be at least 1, got {chunk_rows}")
        if threads is not None and threads < 1:
            raise InputError(f"threads must be at least 1, got {threads}")
        self.exact = bool(exact)
        self.chunk_rows = int(chunk_rows)
        self.threads = threads
        self.fallback = LocalBackend()
        self._warned: set[str] = set()

    def supports(self, distance: Distance, vote: Vote) -> bool:
        """Whether :meth:`vote` runs fused kernels for this distance and vote."""
        return fused_available() and _fusable(distance, vote)

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        """Exact counts, as on :class:`LocalBackend` (numpy's bincount needs no kernel)."""
        return stream_counts(private, query)

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H = sum_x vote(x)`` over ``population`` (docs/math.md §3).

        Parameters
        ----------
        private
            Private records, or an iterable of batches (streamed; each batch is chunked).
        population
            The candidates ``c_1..c_m``.
        distance, vote
            As for :class:`~dpevolve.backends.base.Backend`.

        Returns
        -------
        numpy.ndarray
            float64, shape (m,).
        """
        if not _fusable(distance, vote):
            self._say_fallback(distance, vote)
            return self.fallback.vote(private, population, distance, vote)
        if not fused_available():
            warnings.warn(
                "numba is not installed, so FusedBackend votes with LocalBackend "
                "(pip install dpevolve[fast] for the fused kernels)",
                RuntimeWarning,
                stacklevel=2,
            )
            return self.fallback.vote(private, population, distance, vote)
        if len(population) == 0:
            raise InputError("cannot vote over an empty population")
        compile_kernels()
        terms, rule = distance.terms(), vote.rule()
        assert terms is not None and rule is not None  # _fusable
        prepared = _prepare(terms, population)
        histogram = np.zeros(prepared.m, dtype=np.float64)
        # The BLAS identity has no missing cells: the nullable embedding stays exact.
        blas = (
            not self.exact
            and terms.kind == "tabpe"
            and not terms.nullable.any()
            and rule.kind == "hard"
        )
        embed = _BlasArgmin(terms, population) if blas else None
        for chunk in chunks(private, self.chunk_rows):
            if len(chunk) == 0:
                continue
            if embed is not None:
                nearest = embed.argmin(chunk)
                histogram += np.bincount(nearest, minlength=prepared.m)
            else:
                # One kernel at a time per process: each already uses every core, and
                # numba's workqueue threading layer aborts on concurrent parallel calls
                # (a threaded dask worker, a user's thread pool).
                with _kernel_lock:
                    previous = _set_threads(self.threads)
                    try:
                        histogram += _vote_chunk(chunk, prepared, rule)
                    finally:
                        _set_threads(previous)
        return histogram

    def _say_fallback(self, distance: Distance, vote: Vote) -> None:
        """Warn once per backend and reason: a silent fallback is a slow run unexplained."""
        reason = fallback_reason(distance, vote)
        if reason is None or reason in self._warned:
            return
        self._warned.add(reason)
        warnings.warn(
            f"the fused backend votes with the numpy reference ({reason}): exact, slower",
            RuntimeWarning,
            stacklevel=3,
        )

    def warmup(self) -> None:
        """Compile (or load from the on-disk cache) every kernel on a tiny input."""
        if not fused_available():
            return
        compile_kernels()
        records = Records(np.array([[0.0], [1.0]]), np.array([[0], [1]], dtype=np.int32))
        # One numeric and one two-valued categorical attribute, in both kernel forms.
        parts = (np.ones(1), (1.0 - np.eye(2),))
        flat = np.zeros(1, dtype=bool)
        for terms in (
            DistanceTerms("gower", *parts, 0.0, flat),
            DistanceTerms("tabpe", *parts, 2.0 / 9.0, flat),
        ):
            prepared = _prepare(terms, records)
            for rule in (VoteRule("hard"), VoteRule("soft", 1.0)):
                with _kernel_lock:
                    _vote_chunk(records, prepared, rule)


def _set_threads(threads: int | None) -> int | None:
    """Set numba's thread count for this thread; returns the previous one."""
    if threads is None:
        return None
    import numba

    previous = int(numba.get_num_threads())
    # numba refuses more threads than its pool was started with.
    numba.set_num_threads(min(int(threads), int(numba.config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]
    return previous


KernelArgs = tuple[
    int,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    float,
    int,
]


def _kernel_args(records: Records, p: _Prepared) -> KernelArgs:
    """The arguments every fused kernel takes for ``records`` against a prepared population."""
    return (
        GOWER if p.kind == "gower" else TABPE,
        np.ascontiguousarray(records.numeric, dtype=np.float64),
        np.ascontiguousarray(records.codes, dtype=np.int32),
        p.wnum,
        p.nullable,
        p.cnum_t,
        p.table_rows,
        p.offsets,
        p.mismatch,
        p.m,
    )


def _vote_chunk(chunk: Records, prepared: _Prepared, rule: VoteRule) -> np.ndarray:
    """One chunk's histogram from the fused kernels (numba compiled by compile_kernels())."""
    p = prepared
    args = _kernel_args(chunk, p)
    if rule.kind == "soft":
        parts = fused_kernels.soft_kernel(*args, float(rule.temperature))
        # Integer-valued grid units: exact sums, in any order; scaling by 2^-30 is exact.
        return parts.sum(axis=0) * SOFT_UNIT
    return np.bincount(fused_kernels.hard_kernel(*args), minlength=p.m).astype(np.float64)


def fused_nearest(records: Records, population: Records, distance: Distance) -> np.ndarray:
    """Each record's hard vote (index of its nearest candidate) from the fused kernel.

    The per-record view of what :meth:`FusedBackend.vote` counts, for audits and tests
    that check the kernel against the exact sensitivity search. Needs numba and a
    distance that describes itself as kernel terms (Gower or the Tab-PE embedding).

    Returns
    -------
    numpy.ndarray
        int64, shape (len(records),).
    """
    terms = distance.terms()
    if not fused_available() or terms is None:
        raise InputError("fused_nearest needs numba and the Gower or Tab-PE distance")
    if len(population) == 0:
        raise InputError("cannot vote over an empty population")
    compile_kernels()
    p = _prepare(terms, population)
    with _kernel_lock:
        return np.asarray(fused_kernels.hard_kernel(*_kernel_args(records, p)), dtype=np.int64)


class _BlasArgmin:
    """Nearest candidate by ``argmin_j ||c_j||^2 - 2 e(x).e(c_j)`` (``exact=False``).

    ``||e(x)||^2`` is the same for every candidate, so it is left out; the square root
    is monotone, so it is too. One GEMM per chunk, chunked like LocalBackend.
    """

    def __init__(self, terms: DistanceTerms, population: Records, cells: int = 2_000_000) -> None:
        assert terms.kind == "tabpe"
        # Each category one-hot at the weight whose squared pair difference is the mismatch.
        self.weight = math.sqrt(terms.mismatch / 2.0)
        self.sizes = [int(t.shape[0]) for t in terms.tables]
        self.ec_t = np.ascontiguousarray(self.embed(population).T)
        self.norms = np.einsum("ij,ij->j", self.ec_t, self.ec_t)
        self.rows = max(1, cells // max(1, len(population)))

    def argmin(self, chunk: Records) -> np.ndarray:
        out = np.empty(len(chunk), dtype=np.int64)
        for start in range(0, len(chunk), self.rows):
            part = chunk.take(slice(start, start + self.rows))
            scores = self.embed(part) @ self.ec_t
            scores *= -2.0
            scores += self.norms[None, :]
            out[start : start + len(part)] = np.argmin(scores, axis=1)
        return out

    def embed(self, records: Records) -> np.ndarray:
        """The explicit embedding: the numeric block, then one weighted one-hot block each."""
        blocks = [records.numeric]
        for k, size in enumerate(self.sizes):
            onehot = np.zeros((len(records), size))
            onehot[np.arange(len(records)), records.codes[:, k]] = self.weight
            blocks.append(onehot)
        return np.hstack(blocks)


__all__ = [
    "FusedBackend",
    "compile_kernels",
    "fallback_reason",
    "fused_available",
    "fused_nearest",
]
