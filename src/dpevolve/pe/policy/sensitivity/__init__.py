"""Vote sensitivity (docs/math.md §3): closed-form bounds and an exact search for audits.

:mod:`~dpevolve.pe.policy.sensitivity.bounds` holds the closed forms used for calibration,
:mod:`~dpevolve.pe.policy.sensitivity.domain` the record domain, and
:mod:`~dpevolve.pe.policy.sensitivity.search` the exact search over it.
"""

from dpevolve.pe.policy.sensitivity.bounds import Norm, hard_bound, soft_bound
from dpevolve.pe.policy.sensitivity.domain import DEFAULT_MAX_DOMAIN, enumerate_domain, numeric_grid
from dpevolve.pe.policy.sensitivity.search import (
    SearchResult,
    exact_hard_sensitivity,
    exact_soft_sensitivity,
    per_round_hard_sensitivity,
    reach_edge,
)

__all__ = [
    "DEFAULT_MAX_DOMAIN",
    "Norm",
    "SearchResult",
    "enumerate_domain",
    "exact_hard_sensitivity",
    "exact_soft_sensitivity",
    "hard_bound",
    "numeric_grid",
    "per_round_hard_sensitivity",
    "reach_edge",
    "soft_bound",
]
