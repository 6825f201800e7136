"""Fused voting on this machine (docs/math.md §1, §3): distance, vote and histogram in one pass.

The vote is nearly all of a run's cost. :class:`~dpevolve.backends.local.LocalBackend`
builds a (chunk x population) distance block, then argmins or softmaxes it; here numba
kernels walk the private records in parallel (``prange`` over blocks of 256 records)
and, for each record, compute its ``m`` distances into a row buffer owned by the block,
take the vote and accumulate it. No chunk x population block is ever built: memory is
O(m) per thread, plus one partial histogram per block for soft votes.

Exactness (what the tests pin down): the kernels follow the canonical arithmetic of
:mod:`dpevolve.core.canonical`, the same the numpy backend and the exact sensitivity
search use, so votes are bit-identical across backends and chunkings.

* Gower: every distance is summed in the reference's order (numeric attributes, then
  categorical ones, each ``w_k |a - b|`` or a weighted table entry), so distances and
  hence hard votes are bit-identical to :meth:`Gower.pairwise`.
* Tab-PE embedding: ``d = sqrt(sum_num (a - b)^2 + (2/9) #mismatches)`` evaluated per
  pair, as written (numeric squares summed in attribute order, then the mismatch count
  times ``2/9`` added once), exactly as :meth:`TabPEEmbedding.squared` does.
* Hard vote: first index of the minimum distance (docs/math.md §3);
  each record's index is written out and counted with ``bincount`` (exact integers).
* Soft vote: logits ``-d / tau`` minus their maximum; ``exp`` by the canonical
  polynomial (:func:`~dpevolve.core.canonical.exp_canonical`, within 1 ulp of libm,
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

from dpevolve.backends.base import PrivateData
from dpevolve.backends.local import LocalBackend, chunks
from dpevolve.core.canonical import (
    EXP_MIN,
    LN2_HI,
    LN2_LO,
    LOG2E,
    SOFT_SCALE,
    SOFT_UNIT,
    TAYLOR,
)
from dpevolve.core.distance import Distance, Gower, TabPEEmbedding
from dpevolve.core.votes import HardVote, SoftVote, Vote
from dpevolve.data.encoding import Records
from dpevolve.errors import InputError

# Kernel codes for the distance (numba specialises on neither strings nor classes).
_GOWER = 0
_TABPE = 1
# Candidates per tile: every attribute pass over a tile of the row buffer hits L1.
_TILE = 512
# Private records per partial soft histogram (the unit of the deterministic sum).
_BLOCK = 256
# numpy's pairwise-summation block (PW_BLOCKSIZE), reproduced in _pairwise_sum.
_PW_BLOCK = 128
# _exp_logits' constants: 1/ln 2, ln 2 split so that k * _LN2_HI is exact for
# |k| < 2^20 (fdlibm's split), Taylor coefficients 1/i!, and the smallest argument
# whose 2^k is still a normal double.
# (The same constants as dpevolve.core.canonical.exp_canonical, which must match.)
_LOG2E = LOG2E
_LN2_HI = LN2_HI
_LN2_LO = LN2_LO
_E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = TAYLOR
_EXP_MIN = EXP_MIN
# Soft votes are floored to multiples of 2^-30 (dpevolve.core.canonical).
_SOFT_SCALE = SOFT_SCALE
_SOFT_UNIT = SOFT_UNIT
# Squares whose root rounds to sqrt(s_min) lie within ~2^-51 s_min of s_min; 2^-48 is
# a safe superset (hard vote on the embedding, see _hard_kernel).
_NEAR = 1.0 + 2.0**-48

# Rebound to numba.prange by _compile(); as plain ``range`` the kernels still run
# (slowly) as Python, which keeps them readable to tools and debuggable.
prange = range


# --------------------------------------------------------------------------- kernels
# Plain functions, compiled on first use by _compile(). Keep them free of Python-only
# features: every line below must type-check in numba's nopython mode.


def _pairwise_leaf(a: np.ndarray, start: int, n: int) -> float:
    """numpy's pairwise-sum leaf (``n <= 128``): eight running sums, then a tree."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
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


def _pairwise_sum(a: np.ndarray, stack: np.ndarray, values: np.ndarray) -> float:
    """``a.sum()`` exactly as numpy computes it (pairwise, same blocking and rounding).

    numpy recurses (split at half the length, rounded down to a multiple of 8, down to
    blocks of 128); this walks the same tree with an explicit stack, because numba's
    on-disk cache cannot reload recursive functions. ``stack`` (int64, (64, 3)) and
    ``values`` (float64, (64,)) are work space: the tree is at most 57 levels deep, and
    they are passed in so that no call allocates.
    """
    nvalues = 0
    stack[0, 0] = 0  # start
    stack[0, 1] = a.shape[0]  # size
    stack[0, 2] = 0  # children pushed so far
    depth = 1
    while depth > 0:
        top = depth - 1
        size = stack[top, 1]
        if size <= _PW_BLOCK:
            values[nvalues] = _pairwise_leaf(a, stack[top, 0], size)
            nvalues += 1
            depth -= 1
            continue
        half = size // 2
        half -= half % 8
        stage = stack[top, 2]
        if stage < 2:
            stack[top, 2] = stage + 1
            stack[depth, 0] = stack[top, 0] + (half if stage == 1 else 0)
            stack[depth, 1] = size - half if stage == 1 else half
            stack[depth, 2] = 0
            depth += 1
        else:
            nvalues -= 1
            values[nvalues - 1] = values[nvalues - 1] + values[nvalues]
            depth -= 1
    return values[0]


def _gower_tile(
    xn: np.ndarray,
    xc: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    r: np.ndarray,
    j0: int,
    j1: int,
) -> None:
    """Gower distances of one record (``xn``, ``xc``) to candidates ``j0:j1``, into ``r``.

    The terms are added in Gower.pairwise's order (numeric attributes, then categorical
    ones), one rounding per term, so every distance is bit-identical to the reference.
    Several attributes share one pass over the tile only to save loads and stores of
    ``r``: ``((r + a) + b)`` in one loop rounds exactly as two loops would.
    """
    size = j1 - j0
    for j in range(size):
        r[j] = 0.0
    kn = wnum.shape[0]
    k = 0
    while k + 2 <= kn:
        x0, w0, c0 = xn[k], wnum[k], cnum_t[k, j0:j1]
        x1, w1, c1 = xn[k + 1], wnum[k + 1], cnum_t[k + 1, j0:j1]
        for j in range(size):
            r[j] = (r[j] + w0 * abs(x0 - c0[j])) + w1 * abs(x1 - c1[j])
        k += 2
    if k < kn:
        x0, w0, c0 = xn[k], wnum[k], cnum_t[k, j0:j1]
        for j in range(size):
            r[j] += w0 * abs(x0 - c0[j])
    kc = offsets.shape[0]
    k = 0
    while k + 4 <= kc:
        t0 = table_rows[offsets[k] + xc[k], j0:j1]
        t1 = table_rows[offsets[k + 1] + xc[k + 1], j0:j1]
        t2 = table_rows[offsets[k + 2] + xc[k + 2], j0:j1]
        t3 = table_rows[offsets[k + 3] + xc[k + 3], j0:j1]
        for j in range(size):
            r[j] = (((r[j] + t0[j]) + t1[j]) + t2[j]) + t3[j]
        k += 4
    if k + 2 <= kc:
        t0 = table_rows[offsets[k] + xc[k], j0:j1]
        t1 = table_rows[offsets[k + 1] + xc[k + 1], j0:j1]
        for j in range(size):
            r[j] = (r[j] + t0[j]) + t1[j]
        k += 2
    if k < kc:
        t0 = table_rows[offsets[k] + xc[k], j0:j1]
        for j in range(size):
            r[j] += t0[j]


def _embed_tile(
    xn: np.ndarray,
    xc: np.ndarray,
    cnum_t: np.ndarray,
    mismatch_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    r: np.ndarray,
    count: np.ndarray,
    j0: int,
    j1: int,
) -> None:
    """Squared embedding distances of one record to candidates ``j0:j1``, into ``r``.

    ``s = (((0 + d_1^2) + d_2^2) + ...) + n_mismatch * (2/9)``, exactly as written.
    """
    size = j1 - j0
    for j in range(size):
        r[j] = 0.0
        count[j] = 0.0
    kn = cnum_t.shape[0]
    k = 0
    while k + 2 <= kn:
        x0, c0 = xn[k], cnum_t[k, j0:j1]
        x1, c1 = xn[k + 1], cnum_t[k + 1, j0:j1]
        for j in range(size):
            d0 = x0 - c0[j]
            d1 = x1 - c1[j]
            r[j] = (r[j] + d0 * d0) + d1 * d1
        k += 2
    if k < kn:
        x0, c0 = xn[k], cnum_t[k, j0:j1]
        for j in range(size):
            d0 = x0 - c0[j]
            r[j] += d0 * d0
    # Mismatch counts are small integers, exact in float64 whatever the grouping.
    kc = offsets.shape[0]
    k = 0
    while k + 4 <= kc:
        t0 = mismatch_rows[offsets[k] + xc[k], j0:j1]
        t1 = mismatch_rows[offsets[k + 1] + xc[k + 1], j0:j1]
        t2 = mismatch_rows[offsets[k + 2] + xc[k + 2], j0:j1]
        t3 = mismatch_rows[offsets[k + 3] + xc[k + 3], j0:j1]
        for j in range(size):
            count[j] += (t0[j] + t1[j]) + (t2[j] + t3[j])
        k += 4
    while k < kc:
        t0 = mismatch_rows[offsets[k] + xc[k], j0:j1]
        for j in range(size):
            count[j] += t0[j]
        k += 1
    for j in range(size):
        r[j] = r[j] + count[j] * mismatch


def _min_bits(bits: np.ndarray) -> int:
    """The smallest entry of a non-negative float64 array, as its int64 bit pattern.

    Non-negative doubles order like their bit patterns, and an integer min reduction
    vectorises without fastmath (a float one does not: NaN and -0.0 semantics).
    """
    lo = bits[0]
    for j in range(1, bits.shape[0]):
        v = bits[j]
        lo = v if v < lo else lo
    return lo


def _exp_logits(
    d: np.ndarray, tau: float, top: float, out: np.ndarray, scale_bits: np.ndarray
) -> None:
    """``out = exp(-d / tau - top)``: a softmax's weights, given ``top >= -d / tau``.

    The logit ``x = -d / tau - top`` is rounded exactly as SoftVote computes it and is
    ``<= 0``. ``exp(x) = 2^k exp(r)`` with ``k = round(x / ln 2)``, ``r = x - k ln 2``
    in two parts (Cody-Waite; ``k * _LN2_HI`` is exact), ``exp(r)`` by its degree-13
    Taylor polynomial (truncation < 1e-17 relative on ``|r| <= ln(2) / 2``) and ``2^k``
    built from its bits: within 1 ulp of libm's ``exp`` over ``[-746, 0]`` (the tests
    check it). Unlike libm's scalar call it vectorises; libm alone costs three times
    the distances. Below ``_EXP_MIN`` (weights under ~1e-307, where ``2^k`` would be
    subnormal) libm takes over.
    """
    n = d.shape[0]
    low = 0
    for j in range(n):
        x = -d[j] / tau - top
        low += x < _EXP_MIN
        x = x if x >= _EXP_MIN else _EXP_MIN
        k = math.floor(x * _LOG2E + 0.5)
        t = (x - k * _LN2_HI) - k * _LN2_LO
        p = _E13
        p = p * t + _E12
        p = p * t + _E11
        p = p * t + _E10
        p = p * t + _E9
        p = p * t + _E8
        p = p * t + _E7
        p = p * t + _E6
        p = p * t + _E5
        p = p * t + _E4
        p = p * t + _E3
        p = p * t + 0.5
        p = p * t + 1.0
        out[j] = p * t + 1.0
        scale_bits[j] = (np.int64(k) + 1023) << 52
    scale = scale_bits.view(np.float64)
    for j in range(n):
        out[j] *= scale[j]
    if low:
        for j in range(n):
            x = -d[j] / tau - top
            if x < _EXP_MIN:
                out[j] = math.exp(x)


def _soft_accumulate(
    row: np.ndarray,
    tau: float,
    acc: np.ndarray,
    weights: np.ndarray,
    scratch: np.ndarray,
    stack: np.ndarray,
    values: np.ndarray,
) -> None:
    """Add ``softmax(-row / tau)`` (``row``: distances) to ``acc`` in grid units.

    Logits ``-d / tau`` minus their maximum, ``exp``, divided by the row total (summed
    pairwise, as numpy sums), rounded to units of ``2^-30`` (the canonical soft vote of
    :mod:`dpevolve.core.canonical`; ``acc`` holds integer counts). The other arrays
    are work space (no call allocates): ``weights`` and ``scratch`` of ``m``, ``stack``
    and ``values`` for _pairwise_sum.
    """
    m = row.shape[0]
    scratch[0] = _min_bits(row.view(np.int64))
    dmin = scratch.view(np.float64)[0]
    # max_j(-d_j / tau) == -min_j(d_j) / tau exactly: division rounds monotonically.
    top = -dmin / tau
    _exp_logits(row, tau, top, weights, scratch)
    total = _pairwise_sum(weights, stack, values)
    # Each vote rounded to the canonical grid, kept as an integer count of grid units:
    # sums of those are exact, so the histogram is the same in any order.
    for j in range(m):
        acc[j] += math.floor((weights[j] / total) * _SOFT_SCALE + 0.5)


def _distance_tile(
    kind: int,
    xn: np.ndarray,
    xc: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    r: np.ndarray,
    count: np.ndarray,
    j0: int,
    j1: int,
    root: bool,
) -> None:
    """Distances of one record to candidates ``j0:j1`` into ``r``.

    ``kind`` 0 is Gower; 1 the embedding, squared unless ``root``.
    """
    if kind == _GOWER:
        _gower_tile(xn, xc, wnum, cnum_t, table_rows, offsets, r, j0, j1)
    else:
        _embed_tile(xn, xc, cnum_t, table_rows, offsets, mismatch, r, count, j0, j1)
        if root:
            for j in range(j1 - j0):
                r[j] = math.sqrt(r[j])


def _hard_kernel(
    kind: int,
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    m: int,
) -> np.ndarray:
    """Index of the nearest candidate (first on ties) for every private record."""
    n = xnum.shape[0]
    out = np.empty(n, dtype=np.int64)
    nblocks = (n + _BLOCK - 1) // _BLOCK
    for b in prange(nblocks):
        row = np.empty(min(m, _TILE), dtype=np.float64)
        count = np.empty(min(m, _TILE), dtype=np.float64)
        bits = row.view(np.int64)
        low = np.empty(1, dtype=np.int64)
        lowf = low.view(np.float64)
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            best = np.inf
            arg = 0
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                size = j1 - j0
                # The embedding stays squared here: one root per improving tile, not
                # one per pair.
                _distance_tile(
                    kind,
                    xnum[i],
                    xcode[i],
                    wnum,
                    cnum_t,
                    table_rows,
                    offsets,
                    mismatch,
                    row,
                    count,
                    j0,
                    j1,
                    False,
                )
                low[0] = _min_bits(bits[:size])
                d = lowf[0] if kind == _GOWER else math.sqrt(lowf[0])
                # Strictly below every earlier tile: this tile holds the first index of
                # the minimum so far.
                if d < best:
                    best = d
                    if kind == _GOWER:
                        for j in range(size):
                            if bits[j] == low[0]:
                                arg = j0 + j
                                break
                    else:
                        # The vote is defined on the root, and squares a few ulps apart
                        # can share it: take the first j whose root is d. Only squares
                        # within _NEAR of the smallest can, so few roots are taken.
                        near = lowf[0] * _NEAR
                        for j in range(size):
                            if row[j] <= near and math.sqrt(row[j]) == d:
                                arg = j0 + j
                                break
            out[i] = arg
    return out


def _soft_kernel(
    kind: int,
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    cnum_t: np.ndarray,
    table_rows: np.ndarray,
    offsets: np.ndarray,
    mismatch: float,
    m: int,
    tau: float,
) -> np.ndarray:
    """Per-block soft-vote histograms, shape (ceil(n / _BLOCK), m)."""
    n = xnum.shape[0]
    nblocks = (n + _BLOCK - 1) // _BLOCK
    out = np.zeros((nblocks, m), dtype=np.float64)
    for b in prange(nblocks):
        row = np.empty(m, dtype=np.float64)
        count = np.empty(min(m, _TILE), dtype=np.float64)
        weights = np.empty(m, dtype=np.float64)
        scratch = np.empty(m, dtype=np.int64)
        stack = np.empty((64, 3), dtype=np.int64)
        values = np.empty(64, dtype=np.float64)
        acc = out[b]
        for i in range(b * _BLOCK, min(n, (b + 1) * _BLOCK)):
            for j0 in range(0, m, _TILE):
                j1 = min(m, j0 + _TILE)
                _distance_tile(
                    kind,
                    xnum[i],
                    xcode[i],
                    wnum,
                    cnum_t,
                    table_rows,
                    offsets,
                    mismatch,
                    row[j0:j1],
                    count,
                    j0,
                    j1,
                    True,
                )
            _soft_accumulate(row, tau, acc, weights, scratch, stack, values)
    return out


# ------------------------------------------------------------------ compilation

_HELPERS = (
    "_pairwise_leaf",
    "_pairwise_sum",
    "_gower_tile",
    "_embed_tile",
    "_min_bits",
    "_exp_logits",
    "_soft_accumulate",
    "_distance_tile",
)
_KERNELS = ("_hard_kernel", "_soft_kernel")
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
        # DPEVOLVE_NUMBA_CACHE=0 compiles in memory only: a way out should a stale or
        # foreign on-disk cache ever fail to load.
        cache = os.environ.get("DPEVOLVE_NUMBA_CACHE", "1") != "0"
        options: dict[str, Any] = {"fastmath": False, "cache": cache, "nogil": True}
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

    Implements :class:`~dpevolve.backends.base.Backend` for the two distances of docs/math.md §1
    (:class:`Gower`, :class:`TabPEEmbedding`) and the two votes of docs/math.md §3
    (:class:`HardVote`, :class:`SoftVote`); anything else (another distance or vote
    class, including subclasses) goes to ``LocalBackend``, as does everything when
    numba is not installed.

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
                        histogram += _vote_chunk(chunk, prepared, vote)
                    finally:
                        _set_threads(previous)
        return histogram

    def warmup(self) -> None:
        """Compile (or load from the on-disk cache) every kernel on a tiny input."""
        if not fused_available():
            return
        from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

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
    # numba refuses more threads than its pool was started with.
    numba.set_num_threads(min(int(threads), int(numba.config.NUMBA_NUM_THREADS)))  # type: ignore[attr-defined]
    return previous


def _vote_chunk(chunk: Records, prepared: _Prepared, vote: Vote) -> np.ndarray:
    """One chunk's histogram from the fused kernels (numba compiled by _compile())."""
    p = prepared
    args = (
        _GOWER if p.kind == "gower" else _TABPE,
        np.ascontiguousarray(chunk.numeric, dtype=np.float64),
        np.ascontiguousarray(chunk.codes, dtype=np.int32),
        p.wnum,
        p.cnum_t,
        p.table_rows,
        p.offsets,
        p.mismatch,
        p.m,
    )
    if isinstance(vote, SoftVote):
        parts = _soft_kernel(*args, float(vote.temperature))
        # Integer-valued grid units: exact sums, in any order; scaling by 2^-30 is exact.
        return parts.sum(axis=0) * _SOFT_UNIT
    return np.bincount(_hard_kernel(*args), minlength=p.m).astype(np.float64)


def fused_nearest(records: Records, population: Records, distance: Distance) -> np.ndarray:
    """Each record's hard vote (index of its nearest candidate) from the fused kernel.

    The per-record view of what :meth:`FusedBackend.vote` counts, for audits and tests
    that check the kernel against the exact sensitivity search. Needs numba and a
    :class:`Gower` or :class:`TabPEEmbedding` distance.

    Returns
    -------
    numpy.ndarray
        int64, shape (len(records),).
    """
    if not (fused_available() and _fusable(distance, HardVote())):
        raise InputError("fused_nearest needs numba and the Gower or Tab-PE distance")
    if len(population) == 0:
        raise InputError("cannot vote over an empty population")
    _compile()
    p = _prepare(distance, population)
    with _kernel_lock:
        return np.asarray(
            _hard_kernel(
                _GOWER if p.kind == "gower" else _TABPE,
                np.ascontiguousarray(records.numeric, dtype=np.float64),
                np.ascontiguousarray(records.codes, dtype=np.int32),
                p.wnum,
                p.cnum_t,
                p.table_rows,
                p.offsets,
                p.mismatch,
                p.m,
            ),
            dtype=np.int64,
        )


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


__all__ = ["FusedBackend", "fused_available", "fused_nearest"]
