"""Calibration: the noise a budget allows, fixed before any private data is read.

The ``rho`` a budget allows is :func:`~dpevolve.privacy.budget.zcdp_budget` (the budget
converts itself); the one sigma formula is :func:`gaussian_sigma`.
"""

from __future__ import annotations

import math

import numpy as np

from dpevolve.errors import InputError
from dpevolve.privacy.budget import Budget, zcdp_budget
from dpevolve.privacy.checks import positive
from dpevolve.privacy.conversions import epsilon_for_mu, mu_for_epsilon


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


def calibrate_gaussian(
    rounds: int, budget: Budget, sensitivity: float = 1.0, *, discrete: bool = False
) -> float:
    """Noise multiplier ``z`` (``sigma = z * sensitivity``) for ``rounds`` releases.

    docs/math.md, "Gaussian mechanism". With ``budget.rho``, or for the discrete
    Gaussian (``discrete=True``, accounted in zCDP): ``z = sqrt(rounds / (2 rho))`` with
    ``rho`` from :func:`zcdp_budget` (rounds add in zCDP). Otherwise the smallest ``z``
    whose exact composition meets ``(eps, delta)``: the ``rounds`` releases form one
    Gaussian with ``mu = sqrt(rounds) / z``, so ``z = sqrt(rounds) / mu*`` where
    ``gaussian_delta(mu*, eps) = delta``. This is the tightest valid accounting for
    continuous Gaussian releases (PLD and RDP can only be looser).

    Parameters
    ----------
    rounds
        Number of Gaussian releases, ``>= 1``.
    budget
        The whole run's budget.
    sensitivity
        L2 sensitivity of each release (``> 0``); ``z`` does not depend on it.
    """
    if isinstance(rounds, bool) or not isinstance(rounds, (int, np.integer)) or rounds < 1:
        raise InputError(f"rounds must be an integer >= 1, got {rounds!r}")
    positive("sensitivity", sensitivity)
    if budget.rho is not None or discrete:
        return gaussian_sigma(1.0, zcdp_budget(budget), rounds=int(rounds))
    assert budget.epsilon is not None and budget.delta is not None
    mu = mu_for_epsilon(budget.epsilon, budget.delta)
    z = math.sqrt(rounds) / mu
    # The root is exact to a few ulps; nudge up so the reported epsilon never exceeds.
    for _ in range(64):
        if epsilon_for_mu(math.sqrt(rounds) / z, budget.delta) <= budget.epsilon:
            break
        z *= 1.0 + 1e-12
    return z
