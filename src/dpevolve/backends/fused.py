"""Fused voting on this machine (spec §1, §3): distance, vote and histogram in one pass.

The vote is nearly all of a run's cost. :class:`~dpevolve.backends.local.LocalBackend`
builds a (chunk x population) distance block, then argmins or softmaxes it; here numba
kernels walk the private records in parallel and, for each record, compute its ``m``
distances into a row buffer (one per thread), take the vote and add it to a partial
histogram. No chunk x population block is ever built.

Exactness (what the tests pin down):

* Gower: every distance is summed in the reference's order (numeric attributes, then
  categorical ones, each ``w_k |a - b|`` or a weighted table entry), so distances and
  hence hard votes are bit-identical to :meth:`Gower.pairwise`.
* Tab-PE embedding: ``d = sqrt(sum_num (a - b)^2 + (2/9) #mismatches)`` evaluated per
  pair, as written (numeric squares summed in attribute order, then the mismatch count
  times ``2/9`` added once). The BLAS identity ``||x||^2 + ||c||^2 - 2 x.c`` used by
  :meth:`TabPEEmbedding.squared` is ~1e-8 off after the square root, which can move an
  argmin between near-ties; this path cannot.
* Hard vote: first index of the minimum distance (spec §3: ties to the lowest index).
* Soft vote: the reference's softmax (row-max subtraction, ``exp``, divide by the row
  total, summed pairwise like numpy), in float64 throughout. Histograms agree with the
  numpy route to ~1e-15 relative; only the order in which records are added differs.

Soft histograms are summed per block of records and the blocks added in order, so a
result does not depend on the number of threads or on how they were scheduled.

numba is optional (``pip install dpevolve[fast]``): it is imported on first use, and
without it :class:`FusedBackend` falls back to :class:`LocalBackend` with a warning.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.backends.base import PrivateData
from dpevolve.backends.local import LocalBackend, chunks
from dpevolve.distance import Distance, Gower, TabPEEmbedding
from dpevolve.encoding import Records
from dpevolve.errors import InputError
from dpevolve.votes import HardVote, SoftVote, Vote

# Candidates per tile: every attribute pass over a tile of the row buffer hits L1.
_TILE = 512
# Private records per partial soft histogram (the unit of the deterministic sum).
_BLOCK = 256
# numpy's pairwise-summation block (PW_BLOCKSIZE), reproduced in _pairwise_sum.
_PW_BLOCK = 128

# Rebound to numba.prange by _compile(); as plain ``range`` the kernels still run
# (slowly) as Python, which keeps them readable to tools and debuggable.
prange = range


# --------------------------------------------------------------------------- kernels
# Plain functions, compiled on first use by _compile(). Keep them free of Python-only
# features: every line below must type-check in numba's nopython mode.


def _pairwise_sum(a: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise sum of ``a[start:start+n]`` (same blocking, same rounding)."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    if n <= _PW_BLOCK:
        r0 = a[start]
        r1 = a[start + 1]
        r2 = a[start + 2]
        r3 = a[start + 3]
        r4 = a[start + 4]
        r5 = a[start + 5]
        r6 = a[start + 6]
        r7 = a[start + 7]
        stop = start + n - n % 8
        i = start + 8
        while i < stop:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < start + n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise_sum(a, start, half) + _pairwise_sum(a, start + half, n - half)


def _gower_tile(
    xnum: np.ndarray,
    xcode: np.ndarray,
    i: int,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    row: np.ndarray,
    j0: int,
    j1: int,
) -> None:
    """Gower distances of record ``i`` to candidates ``j0:j1`` into ``row[j0:j1]``."""
    for j in range(j0, j1):
        row[j] = 0.0
    # Same terms, same order as Gower.pairwise, so every sum rounds identically.
    for k in range(wnum.shape[0]):
        xk = xnum[i, k]
        wk = wnum[k]
        ck = cnum_t[k]
        for j in range(j0, j1):
            row[j] += wk * abs(xk - ck[j])
    for k in range(offsets.shape[0]):
        tk = table_rows[offsets[k] + xcode[i, k]]
        for j in range(j0, j1):
            row[j] += tk[j]


def _embed_tile(
    xnum: np.ndarray,
    xcode: np.ndarray,
    i: int,
    cnum_t: np.ndarray,
    mismatch_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    row: np.ndarray,
    count: np.ndarray,
    j0: int,
    j1: int,
) -> None:
    """Squared embedding distances of record ``i`` to candidates ``j0:j1`` into ``row``."""
    for j in range(j0, j1):
        row[j] = 0.0
        count[j] = 0.0
    for k in range(cnum_t.shape[0]):
        xk = xnum[i, k]
        ck = cnum_t[k]
        for j in range(j0, j1):
            diff = xk - ck[j]
            row[j] += diff * diff
    # Mismatch counts are small integers, exact in float64 whatever the order.
    for k in range(offsets.shape[0]):
        tk = mismatch_rows[offsets[k] + xcode[i, k]]
        for j in range(j0, j1):
            count[j] += tk[j]
    for j in range(j0, j1):
        row[j] = row[j] + count[j] * mismatch


def _soft_accumulate(row: np.ndarray, tau: float, acc: np.ndarray) -> None:
    """Add ``softmax(-row / tau)`` to ``acc`` (overwrites ``row``)."""
    m = row.shape[0]
    dmin = row[0]
    for j in range(1, m):
        if row[j] < dmin:
            dmin = row[j]
    # max_j(-d_j / tau) == -min_j(d_j) / tau exactly: division rounds monotonically.
    top = -dmin / tau
    for j in range(m):
        row[j] = math.exp(-row[j] / tau - top)
    total = _pairwise_sum(row, 0, m)
    for j in range(m):
        acc[j] += row[j] / total


def _gower_hard(
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    m: int,
) -> np.ndarray:
    """Index of the nearest candidate (first on ties) for every private record."""
    n = xnum.shape[0]
    out = np.empty(n, dtype=np.int64)
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(nblocks):
        row = np.empty(m, dtype=np.float64)
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            best = np.inf
            arg = 0
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                _gower_tile(xnum, xcode, i, wnum, cnum_t, table_rows, offsets, row, j0, j1)
                for j in range(j0, j1):
                    if row[j] < best:
                        best = row[j]
                        arg = j
            out[i] = arg
    return out


def _gower_soft(
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    m: int,
    tau: float,
) -> np.ndarray:
    """Per-block soft-vote histograms, shape (ceil(n / _BLOCK), m)."""
    n = xnum.shape[0]
    nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.zeros((nblocks, m), dtype=np.float64)
    for b in prange(nblocks):
        row = np.empty(m, dtype=np.float64)
        acc = out[b]
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                _gower_tile(xnum, xcode, i, wnum, cnum_t, table_rows, offsets, row, j0, j1)
            _soft_accumulate(row, tau, acc)
    return out


def _embed_hard(
    xnum: np.ndarray,
    xcode: np.ndarray,
    cnum_t: np.ndarray,
    mismatch_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    m: int,
) -> np.ndarray:
    """Index of the nearest candidate (first on ties of ``sqrt(s)``) per private record."""
    n = xnum.shape[0]
    out = np.empty(n, dtype=np.int64)
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(nblocks):
        row = np.empty(m, dtype=np.float64)
        count = np.empty(m, dtype=np.float64)
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            best_s = np.inf
            best_d = np.inf
            arg = 0
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                _embed_tile(
                    xnum, xcode, i, cnum_t, mismatch_rows, offsets, mismatch, row, count, j0, j1
                )
                for j in range(j0, j1):
                    s = row[j]
                    # Two squared distances can round to the same square root, and the
                    # vote is defined on the root: take the root only when s improves
                    # (if sqrt(s) < best_d then s < best_s), so ties break as on d.
                    if s < best_s:
                        d = math.sqrt(s)
                        if d < best_d:
                            best_d = d
                            best_s = s
                            arg = j
            out[i] = arg
    return out


def _embed_soft(
    xnum: np.ndarray,
    xcode: np.ndarray,
    cnum_t: np.ndarray,
    mismatch_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    m: int,
    tau: float,
) -> np.ndarray:
    """Per-block soft-vote histograms on the embedding distance."""
    n = xnum.shape[0]
    nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.zeros((nblocks, m), dtype=np.float64)
    for b in prange(nblocks):
        row = np.empty(m, dtype=np.float64)
        count = np.empty(m, dtype=np.float64)
        acc = out[b]
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                _embed_tile(
                    xnum, xcode, i, cnum_t, mismatch_rows, offsets, mismatch, row, count, j0, j1
                )
                for j in range(j0, j1):
                    row[j] = math.sqrt(row[j])
            _soft_accumulate(row, tau, acc)
    return out


# ------------------------------------------------------------------ compilation

_HELPERS = ("_pairwise_sum", "_gower_tile", "_embed_tile", "_soft_accumulate")
_KERNELS = ("_gower_hard", "_gower_soft", "_embed_hard", "_embed_soft")
_compiled = False
_compile_lock = threading.Lock()
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


def _compile() -> None:
    """Wrap the kernels with numba (once); each compiles for real on its first call.

    numba resolves a kernel's globals when it compiles it, so the helpers and ``prange``
    are rebound here, in this module, to their numba forms before any kernel runs.
    Closures would avoid the rebinding but defeat numba's on-disk cache (``cache=True``),
    which is what makes every run after the first skip the ~10 s of compilation.
    """
    global _compiled, prange
    with _compile_lock:
        if _compiled:
            return
        import numba

        namespace = globals()
        # fastmath stays off: reassociation or FMA contraction would change the sums.
        options: dict[str, Any] = {"fastmath": False, "cache": True, "nogil": True}
        for name in _HELPERS:
            namespace[name] = numba.njit(**options)(namespace[name])
        prange = numba.prange
        for name in _KERNELS:
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


def _prepare(distance: Distance, population: Records) -> _Prepared:
    cnum_t = np.ascontiguousarray(population.numeric.T, dtype=np.float64)
    if type(distance) is Gower:
        tables = [np.asarray(t, dtype=np.float64) for t in distance.tables]
        rows, offsets = _table_rows(tables, population.codes)
        wnum = np.ascontiguousarray(distance.numeric_weights, dtype=np.float64)
        return _Prepared("gower", len(population), cnum_t, rows, offsets, wnum, 0.0)
    cards = distance.layout.cardinalities
    flat = [1.0 - np.eye(int(size)) for size in cards]
    rows, offsets = _table_rows(flat, population.codes)
    mismatch = 2.0 * TabPEEmbedding.CATEGORY_WEIGHT**2
    return _Prepared("tabpe", len(population), cnum_t, rows, offsets, np.zeros(0), mismatch)


def _fusable(distance: Distance, vote: Vote) -> bool:
    # Exact types only: a subclass may redefine pairwise() or the vote, and the kernels
    # hard-code these formulas.
    return type(distance) in (Gower, TabPEEmbedding) and type(vote) in (HardVote, SoftVote)


class FusedBackend:
    """Votes with fused numba kernels: no distance matrix, exact, multi-threaded.

    Implements :class:`~dpevolve.backends.base.Backend` for the two distances of spec §1
    (:class:`Gower`, :class:`TabPEEmbedding`) and the two votes of spec §3
    (:class:`HardVote`, :class:`SoftVote`); anything else (another distance or vote
    class, including subclasses) goes to ``LocalBackend``, as does everything when
    numba is not installed.

    Parameters
    ----------
    exact
        ``True`` (default): every vote is computed from exact per-pair distances, so hard
        votes are bit-identical to the spec's definition. ``False`` lets the hard vote
        with the embedding distance take the argmin of ``||c||^2 - 2 x.c`` from one
        BLAS matrix multiply per chunk, which can differ from the exact argmin between
        candidates whose distances agree to ~1e-8. Other combinations are unaffected.
    chunk_rows
        Private records handed to a kernel at a time. Memory is O(chunk_rows) for hard
        votes and O(chunk_rows / 256 x m) for soft ones (partial histograms).
    threads
        numba threads for the kernels (default: numba's own setting, all cores).

    Notes
    -----
    The first call of each kernel compiles it (a few seconds); compiled code is cached
    on disk next to this module (numba ``cache=True``), so later processes load it.
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

    def supports(self, distance: Distance, vote: Vote) -> bool:
        """Whether :meth:`vote` runs fused kernels for this distance and vote."""
        return fused_available() and _fusable(distance, vote)

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        """The vote histogram ``H = sum_x vote(x)`` over ``population`` (spec §3).

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
        _compile()
        prepared = _prepare(distance, population)
        histogram = np.zeros(prepared.m, dtype=np.float64)
        blas = not self.exact and prepared.kind == "tabpe" and type(vote) is HardVote
        embed = _BlasArgmin(distance, population) if blas else None
        previous = _set_threads(self.threads)
        try:
            for chunk in chunks(private, self.chunk_rows):
                if len(chunk) == 0:
                    continue
                if embed is not None:
                    nearest = embed.argmin(chunk)
                    histogram += np.bincount(nearest, minlength=prepared.m)
                else:
                    histogram += _vote_chunk(chunk, prepared, vote)
        finally:
            _set_threads(previous)
        return histogram

    def warmup(self) -> None:
        """Compile (or load from the on-disk cache) every kernel on a tiny input."""
        if not fused_available():
            return
        from dpevolve.schema import CategoricalColumn, NumericColumn, Schema

        schema = Schema((NumericColumn("x", 0.0, 1.0), CategoricalColumn("c", ("a", "b"))))
        records = Records(np.array([[0.0], [1.0]]), np.array([[0], [1]], dtype=np.int32))
        for distance in (Gower(schema), TabPEEmbedding(schema)):
            for vote in (HardVote(), SoftVote(1.0)):
                self.vote(records, records, distance, vote)


def _set_threads(threads: int | None) -> int | None:
    """Set numba's thread count for this thread; returns the previous one."""
    if threads is None:
        return None
    import numba

    previous = int(numba.get_num_threads())
    numba.set_num_threads(min(int(threads), int(numba.config.NUMBA_NUM_THREADS)))
    return previous


def _vote_chunk(chunk: Records, prepared: _Prepared, vote: Vote) -> np.ndarray:
    """One chunk's histogram from the fused kernels (numba compiled by _compile())."""
    xnum = np.ascontiguousarray(chunk.numeric, dtype=np.float64)
    xcode = np.ascontiguousarray(chunk.codes, dtype=np.int32)
    p = prepared
    if isinstance(vote, SoftVote):
        tau = float(vote.temperature)
        if p.kind == "gower":
            parts = _gower_soft(xnum, xcode, p.wnum, p.cnum_t, p.table_rows, p.offsets, p.m, tau)
        else:
            parts = _embed_soft(
                xnum, xcode, p.cnum_t, p.table_rows, p.offsets, p.mismatch, p.m, tau
            )
        # Blocks added in order: the sum does not depend on thread scheduling.
        out = np.zeros(p.m, dtype=np.float64)
        for part in parts:
            out += part
        return out
    if p.kind == "gower":
        nearest = _gower_hard(xnum, xcode, p.wnum, p.cnum_t, p.table_rows, p.offsets, p.m)
    else:
        nearest = _embed_hard(xnum, xcode, p.cnum_t, p.table_rows, p.offsets, p.mismatch, p.m)
    return np.bincount(nearest, minlength=p.m).astype(np.float64)


class _BlasArgmin:
    """Nearest candidate by ``argmin_j ||c_j||^2 - 2 e(x).e(c_j)`` (``exact=False``).

    ``||e(x)||^2`` is the same for every candidate, so it is left out; the square root
    is monotone, so it is too. One GEMM per chunk, chunked like LocalBackend.
    """

    def __init__(self, distance: Distance, population: Records, cells: int = 2_000_000) -> None:
        assert isinstance(distance, TabPEEmbedding)
        self.distance = distance
        self.ec_t = np.ascontiguousarray(distance.embed(population).T)
        self.norms = np.einsum("ij,ij->j", self.ec_t, self.ec_t)
        self.rows = max(1, cells // max(1, len(population)))

    def argmin(self, chunk: Records) -> np.ndarray:
        out = np.empty(len(chunk), dtype=np.int64)
        for start in range(0, len(chunk), self.rows):
            part = chunk.take(slice(start, start + self.rows))
            scores = self.distance.embed(part) @ self.ec_t
            scores *= -2.0
            scores += self.norms[None, :]
            out[start : start + len(part)] = np.argmin(scores, axis=1)
        return out


__all__ = ["FusedBackend", "fused_available"]
