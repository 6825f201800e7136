"""Choosing PubMix's noise distribution and sampling the release (docs/math.md §5).

``P_syn = (1-beta) Pbar_prv + beta P_nse``; only m i.i.d. samples of P_syn are released.

* PubMix: ``P_nse`` is the public histogram A raised to a floor t (WF or MIFR), with t
  minimising the worst-case distance of P_syn from the private histogram,

      g(t) = beta_min(N1, N1) * (gamma + D(t)),   N1 = max(t, min A),

  where gamma bounds ``TV(P_pub, P_prv)`` and ``D(t)`` is the floor deficit.
* LinMix: ``P_nse`` uniform, ``beta = beta_min(1/d, 1/d)``; worst-case TV
  ``(1 - 1/d) beta``.

Every draw that touches the private histogram (the release's samples, the private floor
choice) comes from a :class:`~dpevolve.privacy.noise.NoiseSource`, never from a numpy
generator: a generator is replayable from its seed. Numpy generators here only split
public data into folds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar

from dpevolve.errors import InputError
from dpevolve.pe.pubmix.beta import beta_min
from dpevolve.pe.pubmix.floor import as_histogram, deficit, max_invariance_fill, water_fill

if TYPE_CHECKING:  # the runtime import would run dpevolve.pe.release's package init
    from dpevolve.privacy.noise import NoiseSource

__all__ = [
    "FloorChoice",
    "LinMix",
    "as_counts",
    "choose_floor",
    "choose_floor_privately",
    "floor_objective",
    "fold_spread",
    "gamma_from_fold_counts",
    "gamma_from_folds",
    "linmix",
    "pubmix_distribution",
    "pubmix_sample",
    "score_sensitivity",
]

GRID_POINTS = 41


def _check_d(d: int) -> None:
    if d < 3:
        raise InputError(
            "PubMix's beta_min formula needs d >= 3 bins "
            f"(the two moving bins and the rest), got d={d}"
        )


def _two_smallest(p: NDArray[np.float64]) -> tuple[float, float]:
    low = np.partition(p, 1)[:2]
    return float(low[0]), float(low[1])


@dataclass(frozen=True, eq=False)
class FloorChoice:
    """The chosen floor and noise distribution of one PubMix release.

    Attributes
    ----------
    method : str
        "wf" or "mifr".
    t : float
        The floor, in [0, 1/d].
    beta : float
        ``beta_min(z1, z2)`` for the two smallest masses z1 <= z2 of ``p_noise``: the
        weight to release with.  Never above ``beta_min(N1, N1)``, the value inside g
        (z1 = N1 and beta_min does not grow with z2).
    objective : float
        ``g(t) = beta_min(N1, N1) (gamma + D(t))``.
    deficit : float
        ``D(t) = TV(A, p_noise)``.
    z1, z2 : float
        The two smallest masses of ``p_noise``.
    p_noise : numpy.ndarray
        ``P_nse``, the floor-raised public histogram (read-only).
    """

    method: str
    t: float
    beta: float
    objective: float
    deficit: float
    z1: float
    z2: float
    p_noise: NDArray[np.float64] = field(repr=False)


def floor_objective(
    A: ArrayLike, t: float, *, n: int, m: int, epsilon: float, delta: float, gamma: float
) -> float:
    """``g(t) = beta_min(N1, N1) (gamma + D(t))``, ``N1 = max(t, min A)`` (docs/math.md §5).

    The same for WF and MIFR: both give ``min P_nse = N1`` and ``TV(A, P_nse) = D(t)``.
    """
    arr = np.asarray(A, dtype=np.float64)
    n1 = max(float(t), float(arr.min()))
    return beta_min(n, m, epsilon, delta, n1, n1) * (gamma + deficit(arr, t))


def choose_floor(
    A: ArrayLike,
    n: int,
    m: int,
    epsilon: float,
    delta: float,
    gamma: float,
    method: Literal["wf", "mifr"] = "wf",
    *,
    counts: ArrayLike | None = None,
) -> FloorChoice:
    """Pick the floor t in [0, 1/d] minimising g(t) and raise A to it (docs/math.md §5).

    g need not be unimodal, so g is evaluated on 41 equally spaced points of [0, 1/d]
    and then refined with bounded Brent (``scipy.optimize.minimize_scalar``) on the two
    grid cells around the best point; the better of the two is kept.

    Parameters
    ----------
    A : array_like
        Public histogram over d >= 3 bins, sums to 1.
    n, m, epsilon, delta
        Private records, released samples, and the release's (epsilon, delta).
    gamma : float
        Bound on ``TV(P_pub, P_prv)``, in [0, 1] (see :func:`gamma_from_folds`).
    method : {"wf", "mifr"}
        Water-filling or maximum-invariance floor raising.
    counts : array_like of int, optional
        Integer public counts behind A, for MIFR's exact integer DP.

    Returns
    -------
    FloorChoice
    """
    arr = as_histogram(A)
    d = arr.size
    _check_d(d)
    if method not in ("wf", "mifr"):
        raise InputError(f"method must be 'wf' or 'mifr', got {method!r}")
    if not (math.isfinite(gamma) and 0.0 <= gamma <= 1.0):
        raise InputError(f"gamma (a total-variation bound) must lie in [0, 1], got {gamma}")

    def g(t: float) -> float:
        return floor_objective(arr, t, n=n, m=m, epsilon=epsilon, delta=delta, gamma=gamma)

    grid = np.linspace(0.0, 1.0 / d, GRID_POINTS)
    values = np.array([g(float(t)) for t in grid])
    i = int(np.argmin(values))
    best_t, best_g = float(grid[i]), float(values[i])
    lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, GRID_POINTS - 1)])
    res = minimize_scalar(g, bounds=(lo, hi), method="bounded", options={"xatol": (hi - lo) * 1e-6})
    if res.success and float(res.fun) < best_g:
        best_t, best_g = float(res.x), float(res.fun)

    if method == "wf":
        p_noise = water_fill(arr, best_t)
    else:
        p_noise = max_invariance_fill(arr, best_t, counts=counts)
    p_noise.setflags(write=False)
    z1, z2 = _two_smallest(p_noise)
    return FloorChoice(
        method=method,
        t=best_t,
        beta=beta_min(n, m, epsilon, delta, z1, z2),
        objective=best_g,
        deficit=deficit(arr, best_t),
        z1=z1,
        z2=z2,
        p_noise=p_noise,
    )


def choose_floor_privately(
    A: ArrayLike,
    p_private: ArrayLike,
    n: int,
    m: int,
    epsilon: float,
    delta: float,
    selection_epsilon: float,
    method: Literal["wf", "mifr"] = "wf",
    *,
    noise: NoiseSource,
    counts: ArrayLike | None = None,
) -> FloorChoice:
    """Pick the floor by the exponential mechanism on the mixture's actual distance.

    ``g(t)`` bounds ``TV(P_nse(t), P_prv)`` by ``gamma + D(t)``, which can be far from
    the truth (on NIST tx2019/national2019 the floor it picks gives mixture TV .33
    where .25 is reachable). Here each grid floor t is scored by the distance the
    release actually has, ``score(t) = beta(t) TV(P_nse(t), Pbar_prv)``. ``beta(t)`` and
    ``P_nse(t)`` are public, and one replaced record moves ``Pbar_prv`` by ``1/n`` in two
    bins, so a score moves by at most ``Delta = max_t beta(t) / n`` (plus the scores'
    floating-point error, see :func:`score_sensitivity`); choosing t with probability
    proportional to ``exp(-selection_epsilon score(t) / (2 Delta))`` (``noise``'s
    Gumbel noisy max) is ``selection_epsilon``-DP, to be charged on top of the
    release's ``epsilon``.
    """
    arr = as_histogram(A)
    private = as_histogram(p_private)
    d = arr.size
    _check_d(d)
    if not (math.isfinite(selection_epsilon) and selection_epsilon > 0):
        raise InputError(f"selection_epsilon must be > 0, got {selection_epsilon}")
    _check_noise_source(noise)
    options = []
    for t in np.linspace(0.0, 1.0 / d, GRID_POINTS):
        fill = water_fill(arr, t) if method == "wf" else max_invariance_fill(arr, t, counts=counts)
        z1, z2 = _two_smallest(fill)
        beta = beta_min(n, m, epsilon, delta, z1, z2)
        options.append((float(t), beta, fill, z1, z2))
    betas = np.array([o[1] for o in options])
    scores = betas * np.array([0.5 * np.abs(o[2] - private).sum() for o in options])
    sensitivity = max(score_sensitivity(float(betas.max()), n, d), 1e-300)
    # Probability proportional to exp(-score / scale): epsilon = 2 Delta / scale.
    chosen = noise.noisy_argmax(-scores, 2.0 * sensitivity / selection_epsilon)
    t, beta, fill, z1, z2 = options[chosen]
    fill.setflags(write=False)
    return FloorChoice(
        method=method,
        t=t,
        beta=beta,
        objective=math.nan,
        deficit=deficit(arr, t),
        z1=z1,
        z2=z2,
        p_noise=fill,
    )


def score_sensitivity(beta_max: float, n: int, d: int) -> float:
    """Bound on how far one replaced record moves a computed score ``beta TV(P, H / n)``.

    Exactly the score moves by at most ``beta / n``. The computed score is within
    ``beta (2 log2(d) + 300) u`` of the exact one (``u = 2**-53``): each bin's
    ``|P_i - fl(H_i / n)|`` errs by at most ``u (H_i / n + |P_i - H_i / n|)``, summing
    to ``3u``; numpy's sum (naive blocks of at most 128 terms, combined pairwise) adds
    at most ``(127 + log2 d) u`` times the sum of the terms, which is at most 2; the
    product with ``beta`` one more ``u``. Two neighbours' computed scores differ by the
    exact bound plus twice that error, a relative change of about ``1e-13 n``.
    """
    u = 2.0**-53
    return beta_max / n + 2.0 * beta_max * (2.0 * math.log2(max(d, 2)) + 300.0) * u


def _check_noise_source(noise: object) -> None:
    if isinstance(noise, np.random.Generator) or not hasattr(noise, "mixture_sample"):
        raise InputError(
            "privacy noise must come from a NoiseSource (dpevolve.privacy.noise.make_noise), "
            "not a numpy generator: a generator replays from its seed"
        )


@dataclass(frozen=True, eq=False)
class LinMix:
    """LinMix: uniform noise (docs/math.md §5).

    Attributes
    ----------
    beta : float
        ``beta_min(1/d, 1/d)``.
    worst_case_tv : float
        ``(1 - 1/d) beta``, the largest ``TV(P_syn, Pbar_prv)``.
    p_noise : numpy.ndarray
        The uniform distribution over d bins (read-only).
    """

    beta: float
    worst_case_tv: float
    p_noise: NDArray[np.float64] = field(repr=False)


def linmix(d: int, n: int, m: int, epsilon: float, delta: float) -> LinMix:
    """LinMix: ``P_nse = 1/d``, ``beta = beta_min(1/d, 1/d)``, worst-case TV ``(1-1/d) beta``."""
    if int(d) != d:
        raise InputError(f"d must be an integer, got {d}")
    d = int(d)
    _check_d(d)
    beta = beta_min(n, m, epsilon, delta, 1.0 / d, 1.0 / d)
    p_noise = np.full(d, 1.0 / d)
    p_noise.setflags(write=False)
    return LinMix(beta=beta, worst_case_tv=(1.0 - 1.0 / d) * beta, p_noise=p_noise)


def gamma_from_folds(
    codes: ArrayLike,
    d: int,
    *,
    k: int = 5,
    quantile: float = 0.95,
    rng: np.random.Generator,
) -> float:
    """Spread of the public data: a quantile of pairwise TVs between k folds (docs/math.md §5).

    Split the public records at random into k folds, normalise each fold's histogram over
    the d cells, and return the ``quantile`` of the k(k-1)/2 pairwise total-variation
    distances.  This measures sampling spread inside the public data, not the
    public-private shift (docs/math.md §5 notes it can badly underestimate the latter).

    Parameters
    ----------
    codes : array_like of int
        The cell index (in [0, d)) of each public record.
    d : int
        Number of cells.
    k : int
        Number of folds, >= 2.
    quantile : float
        In [0, 1].
    rng : numpy.random.Generator
        Source of the random split.
    """
    cells = np.asarray(codes)
    if cells.ndim != 1 or not np.issubdtype(cells.dtype, np.integer):
        raise InputError("public codes must be a 1-D integer array of cell indices")
    if cells.size and (cells.min() < 0 or cells.max() >= d):
        raise InputError(f"public codes must lie in [0, d) = [0, {d})")
    if int(k) != k or k < 2:
        raise InputError(f"k (number of folds) must be an integer >= 2, got {k}")
    if cells.size < k:
        raise InputError(f"need at least k={k} public records for {k} folds, got {cells.size}")
    if not (0.0 <= quantile <= 1.0):
        raise InputError(f"quantile must lie in [0, 1], got {quantile}")
    folds = np.array_split(rng.permutation(cells.size), int(k))
    counts = np.stack([np.bincount(cells[f], minlength=d) for f in folds])
    return fold_spread(counts, quantile)


def fold_spread(fold_counts: ArrayLike, quantile: float = 0.95) -> float:
    """The ``quantile`` of pairwise TVs between the folds' normalised histograms.

    ``fold_counts`` is (k, d): each row one fold's counts over the d cells.
    """
    counts = np.asarray(fold_counts, dtype=np.float64)
    hists = counts / counts.sum(axis=1, keepdims=True)
    i, j = np.triu_indices(len(hists), 1)
    tvs = 0.5 * np.abs(hists[i] - hists[j]).sum(axis=1)
    return float(np.quantile(tvs, quantile))


def gamma_from_fold_counts(
    counts: ArrayLike,
    *,
    k: int = 5,
    quantile: float = 0.95,
    rng: np.random.Generator,
) -> float:
    """:func:`gamma_from_folds` for a public histogram given as integer counts per cell."""
    c = np.asarray(counts)
    if c.ndim != 1 or np.any(c < 0) or np.any(c != np.round(c)):
        raise InputError("public counts must be a 1-D array of non-negative integers")
    codes = np.repeat(np.arange(c.size), c.astype(np.int64))
    return gamma_from_folds(codes, c.size, k=k, quantile=quantile, rng=rng)


def pubmix_distribution(
    p_private: ArrayLike, p_noise: ArrayLike, beta: float
) -> NDArray[np.float64]:
    """``P_syn = (1-beta) Pbar_prv + beta P_nse`` (docs/math.md §5)."""
    prv = as_histogram(p_private)
    nse = as_histogram(p_noise)
    if prv.shape != nse.shape:
        raise InputError(
            f"private and noise histograms differ in shape: {prv.shape} vs {nse.shape}"
        )
    if not (math.isfinite(beta) and 0.0 <= beta <= 1.0):
        raise InputError(f"beta must lie in [0, 1], got {beta}")
    mix: NDArray[np.float64] = (1.0 - beta) * prv + beta * nse
    return mix / mix.sum()


def pubmix_sample(
    counts: ArrayLike,
    p_noise: ArrayLike,
    beta: float,
    m: int,
    noise: NoiseSource,
) -> NDArray[np.int64]:
    """The release: m i.i.d. bin indices from ``(1-beta) H / n + beta P_nse`` (docs/math.md §5).

    Parameters
    ----------
    counts : array_like
        The private histogram ``H`` as counts (integers, possibly in a float array as
        vote backends return them) summing to ``n``; ``Pbar_prv = H / n``.
    p_noise : array_like
        Noise distribution ``P_nse`` (same bins).
    beta : float
        Noise weight, e.g. from :func:`choose_floor` or :func:`linmix`.
    m : int
        Number of samples.
    noise : NoiseSource
        Source of the draws (:meth:`~dpevolve.privacy.noise.NoiseSource.mixture_sample`,
        exact); a numpy generator is refused.

    Returns
    -------
    numpy.ndarray of int64
        m bin indices.
    """
    _check_noise_source(noise)
    if int(m) != m or m < 1:
        raise InputError(f"m (number of released samples) must be a positive integer, got {m}")
    hist = as_counts(counts)
    public = as_histogram(p_noise)
    if public.shape != hist.shape:
        raise InputError(
            f"private and noise histograms differ in shape: {hist.shape} vs {public.shape}"
        )
    if not (math.isfinite(beta) and 0.0 <= beta <= 1.0):
        raise InputError(f"beta must lie in [0, 1], got {beta}")
    return np.asarray(noise.mixture_sample(hist, public, float(beta), int(m)), dtype=np.int64)


def as_counts(counts: ArrayLike) -> NDArray[np.int64]:
    """A histogram of counts as int64, refusing any non-integer or negative entry."""
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size == 0:
        raise InputError(f"counts must be a non-empty 1-D array, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        values = arr.astype(np.float64)
        if not (np.all(np.isfinite(values)) and np.all(values == np.rint(values))):
            raise InputError("counts must be whole numbers (hard-vote counts)")
        if values.size and np.abs(values).max() >= 2.0**53:
            raise InputError("counts too large to hold exactly")
        arr = values
    out = arr.astype(np.int64)
    if np.any(out < 0):
        raise InputError("counts must be non-negative")
    return out
