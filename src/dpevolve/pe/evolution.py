"""The Private Evolution loop (docs/math.md §6), and nothing else.

Each round: the backend sums private votes over the population (the only step that
reads private records), the release turns that histogram into parents (the only step
that spends privacy), and variation makes the next population from the parents
(post-processing). The loop knows votes, releases and backends only through their
small interfaces, so a new vote or mechanism is one new class.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.data.encoding import Records
from dpevolve.data.sources import PrivateSource
from dpevolve.pe.distance import Distance
from dpevolve.pe.release.base import Release, Selection
from dpevolve.pe.schedule import Schedule, Stage
from dpevolve.pe.variation import Variation, mutation_rate
from dpevolve.pe.votes import Vote

RoundCallback = Callable[[int, Selection, Records], None]


class Evolution:
    """Runs the schedule: vote, release, vary; returns the last round's parents."""

    def __init__(
        self,
        distance: Distance,
        vote: Vote,
        release: Release,
        schedule: Schedule,
        variation: Variation,
        backend: Backend,
    ) -> None:
        self.distance = distance
        self.vote = vote
        self.release = release
        self.schedule = schedule
        self.variation = variation
        self.backend = backend

    def run(
        self,
        source: PrivateSource,
        initial: Records,
        rng: np.random.Generator,
        on_round: RoundCallback | None = None,
    ) -> Records:
        """Evolve ``initial`` for ``schedule.rounds`` rounds.

        Each round takes a fresh pass over ``source`` (the one door for private
        records), so a table larger than memory is read once per round.
        """
        total = self.schedule.rounds
        size = self.schedule.population
        population = initial
        for t in range(1, total + 1):
            stage = self.schedule.stage(t)
            histogram = self.backend.vote(source.batches(), population, self.distance, self.vote)
            selection = self.release.select(
                histogram, size, rng, population=population, mode=stage.mode
            )
            if on_round is not None:
                on_round(t, selection, population)
            parents = population.take(selection.parents)
            if t == total:
                return parents
            population = self._next_population(
                parents, self.schedule.stage(t + 1), mutation_rate(t, total), rng
            )
        raise AssertionError("a schedule has at least one round")

    def _next_population(
        self, parents: Records, stage: Stage, rate: float, rng: np.random.Generator
    ) -> Records:
        if stage.keep_selected:
            repeated = parents.take(np.repeat(np.arange(len(parents)), stage.mutations))
            return Records.concat([parents, self.variation.mutate(repeated, rate, rng)])
        if stage.mutations > 1:
            parents = parents.take(np.repeat(np.arange(len(parents)), stage.mutations))
        return self.variation.mutate(parents, rate, rng)
