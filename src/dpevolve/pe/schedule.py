"""A Private Evolution schedule: the population size and the stages of its rounds
(docs/math.md §6). Plain data: the presets read it at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dpevolve.errors import InputError

if TYPE_CHECKING:
    from dpevolve.pe.release.base import SelectionMode


@dataclass(frozen=True)
class Stage:
    """``rounds`` consecutive rounds that select the same way.

    ``sample`` draws parents in proportion to the clipped noisy counts and mutates each
    once; ``rank`` keeps the top parents (``keep_selected``) and adds ``mutations``
    mutated children of each, so the next population is ``(1 + mutations) N``.
    """

    mode: SelectionMode
    rounds: int
    keep_selected: bool = False
    mutations: int = 1

    def __post_init__(self) -> None:
        if self.mode not in ("sample", "rank"):
            raise InputError(f"selection mode must be sample or rank, got '{self.mode}'")
        if self.rounds < 1 or self.mutations < 1:
            raise InputError("a stage needs at least one round and one mutation per parent")


@dataclass(frozen=True)
class Schedule:
    """Population size ``N`` and the stages; ``rounds`` DP rounds in all."""

    population: int
    stages: tuple[Stage, ...]

    def __post_init__(self) -> None:
        if self.population < 1:
            raise InputError(f"population size must be at least 1, got {self.population}")
        if not self.stages:
            raise InputError("a schedule needs at least one stage")

    @property
    def rounds(self) -> int:
        return sum(s.rounds for s in self.stages)

    def stage(self, t: int) -> Stage:
        """The stage of round ``t`` (1-based)."""
        for stage in self.stages:
            if t <= stage.rounds:
                return stage
            t -= stage.rounds
        raise IndexError(t)
