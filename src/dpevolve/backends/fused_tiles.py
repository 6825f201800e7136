"""The fused kernels' distance tiles: one record against a tile of candidates (docs/math.md §1).

Plain functions that numba compiles, like those of :mod:`dpevolve.backends.fused_kernels`,
which call :func:`distance_tile` as an attribute of this module
(``fused_tiles.distance_tile``): :func:`dpevolve.backends.fused.compile_kernels` rebinds
the names in :data:`HELPERS` here to their numba forms, and numba resolves the kernels'
reference to this module's attribute when it compiles them. Every function here must
type-check in numba's nopython mode. Each distance is bit-identical to the reference
(:mod:`dpevolve.pe.distance` through :mod:`dpevolve.backends.canonical`).
"""

from __future__ import annotations

import math

import numpy as np

# Kernel codes for the distance (numba specialises on neither strings nor classes).
GOWER = 0
TABPE = 1


def gower_tile(
    xn: np.ndarray,
    xc: np.ndarray,
    wnum: np.ndarray,
    nullable: np.ndarray,
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
    ``r``: ``((r + a) + b)`` in one loop rounds exactly as two loops would. A nullable
    attribute (``nullable[k]``, missing cells NaN) adds its term alone, as
    :class:`~dpevolve.pe.distance.NullableGower` does.
    """
    size = j1 - j0
    for j in range(size):
        r[j] = 0.0
    kn = wnum.shape[0]
    k = 0
    while k < kn:
        if nullable[k]:
            nullable_gower_term(xn[k], wnum[k], cnum_t[k, j0:j1], r, size)
            k += 1
        elif k + 1 < kn and not nullable[k + 1]:
            x0, w0, c0 = xn[k], wnum[k], cnum_t[k, j0:j1]
            x1, w1, c1 = xn[k + 1], wnum[k + 1], cnum_t[k + 1, j0:j1]
            for j in range(size):
                r[j] = (r[j] + w0 * abs(x0 - c0[j])) + w1 * abs(x1 - c1[j])
            k += 2
        else:
            x0, w0, c0 = xn[k], wnum[k], cnum_t[k, j0:j1]
            for j in range(size):
                r[j] += w0 * abs(x0 - c0[j])
            k += 1
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


def nullable_gower_term(x: float, w: float, c: np.ndarray, r: np.ndarray, size: int) -> None:
    """Add one nullable attribute's Gower term: ``w |x - c|``, ``w`` if exactly one of
    ``x``, ``c`` is missing (NaN), ``0`` if both are (adding ``0.0`` changes nothing)."""
    if x != x:
        for j in range(size):
            if c[j] == c[j]:
                r[j] += w
    else:
        for j in range(size):
            cj = c[j]
            r[j] += w if cj != cj else w * abs(x - cj)


def embed_tile(
    xn: np.ndarray,
    xc: np.ndarray,
    nullable: np.ndarray,
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

    ``s = (((0 + d_1^2) + d_2^2) + ...) + n_mismatch * (2/9)``, exactly as written, over
    the attributes that are not nullable; then each nullable attribute's term in order
    (``d^2``; ``1`` if exactly one cell is missing; ``0`` if both are), as
    :class:`~dpevolve.pe.distance.NullableTabPEEmbedding` adds them.
    """
    size = j1 - j0
    for j in range(size):
        r[j] = 0.0
        count[j] = 0.0
    kn = cnum_t.shape[0]
    k = 0
    while k < kn:
        if nullable[k]:
            k += 1  # added after the mismatches, below
        elif k + 1 < kn and not nullable[k + 1]:
            x0, c0 = xn[k], cnum_t[k, j0:j1]
            x1, c1 = xn[k + 1], cnum_t[k + 1, j0:j1]
            for j in range(size):
                d0 = x0 - c0[j]
                d1 = x1 - c1[j]
                r[j] = (r[j] + d0 * d0) + d1 * d1
            k += 2
        else:
            x0, c0 = xn[k], cnum_t[k, j0:j1]
            for j in range(size):
                d0 = x0 - c0[j]
                r[j] += d0 * d0
            k += 1
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
    for k in range(kn):
        if nullable[k]:
            nullable_square_term(xn[k], cnum_t[k, j0:j1], r, size)


def nullable_square_term(x: float, c: np.ndarray, r: np.ndarray, size: int) -> None:
    """Add one nullable coordinate's squared term (``1`` when exactly one is missing)."""
    if x != x:
        for j in range(size):
            if c[j] == c[j]:
                r[j] += 1.0
    else:
        for j in range(size):
            cj = c[j]
            d = x - cj
            r[j] += 1.0 if cj != cj else d * d


def distance_tile(
    kind: int,
    xn: np.ndarray,
    xc: np.ndarray,
    wnum: np.ndarray,
    nullable: np.ndarray,
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
    if kind == GOWER:
        gower_tile(xn, xc, wnum, nullable, cnum_t, table_rows, offsets, r, j0, j1)
    else:
        embed_tile(xn, xc, nullable, cnum_t, table_rows, offsets, mismatch, r, count, j0, j1)
        if root:
            for j in range(j1 - j0):
                r[j] = math.sqrt(r[j])


# The names compile_kernels() wraps (plainly: no kernel here runs in parallel itself).
HELPERS = (
    "nullable_gower_term",
    "gower_tile",
    "nullable_square_term",
    "embed_tile",
    "distance_tile",
)

__all__ = ["GOWER", "HELPERS", "TABPE", "distance_tile"]
