"""The run's configuration: a small tree of frozen specs, each building its own part.

A run is a :class:`RunSpec`: the budget, the preset (schedule, distance, defaults), the
vote, the mechanism, the optional marginal release, the backend's name and what to do
with invalid rows. The :class:`~dpevolve.synthesizer.Synthesizer` stores its arguments as
given (the scikit-learn contract); :func:`resolve` turns them into a ``RunSpec`` when a
fit starts, so every check on the configuration (and its message) lives here, before any
record is read. The command line reads the same specs from flags or from a run file, and
the ledger writes :meth:`RunSpec.to_dict` verbatim, so :meth:`RunSpec.from_dict` re-runs
any released table (docs/architecture.md):

>>> from dpevolve.config import RunSpec, VoteSpec, resolve
>>> soft = VoteSpec(kind="soft", temperature=0.03)
>>> spec = resolve({"epsilon": 1.0, "delta": 1e-6, "vote": soft})
>>> spec.preset.name, spec.vote.kind, spec.mechanism.name
('tabpe', 'soft', 'gaussian')
>>> RunSpec.from_dict(spec.to_dict()) == spec
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args

from dpevolve.errors import InputError
from dpevolve.presets import DEFAULT_PRESET, PE_PRESET, Preset, get_preset
from dpevolve.privacy import Budget, default_delta
from dpevolve.privacy.checks import open_unit, positive

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
ON_INVALID = ("error", "drop", "clip")


def _fields_of(cls: type, data: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``data`` checked against the dataclass fields of ``cls`` (one error for unknown keys)."""
    known = {f.name for f in fields(cls) if f.init}
    unknown = sorted(set(data) - known - {"name"})
    if unknown:
        raise InputError(f"{what}: unknown settings {unknown} (known: {sorted(known)})")
    return {k: v for k, v in data.items() if k in known}


@dataclass(frozen=True, kw_only=True)
class BudgetSpec:
    """The guarantee of the whole run: ``epsilon`` with ``delta``, or zCDP ``rho``.

    ``delta`` may be left out: :meth:`build` then uses ``min(1e-5, 1 / (n ln n))``, as
    the private row count ``n`` is public under replace-one adjacency.
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None

    def __post_init__(self) -> None:
        if self.epsilon is None and self.rho is None:
            raise InputError("give a budget: epsilon (with delta) or rho")
        if self.epsilon is not None and self.rho is not None:
            raise InputError("give either epsilon and delta, or rho, not both")
        for name in ("epsilon", "rho"):
            if getattr(self, name) is not None:
                positive(name, getattr(self, name))
        if self.delta is not None:
            open_unit("delta", self.delta)

    def build(self, n: int) -> Budget:
        """The run's :class:`~dpevolve.privacy.Budget` for ``n`` private rows."""
        delta = default_delta(n) if self.delta is None else self.delta
        return Budget.from_args(epsilon=self.epsilon, delta=delta, rho=self.rho)


@dataclass(frozen=True, kw_only=True)
class VoteSpec:
    """How records vote for candidates.

    ``kind``: ``hard``, ``soft`` or ``auto`` (``None``: decided by :func:`resolve`: ``auto``
    where the public pilot can run, else the preset's); ``temperature``: the soft vote's
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
            raise InputError("vote soft needs a temperature (--temperature TAU, or auto)")
        if self.kind == "hard" and self.temperature not in (None, "auto"):
            raise InputError("a temperature is for vote soft: drop it or use --vote soft")
        if self.kind == "auto" and self.temperature is not None:
            raise InputError("vote auto chooses the temperature itself: drop the temperature")
        shaped = [n for n, on in (("sharpen", self.sharpen != 1), ("debias", self.debias)) if on]
        if shaped and self.kind == "auto":
            raise InputError(f"vote auto chooses {' and '.join(shaped)} itself: drop it")
        if shaped and self.kind == "hard":
            raise InputError(f"{' and '.join(shaped)} shape a soft vote: give a temperature")

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
    :class:`~dpevolve.pe.hybrid.tail.MarginalOptions` that :func:`resolve` lays over the
    preset's (``{"grow_rounds": 2}`` keeps the hybrid preset's 4-way sets)."""

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


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """A run's configuration, resolved: the budget, the preset (with its overrides), the
    vote, the mechanism, the marginal release, the backend's name and ``on_invalid``.

    Public inputs (the schema, the policy, the public table), seeds and output paths are
    not part of it: they come with the data.
    """

    budget: BudgetSpec
    preset: Preset
    vote: VoteSpec
    mechanism: MechanismSpec
    marginals: MarginalSpec | None = None
    backend: str = "auto"
    on_invalid: str = "error"

    def __post_init__(self) -> None:
        if self.on_invalid not in ON_INVALID:
            raise InputError(f"on_invalid must be error, drop or clip, got '{self.on_invalid}'")
        if self.marginals is not None and not isinstance(self.mechanism, GaussianSpec):
            raise InputError("the marginal release composes with the gaussian mechanism only")
        if isinstance(self.mechanism, PubMixSpec) and self.vote.kind in ("soft", "auto"):
            raise InputError(f"mechanism pubmix needs hard votes: drop vote {self.vote.kind}")

    def to_dict(self) -> dict[str, Any]:
        """Plain values (a run file, the ledger's ``config``); :meth:`from_dict` reads them."""
        return {
            "budget": asdict(self.budget),
            "preset": self.preset.to_dict(),
            "vote": asdict(self.vote),
            "mechanism": {"name": self.mechanism.name, **asdict(self.mechanism)},
            "marginals": None if self.marginals is None else self.marginals.to_dict(),
            "backend": self.backend,
            "on_invalid": self.on_invalid,
        }

    def params(self) -> dict[str, Any]:
        """The Synthesizer's arguments that give this run (inputs and seeds apart)."""
        return {
            **asdict(self.budget),
            "preset": self.preset,
            "vote": self.vote,
            "mechanism": self.mechanism,
            "marginals": self.marginals,
            "backend": self.backend,
            "on_invalid": self.on_invalid,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """A run from :meth:`to_dict`'s words (a ledger's ``config`` block, a run file),
        resolved as :func:`resolve` resolves the Synthesizer's arguments."""
        data = _fields_of(cls, data, "run file")
        budget = data.get("budget") or {}
        preset = data.get("preset")
        vote = data.get("vote")
        return resolve(
            {
                **_fields_of(BudgetSpec, budget, "budget"),
                "preset": Preset.from_dict(preset) if isinstance(preset, Mapping) else preset,
                "vote": VoteSpec(**_fields_of(VoteSpec, vote, "vote"))
                if isinstance(vote, Mapping)
                else vote,
                "mechanism": data.get("mechanism", "gaussian"),
                "marginals": data.get("marginals"),
                "backend": data.get("backend", "auto"),
                "on_invalid": data.get("on_invalid", "error"),
            }
        )


def default_vote(spec: VoteSpec, mechanism: MechanismSpec, public: bool, policy: bool) -> str:
    """The vote when none is named: ``auto`` where the pilot can run and pays.

    ``auto`` needs public data for its pilot and a policy, without which no soft vote
    has a smaller sensitivity than the hard one; PubMix and exact calibration need hard
    votes; a temperature, sharpening or debiasing given by hand is a soft configuration
    the user chose (``soft``). Otherwise ``None``: the preset's vote.
    """
    if spec.asks_soft:
        return "soft"
    exact = isinstance(mechanism, GaussianSpec) and mechanism.calibration == "exact"
    if policy and public and isinstance(mechanism, GaussianSpec) and not exact:
        return "auto"
    return ""


def resolve(params: Mapping[str, Any]) -> RunSpec:
    """A :class:`RunSpec` from a Synthesizer's parameters (``get_params()``).

    The only place the parameters are interpreted: the preset (a name or a
    :class:`~dpevolve.presets.Preset`), the vote, the mechanism and the marginal release
    (specs, or their names and shares), and the defaults each takes from the preset.
    With ``public`` among the parameters (a Synthesizer's always are), an automatic vote
    without public data fails here, before any record is read.
    """
    budget = BudgetSpec(epsilon=params.get("epsilon"), delta=params.get("delta"),
                        rho=params.get("rho"))  # fmt: skip
    preset = params.get("preset") or default_preset(params)
    preset = get_preset(preset) if isinstance(preset, str) else preset
    if not isinstance(preset, Preset):
        raise InputError(f"preset must be a name or a Preset, got {type(preset).__name__}")
    backend = params.get("backend")
    backend = backend if isinstance(backend, str) else backend_name(backend)
    on_invalid = params.get("on_invalid") or "error"
    if not preset.runs_pe:
        _no_pe_settings(preset.name, params)
        return RunSpec(budget=budget, preset=preset, vote=VoteSpec(), mechanism=GaussianSpec(),
                       backend=backend, on_invalid=on_invalid)  # fmt: skip
    vote = params.get("vote")
    vote = VoteSpec(kind=vote) if vote is None or isinstance(vote, str) else vote
    mechanism = mechanism_spec(params.get("mechanism") or "gaussian")
    if vote.kind is None:
        chosen = default_vote(vote, mechanism, params.get("public") is not None,
                              params.get("policy") is not None)  # fmt: skip
        vote = replace(vote, kind=chosen or preset.vote)
    if isinstance(mechanism, GaussianSpec) and mechanism.threshold is None:
        mechanism = replace(mechanism, threshold=preset.threshold)
    marginals = marginal_spec(params.get("marginals"))
    if marginals is not None or preset.marginals is not None:
        given = marginals or MarginalSpec()
        share = preset.marginals if given.share is None else given.share
        if share is None:
            raise InputError("a marginal release needs its share of the budget (0 < share <= 1)")
        marginals = MarginalSpec(share=share,
                                 options={**preset.marginal_options, **given.options})  # fmt: skip
    if "public" in params and params["public"] is None:
        _needs_no_public(vote)
    return RunSpec(
        budget=budget,
        preset=preset,
        vote=vote,
        mechanism=mechanism,
        marginals=marginals,
        backend=backend,
        on_invalid=on_invalid,
    )


def pe_settings(params: Mapping[str, Any]) -> list[str]:
    """The Private Evolution settings among ``params``: a policy, a vote, a mechanism
    other than the plain Gaussian vote histogram, a marginal share."""
    asked = []
    if params.get("policy") is not None:
        asked.append("policy")
    vote = params.get("vote")
    if vote is not None and vote != VoteSpec():
        asked.append("vote")
    if mechanism_spec(params.get("mechanism") or "gaussian") != GaussianSpec():
        asked.append("mechanism")
    if params.get("marginals") is not None:
        asked.append("marginals")
    return asked


def default_preset(params: Mapping[str, Any]) -> str:
    """The preset of a run that names none: the adaptive engine, unless a Private
    Evolution setting is asked for (then Tab-PE's, which that setting shapes)."""
    return PE_PRESET if pe_settings(params) else DEFAULT_PRESET


def _no_pe_settings(name: str, params: Mapping[str, Any]) -> None:
    asked = pe_settings(params)
    if asked:
        raise InputError(
            f"the {name} preset runs no Private Evolution: {', '.join(asked)} "
            f"{'is a PE setting' if len(asked) == 1 else 'are PE settings'} "
            f"(choose --preset {PE_PRESET}, hybrid or bfsoft, or drop {asked[0]})"
        )


def _needs_no_public(vote: VoteSpec) -> None:
    """An automatic vote runs a pilot on public data: without it, fail before the run."""
    if vote.kind == "auto":
        raise InputError("vote 'auto' needs public data (--public) for the pilot")
    if vote.temperature == "auto":
        raise InputError("temperature 'auto' needs public data (--public) for the pilot")


def backend_name(backend: Any) -> str:
    """The name a backend object is known by in a run file (``auto`` for ``None``)."""
    if backend is None:
        return "auto"
    return type(backend).__name__.removesuffix("Backend").lower() or "auto"
