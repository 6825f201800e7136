"""Typed run configuration: what a :class:`~dpevolve.synthesizer.Synthesizer`'s parameters
mean, resolved and checked in one place.

The Synthesizer stores its keyword arguments as given (the scikit-learn contract);
:func:`resolve` turns them into frozen, keyword-only specs when a fit starts, so every
check on the configuration (and its message) lives here, before any record is read:

>>> from dpevolve.config import GaussianSpec, PubMixSpec, VoteSpec, resolve
>>> config = resolve({"epsilon": 1.0, "vote": "soft", "temperature": 0.03})
>>> config.preset.name, config.vote.kind, config.mechanism.name
('tabpe', 'soft', 'gaussian')

A mechanism may be given as a spec instead of a name:
``Synthesizer(schema, epsilon=1, delta=1e-6, public=pub, mechanism=PubMixSpec(fill="mifr"))``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from dpevolve.errors import InputError
from dpevolve.presets import DEFAULT_PRESET, Preset, get_preset
from dpevolve.privacy import Budget, default_delta

VOTES = ("hard", "soft", "auto")


@dataclass(frozen=True, kw_only=True)
class VoteSpec:
    """How records vote for candidates.

    ``kind``: ``hard``, ``soft`` or ``auto`` (``None``: the preset's); ``temperature``: the
    soft vote's tau or ``"auto"`` (a public pilot picks it); ``sharpen``: the Gower weight
    factor of attributes a policy leaves unprotected (1: off); ``debias``: Richardson-Lucy
    steps after release (0: off); ``announce``: say an automatic choice on stderr (asked
    for by name, or with progress shown; the ledger always records it).
    """

    kind: str | None = None
    temperature: float | Literal["auto"] | None = None
    sharpen: float = 1.0
    debias: int = 0
    announce: bool = True

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in VOTES:
            raise InputError(f"vote must be hard, soft or auto, got '{self.kind}'")
        tau = self.temperature
        if tau is not None and tau != "auto":
            if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not tau > 0:
                raise InputError(f"temperature must be a number > 0 or 'auto', got {tau!r}")
        if isinstance(self.sharpen, bool) or not isinstance(self.sharpen, (int, float)):
            raise InputError(f"sharpen must be a number >= 1, got {self.sharpen!r}")
        if not (math.isfinite(self.sharpen) and self.sharpen >= 1):
            raise InputError(f"sharpen must be a number >= 1 (1: off), got {self.sharpen!r}")
        if isinstance(self.debias, bool) or not isinstance(self.debias, int) or self.debias < 0:
            raise InputError(f"debias must be a whole number of steps >= 0, got {self.debias!r}")

    @property
    def asks_soft(self) -> bool:
        """A soft or automatic vote was asked for (it acts on the PE rounds)."""
        return self.kind in ("soft", "auto") or self.temperature is not None


@dataclass(frozen=True, kw_only=True)
class GaussianSpec:
    """The noisy vote histogram: ``threshold`` on the noisy counts (``None``: the
    preset's) and the sensitivity ``calibration`` (``bound`` or ``exact``)."""

    name: ClassVar[str] = "gaussian"
    threshold: float | None = None
    calibration: Literal["bound", "exact"] = "bound"

    def __post_init__(self) -> None:
        if self.calibration not in ("bound", "exact"):
            raise InputError(f"calibration must be bound or exact, got '{self.calibration}'")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InputError(f"threshold must be a finite number, got {self.threshold!r}")


@dataclass(frozen=True, kw_only=True)
class PubMixSpec:
    """Parents sampled from a public/private mixture: per-round ``accounting``
    (``tight`` or ``basic``), the ``fill`` distribution (``wf``, ``mifr``, ``linmix``)
    and ``gamma``, the bound on ``TV(P_pub, P_prv)`` (``None``: from public folds)."""

    name: ClassVar[str] = "pubmix"
    accounting: Literal["basic", "tight"] = "tight"
    fill: Literal["wf", "mifr", "linmix"] = "wf"
    gamma: float | None = None

    def __post_init__(self) -> None:
        if self.accounting not in ("basic", "tight"):
            raise InputError(f"PubMix accounting must be basic or tight, got '{self.accounting}'")
        if self.fill not in ("wf", "mifr", "linmix"):
            raise InputError(f"PubMix noise must be wf, mifr or linmix, got '{self.fill}'")


MechanismSpec = GaussianSpec | PubMixSpec


@dataclass(frozen=True, kw_only=True)
class MarginalSpec:
    """One Gaussian release of low-order marginals after the rounds: its ``share`` of
    the budget (zCDP rho, in (0, 1]) and its ``options`` (a
    :class:`~dpevolve.pool.hybrid.MarginalOptions` or a dict of its fields)."""

    share: float
    options: Any = None

    def __post_init__(self) -> None:
        share = self.share
        if isinstance(share, bool) or not isinstance(share, (int, float)):
            raise InputError(f"the marginal share must lie in (0, 1], got {share!r}")
        if not 0.0 < share <= 1.0:
            raise InputError(f"the marginal share must lie in (0, 1], got {share!r}")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """A fit's configuration, resolved: the preset (with size, round and distance overrides),
    the vote, the mechanism, the marginal release, and the budget's arguments."""

    preset: Preset
    vote: VoteSpec
    mechanism: MechanismSpec
    marginals: MarginalSpec | None
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def budget(self, n: int) -> Budget:
        """The run's budget; ``delta`` defaults to ``min(1e-5, 1 / (n ln n))`` (``n``,
        the private row count, is public under replace-one adjacency)."""
        delta = default_delta(n) if self.delta is None else self.delta
        return Budget.from_args(epsilon=self.epsilon, delta=delta, rho=self.rho)


def default_vote(options: Any, preset_vote: str) -> str:
    """The vote when none is named: ``auto`` where the pilot can run and pays.

    ``options`` is a mapping of Synthesizer parameters or a Synthesizer (read for ``policy``,
    ``public``, ``mechanism``, ``calibration``, ``temperature``, ``sharpen`` and
    ``debias``). ``auto`` needs public data for its pilot and a policy, without which no
    soft vote has a smaller sensitivity than the hard one; PubMix and exact calibration
    need hard votes; a temperature, sharpening or debiasing given by hand is a soft
    configuration the user chose. Otherwise the preset's vote.
    """

    def get(key: str, default: Any = None) -> Any:
        if isinstance(options, Mapping):
            return options.get(key, default)
        return getattr(options, key, default)

    chose_soft = (
        get("temperature") is not None or get("sharpen", 1.0) != 1.0 or bool(get("debias", 0))
    )
    if (
        get("policy") is not None
        and get("public") is not None
        and get("mechanism", "gaussian") == "gaussian"
        and get("calibration", "bound") != "exact"
        and not chose_soft
    ):
        return "auto"
    return preset_vote


# The flat keyword arguments each mechanism spec replaces, with their defaults.
_GAUSSIAN_FLAT = {"threshold": None, "calibration": "bound"}
_PUBMIX_FLAT = {"pubmix_accounting": "tight", "pubmix_noise": "wf", "gamma": None}


def mechanism_spec(params: Mapping[str, Any]) -> MechanismSpec:
    """The mechanism from ``mechanism`` (a name or a spec) and its flat arguments."""
    mechanism = params.get("mechanism", "gaussian")
    if isinstance(mechanism, (GaussianSpec, PubMixSpec)):
        flat = _GAUSSIAN_FLAT if isinstance(mechanism, GaussianSpec) else _PUBMIX_FLAT
        clash = sorted(k for k, v in flat.items() if params.get(k, v) != v)
        if clash:
            raise InputError(
                f"give {', '.join(clash)} either in mechanism={type(mechanism).__name__}(...) "
                "or as keyword arguments, not both"
            )
        return mechanism
    if mechanism == "gaussian":
        return GaussianSpec(
            threshold=params.get("threshold"), calibration=params.get("calibration", "bound")
        )
    if mechanism == "pubmix":
        if params.get("calibration", "bound") != "bound":
            raise InputError("exact calibration is for hard votes under a policy (Gaussian)")
        return PubMixSpec(
            accounting=params.get("pubmix_accounting", "tight"),
            fill=params.get("pubmix_noise", "wf"),
            gamma=params.get("gamma"),
        )
    raise InputError(
        f"unknown mechanism '{mechanism}' (choose gaussian or pubmix, or pass a "
        "GaussianSpec or PubMixSpec)"
    )


def resolve(params: Mapping[str, Any]) -> RunConfig:
    """A :class:`RunConfig` from a Synthesizer's parameters (``get_params()``).

    The only place the parameters are interpreted: the default preset, the preset's
    overrides, the mechanism (a name or a spec), the vote and the marginal share.
    """
    vote = VoteSpec(
        kind=params.get("vote"),
        temperature=params.get("temperature"),
        sharpen=params.get("sharpen", 1.0),
        debias=params.get("debias", 0),
        announce=params.get("vote") == "auto" or bool(params.get("progress")),
    )
    mechanism = mechanism_spec(params)
    name = params.get("preset") or DEFAULT_PRESET
    preset = get_preset(name).with_overrides(params.get("population_size"), params.get("rounds"))
    if params.get("distance") is not None:
        preset = replace(preset, distance=params["distance"])
    if vote.kind is None:
        calibration = mechanism.calibration if isinstance(mechanism, GaussianSpec) else None
        chosen = default_vote(
            {
                **params,
                "mechanism": "pubmix" if calibration is None else "gaussian",
                "calibration": calibration or "bound",
            },
            preset.vote,
        )
        vote = replace(vote, kind=chosen)
    if isinstance(mechanism, GaussianSpec) and mechanism.threshold is None:
        mechanism = replace(mechanism, threshold=preset.threshold)
    share = params.get("marginals")
    share = preset.marginals if share is None else share
    marginals = None
    if share is not None:
        if not isinstance(mechanism, GaussianSpec):
            raise InputError("the marginal release composes with the gaussian mechanism only")
        options = params.get("marginal_options")
        marginals = MarginalSpec(
            share=share, options=dict(preset.marginal_options) if options is None else options
        )
    return RunConfig(
        preset=preset,
        vote=vote,
        mechanism=mechanism,
        marginals=marginals,
        epsilon=params.get("epsilon"),
        delta=params.get("delta"),
        rho=params.get("rho"),
    )
