"""The one arithmetic of the vote: per-pair distances, tie rule, soft weights, sums.

The exact per-round calibration (:mod:`dpevolve.pe.policy.sensitivity`) decides that a
round is free when no protected edge changes any vote. That is only sound if the edge
search evaluates *the very function* the backends evaluate, bit for bit: two float
formulas for the same distance disagree in the last digits, and on a near tie they
pick different nearest candidates. So every backend (numpy, numba, GPU, Dask workers)
and the edge search follow the rules written here, and the tests hold them to it.

Distances (per pair, independent of how records are batched)
    * Gower: ``((0 + w_1 |a_1 - b_1|) + w_2 |a_2 - b_2| + ...)`` over numeric
      attributes in schema-layout order, then the weighted table entries of the
      categorical attributes in order, one rounding per operation
      (:meth:`~dpevolve.pe.distance.Gower.pairwise`).
    * Tab-PE embedding: ``s = ((0 + d_1^2) + d_2^2 + ...) + n_mismatch * (2/9)`` with
      ``d_k = a_k - b_k`` (each square rounded, then added), and ``d = sqrt(s)``
      (correctly rounded) -- :func:`tabpe_squared`. Not the BLAS identity
      ``||x||^2 + ||c||^2 - 2 x.c``, whose rounding depends on the batch shape.

Hard vote
    ``argmin_j d(x, c_j)`` on those float64 distances, ties to the lowest index.

Soft vote (per record, then quantised)
    logits ``(-d) / tau`` minus their maximum ``(-d_min) / tau``; weights by
    :func:`exp_canonical` (a fixed polynomial, not the platform's ``exp``); divided by
    the row total (numpy's pairwise sum); then each vote ``v`` becomes
    ``floor(v 2^30 + 1/2)`` units of ``2^-SOFT_GRID_BITS`` (the nearest multiple).
    Sums of such multiples are exact in float64 while every histogram cell stays
    below ``2^(53 - SOFT_GRID_BITS)`` (8,388,608 records), so the histogram does not
    depend on the order of summation: not on chunk sizes, threads, blocks or Dask
    partitions.

Privacy note on the quantisation: it moves each vote coordinate by less than
``2^-30`` (~9.3e-10; about half that, plus the rounding of ``v 2^30 + 1/2``), so
``||q(v(x')) - q(v(x))||_2`` exceeds ``||v(x') - v(x)||_2`` by less than
``sqrt(m) 2^-30``: 5.9e-8 for m = 4000 candidates, the size of the float rounding
the closed-form analysis already leaves out. :func:`soft_quantisation_slack` gives it.
"""

from __future__ import annotations

import math

import numpy as np

# Soft votes are rounded to multiples of 2^-SOFT_GRID_BITS (see the module docstring).
SOFT_GRID_BITS = 30
SOFT_SCALE = float(2**SOFT_GRID_BITS)
SOFT_UNIT = 1.0 / SOFT_SCALE
# Histogram cells below this many records are summed exactly (integer multiples of
# 2^-30 below 2^23 have at most 53 significant bits).
EXACT_CELL_LIMIT = 2 ** (53 - SOFT_GRID_BITS)

# exp_canonical's constants, shared with the numba kernel in backends/fused_kernels.py: 1/ln 2,
# ln 2 split so that k * LN2_HI is exact for |k| < 2^20 (fdlibm's split), Taylor
# coefficients 1/i!, and the smallest argument whose 2^k is still a normal double.
LOG2E = 1.4426950408889634
LN2_HI = 6.93147180369123816490e-01
LN2_LO = 1.90821492927058770002e-10
TAYLOR = tuple(1.0 / math.factorial(i) for i in range(3, 14))  # 1/3! .. 1/13!
EXP_MIN = -708.0


def tabpe_squared(
    x_numeric: np.ndarray,
    x_codes: np.ndarray,
    c_numeric: np.ndarray,
    c_codes: np.ndarray,
    mismatch: float,
) -> np.ndarray:
    """Squared Tab-PE embedding distances, per pair, in the canonical order.

    ``s = ((0 + (a_1 - b_1)^2) + (a_2 - b_2)^2 + ...) + n_mismatch * mismatch``: every
    pair's value is the same whatever the shapes of ``x`` and ``c`` (numpy applies one
    elementwise operation at a time, so no product is fused into an add).

    Parameters
    ----------
    x_numeric, x_codes
        Records ``x``: (b, K_num) scaled numeric values and (b, K_cat) category codes.
    c_numeric, c_codes
        Candidates, (m, K_num) and (m, K_cat).
    mismatch
        Squared distance added per differing category (``2/9`` for the embedding).

    Returns
    -------
    numpy.ndarray
        float64, shape (b, m).
    """
    # float64 throughout, as the kernels (a float32 block would round differently).
    x_numeric = np.asarray(x_numeric, dtype=np.float64)
    c_numeric = np.asarray(c_numeric, dtype=np.float64)
    b, m = x_numeric.shape[0], c_numeric.shape[0]
    out = np.zeros((b, m), dtype=np.float64)
    for k in range(x_numeric.shape[1]):
        diff = x_numeric[:, k, None] - c_numeric[None, :, k]
        np.multiply(diff, diff, out=diff)
        out += diff
    if x_codes.shape[1]:
        # Mismatch counts are small integers: exact in any order.
        count = np.zeros((b, m), dtype=np.float64)
        for k in range(x_codes.shape[1]):
            count += x_codes[:, k, None] != c_codes[None, :, k]
        count *= mismatch
        out += count
    return out


def hard_nearest(distances: np.ndarray) -> np.ndarray:
    """Index of the nearest candidate per row: first index of the minimum."""
    return np.argmin(distances, axis=1)


def exp_canonical(x: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """``exp(x)`` for ``x <= 0`` by one fixed recipe, identical in numpy and numba.

    ``exp(x) = 2^k exp(t)`` with ``k = floor(x / ln 2 + 1/2)``, ``t = x - k ln 2`` in
    two parts (Cody-Waite), ``exp(t)`` by its degree-13 Taylor polynomial (Horner) and
    ``2^k`` from its bits: within 1 ulp of libm. Below ``EXP_MIN`` (results under
    ~1e-307) libm's ``exp`` (``math.exp``, which numba also calls) takes over.
    ``overwrite=True`` lets the result reuse ``x``'s memory (float64 ``x`` only).
    """
    x = np.asarray(x, dtype=np.float64)
    low = x < EXP_MIN
    lows = [math.exp(v) for v in x[low]] if low.any() else []
    # In place, one elementwise operation at a time: the same roundings as the kernel.
    t = np.maximum(x, EXP_MIN, out=x if overwrite else None)
    k = t * LOG2E
    k += 0.5
    np.floor(k, out=k)
    tmp = np.multiply(k, LN2_HI)
    t -= tmp
    np.multiply(k, LN2_LO, out=tmp)
    t -= tmp
    p = tmp
    p.fill(TAYLOR[-1])
    for coef in (*TAYLOR[-2::-1], 0.5, 1.0, 1.0):
        p *= t
        p += coef
    bits = t.view(np.int64)  # t is spent: its memory holds 2^k
    np.copyto(bits, k, casting="unsafe")
    bits += 1023
    bits <<= 52
    p *= bits.view(np.float64)
    if lows:
        p[low] = lows
    return p


def soft_row_votes(distances: np.ndarray, tau: float) -> np.ndarray:
    """Canonical softmax votes ``softmax(-d / tau)`` per row, before quantisation."""
    logits = -np.asarray(distances, dtype=np.float64) / tau
    logits -= logits.max(axis=1, keepdims=True)
    weights = exp_canonical(logits, overwrite=True)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights


def soft_quantised_units(distances: np.ndarray, tau: float) -> np.ndarray:
    """Soft votes rounded to the grid, as integer counts of ``2^-SOFT_GRID_BITS`` (float64)."""
    votes = soft_row_votes(distances, tau)
    votes *= SOFT_SCALE
    # floor(s + 1/2), rounded exactly as the numba kernel rounds it (not np.rint: the
    # rule must be one both sides evaluate identically, halves included).
    votes += 0.5
    return np.floor(votes, out=votes)


def soft_histogram(distances: np.ndarray, tau: float) -> np.ndarray:
    """Column sums of the quantised soft votes (exact: order-free), float64 shape (m,)."""
    return soft_quantised_units(distances, tau).sum(axis=0) * SOFT_UNIT


def soft_quantisation_slack(m: int) -> float:
    """Bound on how much quantisation can add to a soft vote's L2 sensitivity: ``sqrt(m) 2^-30``."""
    return math.sqrt(m) * SOFT_UNIT


__all__ = [
    "EXACT_CELL_LIMIT",
    "SOFT_GRID_BITS",
    "exp_canonical",
    "hard_nearest",
    "soft_histogram",
    "soft_quantisation_slack",
    "soft_quantised_units",
    "soft_row_votes",
    "tabpe_squared",
]
