"""Calibrating a release from public facts: what a mechanism spec's ``build`` calls.

Each builder calibrates its selection step from public facts only (the budget, the
schedule, the sensitivity bound, the public records) and returns the release with what
the ledger should say about its calibration. The specs themselves
(:class:`~dpevolve.pe.specs.GaussianSpec`, :class:`~dpevolve.pe.specs.PubMixSpec`) live
in :mod:`dpevolve.pe.specs`; each one's ``build`` calls its builder here. The budget is
worked out by the fit plan (:func:`~dpevolve.pe.fit_plan.release_inputs`): a zCDP
mechanism is handed the rounds' ``rho``, PubMix (accounted in ``(epsilon, delta)``) the
rounds' budget.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpevolve.backends import Backend
from dpevolve.backends.canonical import soft_quantisation_slack
from dpevolve.data.encoding import Records
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance
from dpevolve.pe.release.base import Release
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.pe.schedule import Schedule
from dpevolve.pe.votes import SoftVote, Vote
from dpevolve.privacy import Budget, gaussian_sigma
from dpevolve.privacy.noise import NoiseSource

if TYPE_CHECKING:
    from dpevolve.pe.pubmix.release import Accounting, Fill

#: What a release's builder says about its calibration, for the ledger.
Calibration = dict[str, Any]


@dataclass(frozen=True)
class ReleaseInputs:
    """The public facts a release is calibrated from.

    ``rho`` is the rounds' zCDP share of the run's budget, for a mechanism accounted in
    zCDP (``None`` otherwise); ``budget`` the rounds' budget for one accounted in
    ``(epsilon, delta)`` (PubMix; ``None`` otherwise); ``sensitivity`` the per-round L2
    bound (invalid rows included); ``sensitivity_of`` the optional exact per-round
    search; ``public`` the encoded public records; ``n`` the private row count (public
    under replace-one adjacency).
    """

    noise: NoiseSource
    schedule: Schedule
    rho: float | None
    budget: Budget | None
    sensitivity: float
    vote: Vote
    distance: Distance
    backend: Backend
    public: Records | None
    n: int
    sensitivity_of: Callable[[Records], float] | None = None
    debias: int = 0

    @property
    def largest_population(self) -> int:
        """The most candidates a round votes on (parents plus kept mutations)."""
        return max(
            self.schedule.population * ((1 + s.mutations) if s.keep_selected else 1)
            for s in self.schedule.stages
        )


def gaussian_release(threshold: float, inputs: ReleaseInputs) -> tuple[Release, Calibration]:
    """The noisy vote histogram, with ``sigma`` calibrated for the rounds' ``rho`` (zCDP:
    the discrete Gaussian's rounds add) and ``threshold`` on the noisy counts."""
    if inputs.rho is None:
        raise InputError("the gaussian release is accounted in zCDP: its rho is missing")
    multiplier = gaussian_sigma(1.0, inputs.rho, rounds=int(inputs.schedule.rounds))
    largest = inputs.largest_population
    # Soft votes are quantised per record (bit-identical sums on every backend) and
    # real-valued histograms rounded to the noise grid: both can add to the sensitivity,
    # so the noise is calibrated for the sum.
    slack = 0.0
    if inputs.vote.name != "hard":
        slack = soft_quantisation_slack(largest) + inputs.noise.rounding_slack(largest)
    sigma = multiplier * (inputs.sensitivity + slack)
    postprocess = None
    if inputs.debias and isinstance(inputs.vote, SoftVote):
        from dpevolve.pe.debias import SoftDebias

        postprocess = SoftDebias(inputs.distance, inputs.vote.temperature, int(inputs.debias))
    release = GaussianRelease(
        sigma,
        inputs.sensitivity,
        threshold,
        noise=inputs.noise,
        sensitivity_of=inputs.sensitivity_of,
        rounding_slack=slack,
        postprocess=postprocess,
    )
    return release, {"noise_multiplier": multiplier, "sigma": sigma}


def pubmix_release(
    accounting: Accounting, fill: Fill, gamma: float | None, inputs: ReleaseInputs
) -> tuple[Release, Calibration]:
    """Parents from a public/private mixture (hard votes, an (epsilon, delta) budget):
    per-round ``accounting``, the ``fill`` distribution and the TV bound ``gamma``."""
    from dpevolve.pe.pubmix.release import PubMixRelease

    if inputs.public is None:
        raise InputError("mechanism 'pubmix' needs public data (--public)")
    if inputs.vote.name != "hard":
        raise InputError(
            "PubMix needs hard votes: soft votes break the two-bin structure its privacy "
            "analysis rests on (use --vote hard)"
        )
    if inputs.budget is None or inputs.budget.rho is not None:
        raise InputError("PubMix needs an (epsilon, delta) budget, not --rho")
    release = PubMixRelease(
        inputs.public,
        inputs.distance,
        inputs.backend,
        inputs.n,
        inputs.schedule.rounds,
        inputs.budget,
        accounting=accounting,
        fill=fill,
        noise=inputs.noise,
        gamma=gamma,
        max_candidates=inputs.largest_population,
    )
    said = gamma if gamma is not None else "public folds (k=5, quantile 0.95)"
    return release, {"pubmix": {"accounting": accounting, "fill": fill, "gamma": said}}


def exact_sensitivity(
    vote: Vote, policy: Any, distance: Distance, backend: Any = None
) -> Callable[[Records], float]:
    """The per-round exact sensitivity search (hard votes under a policy, small domains)."""
    if vote.name != "hard" or policy is None:
        raise InputError("exact calibration is for hard votes under a policy (Gaussian)")
    if getattr(backend, "exact", True) is False:
        # The search assumes the canonical vote arithmetic; a BLAS argmin is another.
        raise InputError("exact calibration needs a backend with exact=True")
    from dpevolve.pe.policy.sensitivity import enumerate_domain, per_round_hard_sensitivity

    domain = enumerate_domain(distance.layout, None, 1_000_000)
    return lambda population: per_round_hard_sensitivity(policy, distance, population, domain)
