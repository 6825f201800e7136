"""Accountants: compose release events into one ``(epsilon, delta)`` guarantee.

Each composition method is an accountant that answers :meth:`supports` for an event
list and, where it does, the epsilon at a delta (both from one per-event dispatch,
:meth:`Composition.part`: a method supports exactly what it composes, and refuses the
rest with a clear error); every one gives a valid guarantee, so
:class:`Accountant` reports the smallest among those that support the events
(docs/privacy.md, "Accounting"):

* :class:`GaussianExact`: continuous Gaussian releases only. Releasing
  ``h + N(0, sigma_i^2 I)`` with L2 sensitivity ``S_i`` has the privacy curve of
  ``N(0,1)`` vs ``N(mu_i,1)``, ``mu_i = S_i / sigma_i``; a composition of Gaussians is
  again one, with ``mu = sqrt(sum_i mu_i^2)``, so Balle-Wang's formula is exact.
* :class:`Pld`: privacy-loss-distribution composition (dp-accounting, pessimistic
  discretisation) of continuous Gaussian, dominating-pair (PubMix), ``(eps, delta)`` and
  selection (pure DP) events.
* :class:`Rdp`: Renyi DP (dp-accounting), Gaussian releases (discrete ones included).
* :class:`Zcdp`: ``rho = sum_i S_i^2 / (2 sigma_i^2)`` plus ``epsilon_j^2 / 8`` per
  exponential-mechanism selection (bounded range, Cesar & Rogers 2021), converted by
  Canonne-Kamath-Steinke; Gaussian releases (discrete ones included) and selections.
* :class:`Basic`: sums of per-event ``(eps_i, delta_i)`` claims.

Adjacency is replace-one throughout: a release's sensitivity is already the
replace-one sensitivity, so a Gaussian release is a sensitivity-1 Gaussian with noise
multiplier ``z = sigma / S``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from dpevolve.errors import InputError, PrivacyError
from dpevolve.privacy.checks import as_float, json_float, open_unit, positive
from dpevolve.privacy.conversions import epsilon_for_mu, epsilon_from_rho, gaussian_delta
from dpevolve.privacy.events import (
    EVENT_TYPES,
    ApproxDPEvent,
    Event,
    ExponentialEvent,
    GaussianEvent,
    LossTable,
    PrivacyLossPairEvent,
)

if TYPE_CHECKING:
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution

# A pair's least likely outcomes, up to this much mass per direction, are charged as
# infinite loss when its PLD is built: pessimistic (each event adds at most this to
# delta, like dp_accounting's own tail truncation) and it halves the loss range.
_PAIR_TAIL_MASS = 1e-15


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
            "epsilon": json_float(self.epsilon),
            "delta": self.delta,
            "method": self.method,
            "by_method": {k: json_float(v) for k, v in self.by_method.items()},
        }


def checked(events: Sequence[Event]) -> list[Event]:
    out = list(events)
    for e in out:
        if not isinstance(e, EVENT_TYPES):
            raise TypeError(f"not a privacy event: {type(e).__name__}")
    return out


def _costly(events: Sequence[Event]) -> list[Event]:
    return [e for e in events if not e.is_free]


def composed_mu(active: Sequence[Event]) -> float:
    """``mu = sqrt(sum_i (S_i / sigma_i)^2)``: stacked Gaussian releases."""
    return math.sqrt(sum(e.mu**2 for e in active if isinstance(e, GaussianEvent)))


class Composition:
    """One composition method over the costly events of a run.

    Its one dispatch, :meth:`part` (what it composes an event as, ``None`` where it
    cannot), decides both :meth:`supports` and what :meth:`epsilon` composes: a method
    supports exactly the events it composes. A free event is composed as nothing by
    every method.
    """

    name = "composition"

    def part(self, event: Event) -> Any:
        raise NotImplementedError

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        """``(epsilon, delta_certified)``; ``delta_certified`` is ``delta`` except for
        basic composition, which certifies the sum of the claimed deltas."""
        raise NotImplementedError

    def supports(self, events: Sequence[Event]) -> bool:
        return all(self.part(e) is not None for e in events)

    def parts(self, events: Sequence[Event]) -> list[Any]:
        """Every event's :meth:`part`; a clear error for one the method cannot compose."""
        out = []
        for e in events:
            part = self.part(e)
            if part is None:
                raise PrivacyError(
                    f"{self.name} accounting cannot compose a {type(e).__name__}"
                    f" ({getattr(e, 'label', '?')})"
                )
            out.append(part)
        return out


class GaussianExact(Composition):
    """Continuous Gaussian releases, each as its ``mu``."""

    name = "gaussian_exact"

    def part(self, event: Event) -> float | None:
        if isinstance(event, GaussianEvent) and not event.discrete:
            return event.mu
        return 0.0 if _free(event) else None

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        mu = math.sqrt(sum(m**2 for m in self.parts(events)))
        return epsilon_for_mu(mu, delta), delta


class Zcdp(Composition):
    """Gaussian releases (discrete ones included) and selections, each as its ``rho``."""

    name = "zcdp"

    def part(self, event: Event) -> float | None:
        if isinstance(event, GaussianEvent | ExponentialEvent):
            return event.rho
        return 0.0 if _free(event) else None

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        return epsilon_from_rho(sum(self.parts(events)), delta, "cks"), delta


class Rdp(Composition):
    """Gaussian releases (discrete ones included), each as its noise multiplier."""

    name = "rdp"

    def part(self, event: Event) -> float | None:
        if isinstance(event, GaussianEvent):
            return event.noise_multiplier
        return math.inf if _free(event) else None  # infinite noise: no cost

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        from dp_accounting import dp_event
        from dp_accounting.rdp import rdp_privacy_accountant

        acc = rdp_privacy_accountant.RdpAccountant()
        groups: dict[float, int] = {}
        for z in self.parts(events):
            if not math.isinf(z):
                groups[z] = groups.get(z, 0) + 1
        for z, count in groups.items():
            # Add/remove RDP of a sensitivity-1 Gaussian equals the shift-by-S one, and
            # bounds the discrete Gaussian's (Canonne, Kamath & Steinke 2020).
            acc.compose(dp_event.GaussianDpEvent(z), count)
        return max(0.0, float(acc.get_epsilon(delta))), delta


class Basic(Composition):
    """Any event with a claimed ``(epsilon, delta)``, as that claim."""

    name = "basic"

    def part(self, event: Event) -> tuple[float, float] | None:
        claim = getattr(event, "claim", None)
        return claim() if callable(claim) else None

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        claims = self.parts(events)
        return sum(c[0] for c in claims), sum(c[1] for c in claims)


class Pld(Composition):
    """Privacy-loss distributions: continuous Gaussians, dominating pairs, ``(epsilon,
    delta)`` steps and selections (pure DP has a dominating pair too); not the discrete
    Gaussian, whose PLD is not claimed."""

    name = "pld"

    def __init__(self, value_discretization_interval: float = 1e-4) -> None:
        self.disc = positive("value_discretization_interval", value_discretization_interval)

    def part(self, event: Event) -> Callable[[], PrivacyLossDistribution] | None:
        """How to build the event's PLD (built, and dp_accounting imported, only when
        composed)."""
        if _free(event):
            return partial(_identity_pld, self.disc)
        if isinstance(event, GaussianEvent) and not event.discrete:
            return partial(_gaussian_pld, event.noise_multiplier, self.disc)
        if isinstance(event, ApproxDPEvent):
            return partial(_pure_or_approx_pld, event.epsilon, event.delta, self.disc)
        if isinstance(event, ExponentialEvent):
            return partial(_pure_or_approx_pld, event.epsilon, 0.0, self.disc)
        if isinstance(event, PrivacyLossPairEvent):
            return partial(pair_pld, event, self.disc)
        return None

    def epsilon(self, events: Sequence[Event], delta: float) -> tuple[float, float]:
        return max(0.0, float(self.compose(events).get_epsilon_for_delta(delta))), delta

    def compose(self, events: Sequence[Event]) -> PrivacyLossDistribution:
        builders = self.parts(events)
        # Identical releases self-compose in one FFT power instead of T convolutions.
        groups: dict[object, tuple[Callable[[], PrivacyLossDistribution], int]] = {}
        for e, build in zip(events, builders, strict=True):
            key: object = id(e)
            if isinstance(e, GaussianEvent):
                key = ("g", e.noise_multiplier)
            elif isinstance(e, ApproxDPEvent):
                key = ("a", e.epsilon, e.delta)
            first, count = groups.get(key, (build, 0))
            groups[key] = (first, count + 1)
        total: PrivacyLossDistribution | None = None
        for build, count in groups.values():
            pld = build()
            if count > 1:
                pld = pld.self_compose(count)
            total = pld if total is None else total.compose(pld)
        return total if total is not None else _identity_pld(self.disc)


def _identity_pld(disc: float) -> PrivacyLossDistribution:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.identity(disc)


def _gaussian_pld(noise_multiplier: float, disc: float) -> PrivacyLossDistribution:
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_gaussian_mechanism(
        standard_deviation=noise_multiplier, sensitivity=1.0, value_discretization_interval=disc
    )


def _pure_or_approx_pld(epsilon: float, delta: float, disc: float) -> PrivacyLossDistribution:
    """The dominating pair of ``(epsilon, delta)``-DP (``delta = 0``: a selection)."""
    from dp_accounting.pld import common as pld_common
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    params = pld_common.DifferentialPrivacyParameters(epsilon, delta)
    return pld_lib.from_privacy_parameters(params, disc)


def _free(event: Event) -> bool:
    """A known event that costs nothing (every method composes it as nothing)."""
    return isinstance(event, EVENT_TYPES) and event.is_free


METHODS: tuple[str, ...] = ("gaussian_exact", "pld", "rdp", "zcdp", "basic")


class Accountant:
    """Composes release events and reports ``(epsilon, delta)`` by the tightest method.

    Parameters
    ----------
    delta
        Target delta, ``0 < delta < 1``.
    methods
        Names of the methods to try (default all of :data:`METHODS`); a method that
        does not support an event list is skipped.
    value_discretization_interval
        PLD loss grid (dp-accounting); rounding is pessimistic, so the PLD epsilon
        overestimates by about this much per release at worst.

    Notes
    -----
    Every method gives a valid guarantee, so the smallest epsilon among those that
    apply is reported. ``basic`` reports its own delta, the sum of the claimed deltas;
    it competes only if that sum is at most the target delta, and is reported anyway,
    with its larger delta, when no other method applies.
    """

    def __init__(
        self,
        delta: float,
        *,
        methods: Sequence[str] | None = None,
        value_discretization_interval: float = 1e-4,
    ) -> None:
        self.delta = open_unit("delta", delta)
        chosen = tuple(METHODS if methods is None else methods)
        for m in chosen:
            if m not in METHODS:
                raise InputError(f"unknown accounting method {m!r}; use one of {list(METHODS)}")
        self.methods: tuple[str, ...] = chosen
        self.pld = Pld(value_discretization_interval)
        available: dict[str, Composition] = {
            "gaussian_exact": GaussianExact(),
            "pld": self.pld,
            "rdp": Rdp(),
            "zcdp": Zcdp(),
            "basic": Basic(),
        }
        self._methods = [available[m] for m in chosen]

    def supports(self, events: Sequence[Event]) -> bool:
        return bool(self.applicable_methods(events))

    def applicable_methods(self, events: Sequence[Event]) -> list[str]:
        active = _costly(checked(events))
        return [m.name for m in self._methods if m.supports(active)]

    def epsilon(self, events: Sequence[Event]) -> AccountingResult:
        """Compose ``events``; report the smallest epsilon at ``self.delta``."""
        active = _costly(checked(events))
        applicable = [m for m in self._methods if m.supports(active)]
        if not applicable:
            raise PrivacyError(
                f"no accounting method among {list(self.methods)} applies to these events"
            )
        by_method: dict[str, float] = {}
        certified: dict[str, float] = {}
        for m in applicable:
            by_method[m.name], certified[m.name] = m.epsilon(active, self.delta)
        competing = {
            m: v for m, v in by_method.items() if certified[m] <= self.delta * (1.0 + 1e-9)
        }
        if not competing:
            return AccountingResult(by_method["basic"], certified["basic"], "basic", by_method)
        best = min(competing, key=lambda m: competing[m])
        return AccountingResult(competing[best], certified[best], best, by_method)

    def delta_for_epsilon(self, events: Sequence[Event], epsilon: float) -> float:
        """Smallest delta the run certifies at ``epsilon`` (exact Gaussian or PLD).

        ``epsilon`` may be negative: the whole curve is what dominance is about.
        """
        eps = as_float("epsilon", epsilon)
        if math.isinf(eps):
            raise InputError(f"epsilon must be finite, got {epsilon}")
        active = _costly(checked(events))
        if not active:
            return 0.0
        candidates: list[float] = []
        if GaussianExact().supports(active):
            candidates.append(gaussian_delta(composed_mu(active), eps))
        if self.pld.supports(active) and ("pld" in self.methods or not candidates):
            candidates.append(float(self.pld.compose(active).get_delta_for_epsilon(eps)))
        if not candidates:
            raise PrivacyError("no privacy curve is known for these events (discrete noise)")
        return min(candidates)

    def running_epsilons(
        self, events: Sequence[Event], *, closed_forms_only: bool = False
    ) -> list[float | None]:
        """Epsilon after each prefix of ``events`` (non-decreasing): the one place a
        running epsilon is computed (ledger, progress bar, history).

        Each prefix is composed by the cheapest method that supports it (a closed form
        while one applies), the whole list by :meth:`epsilon`; any valid epsilon is a
        guarantee, so the running maximum is reported. With ``closed_forms_only``,
        prefixes that need a numerical composition are ``None`` (long ledgers).
        """
        evs = checked(events)
        out: list[float | None] = []
        running = 0.0
        for k in range(1, len(evs) + 1):
            active = _costly(evs[:k])
            eps: float | None = 0.0
            if k == len(evs):
                eps = self.epsilon(evs).epsilon if active else 0.0
            elif active:
                eps = self._closed_form_epsilon(active)
                if eps is None and not closed_forms_only:
                    eps = self.epsilon(active).epsilon
            if eps is not None:
                running = max(running, eps)
            out.append(None if eps is None else running)
        return out

    def _closed_form_epsilon(self, active: Sequence[Event]) -> float | None:
        for method in (GaussianExact(), Zcdp()):
            if method.supports(active):
                return method.epsilon(active, self.delta)[0]
        return None


def pair_pld(event: PrivacyLossPairEvent, disc: float) -> PrivacyLossDistribution:
    """PLD of a dominating pair (docs/math.md §5); see :class:`PrivacyLossPairEvent`."""
    from dp_accounting.pld import pld_pmf
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    directions = event.directions()
    tables = [LossTable.build(up, low, _PAIR_TAIL_MASS) for up, low in directions]
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
