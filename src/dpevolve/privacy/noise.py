"""The one source of every random draw that protects privacy.

A release must never take its noise from the run's seed: anyone holding the seed (it
sits in the ledger, and the demo default is 0) regenerates the noise and subtracts it.
Textbook floating-point Gaussian and Laplace samplers also leak the private value
through the pattern of floats they can output (Mironov 2012). Both problems are closed
here:

* :class:`SecureNoise` (``make_noise(None)``, the default) draws from the operating
  system's cryptographically secure generator through exact samplers with no
  floating-point arithmetic on private values: OpenDP's discrete Gaussian and discrete
  Laplace (Canonne, Kamath and Steinke 2020) on integers, OpenDP's Gumbel noisy max,
  and exact integer arithmetic for the PubMix mixture draw. Two runs never repeat.
* :class:`SeededNoise` (``make_noise(K)``) samples the same distributions from a
  seeded numpy generator, vectorised, for bit-for-bit research reproduction and fast
  statistical audits only: whoever knows ``K`` can remove its noise.

Real-valued inputs go through a fixed dyadic grid ``GRID``: values are rounded to the
nearest multiple of ``GRID`` (an exact operation in binary floating point), integer
noise is added in grid units, and the result is scaled back. Rounding is a fixed
function of the values, so neighbouring inputs ``v, v'`` become ``r(v), r(v')`` with
``|r(v)_i - v_i| <= GRID / 2``; coordinates equal in ``v`` and ``v'`` round alike, so
if at most ``k`` coordinates differ, the triangle inequality gives
``||r(v) - r(v')||_2 <= ||v - v'||_2 + GRID * sqrt(k)`` (and ``GRID * k`` in L1).
A release of real values calibrates for ``S + rounding_slack(d)``; integer inputs
(hard-vote counts) already lie on the grid and need no slack.
"""

from __future__ import annotations

import bisect
import math
import os
import secrets
from abc import ABC, abstractmethod
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike

from dpevolve.errors import InputError

#: The grid of real-valued releases. 2**-32 keeps the rounding slack far below any
#: sensitivity in use (``GRID * sqrt(30000)`` is 4e-8) while values up to 2**29 and
#: noise scales up to 2**24 stay inside int64 in grid units.
GRID = 2.0**-32
_MAX_UNITS = 2**61  # |rounded value| and the noise scale in grid units stay below this
_CHUNK = 62  # bits per vectorised uniform draw (bounds stay below 2**62)
_BATCH = 1 << 16  # noise draws per call into a sampler (see _GridNoise._batched)


class NoiseSource(Protocol):
    """What a release may draw: every method's privacy is stated for its inputs.

    ``name`` is ``"secure"`` or ``"seeded"`` (for the ledger).
    """

    name: str

    def gaussian(self, values: ArrayLike, sigma: float) -> np.ndarray:
        """``values`` plus discrete-Gaussian noise of scale ``sigma`` on the grid."""
        ...

    def laplace(self, values: ArrayLike, scale: float) -> np.ndarray:
        """``values`` plus discrete-Laplace noise of scale ``scale`` on the grid."""
        ...

    def noisy_argmax(self, scores: ArrayLike, scale: float) -> int:
        """The index of the largest ``scores + Gumbel(scale)``."""
        ...

    def mixture_sample(
        self, counts: ArrayLike, p_public: ArrayLike, beta: float, m: int
    ) -> np.ndarray:
        """``m`` i.i.d. bins of ``(1 - beta) counts / n + beta p_public``."""
        ...

    def rounding_slack(self, d: int, norm: Literal["l1", "l2"] = "l2") -> float:
        """Extra sensitivity grid rounding can add to ``d`` changed real values."""
        ...


class _GridNoise(ABC):
    """The mechanisms, written once over a few exact primitives of the bit source."""

    name: str
    grid: float = GRID

    # ------------------------------------------------------------------ primitives
    @abstractmethod
    def _discrete_gaussian(self, scale: float, size: int) -> np.ndarray:
        """int64 draws with ``P(y) ~ exp(-y^2 / (2 scale^2))`` on the integers."""

    @abstractmethod
    def _discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        """int64 draws with ``P(y) ~ exp(-|y| / scale)`` on the integers."""

    @abstractmethod
    def _gumbel_argmax(self, scores: np.ndarray, scale: float) -> int:
        """``argmax(scores + Gumbel(0, scale))``."""

    @abstractmethod
    def _below(self, bound: int, size: int) -> np.ndarray:
        """``size`` uniform int64 draws from ``[0, bound)``, ``1 <= bound <= 2**62``."""

    @abstractmethod
    def _randbelow(self, bound: int) -> int:
        """One uniform draw from ``[0, bound)`` for a Python integer of any size."""

    # ------------------------------------------------------------------ mechanisms
    def rounding_slack(self, d: int, norm: Literal["l1", "l2"] = "l2") -> float:
        """Extra sensitivity the grid rounding can add when ``d`` coordinates change.

        ``GRID * sqrt(d)`` in L2 and ``GRID * d`` in L1 (see the module docstring); pass
        the number of coordinates one record can change, or the vector length. Zero is
        right only for values on the grid by construction (integer counts).
        """
        if d < 0:
            raise InputError(f"d must be >= 0, got {d}")
        return self.grid * (math.sqrt(d) if norm == "l2" else float(d))

    def gaussian(self, values: ArrayLike, sigma: float) -> np.ndarray:
        """``values`` rounded to the grid plus discrete-Gaussian noise of scale ``sigma``.

        Privacy: for inputs with L2 sensitivity ``S`` this is ``rho = S'^2 / (2 sigma^2)``
        -zCDP with ``S' = S + rounding_slack(d)`` (``S' = S`` for integer inputs); for
        ``sigma`` of many grid units the privacy-loss distribution is that of the
        continuous Gaussian (Canonne, Kamath and Steinke 2020), so the ledger's Gaussian
        accounting applies.
        """
        units = self._to_units(values, sigma)
        noise = self._batched(self._discrete_gaussian, sigma / self.grid, units.size)
        return self._from_units(units, noise, values)

    def laplace(self, values: ArrayLike, scale: float) -> np.ndarray:
        """``values`` rounded to the grid plus discrete-Laplace noise of scale ``scale``.

        Privacy: ``epsilon = S1' / scale`` for inputs with L1 sensitivity ``S1``, where
        ``S1' = S1 + rounding_slack(d, "l1")`` (``S1`` for integer inputs).
        """
        units = self._to_units(values, scale)
        noise = self._batched(self._discrete_laplace, scale / self.grid, units.size)
        return self._from_units(units, noise, values)

    def noisy_argmax(self, scores: ArrayLike, scale: float) -> int:
        """Report-noisy-max with Gumbel noise: the exponential mechanism.

        Picks ``i`` with probability proportional to ``exp(scores_i / scale)``. If each
        score moves by at most ``Delta`` between neighbours, this is ``epsilon``-DP with
        ``epsilon = 2 Delta / scale`` (``Delta / scale`` when all scores move in the same
        direction), and ``epsilon^2 / 8``-zCDP.
        """
        arr = np.asarray(scores, dtype=np.float64).ravel()
        if arr.size == 0 or not np.all(np.isfinite(arr)):
            raise InputError("noisy_argmax needs at least one score, all finite")
        _check_scale(scale, "scale")
        return int(self._gumbel_argmax(arr, float(scale)))

    def mixture_sample(
        self, counts: ArrayLike, p_public: ArrayLike, beta: float, m: int
    ) -> np.ndarray:
        """``m`` i.i.d. bin indices from ``(1 - beta) counts / n + beta p_public``.

        Exact: each draw takes the public branch with probability exactly ``beta`` (an
        integer comparison against the dyadic expansion of the float ``beta``); a private
        draw is a uniform integer in ``[0, n)`` located in the cumulative counts; a public
        draw is exact for ``p_public / sum(p_public)`` (floats are dyadic rationals, so
        integer weights represent them exactly). The privacy of the released samples is
        PubMix's (a function of ``beta``, ``m`` and ``p_public``), not stated here.
        """
        hist = np.asarray(counts)
        if hist.ndim != 1 or hist.size == 0 or not np.issubdtype(hist.dtype, np.integer):
            raise InputError("counts must be a non-empty 1-d integer array")
        if np.any(hist < 0):
            raise InputError("counts must be non-negative")
        public = np.asarray(p_public, dtype=np.float64)
        if public.shape != hist.shape:
            raise InputError(f"p_public has shape {public.shape}, counts {hist.shape}")
        if not (np.all(np.isfinite(public)) and np.all(public >= 0) and public.sum() > 0):
            raise InputError("p_public must be finite, non-negative and not all zero")
        if not 0.0 <= beta <= 1.0:
            raise InputError(f"beta must lie in [0, 1], got {beta}")
        if int(m) != m or m < 1:
            raise InputError(f"m must be a positive integer, got {m}")
        m = int(m)
        n = int(hist.sum(dtype=np.int64))
        if n < 1 and beta < 1.0:
            raise InputError("counts must not all be zero when beta < 1")
        from_public = self._bernoulli(float(beta), m)
        out = np.empty(m, dtype=np.int64)
        k = int(np.count_nonzero(from_public))
        if k < m:
            cum = np.cumsum(hist.astype(np.int64))
            draws = self._below(n, m - k)
            out[~from_public] = np.searchsorted(cum, draws, side="right")
        if k:
            out[from_public] = self._categorical(_dyadic_weights(public.tobytes()), k)
        return out

    # ------------------------------------------------------------------ helpers
    def _batched(
        self, primitive: Callable[[float, int], np.ndarray], scale: float, size: int
    ) -> np.ndarray:
        """``size`` i.i.d. draws of ``primitive`` at ``scale``, in batches of ``_BATCH``.

        One call per batch, not per value: the secure sampler's cost is then its exact
        arithmetic, not Python's. Both sources draw through here, so the statistical
        tests run on the seeded twin exercise the batching the secure source uses; a
        batch bounds the intermediate memory of a large release (millions of cells).
        """
        out = np.empty(size, dtype=np.int64)
        for start in range(0, size, _BATCH):
            stop = min(size, start + _BATCH)
            batch = np.asarray(primitive(scale, stop - start), dtype=np.int64)
            if batch.shape != (stop - start,):
                raise AssertionError("a noise primitive returned the wrong number of draws")
            out[start:stop] = batch
        return out

    def _to_units(self, values: ArrayLike, scale: float) -> np.ndarray:
        _check_scale(scale, "sigma/scale")
        arr = np.asarray(values, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise InputError("values to release must be finite")
        # Multiplying by a power of two and rounding are exact in binary floating point.
        scaled = np.rint(arr.ravel() / self.grid)
        if scale / self.grid >= _MAX_UNITS or (scaled.size and np.abs(scaled).max() >= _MAX_UNITS):
            raise InputError("values or noise scale too large for the release grid")
        return scaled.astype(np.int64)

    def _from_units(self, units: np.ndarray, noise: np.ndarray, like: ArrayLike) -> np.ndarray:
        total = units + noise.astype(np.int64)
        return (total.astype(np.float64) * self.grid).reshape(np.shape(like))

    def _bernoulli(self, p: float, size: int) -> np.ndarray:
        """Exact Bernoulli(p) for a float p = B / 2**k: is a uniform k-bit integer < B?"""
        numerator, denominator = p.as_integer_ratio()
        k = denominator.bit_length() - 1
        if k <= _CHUNK:
            return self._below(1 << k, size) < numerator
        # Compare the top 62 bits first; only a tie (probability 2**-62) reads further.
        shift = k - _CHUNK
        top = numerator >> shift
        head = self._below(1 << _CHUNK, size)
        out = head < top
        rest = numerator & ((1 << shift) - 1)
        for i in np.flatnonzero(head == top):
            out[i] = self._randbelow(1 << shift) < rest
        return out

    def _categorical(self, weights: tuple[int, ...], size: int) -> np.ndarray:
        """Exact draws ``i`` with probability ``weights[i] / sum(weights)``.

        A uniform ``U`` in ``[0, T)`` is located in the cumulative weights. Its top bits
        ``hi`` are drawn vectorised; the bin is settled by ``hi`` alone unless a cumulative
        weight shares those top bits, and those rare draws finish exactly in integers.
        """
        cum = list(_cumulative(weights))
        total = cum[-1]
        shift = max(0, total.bit_length() - _CHUNK)
        coarse = np.array([c >> shift for c in cum], dtype=np.int64)
        hi = self._below((total >> shift) + 1, size)
        out = np.searchsorted(coarse, hi, side="right")
        unsettled = np.flatnonzero(np.searchsorted(coarse, hi, side="left") != out)
        for i in unsettled:
            u = (int(hi[i]) << shift) + self._randbelow(1 << shift)
            if u >= total:  # outside [0, T): redraw this one from scratch
                u = self._randbelow(total)
            out[i] = bisect.bisect_right(cum, u)
        return out.astype(np.int64)


def _check_scale(scale: float, what: str) -> None:
    if not (math.isfinite(scale) and scale > 0):
        raise InputError(f"{what} must be finite and > 0, got {scale}")


@lru_cache(maxsize=8)
def _dyadic_weights(raw: bytes) -> tuple[int, ...]:
    """Integer weights proportional to the floats (exact: floats are dyadic)."""
    ratios = [float(x).as_integer_ratio() for x in np.frombuffer(raw, dtype=np.float64)]
    common = max(den for _, den in ratios)
    return tuple(num * (common // den) for num, den in ratios)


def _cumulative(weights: tuple[int, ...]) -> list[int]:
    out, running = [], 0
    for w in weights:
        running += w
        out.append(running)
    return out


class SecureNoise(_GridNoise):
    """Noise from the operating system's secure generator through exact samplers.

    The discrete Gaussian, discrete Laplace and Gumbel noisy max are OpenDP's (sampled in
    exact arithmetic from the OS generator); uniform integers come from ``os.urandom``.
    Nothing is reproducible, by design. OpenDP is imported on the first draw, and only
    the modules these samplers need (its ``prelude`` also loads its optional
    scikit-learn and pandas extras, seconds of start-up no draw uses).
    """

    name = "secure"

    def _discrete_gaussian(self, scale: float, size: int) -> np.ndarray:
        return _invoke(_opendp_measurement("gaussian", scale), size)

    def _discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        return _invoke(_opendp_measurement("laplace", scale), size)

    def _gumbel_argmax(self, scores: np.ndarray, scale: float) -> int:
        # A float64 array crosses into OpenDP as one buffer, not element by element.
        return int(_opendp_measurement("gumbel", scale)(np.ascontiguousarray(scores)))

    def _below(self, bound: int, size: int) -> np.ndarray:
        if not 1 <= bound <= 1 << _CHUNK:
            raise ValueError(f"bound {bound} outside [1, 2**62]")
        # Rejection from 64-bit words: accept below the largest multiple of bound.
        limit = ((1 << 64) // bound) * bound
        out = np.empty(0, dtype=np.uint64)
        while out.size < size:
            need = size - out.size
            words = np.frombuffer(os.urandom(8 * (need + need // 8 + 1)), dtype=np.uint64)
            if limit < 1 << 64:
                words = words[words < np.uint64(limit)]
            out = np.concatenate([out, words[:need]])
        return (out % np.uint64(bound)).astype(np.int64)

    def _randbelow(self, bound: int) -> int:
        return secrets.randbelow(bound)


def _invoke(measurement: Any, size: int) -> np.ndarray:
    """``size`` noise draws from an OpenDP integer measurement applied to zeros.

    The zeros go in as one int64 buffer (OpenDP otherwise checks and converts a list
    element by element, a fifth of the cost of a draw) and the draws come back as one
    ctypes array.
    """
    if size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(measurement(np.zeros(size, dtype=np.int64)), dtype=np.int64)


@lru_cache(maxsize=64)
def _opendp_measurement(kind: str, scale: float) -> Any:
    # The modules the three samplers need, not opendp.prelude (see SecureNoise).
    import opendp.domains as dd
    import opendp.measurements as dm
    import opendp.measures as dms
    import opendp.metrics as dmt
    from opendp.mod import enable_features

    # "contrib" enables OpenDP's vetted-but-not-yet-certified measurements.
    enable_features("contrib")
    ints = dd.vector_domain(dd.atom_domain(T="i64"))
    if kind == "gaussian":
        return dm.make_gaussian(ints, dmt.l2_distance(T="i64"), scale)
    if kind == "laplace":
        return dm.make_laplace(ints, dmt.l1_distance(T="i64"), scale)
    floats = dd.vector_domain(dd.atom_domain(T=float, nan=False))
    # Under zCDP OpenDP's noisy max adds Gumbel noise (the exponential mechanism).
    return dm.make_noisy_max(
        floats, dmt.linf_distance(T=float), dms.zero_concentrated_divergence(), scale
    )


class SeededNoise(_GridNoise):
    """The same distributions from a seeded numpy generator: for reproduction only.

    Anyone who knows ``noise_seed`` can regenerate and subtract the noise, so a release
    drawn from it protects nothing against them. Vectorised, for audits with many trials.
    """

    name = "seeded"

    def __init__(self, noise_seed: int) -> None:
        self.noise_seed = int(noise_seed)
        self._rng = np.random.default_rng(self.noise_seed)

    def _discrete_laplace(self, scale: float, size: int) -> np.ndarray:
        # The difference of two geometric variables on {0, 1, ...} with ratio exp(-1/scale).
        p = -math.expm1(-1.0 / scale)
        return self._rng.geometric(p, size) - self._rng.geometric(p, size)

    def _discrete_gaussian(self, scale: float, size: int) -> np.ndarray:
        # Canonne-Kamath-Steinke: discrete-Laplace proposals of scale t = floor(sigma) + 1,
        # accepted with probability exp(-(|y| - sigma^2 / t)^2 / (2 sigma^2)).
        sigma2 = scale * scale
        t = math.floor(scale) + 1.0
        out = np.empty(size, dtype=np.int64)
        todo = np.arange(size)
        while todo.size:
            y = self._discrete_laplace(t, todo.size)
            bias = np.abs(y) - sigma2 / t
            accept = self._rng.random(todo.size) < np.exp(-(bias * bias) / (2.0 * sigma2))
            out[todo[accept]] = y[accept]
            todo = todo[~accept]
        return out

    def _gumbel_argmax(self, scores: np.ndarray, scale: float) -> int:
        return int(np.argmax(scores + self._rng.gumbel(0.0, scale, scores.size)))

    def _below(self, bound: int, size: int) -> np.ndarray:
        return self._rng.integers(0, bound, size=size, dtype=np.int64)

    def _randbelow(self, bound: int) -> int:
        bits = bound.bit_length()
        nbytes = (bits + 7) // 8
        while True:
            u = int.from_bytes(self._rng.bytes(nbytes), "big") >> (8 * nbytes - bits)
            if u < bound:
                return u


def make_noise(noise_seed: int | None) -> NoiseSource:
    """The noise of a release: secure unless a reproduction seed is given explicitly."""
    return SecureNoise() if noise_seed is None else SeededNoise(noise_seed)
