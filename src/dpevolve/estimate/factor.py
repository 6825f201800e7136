"""Log-space factors with named axes.

A factor is a non-negative function of a few attributes, stored as its logarithm on
the attributes' cells. Axes are named by attribute and always kept in the domain's
order, so a factor on a subset of another's attributes broadcasts against it by a
reshape alone (Koller & Friedman 2009, ch. 10; the factor algebra of McKenna,
Sheldon & Miklau 2019).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dpevolve.measurements import Clique, Domain


def positions(within: Clique, attrs: Sequence[str]) -> tuple[int, ...]:
    """Axes of ``within`` that carry ``attrs`` (each must be present)."""
    return tuple(within.index(a) for a in attrs)


def broadcast_shape(values: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """``values`` on ``attrs`` reshaped to broadcast against an array on ``target``.

    ``attrs`` must be a subsequence of ``target`` (both in domain order): the axes
    then already come in the right order and missing ones become length 1.
    """
    shape = [1] * len(target)
    last = -1
    for attr, size in zip(attrs, values.shape, strict=True):
        axis = target.index(attr)
        if axis <= last:
            raise ValueError("factor axes must follow the domain order")
        shape[axis] = size
        last = axis
    return values.reshape(shape)


def logsumexp(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """``log(sum(exp(values)))`` over ``axes``, shifted by the maximum for stability."""
    if not axes:
        return values
    top = np.max(values, axis=axes, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.sum(np.exp(values - top), axis=axes)
    with np.errstate(divide="ignore"):
        return np.log(total) + np.squeeze(top, axis=axes)


def sum_to(values: np.ndarray, attrs: Clique, keep: Clique) -> np.ndarray:
    """Linear-space ``values`` on ``attrs`` summed down to ``keep`` (a subsequence)."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    return values.sum(axis=drop) if drop else values


@dataclass(frozen=True)
class Factor:
    """``exp(values)`` on the cells of ``attrs`` (domain order)."""

    attrs: Clique
    values: np.ndarray

    @classmethod
    def zeros(cls, domain: Domain, attrs: Clique) -> Factor:
        """The constant factor 1 (log 0) on ``attrs``."""
        return cls(attrs, np.zeros(domain.shape(attrs)))

    def marginal(self, keep: Clique) -> Factor:
        """Sum of ``exp(values)`` over the attributes not in ``keep``, in log space."""
        drop = tuple(i for i, a in enumerate(self.attrs) if a not in keep)
        kept = tuple(a for a in self.attrs if a in keep)
        return Factor(kept, logsumexp(self.values, drop))

    def expand(self, target: Clique) -> np.ndarray:
        """The values, broadcastable against an array on ``target`` (a superset)."""
        return broadcast_shape(self.values, self.attrs, target)

    def log_normalizer(self) -> float:
        """``log`` of the factor's total mass."""
        return float(logsumexp(self.values, tuple(range(self.values.ndim))))
