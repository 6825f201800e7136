"""Named configurations of the engine (docs/math.md §6).

* ``tabpe``: Tab-PE's released Adult setting. N = 1000, 30 generations (29 DP rounds;
  the random generation 0 costs nothing): rounds 1-4 sample parents in proportion to
  the clipped noisy count with one mutation each; from round 5 keep the top N by noisy
  count plus 3 mutations of each (pool 4N) and rank-select N. One-hot/L2 distance,
  hard votes, threshold H = 0.
* ``bfsoft``: the BF-Soft study setting. 512-record releases, 8 rounds of sampling
  selection, Gower distance; hard votes unless a soft vote is asked for.
* ``hybrid``: the whole budget measures the 2-way marginals, the 3-way ones holding the
  label and, at two bins per number, the 4-way ones holding the label, in one Gaussian
  release; a pool grown from the initial population is weighted to match them and rows
  are drawn from it (docs/guide.md, "Presets"). Far better marginals on Adult and XOR-3,
  worse TSTR on Person Activity (benchmarks/FIDELITY.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from dpevolve.errors import InputError
from dpevolve.pe.evolution import Schedule, Stage


@dataclass(frozen=True)
class Preset:
    """A named configuration: the PE schedule, the record distance, the default vote and
    threshold, and the optional marginal release (its share and options)."""

    name: str
    schedule: Schedule
    distance: str
    vote: str
    threshold: float = 0.0
    #: Share of the budget (zCDP rho) for the marginal release; ``None``: PE alone.
    marginals: float | None = None
    marginal_options: Mapping[str, Any] = field(default_factory=dict)

    def with_overrides(
        self, population: int | None = None, rounds: int | None = None, distance: str | None = None
    ) -> Preset:
        """Change N, the number of rounds (the last stage absorbs the change) or the
        distance."""
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

    def to_dict(self) -> dict[str, Any]:
        """Every field, in the words of :meth:`from_dict` (a run file, the ledger)."""
        out = asdict(self)
        out["schedule"]["stages"] = list(out["schedule"]["stages"])
        out["marginal_options"] = dict(self.marginal_options)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preset:
        """A preset from :meth:`to_dict`'s words, or ``{"name": ...}`` and overrides
        (``population``, ``rounds``, ``distance``) of a named one."""
        data = dict(data)
        overrides = {k: data.pop(k) for k in ("population", "rounds") if k in data}
        if "schedule" not in data:
            unknown = sorted(set(data) - {"name", "distance"})
            if unknown or "name" not in data:
                raise InputError(f"a preset needs a name and takes no {unknown}")
            return get_preset(data["name"], distance=data.get("distance"), **overrides)
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


#: The preset of a run that names none: Private Evolution alone, which no measured data
#: set does worse with. ``hybrid`` wins the marginals (Adult, XOR-3) but loses TSTR on
#: Person Activity (benchmarks/FIDELITY.md), so it is a choice, not the default.
DEFAULT_PRESET = "tabpe"


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
