"""A privacy budget, the one rule for the default delta, and what it allows: its ``rho``
(:func:`zcdp_budget`) and the noise multiplier of ``rounds`` Gaussian releases
(:func:`calibrate_gaussian`), fixed before any private data is read. The one place a
budget becomes a noise scale; the numbers behind it are :mod:`~dpevolve.privacy.conversions`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpevolve.errors import InputError
from dpevolve.privacy.checks import open_unit, positive
from dpevolve.privacy.conversions import (
    epsilon_for_mu,
    gaussian_sigma,
    mu_for_epsilon,
    rho_for_epsilon,
)

#: The default delta never exceeds this, whatever n.
MAX_DEFAULT_DELTA = 1e-5

#: The budgets a run accepts. Below ``MIN_EPSILON`` the calibration has saturated (the
#: noise for ``(eps, delta)`` is set by ``delta`` alone, within 1e-4 of ``eps -> 0``) and
#: below ``MIN_RHO`` the noise leaves the release grid; above the maxima nothing is
#: protected and ``e^eps`` terms overflow. Outside them a budget is an input error.
MIN_EPSILON, MAX_EPSILON = 1e-9, 100.0
MIN_RHO, MAX_RHO = 1e-15, 100.0

#: The rule of :func:`default_delta`, as messages and help texts state it.
DEFAULT_DELTA_RULE = "min(1e-5, 1/(n ln n))"


def default_delta(n: int) -> float:
    """``min(1e-5, 1 / (n ln n))``: well below ``1/n`` at every ``n`` (docs/privacy.md).

    ``n`` is the private row count, public under replace-one adjacency.
    """
    if n <= 2:
        return MAX_DEFAULT_DELTA
    return min(MAX_DEFAULT_DELTA, 1.0 / (n * math.log(n)))


@dataclass(frozen=True)
class Budget:
    """A privacy budget: ``(epsilon, delta)``-DP or ``rho``-zCDP (docs/math.md §4).

    The one budget type, from the flag or the keyword to the plan: made once from what
    the user gave and checked then; :meth:`for_rows` fills the default delta when the
    private row count ``n`` (public under replace-one) is known.

    Parameters
    ----------
    epsilon, delta
        Approximate DP target, ``epsilon > 0``, ``0 < delta < 1``; ``delta`` left out is
        :func:`default_delta` of ``n`` (:meth:`for_rows`).
    rho
        zCDP target (``rho > 0``), given instead of ``epsilon``. ``delta`` may
        accompany it, only to report an epsilon.
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.rho is not None:
            if self.epsilon is not None:
                raise InputError("give either epsilon and delta, or rho, not both")
            object.__setattr__(self, "rho", _within("rho", self.rho, MIN_RHO, MAX_RHO))
            if self.delta is not None:
                object.__setattr__(self, "delta", open_unit("delta", self.delta))
            return
        if self.epsilon is None:
            raise InputError("give a budget: epsilon (with delta) or rho")
        epsilon = _within("epsilon", self.epsilon, MIN_EPSILON, MAX_EPSILON)
        object.__setattr__(self, "epsilon", epsilon)
        if self.delta is not None:
            object.__setattr__(self, "delta", open_unit("delta", self.delta))

    @classmethod
    def from_args(
        cls,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
    ) -> Budget:
        """Build a budget from command-line style optional arguments."""
        return cls(epsilon=epsilon, delta=delta, rho=rho)

    def for_rows(self, n: int) -> Budget:
        """This budget with ``delta`` resolved for ``n`` private rows: the given one, or
        :func:`default_delta` (with ``rho`` too, where it only reports an epsilon)."""
        if self.delta is not None:
            return self
        return Budget(epsilon=self.epsilon, delta=default_delta(n), rho=self.rho)

    @property
    def is_zcdp(self) -> bool:
        return self.rho is not None

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "rho": self.rho}


def zcdp_budget(budget: Budget) -> float:
    """The ``rho`` a budget allows: given, or the largest whose CKS conversion meets
    ``(epsilon, delta)`` (valid for any zCDP mechanism, the discrete Gaussian included).

    The one place a budget becomes ``rho`` (docs/math.md §4): the plans split this.
    """
    if budget.rho is not None:
        return budget.rho
    assert budget.epsilon is not None and budget.delta is not None
    return rho_for_epsilon(budget.epsilon, budget.delta, "cks")


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


def _within(name: str, value: float, lo: float, hi: float) -> float:
    """``value`` checked positive and inside ``[lo, hi]`` (a one-line input error)."""
    x = positive(name, value)
    if not lo <= x <= hi:
        raise InputError(f"{name} must lie in [{lo:g}, {hi:g}], got {x:g}")
    return x
