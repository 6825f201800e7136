"""Undo part of the soft vote's blur after release (post-processing).

In expectation the soft histogram is the hard one seen through a kernel: a record near
candidate ``c_i`` votes ``softmax_j(-d(c_i, c_j) / tau)``, so ``E[H_soft] ~= K^T h`` with
``K[i, j] = softmax_j(-d(c_i, c_j) / tau)`` and ``h`` the hard (nearest-candidate)
counts. ``K`` depends only on the candidates and ``tau``, both public, so estimating
``h`` from the released noisy histogram is post-processing and costs no privacy.

The estimate is Richardson-Lucy (the EM iteration for a nonnegative deconvolution),
stopped after a few iterations: the early stop is the regulariser, since every further
iteration sharpens the noise as well as the signal. Identical candidates are merged
first (their kernel rows coincide, so only their total is identifiable) and the
estimate is split evenly between them again.
"""

from __future__ import annotations

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance

# Floor for a predicted count in the ratio y / (K^T h): keeps empty bins finite.
_TINY = 1e-12


def unique_candidates(population: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(first, inverse, counts)``: first index of each distinct record, the distinct
    record of every candidate, and how many candidates each distinct record has."""
    key = np.concatenate([population.numeric, population.codes.astype(np.float64)], axis=1)
    _, first, inverse, counts = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return first, np.asarray(inverse).ravel(), counts


def candidate_kernel(
    population: Records, distance: Distance, temperature: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The blur kernel over distinct candidates and the map back to all candidates.

    Returns ``(K, inverse, counts)``: ``K[i, j]`` is the soft vote that a record at
    distinct candidate ``i`` gives to all copies of distinct candidate ``j`` (rows sum
    to 1); ``inverse`` and ``counts`` as in :func:`unique_candidates`.
    """
    first, inverse, counts = unique_candidates(population)
    distinct = population.take(first)
    logits = -distance.pairwise(distinct, distinct) / temperature + np.log(counts)[None, :]
    logits -= logits.max(axis=1, keepdims=True)
    kernel = np.exp(logits)
    kernel /= kernel.sum(axis=1, keepdims=True)
    return kernel, inverse, counts


def richardson_lucy(observed: np.ndarray, kernel: np.ndarray, iterations: int) -> np.ndarray:
    """Nonnegative ``h`` with ``kernel.T @ h ~= max(observed, 0)``, from a flat start.

    Every iterate is nonnegative and keeps the total ``sum(max(observed, 0))``.
    """
    target = np.maximum(np.asarray(observed, dtype=np.float64), 0.0)
    total = float(target.sum())
    if total <= 0.0:
        return np.zeros_like(target)
    estimate = np.full(target.shape[0], total / target.shape[0])
    for _ in range(iterations):
        predicted = kernel.T @ estimate
        estimate = estimate * (kernel @ (target / np.maximum(predicted, _TINY)))
    return estimate


class SoftDebias:
    """Post-processing for a soft vote's noisy histogram: a few Richardson-Lucy steps.

    Parameters
    ----------
    distance
        The distance the vote used (the kernel must match it).
    temperature
        The soft vote's ``tau``.
    iterations
        Richardson-Lucy iterations (at least 1).
    """

    def __init__(self, distance: Distance, temperature: float, iterations: int = 3) -> None:
        if iterations < 1:
            raise InputError(f"debias needs at least one iteration, got {iterations}")
        if not temperature > 0:
            raise InputError(f"temperature must be positive, got {temperature}")
        self.distance = distance
        self.temperature = float(temperature)
        self.iterations = int(iterations)

    def __call__(self, noisy: np.ndarray, population: Records) -> np.ndarray:
        """Estimated hard counts per candidate from the noisy soft counts."""
        kernel, inverse, counts = candidate_kernel(population, self.distance, self.temperature)
        observed = np.bincount(inverse, weights=noisy, minlength=len(counts))
        estimate = richardson_lucy(observed, kernel, self.iterations)
        return estimate[inverse] / counts[inverse]
