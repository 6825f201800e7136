"""Privacy events: immutable records of what one release costs (docs/privacy.md).

Each event is data, as in dp-accounting: an accountant decides whether it
:meth:`~dpevolve.privacy.accountants.Accountant.supports` an event list and composes it.
Every event knows whether it is free (:attr:`is_free`) and the ``(epsilon, delta)`` it
was calibrated for, if any (:meth:`claim`), which is all basic composition needs.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
from scipy import special

from dpevolve.errors import InputError
from dpevolve.privacy.checks import (
    as_float,
    half_open_unit,
    json_float,
    jsonable,
    nonnegative,
    positive,
)

# Listed probabilities of a pair may fall short of 1 by pruned cells (PubMix prunes
# below 1e-30); more than this is a caller bug, not pruning.
MAX_PMF_DEFICIT = 1e-3
MAX_PMF_EXCESS = 1e-6


@dataclass(frozen=True)
class GaussianEvent:
    """One Gaussian release of a histogram (docs/math.md §4).

    Parameters
    ----------
    sensitivity
        Replace-one L2 sensitivity ``S`` of the histogram (``>= 0``).
    sigma
        Standard deviation of the noise added to every cell (``> 0``).
    label
        Name of the release in the ledger.
    discrete
        The noise is the discrete Gaussian on a lattice (Canonne, Kamath & Steinke
        2020), as drawn by the secure noise source. Its Renyi divergences are bounded by
        the continuous Gaussian's, so zCDP and RDP accounting hold, but the continuous
        Gaussian's exact privacy curve (Balle-Wang, PLD) is not claimed for it.

    Notes
    -----
    The release is ``rho = S^2 / (2 sigma^2)``-zCDP; its noise multiplier is
    ``z = sigma / S`` (``inf`` when ``S = 0``: the release costs nothing).
    """

    sensitivity: float
    sigma: float
    label: str = "gaussian_histogram"
    discrete: bool = False

    @property
    def is_free(self) -> bool:
        return self.sensitivity == 0.0

    def claim(self) -> tuple[float, float] | None:
        return (0.0, 0.0) if self.is_free else None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sensitivity", nonnegative("sensitivity", self.sensitivity))
        object.__setattr__(self, "sigma", positive("sigma", self.sigma))

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
            "noise": "discrete_gaussian" if self.discrete else "gaussian",
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
            "noise_multiplier": json_float(self.noise_multiplier),
            "rho": self.rho,
        }


@dataclass(frozen=True)
class LossTable:
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
    ) -> LossTable:
        """Tabulate ``(P, Q)``; the least likely outcomes, up to ``tail_mass`` of P in
        total, are charged as infinite loss (pessimistic, shortens the loss range)."""
        keys = [o for o, lp in log_p.items() if lp > -math.inf]
        lp = np.array([log_p[o] for o in keys], dtype=float)
        lq = np.array([log_q.get(o, -math.inf) for o in keys], dtype=float)
        p = np.exp(lp)
        # Unlisted P mass (pruned cells) and outcomes Q cannot produce: infinite loss.
        inf_mass = max(0.0, 1.0 - total_mass(log_p)) + float(p[np.isneginf(lq)].sum())
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


def check_log_pmf(name: str, pmf: Mapping[Hashable, float]) -> dict[Hashable, float]:
    if not isinstance(pmf, Mapping) or len(pmf) == 0:
        raise InputError(f"{name} must be a non-empty mapping of outcome -> log-probability")
    out: dict[Hashable, float] = {}
    for key, value in pmf.items():
        lp = as_float(f"{name}[{key!r}]", value)
        if lp > 1e-9:
            raise InputError(f"{name}[{key!r}] must be a log-probability (<= 0), got {value}")
        out[key] = min(lp, 0.0)
    mass = total_mass(out)
    if mass > 1.0 + MAX_PMF_EXCESS or mass < 1.0 - MAX_PMF_DEFICIT:
        raise InputError(f"{name} must sum to 1, sums to {mass:.9g}")
    return out


def total_mass(log_pmf: Mapping[Hashable, float]) -> float:
    values = np.fromiter(log_pmf.values(), dtype=float, count=len(log_pmf))
    return float(np.exp(special.logsumexp(values))) if values.size else 0.0


@dataclass(frozen=True)
class PrivacyLossPairEvent:
    """A release described by a dominating pair of discrete distributions (docs/math.md §5).

    For every pair of neighbouring tables ``(D, D')`` the output distributions satisfy
    ``H_eps(M(D) || M(D')) <= max(H_eps(P || Q), H_eps(P' || Q'))`` for all ``eps``,
    with ``H_eps(P || Q) = sum_o [P(o) - e^eps Q(o)]_+`` the hockey-stick divergence;
    ``(P, Q)`` is (``log_pmf_upper``, ``log_pmf_lower``) and ``(P', Q')`` the reverse
    direction. For PubMix, ``P = Mult(m; a, b, rest)`` and ``Q = Mult(m; c, d, rest)``
    (docs/math.md §5); the reverse direction is ``(Q, P)`` (``h2``).

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

    is_free = False

    def claim(self) -> tuple[float, float] | None:
        if self.claimed_epsilon is None or self.claimed_delta is None:
            return None
        return (self.claimed_epsilon, self.claimed_delta)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: store validated private copies
        set_(self, "log_pmf_upper", check_log_pmf("log_pmf_upper", self.log_pmf_upper))
        set_(self, "log_pmf_lower", check_log_pmf("log_pmf_lower", self.log_pmf_lower))
        has_up = self.reverse_log_pmf_upper is not None
        has_low = self.reverse_log_pmf_lower is not None
        if has_up != has_low:
            raise InputError(
                "give both reverse_log_pmf_upper and reverse_log_pmf_lower, or neither"
            )
        if has_up and self.symmetric:
            raise InputError("a symmetric pair takes no reverse direction")
        if self.reverse_log_pmf_upper is not None and self.reverse_log_pmf_lower is not None:
            rev_up = check_log_pmf("reverse_log_pmf_upper", self.reverse_log_pmf_upper)
            rev_low = check_log_pmf("reverse_log_pmf_lower", self.reverse_log_pmf_lower)
            set_(self, "reverse_log_pmf_upper", rev_up)
            set_(self, "reverse_log_pmf_lower", rev_low)
        if self.orientation not in ("any", "fixed"):
            raise InputError(f"orientation must be 'any' or 'fixed', got {self.orientation!r}")
        set_(self, "params", {str(k): v for k, v in dict(self.params).items()})
        if (self.claimed_epsilon is None) != (self.claimed_delta is None):
            raise InputError("give both claimed_epsilon and claimed_delta, or neither")
        if self.claimed_epsilon is not None:
            set_(self, "claimed_epsilon", nonnegative("claimed_epsilon", self.claimed_epsilon))
            set_(self, "claimed_delta", half_open_unit("claimed_delta", self.claimed_delta))

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
        tables = [LossTable.build(up, low) for up, low in self.directions()]
        return np.max([t.hockey_stick(eps) for t in tables], axis=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.label,
            "kind": "privacy_loss_pair",
            "symmetric": self.symmetric,
            "orientation": self.orientation,
            "params": jsonable(self.params),
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

    @property
    def is_free(self) -> bool:
        return self.epsilon == 0.0 and self.delta == 0.0

    def claim(self) -> tuple[float, float] | None:
        return (self.epsilon, self.delta)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", nonnegative("epsilon", self.epsilon))
        object.__setattr__(self, "delta", half_open_unit("delta", self.delta))

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

    is_free = True

    def claim(self) -> tuple[float, float] | None:
        return (0.0, 0.0)

    def to_dict(self) -> dict[str, Any]:
        return {"mechanism": self.label, "kind": "zero_cost", "note": self.note}


@dataclass(frozen=True)
class ExponentialEvent:
    """One exponential-mechanism selection: report-noisy-max with Gumbel noise.

    Parameters
    ----------
    epsilon
        Pure DP of the selection: candidate ``i`` is drawn with probability proportional
        to ``exp(epsilon q_i / (2 sensitivity))`` (``> 0``).
    sensitivity
        Replace-one bound on how far any one quality score ``q_i`` moves (``> 0``).
    label
        Name of the release in the ledger.

    Notes
    -----
    The privacy loss of any outcome lies in an interval of width ``epsilon`` (the score
    term moves by at most ``epsilon / 2`` either way, the normaliser shifts every outcome
    alike), so the selection is ``epsilon``-bounded-range and hence
    ``rho = epsilon^2 / 8``-zCDP (Cesar & Rogers 2021, "Bounding, concentrating, and
    truncating: unifying privacy loss composition for data analytics"), as well as
    ``(epsilon, 0)``-DP. The Gumbel scale is ``2 sensitivity / epsilon``.
    """

    epsilon: float
    sensitivity: float
    label: str = "exponential_mechanism"

    is_free = False

    def claim(self) -> tuple[float, float] | None:
        return (self.epsilon, 0.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", positive("epsilon", self.epsilon))
        object.__setattr__(self, "sensitivity", positive("sensitivity", self.sensitivity))

    @property
    def rho(self) -> float:
        """zCDP cost ``epsilon^2 / 8`` (bounded range)."""
        return self.epsilon**2 / 8.0

    @property
    def scale(self) -> float:
        """Gumbel scale ``2 sensitivity / epsilon`` of the noisy max."""
        return 2.0 * self.sensitivity / self.epsilon

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": self.label,
            "kind": "exponential",
            "epsilon": self.epsilon,
            "sensitivity": self.sensitivity,
            "scale": self.scale,
            "rho": self.rho,
        }


Event: TypeAlias = (
    GaussianEvent | PrivacyLossPairEvent | ApproxDPEvent | ZeroCostEvent | ExponentialEvent
)
EVENT_TYPES = (GaussianEvent, PrivacyLossPairEvent, ApproxDPEvent, ZeroCostEvent, ExponentialEvent)
