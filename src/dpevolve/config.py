"""The settings of a run's methods: small frozen specs, each checked when made.

A :class:`Preset` names a Private Evolution setting (schedule, distance, default vote
and threshold, optional marginal release) or, with ``engine`` set, the adaptive engine's
:class:`~dpevolve.engine.spec.EngineSpec`; :class:`VoteSpec`, :class:`GaussianSpec`,
:class:`PubMixSpec` and :class:`MarginalSpec` are Private Evolution's settings. The
methods (:mod:`dpevolve.presets`) hold them; a ledger's ``config`` block writes them in
the words their ``from_dict``/``to_dict`` read (docs/architecture.md):

>>> from dpevolve.config import VoteSpec, get_preset
>>> get_preset("bfsoft", rounds=3).schedule.rounds, VoteSpec(kind="soft", temperature=0.03).kind
(3, 'soft')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from dpevolve.engine.spec import EngineSpec
from dpevolve.errors import InputError
from dpevolve.pe.schedule import Schedule, Stage

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
    from dpevolve.privacy import Budget

VOTES = ("hard", "soft", "auto")
ON_INVALID = ("error", "drop", "clip")


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
        budget: Budget,
        policy: Any,
        fit: PilotFit,
        rounds: int,
        distance: Any = "gower",
        announce: bool = False,
    ) -> ChosenVote:
        """The run's vote; ``auto`` settings ask the public pilot (no private budget).

        ``public`` is needed by the pilot only; ``n``, ``budget`` and ``rounds`` set its
        noise-to-signal ratio; ``policy`` and ``distance`` its default arms; ``fit`` is one
        pilot run on public data (:data:`~dpevolve.pe.pilot.run.PilotFit`). With
        ``announce`` an automatic choice is said on stderr (the ledger always has it).
        """
        # Imported here: the specs are read at start-up (the command line's help).
        from dpevolve.pe.pilot.choice import ChosenVote, choose_vote
        from dpevolve.pe.pilot.run import run_pilot
        from dpevolve.pe.votes import make_vote

        if self.kind == "auto":
            if public is None:
                raise InputError("vote 'auto' needs public data (--public) for the pilot")
            choice = choose_vote(
                schema, public, n, budget, fit=fit, rounds=rounds, policy=policy, distance=distance
            )
            return ChosenVote.of_choice(choice, announce)
        if self.temperature != "auto":
            tau = None if self.temperature is None else float(self.temperature)
            return ChosenVote(make_vote(str(self.kind), tau), self.sharpen, self.debias)
        if public is None:
            raise InputError("temperature 'auto' needs public data (--public) for the pilot")
        result = run_pilot(schema, public, n, budget, public_init=True, fit=fit, rounds=rounds)
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
        """The noisy vote histogram, with ``sigma`` calibrated for the rounds' budget."""
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


#: The mechanisms a run may use; a new one is a frozen spec with ``name``, ``build`` and
#: ``exact``, added here (the engine's ``EngineSpec`` joins this union when wired).
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


def backend_name(backend: Any) -> str:
    """The name a backend object is known by in a run file (``auto`` for ``None``)."""
    if backend is None:
        return "auto"
    return type(backend).__name__.removesuffix("Backend").lower() or "auto"


@dataclass(frozen=True)
class Preset:
    """A named configuration: the PE schedule, the record distance, the default vote and
    threshold, and the optional marginal release (its share and options); or, with
    ``engine`` set, the adaptive engine's spec (then no PE round runs and the PE fields
    are unused)."""

    name: str
    schedule: Schedule
    distance: str
    vote: str
    threshold: float = 0.0
    #: Share of the budget (zCDP rho) for the marginal release; ``None``: PE alone.
    marginals: float | None = None
    marginal_options: Mapping[str, Any] = field(default_factory=dict)
    engine: EngineSpec | None = None

    @property
    def runs_pe(self) -> bool:
        """Private Evolution rounds (or PE's population for the marginal pool) run."""
        return self.engine is None

    def with_overrides(
        self, population: int | None = None, rounds: int | None = None, distance: str | None = None
    ) -> Preset:
        """Change N, the number of rounds (the last stage absorbs the change) or the
        distance."""
        if not self.runs_pe and (population, rounds, distance) != (None, None, None):
            raise InputError(
                f"the {self.name} preset runs no Private Evolution: population, rounds and "
                f"distance are PE settings (choose --method tabpe, hybrid or bfsoft)"
            )
        stages = list(self.schedule.stages)
        if rounds is not None:
            before = sum(s.rounds for s in stages[:-1])
            if rounds <= before:
                stages = [replace(stages[0], rounds=rounds)]
            else:
                stages[-1] = replace(stages[-1], rounds=rounds - before)
        size = self.schedule.population if population is None else population
        return replace(
            self,
            schedule=Schedule(size, tuple(stages)),
            distance=self.distance if distance is None else distance,
        )

    def with_engine(self, options: Mapping[str, Any]) -> Preset:
        """This preset with engine ``options`` laid over its :class:`EngineSpec`
        (``--engine-options``, a run file's ``preset: {name: adaptive, engine: ...}``)."""
        if self.engine is None:
            raise InputError(
                f"the {self.name} preset runs Private Evolution: engine options are for "
                "--method adaptive"
            )
        if not isinstance(options, Mapping):
            raise InputError("engine options must be a mapping, e.g. '{rounds: 40}'")
        return replace(self, engine=EngineSpec.from_any({**self.engine.to_dict(), **options}))

    def to_dict(self) -> dict[str, Any]:
        """Every field, in the words of :meth:`from_dict` (a run file, the ledger); a
        Private Evolution preset's without ``engine`` (it has none)."""
        out = asdict(self)
        out["schedule"]["stages"] = list(out["schedule"]["stages"])
        out["marginal_options"] = dict(self.marginal_options)
        if self.engine is None:
            del out["engine"]
        else:
            out["engine"] = self.engine.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preset:
        """A preset from :meth:`to_dict`'s words, or ``{"name": ...}`` and overrides
        (``population``, ``rounds``, ``distance``) of a named one."""
        data = dict(data)
        overrides = {k: data.pop(k) for k in ("population", "rounds") if k in data}
        if "schedule" not in data:
            engine = data.pop("engine", None)
            unknown = sorted(set(data) - {"name", "distance"})
            if unknown or "name" not in data:
                raise InputError(f"a preset needs a name and takes no {unknown}")
            named = get_preset(data["name"], distance=data.get("distance"), **overrides)
            return named if engine is None else named.with_engine(engine)
        if data.get("engine") is not None:
            data["engine"] = EngineSpec.from_any(data["engine"])
        schedule = dict(data.pop("schedule"))
        stages = tuple(Stage(**stage) for stage in schedule.pop("stages"))
        try:
            preset = cls(schedule=Schedule(stages=stages, **schedule), **data)
        except TypeError as exc:
            raise InputError(f"preset: {exc}") from None
        return preset.with_overrides(**overrides)


_TABPE_SCHEDULE = Schedule(
    1000, (Stage("sample", 4), Stage("rank", 25, keep_selected=True, mutations=3))
)

PRESETS: dict[str, Preset] = {
    "adaptive": Preset(
        "adaptive", _TABPE_SCHEDULE, distance="tabpe", vote="hard", engine=EngineSpec()
    ),
    "tabpe": Preset("tabpe", _TABPE_SCHEDULE, distance="tabpe", vote="hard"),
    "hybrid": Preset(
        "hybrid",
        _TABPE_SCHEDULE,
        distance="tabpe",
        vote="hard",
        marginals=1.0,
        marginal_options={"coarse_order": 4, "coarse_bins": 2},
    ),
    "bfsoft": Preset("bfsoft", Schedule(512, (Stage("sample", 8),)), distance="gower", vote="hard"),
}


def get_preset(
    name: str,
    *,
    population: int | None = None,
    rounds: int | None = None,
    distance: str | None = None,
) -> Preset:
    """The preset ``name``, with N, the rounds or the distance overridden if given."""
    try:
        preset = PRESETS[name]
    except KeyError:
        raise InputError(f"unknown preset '{name}' (choose {', '.join(PRESETS)})") from None
    return preset.with_overrides(population, rounds, distance)
