"""Distance scale matched to the policy: sharp where nothing is protected.

A soft vote's sensitivity depends only on the policy's reach ``r``, the most one
protected substitution moves any distance; under Gower that is ``w_k * max d_k`` over
the *protected* attributes ``k`` alone. Multiplying the weights of the unprotected
attributes by a factor ``s > 1`` leaves every protected edge length, hence ``r`` and
the bound ``sqrt(2) tanh(r / (2 tau))``, unchanged, while the softmax stops spreading a
record's vote over candidates that differ from it in unprotected attributes. The blur
that the soft vote adds is then confined to the protected attributes, where it is the
price of the smaller noise.

Why it is safe: a protected substitution changes one protected attribute ``k`` along an
edge of its graph, so ``|d_s(x, c) - d_s(x', c)| = w_k |d_k(x_k, c_k) - d_k(x'_k, c_k)|
<= w_k d_k(x_k, x'_k) <= r_k`` exactly as for the unsharpened distance (triangle
inequality per attribute). :func:`sharpen_unprotected` checks that the policy computes
the same reach on the new distance before returning it.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING

import numpy as np

from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance, Gower

if TYPE_CHECKING:
    from dpevolve.pe.policy.blowfish import Policy

# Relative tolerance for "the reach did not change" (products of weights and ranges).
_REACH_TOLERANCE = 1e-12


def sharpen_unprotected(distance: Distance, policy: Policy, factor: float) -> Gower:
    """A copy of a Gower ``distance`` with unprotected attribute weights times ``factor``.

    Parameters
    ----------
    distance
        A :class:`~dpevolve.pe.distance.Gower` distance (the only one whose reach is a
        per-attribute sum, which the argument above needs).
    policy
        A Blowfish policy without participation: it must leave some attribute
        unprotected, or there is nothing to sharpen.
    factor
        ``s >= 1``; ``1`` returns an equal copy.

    Returns
    -------
    Gower
        The sharpened distance; ``policy.reach`` on it equals ``policy.reach(distance)``.

    Raises
    ------
    InputError
        For a non-Gower distance, a participation policy (every attribute is then
        protected and the reach is the diameter, which sharpening would raise) or a
        factor below 1.
    """
    if not isinstance(distance, Gower):
        raise InputError(
            f"sharpening needs the gower distance, got '{distance.name}' "
            "(use --distance gower or the bfsoft preset)"
        )
    if not (math.isfinite(factor) and factor >= 1.0):
        raise InputError(f"sharpen factor must be a number >= 1, got {factor}")
    if policy.participation:
        raise InputError(
            "sharpening needs a Blowfish policy without participation: with participation "
            "every attribute is protected and the reach is the diameter"
        )
    protected = set(policy.attributes)
    sharp = copy.copy(distance)
    sharp.numeric_weights = np.array(
        [
            w if col.name in protected else w * factor
            for w, col in zip(distance.numeric_weights, distance.layout.numeric, strict=True)
        ],
        dtype=np.float64,
    )
    sharp.categorical_weights = np.array(
        [
            w if col.name in protected else w * factor
            for w, col in zip(
                distance.categorical_weights, distance.layout.categorical, strict=True
            )
        ],
        dtype=np.float64,
    )
    sharp.tables = [
        table if col.name in protected else table * factor
        for table, col in zip(distance.tables, distance.layout.categorical, strict=True)
    ]
    before, after = policy.reach(distance), policy.reach(sharp)
    # The argument in the module docstring, checked rather than trusted.
    if abs(after - before) > _REACH_TOLERANCE * max(1.0, before):
        raise AssertionError(f"sharpening moved the reach from {before} to {after}")
    return sharp
