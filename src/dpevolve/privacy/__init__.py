"""Privacy accounting: budgets, release events, accountants, calibration and the ledger.

Every private release of a run is recorded as one immutable event
(:mod:`~dpevolve.privacy.events`); accountants (:mod:`~dpevolve.privacy.accountants`)
compose them; :mod:`~dpevolve.privacy.budget` fixes the noise a budget allows
before any private data is read; the :class:`~dpevolve.privacy.ledger.Ledger` states
what was spent. See docs/privacy.md.
"""

from dpevolve.privacy.accountants import METHODS, Accountant, AccountingResult
from dpevolve.privacy.budget import Budget, calibrate_gaussian, default_delta, zcdp_budget
from dpevolve.privacy.conversions import (
    epsilon_from_rho,
    gaussian_delta,
    gaussian_sigma,
    rho_for_epsilon,
)
from dpevolve.privacy.events import (
    ApproxDPEvent,
    Event,
    ExponentialEvent,
    GaussianEvent,
    PrivacyLossPairEvent,
    ZeroCostEvent,
)
from dpevolve.privacy.ledger import SHAREABLE_KEYS, Ledger, SharedLedger

__all__ = [
    "METHODS",
    "SHAREABLE_KEYS",
    "Accountant",
    "AccountingResult",
    "ApproxDPEvent",
    "Budget",
    "Event",
    "ExponentialEvent",
    "GaussianEvent",
    "Ledger",
    "PrivacyLossPairEvent",
    "SharedLedger",
    "ZeroCostEvent",
    "calibrate_gaussian",
    "default_delta",
    "epsilon_from_rho",
    "gaussian_delta",
    "gaussian_sigma",
    "rho_for_epsilon",
    "zcdp_budget",
]
