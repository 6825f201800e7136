"""The smallest noise weight beta that makes a PubMix release (epsilon, delta)-DP (docs/math.md §5).

PubMix releases m i.i.d. samples of ``P_syn = (1-beta) Pbar_prv + beta P_nse`` over d bins.
Under replace-one adjacency the worst case is a record alone in its bin, moving to an
empty bin, the two bins being the two smallest masses z1 <= z2 of ``P_nse``.  With
``g = (1-beta)/n`` only the counts (lam, mu) of the two bins matter::

    a = beta z1 + g,  b = beta z2,  c = beta z1,  d = beta z2 + g,
    rest = 1 - beta (z1 + z2) - g,

    h1(beta; z1, z2) = sum_{lam+mu<=m} m!/(lam! mu! (m-lam-mu)!) rest^(m-lam-mu)
                       [a^lam b^mu - e^eps c^lam d^mu]_+
    h2(beta; z1, z2) = h1(beta; z2, z1)
    beta_min(z1, z2) = min {beta in [0, 1] : max(h1, h2) <= delta}.

h1 is the hockey-stick divergence ``H_eps(P || Q)`` of ``P = Mult(m; a, b, rest)`` against
``Q = Mult(m; c, d, rest)``; h2 is the reverse direction ``H_eps(Q || P)`` (swap the bin
labels).  The formula needs d >= 3 (with d = 2 the two bins are the whole space and the
formula is conservative).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import xlogy
from scipy.stats import binom

from dpevolve.errors import InputError
from dpevolve.pe.pubmix._pair import (
    PRUNE_MASS,
    Grid,
    binom_logpmf,
    cell_masses,
    check_beta,
    check_common,
    check_delta,
    grid_for,
    support,
)

__all__ = [
    "PRUNE_MASS",
    "beta_min",
    "beta_min_zero_floor",
    "h1",
    "h1_by_sum",
    "h2",
    "pubmix_delta",
]

# Bisection stops when the bracket is this narrow; beta_min returns the feasible end.
_BETA_TOL = 1e-12
# Cache keys keep this many significant digits, rounded in the conservative direction.
_KEY_DIGITS = 12


def _hockey(
    grid: Grid, epsilon: float, a: float, b: float, c: float, d: float, rest: float
) -> float:
    """H_eps(Mult(m; a, b, rest) || Mult(m; c, d, rest)), pruned, tail added back."""
    m = grid.m
    lam_lo, lam_hi, tail_lam = support(binom_logpmf(grid.log_coef, m, a))
    mu_lo, mu_hi, tail_mu = support(binom_logpmf(grid.log_coef, m, b))
    lam = np.arange(lam_lo, lam_hi + 1)[:, None]
    mu = np.arange(mu_lo, mu_hi + 1)[None, :]
    r = m - lam - mu
    inside = r >= 0
    r = np.where(inside, r, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # The multinomial coefficient and rest^(m-lam-mu) are common to P and Q, so the
        # privacy loss lp - lq only involves the two moving bins.
        loss = (xlogy(lam, a) - xlogy(lam, c)) + (xlogy(mu, b) - xlogy(mu, d))
        lp = (
            grid.log_fact[m]
            - grid.log_fact[lam]
            - grid.log_fact[mu]
            - grid.log_fact[r]
            + xlogy(lam, a)
            + xlogy(mu, b)
            + xlogy(r, rest)
        )
        active = inside & (loss > epsilon) & (lp > -np.inf)
        contrib = np.exp(lp[active]) * -np.expm1(epsilon - loss[active])
    # Union bound on the pruned cells: each contributes at most its P-mass.
    return float(contrib.sum()) + tail_lam + tail_mu


def h1(beta: float, *, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    """Hockey-stick divergence of the worst-case pair, record moving out of bin z1.

    See docs/math.md §5.

    ``h1 = sum_{lam+mu<=m} m!/(lam! mu! (m-lam-mu)!) rest^(m-lam-mu)
    [a^lam b^mu - e^eps c^lam d^mu]_+`` with ``a = beta z1 + g``, ``b = beta z2``,
    ``c = beta z1``, ``d = beta z2 + g``, ``g = (1-beta)/n``.

    Computed in log space over the (lam, mu) grid restricted to the cells whose binomial
    marginals under P are >= 1e-30; a cell contributes ``exp(lp) * (-expm1(eps + lq - lp))``
    when ``lp - lq > eps``.  The pruned P-mass (<= ~1e-29) is added, so the value is an
    upper bound.

    Parameters
    ----------
    beta : float
        Weight of the noise distribution, in [0, 1].
    n : int
        Number of private records.
    m : int
        Number of released samples.
    epsilon : float
        Target epsilon (> 0).
    z1, z2 : float
        Noise masses of the bin the record leaves and the bin it enters.

    Returns
    -------
    float
        ``H_eps(P || Q)``.
    """
    check_common(n, m, epsilon, z1, z2)
    check_beta(beta)
    return _h1_unchecked(beta, int(n), int(m), float(epsilon), float(z1), float(z2))


def _h1_unchecked(beta: float, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    a, b, c, d, rest = cell_masses(beta, n, z1, z2)
    return _hockey(grid_for(m), epsilon, a, b, c, d, rest)


def h2(beta: float, *, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    """``h2(beta; z1, z2) = h1(beta; z2, z1)``, the reverse direction ``H_eps(Q || P)``.

    See :func:`h1` (docs/math.md §5).
    """
    return h1(beta, n=n, m=m, epsilon=epsilon, z1=z2, z2=z1)


def pubmix_delta(beta: float, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    """delta(eps) of one PubMix release at noise weight beta: ``max(h1, h2)`` (docs/math.md §5).

    Parameters
    ----------
    beta, n, m, epsilon, z1, z2
        As in :func:`h1`.

    Returns
    -------
    float
        The tight delta of m samples of P_syn against any replace-one neighbour, for a
        noise distribution whose two smallest masses are z1 and z2.
    """
    check_common(n, m, epsilon, z1, z2)
    check_beta(beta)
    return _delta_unchecked(beta, int(n), int(m), float(epsilon), float(z1), float(z2))


def _delta_unchecked(beta: float, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    first = _h1_unchecked(beta, n, m, epsilon, z1, z2)
    if z1 == z2:
        return first
    return max(first, _h1_unchecked(beta, n, m, epsilon, z2, z1))


def h1_by_sum(beta: float, *, n: int, m: int, epsilon: float, z1: float, z2: float) -> float:
    """h1 by an independent O(m) route: condition on ``s = lam + mu`` (docs/math.md §5).

    ``a + b = c + d``, so ``s ~ Bin(m, a + b)`` under both P and Q, and given s,
    ``lam ~ Bin(s, a/(a+b))`` under P and ``Bin(s, c/(c+d))`` under Q.  The privacy loss
    ``lam log(a/c) + (s-lam) log(b/d)`` increases in lam, so the positive part is a tail
    ``lam >= k_s`` and

        h1 = sum_s Bin(m, a+b)(s) [SF_P(k_s - 1) - e^eps SF_Q(k_s - 1)].

    Used to cross-check :func:`h1`; no pruning.
    """
    check_common(n, m, epsilon, z1, z2)
    check_beta(beta)
    a, b, c, d, _ = cell_masses(beta, int(n), float(z1), float(z2))
    ab = a + b
    if beta == 1.0 or ab == 0.0:
        # g = 0: P and Q coincide (and log(b/d) may be 0/0).
        return 0.0
    s = np.arange(int(m) + 1)
    p = a / ab
    q = c / ab
    # d >= g > 0 here, and a >= c.
    la = math.log(a) - math.log(c) if c > 0 else math.inf
    lb = (math.log(b) if b > 0 else -math.inf) - math.log(d)
    if la - lb <= 0.0:
        # a == c and b == d after rounding (g below float resolution): P == Q.
        return 0.0
    if math.isinf(la):
        # Any lam >= 1 is impossible under Q; lam = 0 has loss s*lb <= 0 < eps.
        k = np.ones_like(s)
    elif math.isinf(lb):
        # P puts everything on lam = s (b = 0); only that cell can have positive loss.
        k = np.where(s * la > epsilon, s, s + 1)
    else:
        # Smallest lam with lam*la + (s-lam)*lb > eps; ties contribute 0 either way.
        # Clipped before the cast: a tiny la - lb can push the quotient past int64.
        k = np.clip(np.floor((epsilon - s * lb) / (la - lb)) + 1, 0, s + 1).astype(np.int64)
    inner = binom.sf(k - 1, s, p) - math.exp(epsilon) * binom.sf(k - 1, s, q)
    weights = binom.pmf(s, int(m), ab)
    return float(np.sum(weights * np.maximum(inner, 0.0)))


def beta_min_zero_floor(n: int, m: int, delta: float) -> float:
    """beta_min when the noise puts zero mass on the two bins (docs/math.md §5).

    With ``z1 = z2 = 0``, ``h1 = 1 - (1 - g)^m`` for every eps, so

        beta_min(0, 0) = 1 - n (1 - (1-delta)^(1/m)),

    evaluated as ``1 + n expm1(log1p(-delta)/m)`` and clipped at 0.
    """
    if int(n) != n or n < 1:
        raise InputError(f"n (number of private records) must be a positive integer, got {n}")
    if int(m) != m or m < 1:
        raise InputError(f"m (number of released samples) must be a positive integer, got {m}")
    check_delta(delta)
    return max(0.0, 1.0 + n * math.expm1(math.log1p(-delta) / m))


def _round_down(x: float) -> float:
    """x rounded down to _KEY_DIGITS significant digits (never above x)."""
    if x < 1e-200 or not math.isfinite(x):
        return x
    exponent = math.floor(math.log10(x))
    scale = 10.0 ** (_KEY_DIGITS - 1 - exponent)
    r = math.floor(x * scale) / scale
    while r > x:
        r = math.nextafter(r, -math.inf)
    return r


def beta_min(
    n: int,
    m: int,
    epsilon: float,
    delta: float,
    z1: float,
    z2: float | None = None,
) -> float:
    """Smallest beta with ``max(h1, h2) <= delta`` (docs/math.md §5).

    ``beta_min(z1, z2) = min {beta in [0, 1] : max(h1(beta; z1, z2), h2(beta; z1, z2)) <= delta}``,
    found by bisection (``max(h1, h2)`` is non-increasing in beta) to a bracket of 1e-12;
    the feasible end of the bracket is returned.

    Results are cached on the arguments rounded to 12 significant digits in the direction
    that can only raise beta: epsilon, delta, z1 and z2 rounded down (beta_min falls as
    each of them grows; for z2 this is checked by the property tests, not proved).

    Parameters
    ----------
    n : int
        Number of private records.
    m : int
        Number of released samples.
    epsilon : float
        Target epsilon (> 0).
    delta : float
        Target delta, in (0, 1).
    z1, z2 : float
        The two smallest masses of the noise distribution; z2 defaults to z1.  The result
        is symmetric in (z1, z2).

    Returns
    -------
    float
        beta_min in [0, 1].
    """
    if z2 is None:
        z2 = z1
    check_common(n, m, epsilon, z1, z2)
    check_delta(delta)
    lo_z, hi_z = sorted((float(z1), float(z2)))
    return _beta_min_cached(
        int(n),
        int(m),
        _round_down(float(epsilon)),
        _round_down(float(delta)),
        _round_down(lo_z),
        _round_down(hi_z),
    )


@functools.lru_cache(maxsize=4096)
def _beta_min_cached(n: int, m: int, epsilon: float, delta: float, z1: float, z2: float) -> float:
    def excess(beta: float) -> bool:
        return _delta_unchecked(beta, n, m, epsilon, z1, z2) > delta

    if not excess(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while hi - lo > _BETA_TOL:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if excess(mid):
            lo = mid
        else:
            hi = mid
    return hi
