"""Private Evolution's settings: small frozen specs, each checked when made.

:class:`VoteSpec` (how records vote), the mechanisms :class:`GaussianSpec` and
:class:`PubMixSpec` (the :data:`MechanismSpec` union) and :class:`MarginalSpec` (the
hybrid tail's release). A :class:`~dpevolve.pe.method.PEMethod` holds them with its
:class:`~dpevolve.config.Preset`; a ledger's ``config`` block writes them in the words
their ``from_dict``/``to_dict`` read (docs/architecture.md). None of them sees the
budget: the fit plan (:mod:`dpevolve.pe.fit_plan`) works out from it what each needs
(the pilot's noise multiplier; the rounds' ``rho``, or their ``(epsilon, delta)`` budget
for PubMix, in the release's inputs) and hands that on.

>>> from dpevolve.pe.specs import VoteSpec
>>> VoteSpec(kind="soft", temperature=0.03).kind
'soft'
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from dpevolve.data.encoding import Records
    from dpevolve.data.schema import Schema
    from dpevolve.pe.distance import Distance
    from dpevolve.pe.hybrid.tail import MarginalOptions
    from dpevolve.pe.pilot.choice import ChosenVote
    from dpevolve.pe.pilot.run import PilotFit
    from dpevolve.pe.release.base import Release
    from dpevolve.pe.release.build import Calibration, ReleaseInputs
    from dpevolve.pe.votes import Vote

VOTES = ("hard", "soft", "auto")


def _fields_of(cls: type, data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``data`` checked against the dataclass fields of ``cls`` (one error for unknown keys)."""
    known = {f.name for f in fields(cls) if f.init}
    unknown = sorted(set(data) - known - {"name"})
    if unknown:
        raise InputError(f"{what}: unknown settings {unknown} (known: {sorted(known)})")
    return {k: v for k, v in data.items() if k in known}


@dataclass(frozen=True, kw_only=True)
class VoteSpec:
    """How records vote for candidates.

    ``kind``: ``hard``, ``soft`` or ``auto`` (``None``: decided when the method is
    resolved, :meth:`~dpevolve.pe.method.PEMethod.resolved`: ``auto`` where the public
    pilot can run, else the preset's); ``temperature``: the soft vote's
    tau or ``"auto"`` (a public pilot picks it); ``sharpen``: the Gower weight factor of
    attributes a policy leaves unprotected (1: off); ``debias``: Richardson-Lucy steps
    after release (0: off).
    """

    kind: str | None = None
    temperature: float | Literal["auto"] | None = None
    sharpen: float = 1.0
    debias: int = 0

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
        self._check_combination()

    def _check_combination(self) -> None:
        if self.kind == "soft" and self.temperature is None:
            raise InputError("vote soft needs a temperature (a number TAU, or auto)")
        if self.kind == "hard" and self.temperature not in (None, "auto"):
            raise InputError("a temperature is for vote soft: drop it or ask for kind soft")
        if self.kind == "auto" and self.temperature is not None:
            raise InputError("vote auto chooses the temperature itself: drop the temperature")
        shaped = [n for n, on in (("sharpen", self.sharpen != 1), ("debias", self.debias)) if on]
        if shaped and self.kind == "auto":
            raise InputError(f"vote auto chooses {' and '.join(shaped)} itself: drop it")
        if shaped and self.kind == "hard":
            raise InputError(f"{' and '.join(shaped)} shape a soft vote: give a temperature")

    def to_dict(self) -> dict[str, Any]:
        """The run-file words (:func:`vote_spec` reads them)."""
        return asdict(self)

    @property
    def needs_pilot(self) -> bool:
        """The public pilot decides: the vote (``auto``) or the temperature (``auto``)."""
        return self.kind == "auto" or self.temperature == "auto"

    @property
    def asks_soft(self) -> bool:
        """A soft or automatic vote, or a soft setting, was asked for."""
        return (
            self.kind in ("soft", "auto")
            or self.temperature is not None
            or self.sharpen != 1.0
            or self.debias > 0
        )

    def pick(
        self,
        *,
        schema: Schema,
        public: pd.DataFrame | None,
        n: int,
        noise_multiplier: float | None,
        policy: Any,
        fit: PilotFit,
        rounds: int,
        distance: Any = "gower",
        announce: bool = False,
    ) -> ChosenVote:
        """The run's vote; ``auto`` settings ask the public pilot (no private budget).

        ``public`` is needed by the pilot only; ``n``, ``noise_multiplier`` (the private
        run's ``z``, worked out from the budget by the fit plan where
        :attr:`needs_pilot`) and ``rounds`` set its
        noise-to-signal ratio; ``policy`` and ``distance`` its default arms; ``fit`` is one
        pilot run on public data (:data:`~dpevolve.pe.pilot.run.PilotFit`). With
        ``announce`` an automatic choice is said on stderr (the ledger always has it).
        """
        # Imported here: the specs are read at start-up (the command line's help).
        from dpevolve.pe.pilot.choice import ChosenVote, choose_vote
        from dpevolve.pe.pilot.run import run_pilot
        from dpevolve.pe.votes import make_vote

        if not self.needs_pilot:
            tau = None if self.temperature is None else float(self.temperature)
            return ChosenVote(make_vote(str(self.kind), tau), self.sharpen, self.debias)
        if public is None:
            what = "vote" if self.kind == "auto" else "temperature"
            raise InputError(f"{what} 'auto' needs public data (--public) for the pilot")
        if noise_multiplier is None:
            raise InputError("the public pilot needs the private run's noise multiplier")
        if self.kind == "auto":
            choice = choose_vote(schema, public, n, noise_multiplier, fit=fit, rounds=rounds,
                                 policy=policy, distance=distance)  # fmt: skip
            return ChosenVote.of_choice(choice, announce)
        result = run_pilot(schema, public, n, noise_multiplier, public_init=True, fit=fit,
                           rounds=rounds)  # fmt: skip
        tau = result.best_temperature
        vote = make_vote("soft", tau) if result.soft_wins and tau else make_vote("hard")
        if announce:
            import sys

            said = f"soft vote at tau={tau}" if vote.name == "soft" else "hard vote"
            print(f"temperature auto: {said} (the public pilot's forecast; no private "
                  "budget spent)", file=sys.stderr)  # fmt: skip
        return ChosenVote(vote, self.sharpen, self.debias, pilot=result)


@dataclass(frozen=True, kw_only=True)
class GaussianSpec:
    """The noisy vote histogram: ``threshold`` on the noisy counts (``None``: the
    preset's) and the sensitivity ``calibration`` (``bound`` or ``exact``)."""

    name: ClassVar[str] = "gaussian"
    #: Accounted in zCDP: the fit plan hands its release the rounds' ``rho``.
    zcdp: ClassVar[bool] = True
    threshold: float | None = None
    calibration: Literal["bound", "exact"] = "bound"

    def __post_init__(self) -> None:
        if self.calibration not in ("bound", "exact"):
            raise InputError(f"calibration must be bound or exact, got '{self.calibration}'")
        if self.threshold is not None and not math.isfinite(self.threshold):
            raise InputError(f"threshold must be a finite number, got {self.threshold!r}")

    def to_dict(self) -> dict[str, Any]:
        """The run-file words (:func:`mechanism_spec` reads them)."""
        return {"name": self.name, **asdict(self)}

    def build(self, inputs: ReleaseInputs) -> tuple[Release, Calibration]:
        """The noisy vote histogram, with ``sigma`` calibrated for the rounds' ``rho``."""
        from dpevolve.pe.release.build import gaussian_release

        threshold = 0.0 if self.threshold is None else self.threshold
        return gaussian_release(threshold, inputs)

    def exact(
        self, vote: Vote, policy: Any, distance: Distance, backend: Any
    ) -> Callable[[Records], float] | None:
        """The per-round exact sensitivity search when asked for (else ``None``)."""
        if self.calibration == "bound":
            return None
        from dpevolve.pe.release.build import exact_sensitivity

        return exact_sensitivity(vote, policy, distance, backend)


@dataclass(frozen=True, kw_only=True)
class PubMixSpec:
    """Parents sampled from a public/private mixture: per-round ``accounting``
    (``tight`` or ``basic``), the ``fill`` distribution (``wf``, ``mifr``, ``linmix``)
    and ``gamma``, the bound on ``TV(P_pub, P_prv)`` (``None``: from public folds)."""

    name: ClassVar[str] = "pubmix"
    #: Accounted in ``(epsilon, delta)``: the fit plan hands its release that budget.
    zcdp: ClassVar[bool] = False
    accounting: Literal["basic", "tight"] = "tight"
    fill: Literal["wf", "mifr", "linmix"] = "wf"
    gamma: float | None = None

    def __post_init__(self) -> None:
        if self.accounting not in ("basic", "tight"):
            raise InputError(f"PubMix accounting must be basic or tight, got '{self.accounting}'")
        if self.fill not in ("wf", "mifr", "linmix"):
            raise InputError(f"PubMix fill must be wf, mifr or linmix, got '{self.fill}'")

    def to_dict(self) -> dict[str, Any]:
        """The run-file words (:func:`mechanism_spec` reads them)."""
        return {"name": self.name, **asdict(self)}

    def build(self, inputs: ReleaseInputs) -> tuple[Release, Calibration]:
        """Parents from a public/private mixture (hard votes, an (epsilon, delta) budget)."""
        from dpevolve.pe.release.build import pubmix_release

        return pubmix_release(self.accounting, self.fill, self.gamma, inputs)

    def exact(self, vote: Vote, policy: Any, distance: Distance, backend: Any) -> None:
        """PubMix is calibrated from its accounting, never by an exact search."""
        return None


#: The mechanisms a run may use; a new one is a frozen spec with ``name``, ``zcdp``,
#: ``build`` and ``exact``, added here (the engine's ``EngineSpec`` joins this union when wired).
MechanismSpec = GaussianSpec | PubMixSpec
MECHANISMS: tuple[type[GaussianSpec | PubMixSpec], ...] = get_args(MechanismSpec)


def mechanism_spec(value: Any) -> MechanismSpec:
    """A mechanism from its spec, its name, or a dict ``{"name": ..., **settings}``."""
    if isinstance(value, MECHANISMS):
        return value
    data = {"name": value} if isinstance(value, str) else dict(value)
    for cls in MECHANISMS:
        if data.get("name") == cls.name:
            return cls(**_fields_of(cls, data, f"mechanism {cls.name}"))
    names = ", ".join(cls.name for cls in MECHANISMS)
    raise InputError(f"unknown mechanism {data.get('name')!r} (choose {names}, or pass a spec)")


@dataclass(frozen=True, kw_only=True)
class MarginalSpec:
    """One Gaussian release of low-order marginals after the rounds: its ``share`` of
    the budget (zCDP rho, in (0, 1]; ``None``: the preset's) and ``options``, fields of
    :class:`~dpevolve.pe.hybrid.tail.MarginalOptions` laid over the preset's
    (:meth:`~dpevolve.pe.method.PEMethod.resolved`; ``{"grow_rounds": 2}`` keeps the
    hybrid preset's 4-way sets)."""

    share: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        share = self.share
        if share is not None:
            if isinstance(share, bool) or not isinstance(share, (int, float)):
                raise InputError(f"the marginal share must lie in (0, 1], got {share!r}")
            if not 0.0 < share <= 1.0:
                raise InputError(f"the marginal share must lie in (0, 1], got {share!r}")
        from dpevolve.pe.hybrid.tail import MarginalOptions

        if isinstance(self.options, MarginalOptions):
            object.__setattr__(self, "options", self.options.to_dict())
        MarginalOptions.from_any(dict(self.options))  # unknown or invalid fields fail here

    def build(self) -> MarginalOptions:
        """The options of the release and the pool fit."""
        from dpevolve.pe.hybrid.tail import MarginalOptions

        return MarginalOptions.from_any(dict(self.options))

    def to_dict(self) -> dict[str, Any]:
        return {"share": self.share, "options": dict(self.options)}


def marginal_spec(value: Any) -> MarginalSpec | None:
    """A marginal release from its spec, a share, or a dict of the spec's fields."""
    if value is None or isinstance(value, MarginalSpec):
        return value
    if isinstance(value, Mapping):
        return MarginalSpec(**_fields_of(MarginalSpec, value, "marginals"))
    return MarginalSpec(share=value)


def default_vote(spec: VoteSpec, mechanism: MechanismSpec, public: bool, policy: bool) -> str:
    """The vote when none is named: ``auto`` where the pilot can run and pays.

    ``auto`` needs public data for its pilot and a policy, without which no soft vote
    has a smaller sensitivity than the hard one; PubMix and exact calibration need hard
    votes; a temperature, sharpening or debiasing given by hand is a soft configuration
    the user chose (``soft``). Otherwise ``""``: the preset's vote.
    """
    if spec.asks_soft:
        return "soft"
    exact = isinstance(mechanism, GaussianSpec) and mechanism.calibration == "exact"
    if policy and public and isinstance(mechanism, GaussianSpec) and not exact:
        return "auto"
    return ""


def vote_spec(value: Any) -> VoteSpec:
    """A vote from its spec, its kind's name, ``None`` (decided by the method) or a dict
    of the spec's fields."""
    if isinstance(value, VoteSpec):
        return value
    if value is None or isinstance(value, str):
        return VoteSpec(kind=value)
    return VoteSpec(**_fields_of(VoteSpec, value, "vote"))
