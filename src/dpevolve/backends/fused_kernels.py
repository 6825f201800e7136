"""The fused kernels' arithmetic: plain functions that numba compiles (docs/math.md §1, §3).

Every function here must type-check in numba's nopython mode. They are written as
plain Python so that tools can read them and they run (slowly) uncompiled;
:func:`dpevolve.backends.fused.compile_kernels` wraps them with ``numba.njit`` on first
use by rebinding the names listed in :data:`HELPERS` and :data:`KERNELS` (and
:data:`prange`) in this module, which is where numba resolves a kernel's globals. The
distance of one record to a tile of candidates is :mod:`dpevolve.backends.fused_tiles`'s
(called as ``fused_tiles.distance_tile``: rebound there); here are the kernels, the
nearest-candidate reduction and the soft vote's exp and pairwise sum. The arithmetic
is the canonical one of :mod:`dpevolve.backends.canonical`; see
:mod:`dpevolve.backends.fused` for what is exact and why.
"""

from __future__ import annotations

import math

import numpy as np

from dpevolve.backends import fused_tiles
from dpevolve.backends.canonical import (
    EXP_MIN,
    LN2_HI,
    LN2_LO,
    LOG2E,
    SOFT_SCALE,
    TAYLOR,
)
from dpevolve.backends.fused_tiles import GOWER

# Candidates per tile: every attribute pass over a tile of the row buffer hits L1.
_TILE = 512
# Private records per partial soft histogram (the unit of the deterministic sum).
_BLOCK = 256
# numpy's pairwise-summation block (PW_BLOCKSIZE), reproduced in pairwise_sum.
_PW_BLOCK = 128
# exp_logits' constants: 1/ln 2, ln 2 split so that k * _LN2_HI is exact for
# |k| < 2^20 (fdlibm's split), Taylor coefficients 1/i!, and the smallest argument
# whose 2^k is still a normal double.
# (The same constants as dpevolve.backends.canonical.exp_canonical, which must match.)
_LOG2E = LOG2E
_LN2_HI = LN2_HI
_LN2_LO = LN2_LO
_E3, _E4, _E5, _E6, _E7, _E8, _E9, _E10, _E11, _E12, _E13 = TAYLOR
_EXP_MIN = EXP_MIN
# Soft votes are floored to multiples of 2^-30 (dpevolve.backends.canonical).
_SOFT_SCALE = SOFT_SCALE
# Squares whose root rounds to sqrt(s_min) lie within ~2^-51 s_min of s_min; 2^-48 is
# a safe superset (hard vote on the embedding, see hard_kernel).
_NEAR = 1.0 + 2.0**-48

# Rebound to numba.prange by compile_kernels(); as plain ``range`` the kernels still run
# (slowly) as Python, which keeps them readable to tools and debuggable.
prange = range


# --------------------------------------------------------------------------- kernels
# Plain functions, compiled on first use by compile_kernels(). Keep them free of Python-only
# features: every line below must type-check in numba's nopython mode.


def pairwise_leaf(a: np.ndarray, start: int, n: int) -> float:
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


def pairwise_sum(a: np.ndarray, stack: np.ndarray, values: np.ndarray) -> float:
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
            values[nvalues] = pairwise_leaf(a, stack[top, 0], size)
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


def min_bits(bits: np.ndarray) -> int:
    """The smallest entry of a non-negative float64 array, as its int64 bit pattern.

    Non-negative doubles order like their bit patterns, and an integer min reduction
    vectorises without fastmath (a float one does not: NaN and -0.0 semantics).
    """
    lo = bits[0]
    for j in range(1, bits.shape[0]):
        v = bits[j]
        lo = v if v < lo else lo
    return lo


def exp_logits(
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


def soft_accumulate(
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
    :mod:`dpevolve.backends.canonical`; ``acc`` holds integer counts). The other arrays
    are work space (no call allocates): ``weights`` and ``scratch`` of ``m``, ``stack``
    and ``values`` for pairwise_sum.
    """
    m = row.shape[0]
    scratch[0] = min_bits(row.view(np.int64))
    dmin = scratch.view(np.float64)[0]
    # max_j(-d_j / tau) == -min_j(d_j) / tau exactly: division rounds monotonically.
    top = -dmin / tau
    exp_logits(row, tau, top, weights, scratch)
    total = pairwise_sum(weights, stack, values)
    # Each vote rounded to the canonical grid, kept as an integer count of grid units:
    # sums of those are exact, so the histogram is the same in any order.
    for j in range(m):
        acc[j] += math.floor((weights[j] / total) * _SOFT_SCALE + 0.5)


def hard_kernel(
    kind: int,
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    nullable: np.ndarray,
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
                fused_tiles.distance_tile(
                    kind,
                    xnum[i],
                    xcode[i],
                    wnum,
                    nullable,
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
                low[0] = min_bits(bits[:size])
                d = lowf[0] if kind == GOWER else math.sqrt(lowf[0])
                # Strictly below every earlier tile: this tile holds the first index of
                # the minimum so far.
                if d < best:
                    best = d
                    if kind == GOWER:
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


def soft_kernel(
    kind: int,
    xnum: np.ndarray,
    xcode: np.ndarray,
    wnum: np.ndarray,
    nullable: np.ndarray,
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
                fused_tiles.distance_tile(
                    kind,
                    xnum[i],
                    xcode[i],
                    wnum,
                    nullable,
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
            soft_accumulate(row, tau, acc, weights, scratch, stack, values)
    return out


# ------------------------------------------------------------------ compilation


# The names compile_kernels() wraps: helpers plainly, kernels with parallel=True.
HELPERS = (
    "pairwise_leaf",
    "pairwise_sum",
    "min_bits",
    "exp_logits",
    "soft_accumulate",
)
KERNELS = ("hard_kernel", "soft_kernel")

__all__ = ["HELPERS", "KERNELS", "hard_kernel", "soft_kernel"]
