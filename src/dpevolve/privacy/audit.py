"""Tools to audit a differential privacy claim from the outside.

Two kinds of check, usable on any mechanism whose output you can observe:

* **Empirical lower bound.** Run the mechanism many times on neighbouring tables ``D``
  and ``D'``, count how often a chosen event ``E`` happens, and bound the two
  probabilities with Clopper-Pearson intervals. Any ``(eps, delta)``-DP mechanism has
  ``P_D(E) <= e^eps P_D'(E) + delta``, so
  ``eps >= log((p_D_low - delta) / p_D'_high)`` with the stated confidence
  (:func:`eps_lower_bound`). A bound above the claimed epsilon is a proof of a leak
  (up to the confidence level); a bound below it proves nothing more than "not caught".
  A ``rho``-zCDP claim bounds every Renyi divergence, the event's two Bernoulli laws
  included (data processing), so the same counts give a lower bound on ``rho``
  (:func:`rho_lower_bound`): at moderate ``rho`` it tests the claim far more tightly
  than one ``(eps, delta)`` point of it.
* **Exact check.** When the output distributions are known exactly (tiny discrete
  domains, or two Gaussians with the same covariance), the hockey-stick divergence
  ``H_eps(P || Q) = sum_o [P(o) - e^eps Q(o)]_+`` gives the exact ``delta`` at every
  ``eps`` (:func:`hockey_stick`, :func:`gaussian_delta`); compare it to the claim. For
  a selection (a distribution over candidates) :func:`exact_loss` gives the pair's
  pure-DP epsilon, bounded-range width and zCDP ``rho`` at once, to set against the
  ``epsilon`` and ``rho`` charged.

:func:`independent_epsilon` recomputes a ledger's epsilon from its recorded events
without dpevolve's own accountant (closed forms, a zCDP conversion minimised here in
mpmath, and ``dp_accounting`` PLDs built here), so a ledger that reports less than its
events cost is caught.

The releases draw the *discrete* Gaussian on a fine grid; its privacy is claimed through
zCDP (Canonne, Kamath & Steinke 2020), not the continuous Gaussian's exact curve. The
exact continuous profile (:func:`gaussian_epsilon` of the actual shift) still lies below
that claim, and is the reference the empirical bounds are compared with.

References: Balle & Wang (2018) for the exact Gaussian profile; Canonne, Kamath &
Steinke (2020) for the discrete Gaussian and the zCDP conversion; Jagielski, Ullman &
Oprea (2020) and Nasr et al. (2021) for auditing by lower bounds.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np
from scipy import stats

from dpevolve.errors import InputError

__all__ = [
    "RENYI_ORDERS",
    "ExactLoss",
    "bernoulli_renyi",
    "cks_epsilon",
    "clopper_pearson",
    "eps_lower_bound",
    "exact_epsilon",
    "exact_loss",
    "gaussian_delta",
    "gaussian_epsilon",
    "hockey_stick",
    "independent_epsilon",
    "rho_lower_bound",
]


def clopper_pearson(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """Two-sided ``1 - alpha`` Clopper-Pearson interval for a binomial proportion.

    Exact (conservative) coverage: it is built from the binomial tails, not a normal
    approximation, so it stays valid at 0 or ``trials`` successes.
    """
    if trials < 1 or not 0 <= successes <= trials:
        raise InputError(f"need 0 <= successes <= trials, trials >= 1; got {successes}/{trials}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie in (0, 1), got {alpha}")
    low = (
        0.0
        if successes == 0
        else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    )
    high = (
        1.0
        if successes == trials
        else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes))
    )
    return low, high


def eps_lower_bound(
    hits: int,
    trials: int,
    hits_prime: int,
    trials_prime: int,
    delta: float,
    alpha: float = 0.05,
) -> float:
    """Lower bound on epsilon from event counts on ``D`` (``hits``) and ``D'``.

    ``log((p_D_low - delta) / p_D'_high)`` with Clopper-Pearson intervals at ``alpha``;
    the event's complement is tried too (half of ``alpha`` each, a Bonferroni split, so
    the bound holds at ``1 - alpha`` whichever side wins). ``-inf`` when neither side
    gives a positive numerator; ``inf`` when ``p_D'_high`` is 0 (cannot happen with a
    finite trial count).
    """
    if not 0 <= delta < 1:
        raise InputError(f"delta must lie in [0, 1), got {delta}")
    best = -math.inf
    for a, b in ((hits, hits_prime), (trials - hits, trials_prime - hits_prime)):
        low, _ = clopper_pearson(a, trials, alpha / 2)
        _, high = clopper_pearson(b, trials_prime, alpha / 2)
        if low - delta > 0:
            best = max(best, math.log((low - delta) / high) if high > 0 else math.inf)
    return best


def _as_pmf(p: Mapping[Hashable, float] | np.ndarray) -> dict[Hashable, float]:
    if isinstance(p, Mapping):
        return {k: float(v) for k, v in p.items()}
    return {i: float(v) for i, v in enumerate(np.asarray(p, dtype=np.float64).ravel())}


def hockey_stick(
    p: Mapping[Hashable, float] | np.ndarray,
    q: Mapping[Hashable, float] | np.ndarray,
    epsilon: float,
) -> float:
    """Exact ``max(H_eps(P || Q), H_eps(Q || P))`` for two discrete distributions.

    ``p`` and ``q`` are probability mass functions over the same outcomes (arrays
    aligned by index, or mappings; a missing outcome has mass 0). This is the smallest
    ``delta`` for which a mechanism with these two output distributions on a pair of
    neighbours is ``(epsilon, delta)``-DP on that pair.
    """
    pp, qq = _as_pmf(p), _as_pmf(q)
    keys = list(set(pp) | set(qq))
    a = np.array([pp.get(k, 0.0) for k in keys])
    b = np.array([qq.get(k, 0.0) for k in keys])
    scale = math.exp(epsilon)
    return float(max(np.maximum(a - scale * b, 0).sum(), np.maximum(b - scale * a, 0).sum()))


def exact_epsilon(
    p: Mapping[Hashable, float] | np.ndarray,
    q: Mapping[Hashable, float] | np.ndarray,
    delta: float,
    tol: float = 1e-9,
) -> float:
    """The smallest epsilon with :func:`hockey_stick` ``<= delta`` (``inf`` if none)."""
    if hockey_stick(p, q, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while hockey_stick(p, q, hi) > delta:
        hi *= 2
        if hi > 1e4:
            return math.inf
    lo = 0.0
    while hi - lo > tol * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if hockey_stick(p, q, mid) <= delta else (mid, hi)
    return hi


#: Renyi orders at which :func:`exact_loss` evaluates ``D_alpha / alpha`` (1: the
#: Kullback-Leibler divergence, the limit; a bounded-range mechanism's ratio peaks there).
RENYI_ORDERS = (1.0, 1.1, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 64.0)


@dataclass(frozen=True)
class ExactLoss:
    """The privacy loss ``L(o) = log P(o) - log Q(o)`` of two known output distributions.

    Attributes
    ----------
    epsilon
        ``max_o |L(o)|``: the pair is ``(epsilon, 0)``-DP and no less.
    loss_range
        ``max_o L(o) - min_o L(o)``: the bounded-range width (Cesar & Rogers 2021), at
        most ``epsilon`` for an ``epsilon``-DP exponential mechanism.
    rho
        ``max`` over :data:`RENYI_ORDERS` and both directions of ``D_alpha / alpha``: a
        lower bound on the least ``rho`` for which the pair is ``rho``-zCDP
        (``D_alpha <= alpha rho`` for every ``alpha > 1``).
    """

    epsilon: float
    loss_range: float
    rho: float


def exact_loss(
    log_p: np.ndarray, log_q: np.ndarray, orders: Sequence[float] = RENYI_ORDERS
) -> ExactLoss:
    """:class:`ExactLoss` of two distributions given as log-probabilities aligned by index.

    An outcome possible under one distribution only has infinite loss (every figure is
    ``inf``); outcomes impossible under both are ignored.
    """
    from scipy import special

    lp = np.asarray(log_p, dtype=np.float64).ravel()
    lq = np.asarray(log_q, dtype=np.float64).ravel()
    if lp.shape != lq.shape:
        raise InputError("the two distributions must have the same outcomes")
    keep = ~(np.isneginf(lp) & np.isneginf(lq))
    lp, lq = lp[keep], lq[keep]
    if np.isneginf(lp).any() or np.isneginf(lq).any():
        return ExactLoss(math.inf, math.inf, math.inf)
    loss = lp - lq
    alphas = np.array([a for a in orders if a != 1.0], dtype=np.float64)[:, None]
    worst = 0.0
    for a, b in ((lp, lq), (lq, lp)):
        ratios = special.logsumexp(alphas * a + (1 - alphas) * b, axis=1) / (alphas[:, 0] - 1)
        ratios /= alphas[:, 0]
        if 1.0 in orders:  # the Kullback-Leibler divergence, the limit at alpha = 1
            ratios = np.append(ratios, float(np.sum(np.exp(a) * (a - b))))
        worst = max(worst, float(ratios.max(initial=0.0)))
    return ExactLoss(float(np.abs(loss).max()), float(loss.max() - loss.min()), worst)


def bernoulli_renyi(p: float, q: float, order: float) -> float:
    """``D_order(Bern(p) || Bern(q))``, the Renyi divergence of two coin flips (order 1:
    Kullback-Leibler)."""
    if q <= 0.0 or q >= 1.0:
        return 0.0 if p == q else math.inf
    if order == 1.0:
        return sum(a * math.log(a / b) for a, b in ((p, q), (1.0 - p, 1.0 - q)) if a > 0)
    # in logs: q ** (1 - order) overflows a float for a rare event at a high order
    terms = [
        order * math.log(a) + (1.0 - order) * math.log(b) if a > 0 else -math.inf
        for a, b in ((p, q), (1.0 - p, 1.0 - q))
    ]
    return float(np.logaddexp(terms[0], terms[1])) / (order - 1.0)


def rho_lower_bound(
    hits: int,
    trials: int,
    hits_prime: int,
    trials_prime: int,
    alpha: float = 0.05,
    orders: Sequence[float] = RENYI_ORDERS,
) -> float:
    """Lower bound on the zCDP ``rho`` of a mechanism from event counts on ``D`` and ``D'``.

    A ``rho``-zCDP mechanism has ``D_a(M(D) || M(D')) <= a rho`` at every order
    ``a > 1`` and for both orderings of the pair, and so has any event of it (data
    processing): ``D_a(Bern(p_D) || Bern(p_D')) <= a rho``. With Clopper-Pearson
    intervals at ``alpha / 2`` each, the divergence at the interval ends nearest each
    other is a lower bound (it grows as ``p_D`` and ``p_D'`` move apart), and
    ``max_a D_a / a`` over ``orders`` and both orderings bounds ``rho`` from below at
    ``1 - alpha`` (the orders reuse the same intervals: no split). 0 when the
    intervals overlap. See docs/privacy.md, "Checking a guarantee yourself".
    """
    p_lo, p_hi = clopper_pearson(hits, trials, alpha / 2)
    q_lo, q_hi = clopper_pearson(hits_prime, trials_prime, alpha / 2)
    if p_lo > q_hi:
        p, q = p_lo, q_hi
    elif p_hi < q_lo:
        p, q = p_hi, q_lo
    else:
        return 0.0
    return max(max(bernoulli_renyi(p, q, a), bernoulli_renyi(q, p, a)) / a for a in orders)


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Exact ``delta(eps)`` of ``N(0, 1)`` vs ``N(mu, 1)`` (Balle & Wang 2018, Thm 8).

    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, evaluated with mpmath so that
    small deltas do not cancel to zero. Two Gaussians ``N(a, s^2 I)`` and ``N(b, s^2 I)``
    have this profile at ``mu = ||a - b||_2 / s``.
    """
    if mu < 0:
        raise InputError(f"mu must be non-negative, got {mu}")
    if mu == 0:
        return 0.0
    with mpmath.workdps(40):
        m, e = mpmath.mpf(mu), mpmath.mpf(epsilon)
        value = mpmath.ncdf(-e / m + m / 2) - mpmath.exp(e) * mpmath.ncdf(-e / m - m / 2)
        return float(max(value, 0))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact epsilon of a ``mu``-GDP mechanism at ``delta`` (bisection on
    :func:`gaussian_delta`)."""
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(mu, hi) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if gaussian_delta(mu, mid) <= delta else (mid, hi)
        if hi - lo < 1e-12 * hi:
            break
    return hi


def cks_epsilon(rho: float, delta: float) -> float:
    """Epsilon at ``delta`` of a ``rho``-zCDP mechanism (Canonne, Kamath & Steinke 2020).

    ``min_{alpha > 1} alpha rho + log(1 - 1/alpha) + (log(1/delta) - log alpha) / (alpha - 1)``,
    minimised here in mpmath (50 digits) over ``alpha = 1 + e^t``: a coarse scan of
    ``t`` brackets the minimum, then a golden-section search refines it. Every
    ``alpha > 1`` gives a valid bound, so an imperfect minimum could only overstate
    epsilon. dp_accounting's RDP conversion is this formula on a fixed grid of orders,
    so for Gaussian releases it is never below this value.
    """
    if rho < 0 or not 0 < delta < 1:
        raise InputError(f"need rho >= 0 and 0 < delta < 1, got rho={rho}, delta={delta}")
    if rho == 0:
        return 0.0
    with mpmath.workdps(50):
        r, log_inv_delta = mpmath.mpf(rho), -mpmath.log(mpmath.mpf(delta))

        def objective(t: Any) -> Any:
            alpha = 1 + mpmath.exp(t)
            # log(1 - 1/alpha) = t - log(alpha), exact for alpha near 1.
            return (
                alpha * r + t - mpmath.log(alpha)
                + (log_inv_delta - mpmath.log(alpha)) * mpmath.exp(-t)
            )  # fmt: skip

        grid = [mpmath.mpf(-40) + mpmath.mpf(i) / 20 for i in range(1601)]  # t in [-40, 40]
        values = [objective(t) for t in grid]
        i = min(range(len(values)), key=values.__getitem__)
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        ratio = (mpmath.sqrt(5) - 1) / 2
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        fa, fb = objective(a), objective(b)
        for _ in range(150):
            if fa <= fb:
                hi, b, fb = b, a, fa
                a = hi - ratio * (hi - lo)
                fa = objective(a)
            else:
                lo, a, fa = a, b, fb
                b = lo + ratio * (hi - lo)
                fb = objective(b)
        return float(max(min(fa, fb, values[i]), 0))


def _field(event: Any, name: str) -> Any:
    return event[name] if isinstance(event, Mapping) else getattr(event, name)


def _is_discrete(event: Any) -> bool:
    if isinstance(event, Mapping):
        return event.get("noise") == "discrete_gaussian"
    return bool(getattr(event, "discrete", False))


def _kind(event: Any) -> str:
    if isinstance(event, Mapping):
        return str(event["kind"])
    return {
        "GaussianEvent": "gaussian",
        "ApproxDPEvent": "approx_dp",
        "PrivacyLossPairEvent": "privacy_loss_pair",
        "ZeroCostEvent": "zero_cost",
    }.get(type(event).__name__, type(event).__name__)


def independent_epsilon(events: Sequence[Any], delta: float, disc: float = 1e-4) -> float:
    """Epsilon at ``delta`` of the composition of ``events``, recomputed independently.

    Uses none of dpevolve's accounting code. Gaussian events only: if any of them drew
    the discrete Gaussian, they compose in zCDP (``rho = sum S_i^2 / (2 sigma_i^2)``,
    valid for both kinds) converted by :func:`cks_epsilon`; if all are continuous, in
    closed form (``mu = sqrt(sum (S_i / sigma_i)^2)``, then :func:`gaussian_epsilon`).
    As soon as another kind is present every event becomes a ``dp_accounting`` PLD
    built here (Gaussian: ``from_gaussian_mechanism``; ``(eps, delta)``:
    ``from_privacy_parameters``; a dominating pair: ``from_two_probability_mass_functions``
    of each direction, the larger epsilon of the two direction chains); a discrete
    Gaussian has no claimed PLD and is refused there. Events are dpevolve event objects
    (``ledger.events``) or their ``to_dict()`` forms (pairs: objects only).
    """
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    kinds = [_kind(e) for e in events]
    active = [(e, k) for e, k in zip(events, kinds, strict=True) if k != "zero_cost"]
    if all(k == "gaussian" for _, k in active):
        ratios = [_field(e, "sensitivity") / _field(e, "sigma") for e, _ in active]
        if any(_is_discrete(e) for e, _ in active):
            return cks_epsilon(sum(r * r for r in ratios) / 2.0, delta)
        return gaussian_epsilon(math.sqrt(sum(r * r for r in ratios)), delta)
    chains: list[Any] = [None, None]  # forward and reverse direction of every pair

    def add(index: int, pld: Any) -> None:
        chains[index] = pld if chains[index] is None else chains[index].compose(pld)

    for event, kind in active:
        if kind == "gaussian":
            s, sigma = _field(event, "sensitivity"), _field(event, "sigma")
            if s == 0:
                continue
            if _is_discrete(event):
                raise InputError("a discrete Gaussian event has no PLD to compose with pairs")
            pld = pld_lib.from_gaussian_mechanism(sigma / s, value_discretization_interval=disc)
            add(0, pld)
            add(1, pld)
        elif kind == "approx_dp":
            params = common.DifferentialPrivacyParameters(
                _field(event, "epsilon"), _field(event, "delta")
            )
            pld = pld_lib.from_privacy_parameters(params, disc)
            add(0, pld)
            add(1, pld)
        elif kind == "privacy_loss_pair":
            up, low = dict(event.log_pmf_upper), dict(event.log_pmf_lower)
            reverse = (low, up)
            if getattr(event, "reverse_log_pmf_upper", None) is not None:
                reverse = (dict(event.reverse_log_pmf_upper), dict(event.reverse_log_pmf_lower))
            for index, (a, b) in enumerate(((up, low), reverse)):
                add(
                    index,
                    pld_lib.from_two_probability_mass_functions(
                        b, a, value_discretization_interval=disc
                    ),
                )
        else:
            raise InputError(f"unknown event kind '{kind}'")
    if chains[0] is None:
        return 0.0
    return float(max(c.get_epsilon_for_delta(delta) for c in chains))
