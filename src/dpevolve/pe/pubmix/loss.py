"""The worst-case pair of output distributions of one PubMix release (docs/math.md §5).

For PLD accounting (composition over rounds) a PubMix release is dominated by the pair

    P = Mult(m; a, b, rest)   (the record in the z1 bin)
    Q = Mult(m; c, d, rest)   (the record moved to the z2 bin)

over the counts (lam, mu) of the two moving bins, with ``a = beta z1 + g``,
``b = beta z2``, ``c = beta z1``, ``d = beta z2 + g``, ``g = (1-beta)/n``.
``H_eps(P || Q) = h1`` and ``H_eps(Q || P) = h2`` (the reverse pair is the same two
distributions with the bin labels swapped), so a non-symmetric privacy loss distribution
built from (P, Q) has ``delta(eps) = max(h1, h2)`` before any composition.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import xlogy

from dpevolve.pe.pubmix._pair import (
    LOG_PRUNE,
    binom_logpmf,
    cell_masses,
    check_beta,
    check_common,
    grid_for,
)

__all__ = [
    "TAIL_P",
    "TAIL_Q",
    "WorstCasePair",
    "meets_over_rounds",
    "worst_case_pair",
    "worst_case_pld",
]

TAIL_P = "tail_p"
"""Outcome carrying P's pruned mass; Q gives it probability 0."""
TAIL_Q = "tail_q"
"""Outcome carrying Q's pruned mass; P gives it probability 0."""


@dataclass(frozen=True, eq=False)
class WorstCasePair:
    """The worst-case pair of one release, as log probability mass functions.

    Attributes
    ----------
    log_p, log_q : dict
        ``{(lam, mu): log probability}`` of P and Q on the kept cells, plus the atom
        ``TAIL_P`` in ``log_p`` only and ``TAIL_Q`` in ``log_q`` only (present when the
        pruned mass is positive).
    tail_p, tail_q : float
        Mass given to the tail atoms: a union bound on the pruned mass of each, so each
        pmf sums to 1 up to that bound's slack (at most ~1e-29).

    Notes
    -----
    Replacing P's pruned cells by one outcome that Q never produces (privacy loss +inf)
    can only increase ``H_eps(P || Q)`` for every eps: a cell contributes
    ``[P - e^eps Q]_+ <= P`` before and exactly its P-mass after.  The same holds for Q's
    pruned cells in the reverse direction.  The modified pair therefore dominates the
    true one in both directions, which is what a pessimistic PLD (and its composition)
    needs.  Lumping the tails into one shared atom would not be valid: it could lower
    the divergence.
    """

    log_p: dict[Hashable, float] = field(repr=False)
    log_q: dict[Hashable, float] = field(repr=False)
    tail_p: float
    tail_q: float


def _kept_range(*logpmfs: np.ndarray) -> tuple[int, int]:
    """Smallest index interval holding every value >= 1e-30 of any of the pmfs."""
    keep = np.flatnonzero(np.any(np.stack(logpmfs) >= LOG_PRUNE, axis=0))
    return int(keep[0]), int(keep[-1])


def _outside(logpmf: np.ndarray, lo: int, hi: int) -> float:
    return float(np.exp(logpmf[:lo]).sum() + np.exp(logpmf[hi + 1 :]).sum())


def worst_case_pair(n: int, m: int, beta: float, z1: float, z2: float) -> WorstCasePair:
    """P = Mult(m; a, b, rest) and Q = Mult(m; c, d, rest) on (lam, mu), pruned (docs/math.md §5).

    Cells outside the ranges where any of the four binomial marginals
    (lam: Bin(m, a), Bin(m, c); mu: Bin(m, b), Bin(m, d)) reaches 1e-30 are pruned, and
    their mass bound is moved to the tail atoms (see :class:`WorstCasePair`).

    Use with dp_accounting as
    ``from_two_probability_mass_functions(pair.log_q, pair.log_p, symmetric=False)``
    (lower = Q, upper = P): the "remove" direction is ``H_eps(P || Q) = h1`` and the
    "add" direction ``H_eps(Q || P) = h2``; or call :func:`worst_case_pld`.
    """
    check_common(n, m, 1.0, z1, z2)
    check_beta(beta)
    n, m = int(n), int(m)
    a, b, c, d, rest = cell_masses(float(beta), n, float(z1), float(z2))
    grid = grid_for(m)
    lam_p, lam_q = binom_logpmf(grid.log_coef, m, a), binom_logpmf(grid.log_coef, m, c)
    mu_p, mu_q = binom_logpmf(grid.log_coef, m, b), binom_logpmf(grid.log_coef, m, d)
    lam_lo, lam_hi = _kept_range(lam_p, lam_q)
    mu_lo, mu_hi = _kept_range(mu_p, mu_q)
    tail_p = _outside(lam_p, lam_lo, lam_hi) + _outside(mu_p, mu_lo, mu_hi)
    tail_q = _outside(lam_q, lam_lo, lam_hi) + _outside(mu_q, mu_lo, mu_hi)

    lam = np.arange(lam_lo, lam_hi + 1)[:, None]
    mu = np.arange(mu_lo, mu_hi + 1)[None, :]
    r = m - lam - mu
    inside = r >= 0
    r = np.where(inside, r, 0)
    f = grid.log_fact
    with np.errstate(divide="ignore", invalid="ignore"):
        common = f[m] - f[lam] - f[mu] - f[r] + xlogy(r, rest)
        lp = np.where(inside, common + xlogy(lam, a) + xlogy(mu, b), -np.inf)
        lq = np.where(inside, common + xlogy(lam, c) + xlogy(mu, d), -np.inf)
    log_p: dict[Hashable, float] = {}
    log_q: dict[Hashable, float] = {}
    for i, j in zip(*np.nonzero(lp > -np.inf), strict=True):
        log_p[(lam_lo + int(i), mu_lo + int(j))] = float(lp[i, j])
    for i, j in zip(*np.nonzero(lq > -np.inf), strict=True):
        log_q[(lam_lo + int(i), mu_lo + int(j))] = float(lq[i, j])
    if tail_p > 0.0:
        log_p[TAIL_P] = math.log(tail_p)
    if tail_q > 0.0:
        log_q[TAIL_Q] = math.log(tail_q)
    return WorstCasePair(log_p=log_p, log_q=log_q, tail_p=tail_p, tail_q=tail_q)


def worst_case_pld(
    n: int,
    m: int,
    beta: float,
    z1: float,
    z2: float,
    *,
    value_discretization_interval: float = 1e-4,
) -> Any:
    """Pessimistic, non-symmetric dp_accounting PLD of one PubMix release (docs/math.md §5).

    ``get_delta_for_epsilon(eps)`` of the result lies between ``max(h1, h2)`` at eps and
    at ``eps - value_discretization_interval``; ``compose``/``self_compose`` give the
    accounting of several releases.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
    """
    return _pld_of(worst_case_pair(n, m, beta, z1, z2), value_discretization_interval)


def _pld_of(pair: WorstCasePair, value_discretization_interval: float) -> Any:
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution.from_two_probability_mass_functions(
        pair.log_q,
        pair.log_p,
        pessimistic_estimate=True,
        value_discretization_interval=value_discretization_interval,
        symmetric=False,
    )


def _unmatched_mass(pair: WorstCasePair) -> float:
    """The larger of P's mass where Q is 0 and Q's mass where P is 0: outcomes whose
    privacy loss is infinite, in either direction."""
    only_p = [v for k, v in pair.log_p.items() if k not in pair.log_q]
    only_q = [v for k, v in pair.log_q.items() if k not in pair.log_p]
    return max(float(np.exp(only_p).sum()), float(np.exp(only_q).sum()))


def meets_over_rounds(
    n: int, m: int, beta: float, z: float, rounds: int, epsilon: float, delta: float
) -> bool:
    """Whether ``rounds`` releases at ``(beta, z1 = z2 = z)``, composed by the PLD of their
    worst-case pair, meet ``(epsilon, delta)`` (docs/math.md §5, tight accounting).

    A mass ``u`` of outcomes that one side never produces composes to
    ``1 - (1 - u)^rounds`` for every epsilon, a lower bound on the composed delta; when it
    already exceeds ``delta`` the answer is no without composing. This is the case at a
    zero floor with few private rows (``u = 1 - (1 - (1-beta)/n)^m``), where nearly all
    mass is unmatched and dp_accounting's truncation of the composed tails would fail.
    """
    pair = worst_case_pair(n, m, beta, z, z)
    if -math.expm1(rounds * math.log1p(-min(_unmatched_mass(pair), 1.0))) > delta:
        return False
    pld = _pld_of(pair, 1e-4).self_compose(rounds)
    return bool(pld.get_delta_for_epsilon(epsilon) <= delta)
