"""Privacy accounting (spec §4, §5): budgets, release events, accountants, the ledger.

Every private release of a run is recorded as one immutable *event*; an
:class:`Accountant` composes a sequence of events and reports the smallest epsilon,
at its delta, over the valid composition methods that apply:

* ``gaussian_exact``: Gaussian releases only. Releasing ``h + N(0, sigma_i^2 I)``
  with L2 sensitivity ``S_i`` has the privacy curve of ``N(0,1)`` vs ``N(mu_i,1)``,
  ``mu_i = S_i / sigma_i``; a composition of Gaussians is again a Gaussian with
  ``mu = sqrt(sum_i mu_i^2)`` (the stacked difference vector), so Balle-Wang's
  analytic formula is exact (spec §4).
* ``pld``: privacy-loss-distribution composition (``dp_accounting``), pessimistic
  discretisation; Gaussian, dominating-pair (PubMix, spec §5) and ``(eps, delta)``
  events.
* ``rdp``: Renyi DP (``dp_accounting``), Gaussian releases only.
* ``zcdp``: ``rho_total = sum_i S_i^2 / (2 sigma_i^2)``, converted by Canonne-Kamath-
  Steinke; Gaussian releases only.
* ``basic``: sums of per-event ``(eps_i, delta_i)`` claims.

Adjacency is replace-one throughout (spec §1); a release's sensitivity is already the
replace-one sensitivity, so a Gaussian release is a sensitivity-1 Gaussian with noise
multiplier ``z = sigma / S``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
from scipy import optimize, special

from dpevolve.errors import InputError, PrivacyError

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

__all__ = [
    "METHODS",
    "Accountant",
    "AccountingResult",
    "ApproxDPEvent",
    "Budget",
    "Event",
    "GaussianEvent",
    "Ledger",
    "PrivacyLossPairEvent",
    "ZeroCostEvent",
    "calibrate_gaussian",
    "epsilon_from_rho",
    "gaussian_delta",
    "rho_for_epsilon",
]

ConversionMethod: TypeAlias = Literal["simple", "cks", "exact"]
Method: TypeAlias = Literal["gaussian_exact", "pld", "rdp", "zcdp", "basic"]
METHODS: tuple[Method, ...] = ("gaussian_exact", "pld", "rdp", "zcdp", "basic")

# brentq refuses rtol below 4 machine epsilons.
_RTOL = 4 * float(np.finfo(float).eps)
_XTOL = 1e-14
# Listed probabilities of a pair may fall short of 1 by pruned cells (spec §5 prunes
# below 1e-30); more than this is a caller bug, not pruning.
_MAX_PMF_DEFICIT = 1e-3
_MAX_PMF_EXCESS = 1e-6
# A pair's least likely outcomes, up to this much mass per direction, are charged as
# infinite loss when its PLD is built: pessimistic (each event adds at most this to
# delta, like dp_accounting's own tail truncation) and it halves the loss range.
_PAIR_TAIL_MASS = 1e-15


# ----------------------------------------------------------------------------- checks


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError(f"{name} must be a number, got {value!r}")
    x = float(value)
    if math.isnan(x):
        raise InputError(f"{name} must be a number, got nan")
    return x


def _positive(name: str, value: object) -> float:
    x = _as_float(name, value)
    if not (0.0 < x < math.inf):
        raise InputError(f"{name} must be > 0 and finite, got {value}")
    return x


def _nonnegative(name: str, value: object) -> float:
    x = _as_float(name, value)
    if not (0.0 <= x < math.inf):
        raise InputError(f"{name} must be >= 0 and finite, got {value}")
    return x


def _open_unit(name: str, value: object) -> float:
    x = _as_float(name, value)
    if not (0.0 < x < 1.0):
        raise InputError(f"{name} must be in (0, 1), got {value}")
    return x


def _half_open_unit(name: str, value: object) -> float:
    x = _as_float(name, value)
    if not (0.0 <= x < 1.0):
        raise InputError(f"{name} must be in [0, 1), got {value}")
    return x


def _json_float(x: float) -> float | None:
    """JSON has no infinities: an unbounded quantity is written as null."""
    x = float(x)
    return x if math.isfinite(x) else None


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return _json_float(float(obj))
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _json_checked(what: str, values: Mapping[str, Any]) -> dict[str, Any]:
    # Fail when the value is recorded, not at the end of a run when the ledger is written.
    out: dict[str, Any] = _jsonable(values)
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} must be JSON-serialisable: {exc}") from None
    return out


# ----------------------------------------------------------------------------- budget


@dataclass(frozen=True)
class Budget:
    """A privacy budget: ``(epsilon, delta)``-DP or ``rho``-zCDP (spec §4).

    Parameters
    ----------
    epsilon, delta
        Approximate DP target; both required together, ``epsilon > 0``,
        ``0 < delta < 1``.
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
            object.__setattr__(self, "rho", _positive("rho", self.rho))
            if self.delta is not None:
                object.__setattr__(self, "delta", _open_unit("delta", self.delta))
            return
        if self.epsilon is None:
            raise InputError("a budget needs epsilon and delta, or rho")
        if self.delta is None:
            raise InputError("delta is required with epsilon")
        object.__setattr__(self, "epsilon", _positive("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _open_unit("delta", self.delta))

    @classmethod
    def from_args(
        cls,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
    ) -> Budget:
        """Build a budget from command-line style optional arguments."""
        return cls(epsilon=epsilon, delta=delta, rho=rho)

    @property
    def is_zcdp(self) -> bool:
        return self.rho is not None

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "delta": self.delta, "rho": self.rho}


# ----------------------------------------------------------------------------- events


@dataclass(frozen=True)
class GaussianEvent:
    """One Gaussian release of a histogram (spec §4).

    Parameters
    ----------
    sensitivity
        Replace-one L2 sensitivity ``S`` of the histogram (``>= 0``).
    sigma
        Standard deviation of the noise added to every cell (``> 0``).
    label
        Name of the release in the ledger.

    Notes
    -----
    The release is ``rho = S^2 / (2 sigma^2)``-zCDP; its noise multiplier is
    ``z = sigma / S`` (``inf`` when ``S = 0``: the release costs nothing).
    """

    sensitivity: float
    sigma: float
    label: str = "gaussian_histogram"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", _nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "sigma", _positive("sigma", self.sigma))

    @property
    def noise_multiplier(self) -> float:
        """``z = sigma / S``; ``inf`` if ``S = 0``."""
        if self.sensitivity == 0.0:
            return math.inf
        return self.sigma / self.sensitivity

    @property
    def rho(self) -> float:
        """zCDP cost ``S^2 / (2 sigma^2)``."""
        return self.sensitivity**2 / (2.0 * self.sigma**2)

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``S / sigma = 1 / z``."""
        return self.sensitivity / self.sigma

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.label,
            "kind": "gaussian",
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
            "noise_multiplier": _json_float(self.noise_multiplier),
            "rho": self.rho,
        }


@dataclass(frozen=True)
class _LossTable:
    """Privacy-loss values of one ordered pair (P, Q), sorted, with suffix sums.

    ``H_eps(P || Q) = inf_mass + sum_{L_i > eps} (p_i - e^eps q_i)``.
    """

    losses: np.ndarray
    p: np.ndarray
    p_suffix: np.ndarray
    q_suffix: np.ndarray
    inf_mass: float

    @classmethod
    def build(
        cls,
        log_p: Mapping[Hashable, float],
        log_q: Mapping[Hashable, float],
        tail_mass: float = 0.0,
    ) -> _LossTable:
        """Tabulate ``(P, Q)``; the least likely outcomes, up to ``tail_mass`` of P in
        total, are charged as infinite loss (pessimistic, shortens the loss range)."""
        keys = [o for o, lp in log_p.items() if lp > -math.inf]
        lp = np.array([log_p[o] for o in keys], dtype=float)
        lq = np.array([log_q.get(o, -math.inf) for o in keys], dtype=float)
        p = np.exp(lp)
        # Unlisted P mass (pruned cells) and outcomes Q cannot produce: infinite loss.
        inf_mass = max(0.0, 1.0 - _total_mass(log_p)) + float(p[np.isneginf(lq)].sum())
        finite = ~np.isneginf(lq)
        if tail_mass > 0.0 and finite.any():
            idx = np.flatnonzero(finite)
            by_mass = idx[np.argsort(p[idx], kind="stable")]
            dropped = by_mass[np.cumsum(p[by_mass]) <= tail_mass]
            inf_mass += float(p[dropped].sum())
            finite[dropped] = False
        losses = lp[finite] - lq[finite]
        order = np.argsort(losses, kind="stable")
        p_sorted = p[finite][order]
        q_sorted = np.exp(lq[finite])[order]
        # Suffix sums: the P and Q mass of outcomes with loss above each point.
        p_suffix = np.append(np.cumsum(p_sorted[::-1])[::-1], 0.0)
        q_suffix = np.append(np.cumsum(q_sorted[::-1])[::-1], 0.0)
        return cls(losses[order], p_sorted, p_suffix, q_suffix, min(1.0, inf_mass))

    def rounded_pmf(self, disc: float) -> dict[int, float]:
        """P-mass of each loss rounded up to a multiple of ``disc`` (pessimistic)."""
        rounded = np.ceil(self.losses / disc).astype(np.int64)
        values, inverse = np.unique(rounded, return_inverse=True)
        mass = np.bincount(inverse, weights=self.p, minlength=values.size)
        return {int(v): float(m) for v, m in zip(values, mass, strict=True)}

    def hockey_stick(self, epsilon: np.ndarray) -> np.ndarray:
        eps = np.asarray(epsilon, dtype=float)
        idx = np.searchsorted(self.losses, eps, side="right")
        with np.errstate(over="ignore", invalid="ignore"):
            finite = self.p_suffix[idx] - np.exp(eps) * self.q_suffix[idx]
        finite = np.where(idx >= self.losses.size, 0.0, finite)
        return np.clip(self.inf_mass + np.maximum(finite, 0.0), 0.0, 1.0)


def _check_log_pmf(name: str, pmf: Mapping[Hashable, float]) -> dict[Hashable, float]:
    if not isinstance(pmf, Mapping) or len(pmf) == 0:
        raise InputError(f"{name} must be a non-empty mapping of outcome -> log-probability")
    out: dict[Hashable, float] = {}
    for key, value in pmf.items():
        lp = _as_float(f"{name}[{key!r}]", value)
        if lp > 1e-9:
            raise InputError(f"{name}[{key!r}] must be a log-probability (<= 0), got {value}")
        out[key] = min(lp, 0.0)
    mass = _total_mass(out)
    if mass > 1.0 + _MAX_PMF_EXCESS or mass < 1.0 - _MAX_PMF_DEFICIT:
        raise InputError(f"{name} must sum to 1, sums to {mass:.9g}")
    return out


def _total_mass(log_pmf: Mapping[Hashable, float]) -> float:
    values = np.fromiter(log_pmf.values(), dtype=float, count=len(log_pmf))
    return float(np.exp(special.logsumexp(values))) if values.size else 0.0


@dataclass(frozen=True)
class PrivacyLossPairEvent:
    """A release described by a dominating pair of discrete distributions (spec §5).

    For every pair of neighbouring tables ``(D, D')`` the output distributions satisfy
    ``H_eps(M(D) || M(D')) <= max(H_eps(P || Q), H_eps(P' || Q'))`` for all ``eps``,
    with ``H_eps(P || Q) = sum_o [P(o) - e^eps Q(o)]_+`` the hockey-stick divergence;
    ``(P, Q)`` is (``log_pmf_upper``, ``log_pmf_lower``) and ``(P', Q')`` the reverse
    direction. For PubMix, ``P = Mult(m; a, b, rest)`` and ``Q = Mult(m; c, d, rest)``
    (spec §5, ``h1``); the reverse direction is ``(Q, P)`` (``h2``).

    Parameters
    ----------
    log_pmf_upper, log_pmf_lower
        ``outcome -> log P(outcome)`` and ``outcome -> log Q(outcome)``. Probability
        missing from ``log_pmf_upper`` (pruned cells) is charged as infinite loss.
    symmetric
        True if ``H_eps(P || Q) = H_eps(Q || P)`` for every ``eps`` (PubMix with
        ``z1 = z2``): one direction then suffices.
    reverse_log_pmf_upper, reverse_log_pmf_lower
        The other direction; both or neither. When neither is given and ``symmetric``
        is False, the reverse is ``(Q, P)``: under replace-one adjacency swapping the
        two tables swaps the two output distributions.
    label
        Name of the release in the ledger.
    params
        Parameters reported in the ledger (``beta``, ``n``, ``m``, ``z1``, ``z2``...).
    claimed_epsilon, claimed_delta
        Per-release ``(eps, delta)`` the release was calibrated for; used by basic
        composition. Both or neither.
    orientation
        How the two directions may alternate across rounds, for the same pair of
        neighbouring tables. ``"any"`` (default, always valid): the PLD is built from
        the symmetrised privacy profile ``delta(eps) = max(H_eps(P||Q), H_eps(P'||Q'))``
        (connect-the-dots), which dominates both directions in every round.
        ``"fixed"``: ``dp_accounting``'s add/remove representation, composing each
        direction with itself; valid only if every round of the run faces the same
        direction (PubMix: the moving record's bin with the smaller noise mass is the
        same one in every round), and tighter then.
    """

    log_pmf_upper: Mapping[Hashable, float]
    log_pmf_lower: Mapping[Hashable, float]
    symmetric: bool = False
    reverse_log_pmf_upper: Mapping[Hashable, float] | None = None
    reverse_log_pmf_lower: Mapping[Hashable, float] | None = None
    label: str = "pubmix"
    params: Mapping[str, float] = field(default_factory=dict)
    claimed_epsilon: float | None = None
    claimed_delta: float | None = None
    orientation: Literal["any", "fixed"] = "any"

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: store validated private copies
        set_(self, "log_pmf_upper", _check_log_pmf("log_pmf_upper", self.log_pmf_upper))
        set_(self, "log_pmf_lower", _check_log_pmf("log_pmf_lower", self.log_pmf_lower))
        has_up = self.reverse_log_pmf_upper is not None
        has_low = self.reverse_log_pmf_lower is not None
        if has_up != has_low:
            raise InputError(
                "give both reverse_log_pmf_upper and reverse_log_pmf_lower, or neither"
            )
        if has_up and self.symmetric:
            raise InputError("a symmetric pair takes no reverse direction")
        if self.reverse_log_pmf_upper is not None and self.reverse_log_pmf_lower is not None:
            rev_up = _check_log_pmf("reverse_log_pmf_upper", self.reverse_log_pmf_upper)
            rev_low = _check_log_pmf("reverse_log_pmf_lower", self.reverse_log_pmf_lower)
            set_(self, "reverse_log_pmf_upper", rev_up)
            set_(self, "reverse_log_pmf_lower", rev_low)
        if self.orientation not in ("any", "fixed"):
            raise InputError(f"orientation must be 'any' or 'fixed', got {self.orientation!r}")
        set_(self, "params", {str(k): v for k, v in dict(self.params).items()})
        if (self.claimed_epsilon is None) != (self.claimed_delta is None):
            raise InputError("give both claimed_epsilon and claimed_delta, or neither")
        if self.claimed_epsilon is not None:
            set_(self, "claimed_epsilon", _nonnegative("claimed_epsilon", self.claimed_epsilon))
            set_(self, "claimed_delta", _half_open_unit("claimed_delta", self.claimed_delta))

    def directions(
        self,
    ) -> list[tuple[Mapping[Hashable, float], Mapping[Hashable, float]]]:
        """The ``(upper, lower)`` pairs to bound: one if symmetric, else two."""
        forward = (self.log_pmf_upper, self.log_pmf_lower)
        if self.symmetric:
            return [forward]
        if self.reverse_log_pmf_upper is not None and self.reverse_log_pmf_lower is not None:
            return [forward, (self.reverse_log_pmf_upper, self.reverse_log_pmf_lower)]
        return [forward, (self.log_pmf_lower, self.log_pmf_upper)]

    def hockey_stick(self, epsilon: float | Sequence[float] | np.ndarray) -> np.ndarray:
        """Exact ``delta(eps) = max`` over the directions of ``H_eps(upper || lower)``."""
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        tables = [_LossTable.build(up, low) for up, low in self.directions()]
        return np.max([t.hockey_stick(eps) for t in tables], axis=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.label,
            "kind": "privacy_loss_pair",
            "symmetric": self.symmetric,
            "orientation": self.orientation,
            "params": _jsonable(self.params),
            "claimed_epsilon": self.claimed_epsilon,
            "claimed_delta": self.claimed_delta,
        }


@dataclass(frozen=True)
class ApproxDPEvent:
    """A release known only to be ``(epsilon, delta)``-DP.

    Composed by basic composition (``sum eps_i``, ``sum delta_i``) and, inside a PLD
    composition, through its dominating pair: loss ``+inf`` w.p. ``delta``, ``+eps``
    w.p. ``(1-delta)/(1+e^-eps)`` and ``-eps`` w.p. ``(1-delta)/(1+e^eps)``.
    """

    epsilon: float
    delta: float
    label: str = "approx_dp"

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", _half_open_unit("delta", self.delta))

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.label,
            "kind": "approx_dp",
            "epsilon": self.epsilon,
            "delta": self.delta,
        }


@dataclass(frozen=True)
class ZeroCostEvent:
    """A step that reads no private data (e.g. a public pilot): recorded, costs nothing."""

    label: str
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.label, "kind": "zero_cost", "note": self.note}


Event: TypeAlias = GaussianEvent | PrivacyLossPairEvent | ApproxDPEvent | ZeroCostEvent
_EVENT_TYPES = (GaussianEvent, PrivacyLossPairEvent, ApproxDPEvent, ZeroCostEvent)


# ------------------------------------------------------------------- Gaussian formulae


def _log_gaussian_delta(mu: float, epsilon: float) -> float:
    """``log delta(eps)`` of ``N(mu,1)`` vs ``N(0,1)``; see :func:`gaussian_delta`."""
    if mu == 0.0:
        return math.log(-math.expm1(epsilon)) if epsilon < 0 else -math.inf
    if math.isinf(mu):
        return 0.0
    lpa = float(special.log_ndtr(mu / 2.0 - epsilon / mu))
    lpb = float(special.log_ndtr(-mu / 2.0 - epsilon / mu))
    # delta = Phi(a) (1 - e^{eps + log Phi(b) - log Phi(a)}): no cancellation in the tail.
    x = epsilon + lpb - lpa
    if x >= 0.0:
        return -math.inf
    return lpa + math.log(-math.expm1(x))


def gaussian_delta(mu: float, epsilon: float) -> float:
    """Hockey-stick divergence of the Gaussian mechanism (Balle & Wang 2018; spec §4).

    ``delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)``, for ``N(mu, 1)``
    vs ``N(0, 1)``, i.e. a Gaussian release with ``mu = S / sigma``. Computed as
    ``Phi(a) * (1 - exp(eps + log Phi(b) - log Phi(a)))`` with ``log_ndtr``, so it
    stays accurate where both terms are tiny.

    Parameters
    ----------
    mu
        ``>= 0`` (``inf`` allowed: no privacy).
    epsilon
        Any real.
    """
    m = _as_float("mu", mu)
    if m < 0:
        raise InputError(f"mu must be >= 0, got {mu}")
    eps = _as_float("epsilon", epsilon)
    if math.isinf(eps):
        return 0.0 if eps > 0 else 1.0
    return math.exp(_log_gaussian_delta(m, eps))


def _simple_epsilon(rho: float, log_inv_delta: float) -> float:
    return rho + 2.0 * math.sqrt(rho * log_inv_delta)


def _cks_objective(t: np.ndarray | float, rho: float, log_inv_delta: float) -> np.ndarray:
    # alpha = 1 + e^t keeps alpha > 1 and log(1 - 1/alpha) = t - log(alpha) exact near 1.
    log_alpha = np.logaddexp(0.0, t)
    alpha = np.exp(log_alpha)
    return np.asarray(alpha * rho + t - log_alpha + (log_inv_delta - log_alpha) * np.exp(-t))


def _cks_epsilon(rho: float, log_inv_delta: float) -> float:
    grid = np.linspace(-25.0, 30.0, 1101)
    values = _cks_objective(grid, rho, log_inv_delta)
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = optimize.minimize_scalar(
        lambda t: float(_cks_objective(t, rho, log_inv_delta)),
        bounds=(lo, hi),
        method="bounded",
        options={"xatol": 1e-12},
    )
    # The classical optimum alpha = 1 + sqrt(log(1/delta)/rho) is a safe extra candidate.
    t_classic = 0.5 * (math.log(log_inv_delta) - math.log(rho))
    best = min(
        float(res.fun), float(values[i]), float(_cks_objective(t_classic, rho, log_inv_delta))
    )
    return max(0.0, best)


def _epsilon_for_mu(mu: float, delta: float) -> float:
    """Smallest ``eps >= 0`` with ``gaussian_delta(mu, eps) <= delta``."""
    if mu == 0.0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    log_delta = math.log(delta)

    def f(eps: float) -> float:
        return _log_gaussian_delta(mu, eps) - log_delta

    if f(0.0) <= 0.0:
        return 0.0
    hi = _simple_epsilon(mu * mu / 2.0, -log_delta) + 1.0
    while f(hi) > 0.0:
        hi *= 2.0
    return float(optimize.brentq(f, 0.0, hi, xtol=_XTOL, rtol=_RTOL))


def _mu_for_epsilon(epsilon: float, delta: float) -> float:
    """``mu`` with ``gaussian_delta(mu, epsilon) = delta`` (increasing in ``mu``)."""
    log_delta = math.log(delta)

    def g(mu: float) -> float:
        return _log_gaussian_delta(mu, epsilon) - log_delta

    # At the simple-bound rho the exact epsilon is below target: a lower bracket.
    root_l = math.sqrt(-log_delta)
    rho_lo = (math.sqrt(root_l**2 + epsilon) - root_l) ** 2
    lo = max(math.sqrt(2.0 * rho_lo), 1e-300)
    while g(lo) > 0.0:
        lo /= 2.0
    hi = 2.0 * lo
    while g(hi) <= 0.0:
        lo, hi = hi, 2.0 * hi
    return float(optimize.brentq(g, lo, hi, xtol=_XTOL, rtol=_RTOL))


def epsilon_from_rho(rho: float, delta: float, method: ConversionMethod = "exact") -> float:
    """Convert ``rho``-zCDP to ``(eps, delta)`` (spec §4), tightest last.

    * ``simple``: ``eps = rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016).
    * ``cks``: ``eps = min_{alpha>1} alpha rho + log(1 - 1/alpha)
      + (log(1/delta) - log alpha) / (alpha - 1)`` (Canonne, Kamath & Steinke 2020);
      valid for every ``rho``-zCDP mechanism.
    * ``exact``: the Gaussian mechanism with ``mu = sqrt(2 rho)``: the root of
      ``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) = delta`` (Balle & Wang 2018).
      Valid only when the cost comes from Gaussian releases (which is how dpevolve
      spends ``rho``).

    Returns ``eps >= 0``.
    """
    r = _nonnegative("rho", rho)
    d = _open_unit("delta", delta)
    if r == 0.0:
        return 0.0
    log_inv_delta = -math.log(d)
    if method == "simple":
        return _simple_epsilon(r, log_inv_delta)
    if method == "cks":
        return _cks_epsilon(r, log_inv_delta)
    if method == "exact":
        return _epsilon_for_mu(math.sqrt(2.0 * r), d)
    raise InputError(f"method must be 'simple', 'cks' or 'exact', got {method!r}")


def rho_for_epsilon(epsilon: float, delta: float, method: ConversionMethod = "exact") -> float:
    """The largest ``rho`` whose conversion by ``method`` gives at most ``epsilon``.

    Inverse of :func:`epsilon_from_rho` (spec §4): ``simple`` in closed form
    ``rho = (sqrt(log(1/delta) + eps) - sqrt(log(1/delta)))^2``; ``exact`` as
    ``mu^2 / 2`` with ``gaussian_delta(mu, eps) = delta``; ``cks`` by root finding,
    bracketed by the other two (simple <= cks <= exact in rho).
    """
    e = _positive("epsilon", epsilon)
    d = _open_unit("delta", delta)
    log_inv_delta = -math.log(d)
    if method not in ("simple", "cks", "exact"):
        raise InputError(f"method must be 'simple', 'cks' or 'exact', got {method!r}")
    rho_simple = (math.sqrt(log_inv_delta + e) - math.sqrt(log_inv_delta)) ** 2
    if method == "simple":
        rho = rho_simple
    else:
        rho_exact = _mu_for_epsilon(e, d) ** 2 / 2.0
        rho = rho_exact
        if method == "cks":

            def f(r: float) -> float:
                return _cks_epsilon(r, log_inv_delta) - e

            if f(rho_simple) >= 0.0:
                rho = rho_simple
            elif f(rho_exact) > 0.0:
                rho = float(optimize.brentq(f, rho_simple, rho_exact, xtol=1e-300, rtol=1e-14))
    # Root finders land within a few ulps of either side; a calibration must not overspend.
    for _ in range(64):
        if epsilon_from_rho(rho, d, method) <= e:
            break
        rho *= 1.0 - 1e-12
    return rho


# ------------------------------------------------------------------------- accountant


@dataclass(frozen=True)
class AccountingResult:
    """What a composition is worth: the run is ``(epsilon, delta)``-DP.

    ``method`` is the composition that gave ``epsilon``; ``by_method`` holds the epsilon
    of every method that applied (``inf`` where a method certifies nothing at delta).
    """

    epsilon: float
    delta: float
    method: str
    by_method: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": _json_float(self.epsilon),
            "delta": self.delta,
            "method": self.method,
            "by_method": {k: _json_float(v) for k, v in self.by_method.items()},
        }


def _costless(event: Event) -> bool:
    if isinstance(event, ZeroCostEvent):
        return True
    if isinstance(event, GaussianEvent):
        return event.sensitivity == 0.0
    if isinstance(event, ApproxDPEvent):
        return event.epsilon == 0.0 and event.delta == 0.0
    return False


def _claim(event: Event) -> tuple[float, float] | None:
    if _costless(event):
        return (0.0, 0.0)
    if isinstance(event, ApproxDPEvent):
        return (event.epsilon, event.delta)
    if isinstance(event, PrivacyLossPairEvent) and event.claimed_epsilon is not None:
        assert event.claimed_delta is not None
        return (event.claimed_epsilon, event.claimed_delta)
    return None


def _check_events(events: Sequence[Event]) -> list[Event]:
    out = list(events)
    for e in out:
        if not isinstance(e, _EVENT_TYPES):
            raise TypeError(f"not a privacy event: {type(e).__name__}")
    return out


class Accountant:
    """Composes release events and reports ``(epsilon, delta)`` by the tightest method.

    Parameters
    ----------
    delta
        Target delta, ``0 < delta < 1``.
    methods
        Methods to try (default all of :data:`METHODS`); a method that does not apply
        to an event list is skipped.
    value_discretization_interval
        PLD loss grid (``dp_accounting``); rounding is pessimistic, so the PLD epsilon
        overestimates by about this much per release at worst.

    Notes
    -----
    Every method gives a valid guarantee, so the smallest epsilon among those that
    apply is reported (spec §4, §5). ``basic`` reports its own delta, the sum of the
    claimed deltas; it competes only if that sum is at most the target delta, and is
    reported anyway, with its larger delta, when no other method applies.
    """

    def __init__(
        self,
        delta: float,
        *,
        methods: Sequence[str] | None = None,
        value_discretization_interval: float = 1e-4,
    ) -> None:
        self.delta = _open_unit("delta", delta)
        chosen = tuple(METHODS if methods is None else methods)
        for m in chosen:
            if m not in METHODS:
                raise InputError(f"unknown accounting method {m!r}; use one of {list(METHODS)}")
        self.methods: tuple[str, ...] = chosen
        self.value_discretization_interval = _positive(
            "value_discretization_interval", value_discretization_interval
        )

    # -- which methods apply

    def applicable_methods(self, events: Sequence[Event]) -> list[str]:
        evs = [e for e in _check_events(events) if not _costless(e)]
        gaussian_only = all(isinstance(e, GaussianEvent) for e in evs)
        out: list[str] = []
        for m in self.methods:
            if m in ("gaussian_exact", "rdp", "zcdp") and gaussian_only:
                out.append(m)
            elif m == "pld":
                out.append(m)
            elif m == "basic" and all(_claim(e) is not None for e in evs):
                out.append(m)
        return out

    # -- composition

    def epsilon(self, events: Sequence[Event]) -> AccountingResult:
        """Compose ``events``; report the smallest epsilon at ``self.delta``."""
        evs = _check_events(events)
        active = [e for e in evs if not _costless(e)]
        applicable = self.applicable_methods(evs)
        if not applicable:
            raise PrivacyError(
                f"no accounting method among {list(self.methods)} applies to these events"
            )
        by_method: dict[str, float] = {}
        basic_delta = 0.0
        for m in applicable:
            if m == "gaussian_exact":
                by_method[m] = self._gaussian_exact(active)
            elif m == "pld":
                pld_eps = self._pld(active).get_epsilon_for_delta(self.delta)
                by_method[m] = max(0.0, float(pld_eps))
            elif m == "rdp":
                by_method[m] = self._rdp(active)
            elif m == "zcdp":
                rho = sum(e.rho for e in active if isinstance(e, GaussianEvent))
                by_method[m] = epsilon_from_rho(rho, self.delta, "cks")
            elif m == "basic":
                eps_b, basic_delta = self._basic(active)
                by_method[m] = eps_b
        competing = {
            m: v
            for m, v in by_method.items()
            if m != "basic" or basic_delta <= self.delta * (1.0 + 1e-9)
        }
        if not competing:
            return AccountingResult(by_method["basic"], basic_delta, "basic", by_method)
        best = min(competing, key=lambda m: competing[m])
        delta = basic_delta if best == "basic" else self.delta
        return AccountingResult(competing[best], delta, best, by_method)

    def delta_for_epsilon(self, events: Sequence[Event], epsilon: float) -> float:
        """Smallest delta the run certifies at ``epsilon`` (exact Gaussian or PLD).

        ``epsilon`` may be negative: the whole curve is what dominance is about.
        """
        eps = _as_float("epsilon", epsilon)
        if math.isinf(eps):
            raise InputError(f"epsilon must be finite, got {epsilon}")
        active = [e for e in _check_events(events) if not _costless(e)]
        if not active:
            return 0.0
        candidates: list[float] = []
        if all(isinstance(e, GaussianEvent) for e in active):
            candidates.append(gaussian_delta(_composed_mu(active), eps))
        if "pld" in self.methods or not candidates:
            candidates.append(float(self._pld(active).get_delta_for_epsilon(eps)))
        return min(candidates)

    def running_epsilons(self, events: Sequence[Event]) -> list[float]:
        """Epsilon after each prefix of ``events`` (non-decreasing).

        Uses the exact Gaussian closed form while the prefix is Gaussian only, then
        incremental PLD composition (and basic composition when it applies).
        """
        evs = _check_events(events)
        out: list[float] = []
        inv_z2 = 0.0
        gaussian_only = True
        pld: PrivacyLossDistribution | None = None
        eps_sum, delta_sum = 0.0, 0.0
        basic_ok = True
        running = 0.0
        for e in evs:
            if not _costless(e):
                if isinstance(e, GaussianEvent):
                    inv_z2 += e.mu**2
                else:
                    gaussian_only = False
                claim = _claim(e)
                if claim is None:
                    basic_ok = False
                else:
                    eps_sum += claim[0]
                    delta_sum += claim[1]
                step = self._event_pld(e)
                pld = step if pld is None else pld.compose(step)
            candidates: list[float] = []
            if gaussian_only:
                candidates.append(_epsilon_for_mu(math.sqrt(inv_z2), self.delta))
            elif pld is not None:
                candidates.append(max(0.0, float(pld.get_epsilon_for_delta(self.delta))))
            if basic_ok and delta_sum <= self.delta * (1.0 + 1e-9):
                candidates.append(eps_sum)
            # A larger epsilon is still a valid guarantee: report the running max.
            running = max(running, min(candidates))
            out.append(running)
        return out

    # -- the methods

    def _gaussian_exact(self, active: Sequence[Event]) -> float:
        return _epsilon_for_mu(_composed_mu(active), self.delta)

    def _basic(self, active: Sequence[Event]) -> tuple[float, float]:
        eps, delta = 0.0, 0.0
        for e in active:
            claim = _claim(e)
            assert claim is not None
            eps += claim[0]
            delta += claim[1]
        return eps, delta

    def _rdp(self, active: Sequence[Event]) -> float:
        from dp_accounting import dp_event
        from dp_accounting.rdp import rdp_privacy_accountant

        acc = rdp_privacy_accountant.RdpAccountant()
        for z, count in _group_gaussians(active).items():
            # Add/remove RDP of a sensitivity-1 Gaussian equals the shift-by-S one.
            acc.compose(dp_event.GaussianDpEvent(z), count)
        return max(0.0, float(acc.get_epsilon(self.delta)))

    def _event_pld(self, event: Event) -> PrivacyLossDistribution:
        from dp_accounting.pld import common as pld_common
        from dp_accounting.pld import privacy_loss_distribution as pld_lib

        disc = self.value_discretization_interval
        if _costless(event):
            return pld_lib.identity(disc)
        if isinstance(event, GaussianEvent):
            return pld_lib.from_gaussian_mechanism(
                standard_deviation=event.noise_multiplier,
                sensitivity=1.0,
                value_discretization_interval=disc,
            )
        if isinstance(event, ApproxDPEvent):
            params = pld_common.DifferentialPrivacyParameters(event.epsilon, event.delta)
            return pld_lib.from_privacy_parameters(params, disc)
        if isinstance(event, PrivacyLossPairEvent):
            return _pair_pld(event, disc)
        raise TypeError(f"not a privacy event: {type(event).__name__}")

    def _pld(self, active: Sequence[Event]) -> PrivacyLossDistribution:
        from dp_accounting.pld import privacy_loss_distribution as pld_lib

        # Identical releases self-compose in one FFT power instead of T convolutions.
        groups: list[tuple[Event, int]] = []
        by_key: dict[object, int] = {}
        for e in active:
            key: object = ("g", e.noise_multiplier) if isinstance(e, GaussianEvent) else id(e)
            if isinstance(e, ApproxDPEvent):
                key = ("a", e.epsilon, e.delta)
            if key in by_key:
                ev, c = groups[by_key[key]]
                groups[by_key[key]] = (ev, c + 1)
            else:
                by_key[key] = len(groups)
                groups.append((e, 1))
        total: PrivacyLossDistribution | None = None
        for e, count in groups:
            pld = self._event_pld(e)
            if count > 1:
                pld = pld.self_compose(count)
            total = pld if total is None else total.compose(pld)
        return total if total is not None else pld_lib.identity(self.value_discretization_interval)


def _composed_mu(active: Sequence[Event]) -> float:
    """``mu = sqrt(sum_i (S_i / sigma_i)^2)``: stacked Gaussian releases (spec §4)."""
    return math.sqrt(sum(e.mu**2 for e in active if isinstance(e, GaussianEvent)))


def _group_gaussians(active: Sequence[Event]) -> dict[float, int]:
    groups: dict[float, int] = {}
    for e in active:
        if isinstance(e, GaussianEvent) and e.sensitivity > 0:
            groups[e.noise_multiplier] = groups.get(e.noise_multiplier, 0) + 1
    return groups


def _pair_pld(event: PrivacyLossPairEvent, disc: float) -> PrivacyLossDistribution:
    """PLD of a dominating pair (spec §5); see :class:`PrivacyLossPairEvent`."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    directions = event.directions()
    tables = [_LossTable.build(up, low, _PAIR_TAIL_MASS) for up, low in directions]
    if len(tables) == 1:
        return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
            tables[0].rounded_pmf(disc), tables[0].inf_mass, disc
        )
    if event.orientation == "fixed":
        # dp_accounting's add/remove pair: "remove" composes with "remove" and "add"
        # with "add", one direction per chain, and delta(eps) is the max of the two.
        fwd, rev = tables
        return pld_lib.PrivacyLossDistribution.create_from_rounded_probability(
            fwd.rounded_pmf(disc),
            fwd.inf_mass,
            disc,
            pessimistic_estimate=True,
            rounded_probability_mass_function_add=rev.rounded_pmf(disc),
            infinity_mass_add=rev.inf_mass,
            symmetric=False,
        )
    # Symmetrised profile delta(eps) = max over the directions, on a grid covering every
    # finite loss of both signs: it is convex in e^eps, so connect-the-dots gives a pair
    # whose profile is above it at every eps (negative ones included), hence one that
    # dominates both directions and composes whatever direction each round takes.
    finite = np.concatenate([t.losses for t in tables])
    lmax = float(np.max(np.abs(finite))) if finite.size else 0.0
    hi = math.ceil(lmax / disc) + 1
    step = max(1, round(0.01 / disc))
    kinks = np.concatenate([np.floor(finite / disc), np.ceil(finite / disc)])
    grid = np.unique(
        np.concatenate([kinks, -kinks, np.arange(-hi, hi + 1, step), [-hi, hi]]).astype(np.int64)
    )
    grid = grid[(grid >= -hi) & (grid <= hi)]
    deltas = np.max([t.hockey_stick(grid * disc) for t in tables], axis=0)
    deltas = np.minimum.accumulate(deltas)  # remove float noise; the profile is monotone
    pmf = pld_pmf.create_pmf_pessimistic_connect_dots(disc, grid, deltas)
    return pld_lib.PrivacyLossDistribution(pmf)


# ------------------------------------------------------------------------ calibration


def calibrate_gaussian(rounds: int, budget: Budget, sensitivity: float = 1.0) -> float:
    """Noise multiplier ``z`` (``sigma = z * sensitivity``) for ``rounds`` releases.

    Spec §4. With ``budget.rho``: ``z = sqrt(rounds / (2 rho))`` (rounds add in zCDP).
    Otherwise the smallest ``z`` whose exact composition meets ``(eps, delta)``: the
    ``rounds`` releases form one Gaussian with ``mu = sqrt(rounds) / z``, so
    ``z = sqrt(rounds) / mu*`` where ``gaussian_delta(mu*, eps) = delta``. This is the
    tightest valid accounting for Gaussian releases (PLD and RDP can only be looser).

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
    _positive("sensitivity", sensitivity)
    if budget.rho is not None:
        return math.sqrt(rounds / (2.0 * budget.rho))
    assert budget.epsilon is not None and budget.delta is not None
    mu = _mu_for_epsilon(budget.epsilon, budget.delta)
    z = math.sqrt(rounds) / mu
    # The root is exact to a few ulps; nudge up so the reported epsilon never exceeds.
    for _ in range(64):
        if _epsilon_for_mu(math.sqrt(rounds) / z, budget.delta) <= budget.epsilon:
            break
        z *= 1.0 + 1e-12
    return z


# ----------------------------------------------------------------------------- ledger

_RESERVED_TOP = frozenset({"epsilon", "delta", "events", "accounting", "notes"})
_RESERVED_EVENT = frozenset({"round", "running_epsilon"})
_MAX_PLD_PREFIXES = 64
# Ledger fields derived from private data or secrets (left out of the shareable ledger).
_PRIVATE_KEYS = frozenset({"seed", "seed_note", "notes", "validation"})


class Ledger:
    """Privacy ledger: what was spent, release by release (spec §4, §5).

    ``to_dict()`` gives JSON with top-level ``"epsilon"`` and ``"delta"`` (the
    guarantee of the whole run), ``"accounting"`` (``method``, ``by_method``,
    ``target_delta``), ``"events"`` (one object per release: ``round``, ``mechanism``,
    the event's parameters, caller-supplied info and ``running_epsilon``), ``"notes"``,
    and free-form metadata (schema, seed, preset, version, policy...).

    Running epsilon is the exact Gaussian closed form while every release is Gaussian
    (computed on record); otherwise it is computed when the ledger is read, by PLD
    for every prefix when there are at most 64 events, else for the final one only
    (earlier entries are then ``null``).
    """

    def __init__(
        self,
        delta: float,
        metadata: Mapping[str, Any] | None = None,
        *,
        accountant: Accountant | None = None,
    ) -> None:
        self.delta = _open_unit("delta", delta)
        self._accountant = accountant if accountant is not None else Accountant(self.delta)
        if self._accountant.delta != self.delta:
            raise InputError("the ledger's accountant must use the ledger's delta")
        self._events: list[Event] = []
        self._entries: list[dict[str, Any]] = []
        self._metadata: dict[str, Any] = {}
        self._notes: list[str] = []
        self._gaussian_running: list[float] = []  # valid while every event is Gaussian
        self._inv_z2 = 0.0
        self._all_gaussian = True
        self._cache: tuple[int, AccountingResult, list[float | None]] | None = None
        if metadata:
            self.add_metadata(**metadata)

    def record(self, event: Event, round: int | None = None, **info: Any) -> None:
        """Append one release. ``round`` defaults to the previous round + 1."""
        if not isinstance(event, _EVENT_TYPES):
            raise TypeError(f"not a privacy event: {type(event).__name__}")
        if round is None:
            prev = self._entries[-1]["round"] if self._entries else 0
            round = (prev if isinstance(prev, int) else 0) + 1
        clash = (_RESERVED_EVENT | event.to_dict().keys()) & info.keys()
        if clash:
            raise InputError(f"ledger info may not override {sorted(clash)}")
        entry = {"round": int(round), **_json_checked("ledger info", info)}
        self._events.append(event)
        self._entries.append(entry)
        if self._all_gaussian and (isinstance(event, GaussianEvent) or _costless(event)):
            if isinstance(event, GaussianEvent):
                self._inv_z2 += event.mu**2
            self._gaussian_running.append(_epsilon_for_mu(math.sqrt(self._inv_z2), self.delta))
        else:
            self._all_gaussian = False
        self._cache = None

    def add_metadata(self, **kv: Any) -> None:
        """Set free-form top-level keys (schema, seed, preset, version, policy...)."""
        clash = _RESERVED_TOP & kv.keys()
        if clash:
            raise InputError(f"metadata may not use the reserved keys {sorted(clash)}")
        self._metadata.update(_json_checked("ledger metadata", kv))

    def note(self, text: str) -> None:
        """Add a one-line note, e.g. ``"on_invalid=drop removed 3 rows"``."""
        self._notes.append(str(text))

    @property
    def events(self) -> tuple[Event, ...]:
        return tuple(self._events)

    def result(self) -> AccountingResult:
        """The whole run's guarantee (tightest method)."""
        return self._compute()[1]

    def running_epsilons(self) -> list[float | None]:
        return list(self._compute()[2])

    def _compute(self) -> tuple[int, AccountingResult, list[float | None]]:
        n = len(self._events)
        if self._cache is not None and self._cache[0] == n:
            return self._cache
        result = self._accountant.epsilon(self._events)
        running: list[float | None]
        if self._all_gaussian:
            running = list(self._gaussian_running)
        elif n <= _MAX_PLD_PREFIXES:
            running = list(self._accountant.running_epsilons(self._events))
        else:
            known = len(self._gaussian_running)
            running = [*self._gaussian_running, *([None] * (n - known))]
        if running:
            # The final entry states the run's reported guarantee.
            prev = [v for v in running[:-1] if v is not None]
            running[-1] = max([result.epsilon, *prev])
        self._cache = (n, result, running)
        return self._cache

    def to_dict(self) -> dict[str, Any]:
        _, result, running = self._compute()
        events = []
        for entry, event, eps in zip(self._entries, self._events, running, strict=True):
            events.append(
                {
                    "round": entry["round"],
                    **event.to_dict(),
                    **{k: v for k, v in entry.items() if k != "round"},
                    "running_epsilon": None if eps is None else _json_float(eps),
                }
            )
        out: dict[str, Any] = {
            "epsilon": _json_float(result.epsilon),
            "delta": result.delta,
            "accounting": {
                "method": result.method,
                "by_method": {k: _json_float(v) for k, v in result.by_method.items()},
                "target_delta": self.delta,
            },
            "events": events,
            "notes": list(self._notes),
        }
        out.update(self._metadata)
        return out

    def shareable_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` without what must stay with the data: the seed (it regenerates
        the release noise), the notes and the validation counts (computed from the private
        table, not privatised). Everything else describes released quantities."""
        out = self.to_dict()
        for key in _PRIVATE_KEYS:
            out.pop(key, None)
        out["withheld"] = sorted(_PRIVATE_KEYS)
        return out

    def to_json(self, shareable: bool = False) -> str:
        data = self.shareable_dict() if shareable else self.to_dict()
        return json.dumps(data, indent=2, allow_nan=False) + "\n"

    def write(self, path: str | os.PathLike[str], shareable: bool = False) -> None:
        """Write the JSON atomically: a temporary file in the same folder, then rename."""
        from dpevolve.data.io import atomic_write

        target = Path(path)
        if not target.parent.is_dir():
            raise InputError(f"ledger folder does not exist: {target.parent}")
        text = self.to_json(shareable)
        atomic_write(target, lambda tmp: tmp.write_text(text, encoding="utf-8"))
