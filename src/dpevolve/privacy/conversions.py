"""The Gaussian mechanism's privacy curve, zCDP conversions and noise scale (docs/math.md,
"Gaussian mechanism and zCDP"): functions of numbers, no budget object.

``gaussian_delta`` is Balle & Wang's exact curve; ``epsilon_from_rho`` and
``rho_for_epsilon`` convert between ``rho``-zCDP and ``(epsilon, delta)`` three ways,
tightest last: simple (Bun & Steinke 2016), CKS (Canonne, Kamath & Steinke 2020) and
exact (for Gaussian releases only); :func:`gaussian_sigma` is the one sigma formula.
What a :class:`~dpevolve.privacy.budget.Budget` allows (its ``rho``, its noise
multiplier) is said in :mod:`~dpevolve.privacy.budget`, from these.
"""

from __future__ import annotations

import math
from typing import Literal, TypeAlias

import numpy as np

from dpevolve.errors import InputError
from dpevolve.privacy.checks import as_float, nonnegative, open_unit, positive

ConversionMethod: TypeAlias = Literal["simple", "cks", "exact"]

# brentq refuses rtol below 4 machine epsilons.
_RTOL = 4 * float(np.finfo(float).eps)
_XTOL = 1e-14


def log_gaussian_delta(mu: float, epsilon: float) -> float:
    """``log delta(eps)`` of ``N(mu,1)`` vs ``N(0,1)``; see :func:`gaussian_delta`."""
    from scipy import special  # on first use: start-up stays light

    if mu == 0.0:
        return math.log(-math.expm1(epsilon)) if epsilon < 0 else -math.inf
    if math.isinf(mu):
        return 0.0
    lpa = float(special.log_ndtr(mu / 2.0 - epsilon / mu))
    lpb = float(special.log_ndtr(-mu / 2.0 - epsilon / mu))
    # delta = Phi(a) (1 - e^{eps + log Phi(b) - log Phi(a)}): no cancellation in the tail.
    x = epsilon + lpb - lpa
    if x >= 0.0:
        return -math.inf
    return lpa + math.log(-math.expm1(x))


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Hockey-stick divergence of the Gaussian mechanism (Balle & Wang 2018; docs/math.md §4).

    ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, for ``N(mu, 1)``
    vs ``N(0, 1)``, i.e. a Gaussian release with ``mu = S / sigma``. Computed as
    ``Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a)))`` with ``log_ndtr``, so it
    stays accurate where both terms are tiny.

    Parameters
    ----------
    mu
        ``>= 0`` (``inf`` allowed: no privacy).
    epsilon
        Any real.
    """
    m = as_float("mu", mu)
    if m < 0:
        raise InputError(f"mu must be >= 0, got {mu}")
    eps = as_float("epsilon", epsilon)
    if math.isinf(eps):
        return 0.0 if eps > 0 else 1.0
    return math.exp(log_gaussian_delta(m, eps))


def _simple_epsilon(rho: float, log_inv_delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * log_inv_delta)


def _cks_objective(t: np.ndarray | float, rho: float, log_inv_delta: float) -> np.ndarray:
    # alpha = 1 + e^t keeps alpha > 1 and log(1 - 1/alpha) = t - log(alpha) exact near 1.
    log_alpha = np.logaddexp(0.0, t)
    alpha = np.exp(log_alpha)
    return np.asarray(alpha * rho + t - log_alpha + (log_inv_delta - log_alpha) * np.exp(-t))


def _cks_epsilon(rho: float, log_inv_delta: float) -> float:
    from scipy import optimize  # on first use: start-up stays light

    grid = np.linspace(-25.0, 30.0, 1101)
    values = _cks_objective(grid, rho, log_inv_delta)
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(
        lambda t: float(_cks_objective(t, rho, log_inv_delta)),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    # The classical optimum alpha = 1 + sqrt(log(1/delta)/rho) is a safe extra candidate.
    t_classic = 0.5 * (math.log(log_inv_delta) - math.log(rho))
    best = min(
        float(res.fun), float(values[i]), float(_cks_objective(t_classic, rho, log_inv_delta))
    )
    return max(0.0, best)


def epsilon_for_mu(mu: float, delta: float) -> float:
    """Smallest ``eps >= 0`` with ``gaussian_delta(mu, eps) <= delta``."""
    from scipy import optimize  # on first use: start-up stays light

    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    log_delta = math.log(delta)

    def f(eps: float) -> float:
        return log_gaussian_delta(mu, eps) - log_delta

    if f(0.0) <= 0.0:
        return 0.0
    hi = _simple_epsilon(mu * mu / 2.0, -log_delta) + 1.0
    while f(hi) > 0.0:
        hi *= 2.0
    return float(optimize.brentq(f, 0.0, hi, xtol=_XTOL, rtol=_RTOL))


def mu_for_epsilon(epsilon: float, delta: float) -> float:
    """``mu`` with ``gaussian_delta(mu, epsilon) = delta`` (increasing in ``mu``)."""
    from scipy import optimize  # on first use: start-up stays light

    log_delta = math.log(delta)

    def g(mu: float) -> float:
        return log_gaussian_delta(mu, epsilon) - log_delta

    # At the simple-bound rho the exact epsilon is below target: a lower bracket.
    root_l = math.sqrt(-log_delta)
    rho_lo = (math.sqrt(root_l**2 + epsilon) - root_l) ** 2
    lo = max(math.sqrt(2.0 * rho_lo), 1e-300)
    while g(lo) > 0.0:
        lo /= 2.0
    hi = 2.0 * lo
    while g(hi) <= 0.0:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(g, lo, hi, xtol=_XTOL, rtol=_RTOL))


def epsilon_from_rho(rho: float, delta: float, method: ConversionMethod = "exact") -> float:
    """Convert ``rho``-zCDP to ``(eps, delta)`` (docs/math.md §4), tightest last.

    * ``simple``: ``eps = rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016).
    * ``cks``: ``eps = min_{alpha>1} alpha rho + log(1 - 1/alpha)
      + (log(1/delta) - log alpha) / (alpha - 1)`` (Canonne, Kamath & Steinke 2020);
      valid for every ``rho``-zCDP mechanism.
    * ``exact``: the Gaussian mechanism with ``mu = sqrt(2 rho)``: the root of
      ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) = delta`` (Balle & Wang 2018).
      Valid only when the cost comes from Gaussian releases (which is how dpevolve
      spends ``rho``).

    Returns ``eps >= 0``.
    """
    r = nonnegative("rho", rho)
    d = open_unit("delta", delta)
    if r == 0.0:
        return 0.0
    log_inv_delta = -math.log(d)
    if method == "simple":
        return _simple_epsilon(r, log_inv_delta)
    if method == "cks":
        return _cks_epsilon(r, log_inv_delta)
    if method == "exact":
        return epsilon_for_mu(math.sqrt(2.0 * r), d)
    raise InputError(f"method must be 'simple', 'cks' or 'exact', got {method!r}")


def rho_for_epsilon(epsilon: float, delta: float, method: ConversionMethod = "exact") -> float:
    """The largest ``rho`` whose conversion by ``method`` gives at most ``epsilon``.

    Inverse of :func:`epsilon_from_rho` (docs/math.md §4): ``simple`` in closed form
    ``rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2``; ``exact`` as
    ``mu^2 / 2`` with ``gaussian_delta(mu, eps) = delta``; ``cks`` by root finding,
    bracketed by the other two (simple <= cks <= exact in rho).
    """
    from scipy import optimize  # on first use: start-up stays light

    e = positive("epsilon", epsilon)
    d = open_unit("delta", delta)
    log_inv_delta = -math.log(d)
    if method not in ("simple", "cks", "exact"):
        raise InputError(f"method must be 'simple', 'cks' or 'exact', got {method!r}")
    rho_simple = (math.sqrt(log_inv_delta + e) - math.sqrt(log_inv_delta)) ** 2
    if method == "simple":
        rho = rho_simple
    else:
        rho_exact = mu_for_epsilon(e, d) ** 2 / 2.0
        rho = rho_exact
        if method == "cks":

            def f(r: float) -> float:
                return _cks_epsilon(r, log_inv_delta) - e

            if f(rho_simple) >= 0.0:
                rho = rho_simple
            elif f(rho_exact) > 0.0:
                rho = float(optimize.brentq(f, rho_simple, rho_exact, xtol=1e-300, rtol=1e-14))
    # Root finders land within a few ulps of either side; a calibration must not overspend.
    for _ in range(64):
        if epsilon_from_rho(rho, d, method) <= e:
            break
        rho *= 1.0 - 1e-12
    return rho


def gaussian_sigma(sensitivity: float, rho: float, rounds: int | None = None) -> float:
    """The Gaussian noise scale at which one release costs ``rho`` (zCDP), or, with
    ``rounds``, at which ``rounds`` equal releases cost ``rho`` together.

    docs/math.md, "Gaussian mechanism": a release of L2 sensitivity ``S`` with noise
    ``N(0, sigma^2)`` (or its discrete twin) is ``S^2 / (2 sigma^2)``-zCDP (Bun & Steinke
    2016, Prop. 1.6; Canonne, Kamath & Steinke 2020), so ``sigma = S / sqrt(2 rho)``.
    The one place this formula is written.

    Parameters
    ----------
    sensitivity
        L2 sensitivity of the release, ``> 0``.
    rho
        Its zCDP cost, ``> 0``.
    rounds
        ``rounds`` releases share ``rho`` (zCDP adds): ``sigma = S sqrt(rounds / (2 rho))``,
        written in that order so a run's noise stays bit for bit what it was.

    Returns
    -------
    float
        ``sigma``.
    """
    positive("rho", rho)
    scale = positive("sensitivity", sensitivity)
    if rounds is not None:
        return scale * math.sqrt(rounds / (2.0 * rho))
    return scale / math.sqrt(2.0 * rho)
