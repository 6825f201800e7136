"""The adaptive rounds: AIM's selection, one release per round (docs/engine.md).

After the 1-ways and the spanning phases (:mod:`~dpevolve.engine.loop`), each round
draws a clique by the exponential mechanism on where the model is most wrong
(:mod:`~dpevolve.engine.select`) among the public candidates of
:mod:`~dpevolve.engine.pool` that the model-size limit allows, releases it, refits the
model (warm start) and anneals, until the schedule's rho for the rounds is spent
(McKenna et al. 2022, "AIM", Alg. 2). Each draw's event is charged before any draw and
recorded with the pick; the released query then goes through the run's ``measure``
(charged, appended to the measurement list, recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from dpevolve.engine.plan import Schedule, round_cost
from dpevolve.engine.pool import CandidatePool
from dpevolve.engine.rules import SELECTION_RULES
from dpevolve.engine.select import ABS_NOISE, draw, query_weight
from dpevolve.engine.spec import EngineSpec
from dpevolve.engine.tree import PickRun
from dpevolve.measurements import Clique, Domain, Estimator, MarginalQuery, selection

#: Rejection draws of a selection before the allowed set is computed in full.
_LAZY_DRAWS = 8


class RoundRun(PickRun, Protocol):
    """What a run lends the rounds beyond the picks': its spec, post-processing
    randomness, model-size measure and the model's cliques."""

    spec: EngineSpec
    rng: np.random.Generator

    @property
    def model_size(self) -> Callable[[Domain, Sequence[Clique]], float]: ...

    def model_cliques(self) -> list[Clique]: ...


def grouping_facts(query: MarginalQuery) -> dict[str, list[Any]]:
    """A coarse query's public grouping, for the ledger and the history: per attribute
    its number of ``groups`` and its ``grouping`` (the group of each of its cells);
    ``None`` for an attribute kept cell by cell. Nothing for a fine query (nor for a
    query of another type, which has no groups)."""
    if not query.coarse or query.groups is None:
        return {}
    grouping = [None if g is None else [int(k) for k in g] for g in query.groups]
    return {
        "groups": [None if g is None else max(g) + 1 for g in grouping],
        "grouping": grouping,
    }


def adaptive_rounds(
    run: RoundRun, schedule: Schedule, model: Estimator, start: int = 0
) -> list[dict[str, Any]]:
    """AIM's adaptive rounds at the schedule's noise scales until its rho for the rounds
    is spent (numbered after ``start``)."""
    label = run.discretiser.schema.label
    sigma, epsilon = schedule.first_round
    limit = schedule.rounds_limit  # the PE stage's share is kept for after the rounds
    history: list[dict[str, Any]] = []
    pool = _pool(run, label, model)
    done = False
    round_ = start
    while not done:
        left = run.spend.left(limit)
        if left < 2.0 * round_cost(sigma, epsilon):
            sigma, epsilon = schedule.last_round(left * (1.0 - 1e-12))
            done = True
        round_ += 1
        spent_after = run.spend.used + round_cost(sigma, epsilon)
        size_limit = run.spec.max_model_mb * spent_after / limit
        chosen = _choose(run, pool, model, sigma, epsilon, size_limit, label, round_)
        before = chosen.project(model.answer(chosen.clique))
        run.measure(chosen, sigma, round_, "marginal")
        model = model.fit(run.fitted())
        after = chosen.project(model.answer(chosen.clique))
        moved = float(np.abs(after - before).sum())
        # No timings: how long scoring the private counts took is not a released value,
        # and the history travels with the model file and the progress lines.
        model_mb = run.model_size(run.discretiser.domain, run.model_cliques())
        history.append(
            {
                "round": round_,
                "clique": chosen.clique,
                "groups": None,
                **grouping_facts(chosen),
                "sigma": sigma,
                "moved": moved,
                "model_mb": model_mb,
            }
        )
        run.say(
            f"round {round_}: {'-'.join(chosen.clique)}"
            f"{' coarse' if chosen.coarse else ''} sigma {sigma:.3g}, model {model_mb:.2f} MB"
        )
        if not done and moved <= ABS_NOISE * sigma * before.size:
            factor = run.spec.anneal  # annealing: measure finer
            sigma, epsilon = sigma / factor, epsilon * factor
    return history


def _pool(run: RoundRun, label: str | None, model: Estimator) -> CandidatePool:
    """The rounds' public candidates (:mod:`~dpevolve.engine.pool`), on the final bins;
    the parity cliques cut at quantiles of ``model``'s 1-ways (fitted to releases only)."""
    spec = run.spec
    numeric = {c.name: run.discretiser.bins for c in run.discretiser.numeric}
    masses = {a: np.asarray(model.answer((a,))).ravel() for a in numeric}
    return CandidatePool(
        run.discretiser.domain, label, numeric, spec.max_order, spec.pair_groups,
        spec.coarse_groups, spec.coarse_order, spec.coarse_all, spec.coarse_splits,
        masses, spec.parity_quantiles, spec.parity_reach,
    )  # fmt: skip


def _choose(
    run: RoundRun,
    pool: CandidatePool,
    model: Estimator,
    sigma: float,
    epsilon: float,
    size_limit: float,
    label: str | None,
    round_: int,
) -> MarginalQuery:
    """One exponential-mechanism draw among the candidates the size limit allows,
    scored and priced by the spec's selection rule (:mod:`~dpevolve.engine.rules`).

    Drawing from the whole list and redrawing until the pick is allowed gives exactly
    the exponential mechanism on the allowed set (a conditional of the Gumbel-max draw);
    after a few misses the allowed set is computed in full and drawn from directly. The
    scale is the whole list's (its sensitivity bounds the allowed set's). Only the
    allowed draw leaves, and its one event is charged before any draw. The size limit
    is checked on a candidate's fine clique (the model holds the fine attributes).
    """
    domain = run.discretiser.domain
    rule = SELECTION_RULES[run.spec.selection]
    measured = run.measurements.marginals()
    queries = [m.query for m in measured]
    kept = rule.propose(
        pool.draw([q.clique for q in queries], run.spec.max_candidates, run.rng, queries),
        domain,
    )
    numeric = {c.name: run.discretiser.bins for c in run.discretiser.numeric}
    spec = run.spec
    ways = {
        "label_weight": spec.label_weight,
        "coarse_weight": spec.coarse_weight,
        "parity_weight": spec.parity_weight,
    }
    weights = [query_weight(q, label, numeric, **ways) for q in kept]
    held = run.model_cliques()
    covered = [frozenset(c) for c in held]

    def allowed(query: MarginalQuery) -> bool:
        if any(frozenset(query.clique) <= m for m in covered):
            return True
        return run.model_size(domain, [*held, query.clique]) <= size_limit

    event = rule.event(epsilon, weights)
    run.spend.charge(event)

    answers: dict[Clique, np.ndarray] = {}  # a clique's coarse candidates share its answer

    def answer(q: MarginalQuery) -> np.ndarray:
        if q.clique not in answers:
            answers[q.clique] = model.answer(q.clique)
        return q.project(answers[q.clique])

    run.prefetch(kept)
    values = rule.scores(kept, run.counts, answer, weights, sigma)
    pick = kept[draw(values, event, run.noise)]
    for _ in range(_LAZY_DRAWS - 1):
        if allowed(pick):
            break
        pick = kept[draw(values, event, run.noise)]
    if not allowed(pick):
        keep = np.array([allowed(q) for q in kept])
        if not keep.any():
            raise AssertionError("the 1-way cliques are always allowed")
        pick = [q for q, k in zip(kept, keep, strict=True) if k][
            draw(values[keep], event, run.noise)
        ]
    run.ledger.record(event, round=round_, clique=list(pick.clique), **grouping_facts(pick))
    run.measurements.append(selection(kept.index(pick), len(kept), event))
    return pick


__all__ = ["RoundRun", "adaptive_rounds", "grouping_facts"]
