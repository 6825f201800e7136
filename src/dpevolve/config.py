"""The settings of a run's methods: named presets, each checked when made.

A :class:`Preset` names a Private Evolution setting (schedule, distance, default vote
and threshold, optional marginal release) or, with ``engine`` set, the adaptive engine's
:class:`~dpevolve.engine.spec.EngineSpec`. Private Evolution's own settings (vote,
mechanism, marginal release) are in :mod:`dpevolve.pe.specs`. The methods
(:mod:`dpevolve.presets`) hold them; a ledger's ``config`` block writes them in the words
their ``from_dict``/``to_dict`` read (docs/architecture.md):

>>> from dpevolve.config import get_preset
>>> get_preset("bfsoft", rounds=3).schedule.rounds
3
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dpevolve.engine.spec import EngineSpec
from dpevolve.errors import InputError
from dpevolve.pe.schedule import Schedule, Stage

ON_INVALID = ("error", "drop", "clip")


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
