"""Closed-form vote sensitivity bounds (docs/math.md §3), given the policy's reach ``r``::

    soft:  ||v(x') - v(x)||_1 <= 2 tanh(r / (2 tau)),   ||.||_2 <= sqrt(2) tanh(r / (2 tau))
    hard:  ||.||_1 <= 2,  ||.||_2 <= sqrt(2)            (0 when r = 0)

The soft bound follows from the lemma ``||softmax(z) - softmax(z + e)||_1 <= 2 tanh(D / 4)``
for logit shifts with spread ``max(e) - min(e) <= D = 2 r / tau``; it is attained by the
population ``C = [x', x]`` of a protected edge carrying the reach.
"""

from __future__ import annotations

import math
from typing import Literal

from dpevolve.errors import InputError

Norm = Literal["l1", "l2"]


# ----------------------------------------------------------------- closed forms
def check_norm(norm: str) -> None:
    """Refuse a norm other than ``"l1"`` or ``"l2"``."""
    if norm not in ("l1", "l2"):
        raise InputError(f"norm must be l1 or l2, got {norm!r}")


def _check_reach(reach: float) -> None:
    if not (math.isfinite(reach) and reach >= 0):
        raise InputError(f"reach must be a non-negative number, got {reach}")


def soft_bound(reach: float, tau: float, norm: Norm = "l2") -> float:
    """Soft-vote sensitivity bound (docs/math.md §3).

    ``L1: 2 tanh(r / (2 tau))``; ``L2: sqrt(2) tanh(r / (2 tau))`` (the change sums to
    zero, so ``||v||_2 <= ||v||_1 / sqrt(2)``). Tight for every ``r`` and ``tau``.
    """
    check_norm(norm)
    _check_reach(reach)
    if not (math.isfinite(tau) and tau > 0):
        raise InputError(f"temperature must be a positive number, got {tau}")
    q = math.tanh(reach / (2.0 * tau))
    return 2.0 * q if norm == "l1" else math.sqrt(2.0) * q


def hard_bound(reach: float, norm: Norm = "l2") -> float:
    """Hard-vote sensitivity bound: ``L1 = 2``, ``L2 = sqrt(2)``; 0 when ``r = 0``.

    See docs/math.md §3.
    """
    check_norm(norm)
    _check_reach(reach)
    if reach == 0:
        return 0.0
    return 2.0 if norm == "l1" else math.sqrt(2.0)


__all__ = ["Norm", "check_norm", "hard_bound", "soft_bound"]
