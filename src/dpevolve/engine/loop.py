"""The engine's run: select, measure, estimate, generate (docs/architecture.md).

One run, as in AIM (McKenna et al. 2022, Alg. 2), under replace-one adjacency:

1. the plan (:mod:`~dpevolve.engine.plan`) splits ``rho`` before any record is read;
2. one pass over the :class:`~dpevolve.data.sources.PrivateSource` counts every 1-way
   and 2-way marginal and the fine numeric histograms (private: none of it leaves
   unreleased);
3. the fine histograms and every 1-way marginal are released (discrete Gaussian), and the
   estimator is fitted to the 1-ways;
4. each round draws a clique by the exponential mechanism on where the model is most
   wrong (:mod:`~dpevolve.engine.select`), releases it, refits (warm start), and anneals;
5. :meth:`EngineResult.sample` draws fresh rows from the model and decodes them.

Every release is charged to a :class:`~dpevolve.engine.plan.Spend` before its noise is
drawn, appended to the measurement list and recorded in the ledger. Everything after a
release reads only released values and public inputs: post-processing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release, sigma_for
from dpevolve.engine.plan import Plan, Spend, round_cost
from dpevolve.engine.select import (
    ABS_NOISE,
    candidates,
    draw,
    scores,
    selection_event,
    weight,
)
from dpevolve.engine.spec import EngineSpec
from dpevolve.measurements import Clique, Domain, Estimator, Measurement, MeasurementList
from dpevolve.privacy import Budget, Ledger, default_delta
from dpevolve.privacy.events import Event
from dpevolve.release.noise import NoiseSource

#: Builds the estimator: ``(domain, total rows, spec) -> Estimator``.
EstimatorFactory = Callable[[Domain, int, EngineSpec], Estimator]

#: Rejection draws of a selection before the allowed set is computed in full.
_LAZY_DRAWS = 8


def default_estimator(domain: Domain, total: int, spec: EngineSpec) -> Estimator:
    """The graphical model of :mod:`dpevolve.estimate`."""
    from dpevolve.estimate import MarkovRandomField

    return MarkovRandomField(domain, total, iterations=spec.round_iters)


def default_model_size(domain: Domain, cliques: Sequence[Clique]) -> float:
    """Model size (MB) of a graphical model over ``cliques`` (:mod:`dpevolve.estimate`)."""
    from dpevolve.estimate import model_size_mb

    return float(model_size_mb(domain, list(cliques)))


@dataclass
class EngineResult:
    """A fitted engine: the measurement list, the ledger, the model; ``sample`` rows.

    Attributes
    ----------
    measurements
        The marginal releases, in order (what the estimator reconciled).
    fine
        The fine 1-way histograms of the numeric columns (used to decode values).
    ledger
        Every release's event, in release order (selections included).
    model
        The fitted estimator (post-processing of ``measurements``).
    """

    schema: Schema
    discretiser: Discretiser
    measurements: MeasurementList
    fine: dict[str, Measurement]
    ledger: Ledger
    model: Estimator
    rows: int
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def events(self) -> tuple[Event, ...]:
        return self.ledger.events

    def sample(
        self, rows: int | None = None, rng: np.random.Generator | None = None
    ) -> pd.DataFrame:
        """``rows`` (default: the private row count) fresh rows drawn from the model."""
        generator = rng if rng is not None else np.random.default_rng()
        count = self.rows if rows is None else int(rows)
        codes = np.asarray(self.model.sample(count, generator), dtype=np.int64)
        fine = {name: m.noisy for name, m in self.fine.items()}
        return self.discretiser.decode(codes, generator, fine)


@dataclass
class _Run:
    """The state of one run (kept out of the public result)."""

    source: PrivateSource
    discretiser: Discretiser
    spec: EngineSpec
    noise: NoiseSource
    rng: np.random.Generator
    ledger: Ledger
    spend: Spend
    measurements: MeasurementList
    exact: dict[Clique, np.ndarray]
    model_size: Callable[[Domain, Sequence[Clique]], float]
    progress: bool

    def counts(self, clique: Clique) -> np.ndarray:
        if clique not in self.exact:  # a triple grown from a selected pair: one more pass
            self.exact.update(count_marginals(self.source, self.discretiser, [clique])[0])
        return self.exact[clique]

    def measure(self, clique: Clique, sigma: float, round_: int, label: str) -> None:
        event = marginal_event(sigma, label)
        self.spend.charge(event)
        self.measurements.append(release(self.counts(clique), clique, event, self.noise))
        self.ledger.record(event, round=round_, clique=list(clique))

    def say(self, text: str) -> None:
        if self.progress:
            print(f"engine: {text}", file=sys.stderr, flush=True)


def fit_engine(
    source: PrivateSource,
    schema: Schema,
    budget: Budget,
    spec: EngineSpec | None = None,
    *,
    noise: NoiseSource,
    rng: np.random.Generator,
    ledger: Ledger | None = None,
    public: pd.DataFrame | None = None,
    progress: bool = False,
    estimator: EstimatorFactory | None = None,
    model_size: Callable[[Domain, Sequence[Clique]], float] | None = None,
) -> EngineResult:
    """Run the engine on ``source`` within ``budget``; see the module docstring.

    Parameters
    ----------
    source
        The private records (validated; ``source.n`` is public).
    schema
        The declared domains (the same the source validated against).
    budget
        ``(epsilon, delta)`` or ``rho``; the composed events never exceed it.
    spec
        The engine's public choices (default :class:`EngineSpec`).
    noise
        The one noise source (:func:`dpevolve.release.noise.make_noise`).
    rng
        Post-processing randomness (estimator, candidate order, decoding).
    ledger
        Where the events go (default: a new ledger at the budget's delta, or
        :func:`~dpevolve.privacy.default_delta` of ``n`` for a pure ``rho`` budget).
    public
        Public rows (not used yet: accepted so callers can pass them).
    progress
        One line per round on stderr (released values only).
    estimator, model_size
        The estimator and its size measure (default: :mod:`dpevolve.estimate`).
    """
    chosen = EngineSpec.from_any(spec)
    discretiser = Discretiser(schema, chosen.bins, chosen.fine_cells)
    domain = discretiser.domain
    n = int(source.n)
    plan = Plan.of(budget, chosen, len(domain.names), len(discretiser.numeric))
    if ledger is None:
        delta = budget.delta if budget.delta is not None else default_delta(n)
        ledger = Ledger(delta)
    ledger.add_metadata(engine={"spec": chosen.to_dict(), "plan_rho": plan.total})
    del public  # reserved: public data enters through a later release
    build = estimator if estimator is not None else default_estimator
    run = _Run(
        source,
        discretiser,
        chosen,
        noise,
        rng,
        ledger,
        Spend(plan.total),
        MeasurementList(),
        {},
        model_size if model_size is not None else default_model_size,
        progress,
    )
    started = time.perf_counter()
    fine = _first_pass(run, plan)
    model = build(domain, n, chosen).fit(list(run.measurements))
    history = _rounds(run, plan, model)
    model = _final_fit(model, list(run.measurements), chosen.final_iters)
    run.say(
        f"{len(run.measurements)} marginals, rho {run.spend.used:.4g} of {plan.total:.4g}, "
        f"{time.perf_counter() - started:.1f} s"
    )
    return EngineResult(schema, discretiser, run.measurements, fine, ledger, model, n, history)


def _final_fit(model: Estimator, measurements: list[Measurement], iterations: int) -> Estimator:
    """The last, longer fit (warm start): more iterations where the model takes them."""
    if hasattr(model, "iterations"):
        model.iterations = iterations
    return model.fit(measurements)


def _first_pass(run: _Run, plan: Plan) -> dict[str, Measurement]:
    """Count every 1- and 2-way marginal (one pass); release the fine and 1-way ones."""
    domain = run.discretiser.domain
    ones: list[Clique] = [(a,) for a in domain.names]
    pairs: list[Clique] = [c for c in candidates(domain, (), 2) if len(c) == 2]
    numeric = [c.name for c in run.discretiser.numeric] if plan.fine > 0 else []
    exact, fine_exact = count_marginals(run.source, run.discretiser, ones + pairs, numeric)
    run.exact.update(exact)
    fine: dict[str, Measurement] = {}
    if numeric:
        sigma = sigma_for(plan.fine / len(numeric))
        for name in numeric:
            event = marginal_event(sigma, FINE + name)
            run.spend.charge(event)
            fine[name] = release(fine_exact[name], (name,), event, run.noise)
            run.ledger.record(event, round=0, clique=[name], cells=int(fine_exact[name].size))
    sigma = sigma_for(plan.oneway / len(ones))
    for clique in ones:
        run.measure(clique, sigma, 0, "marginal")
    return fine


def _rounds(run: _Run, plan: Plan, model: Estimator) -> list[dict[str, Any]]:
    """AIM's adaptive rounds until the plan's rho is spent."""
    label = run.discretiser.schema.label
    sigma, epsilon = plan.first_round()
    limit = plan.total
    history: list[dict[str, Any]] = []
    done = False
    round_ = 0
    while not done:
        left = run.spend.left(limit)
        if left < 2.0 * round_cost(sigma, epsilon):
            sigma, epsilon = plan.round_parameters(left * (1.0 - 1e-12))
            done = True
        round_ += 1
        spent_after = run.spend.used + round_cost(sigma, epsilon)
        size_limit = run.spec.max_model_mb * spent_after / limit
        clock = time.perf_counter()
        chosen = _choose(run, model, sigma, epsilon, size_limit, label, round_)
        picked = time.perf_counter()
        before = np.asarray(model.answer(chosen), dtype=np.float64)
        run.measure(chosen, sigma, round_, "marginal")
        model = model.fit(list(run.measurements))
        after = np.asarray(model.answer(chosen), dtype=np.float64)
        moved = float(np.abs(after - before).sum())
        timing = {
            "select_s": picked - clock,
            "fit_s": time.perf_counter() - picked,
            "model_mb": run.model_size(run.discretiser.domain, run.measurements.cliques()),
        }
        history.append(
            {"round": round_, "clique": chosen, "sigma": sigma, "moved": moved, **timing}
        )
        run.say(
            f"round {round_}: {'-'.join(chosen)} sigma {sigma:.3g} "
            f"(select {timing['select_s']:.2f} s, fit {timing['fit_s']:.2f} s, "
            f"model {timing['model_mb']:.2f} MB)"
        )
        if not done and moved <= ABS_NOISE * sigma * before.size:
            sigma, epsilon = sigma / 2.0, epsilon * 2.0  # annealing: measure finer
    return history


def _subset(pool: list[Clique], label: str | None, run: _Run) -> list[Clique]:
    """At most ``max_candidates`` (or the 1-ways): the 1-ways and the label's cliques
    first (the 1-ways are always allowed by the size limit), then a public random draw."""
    cap = run.spec.max_candidates

    def first_in(c: Clique) -> bool:
        return len(c) == 1 or (label is not None and label in c)

    if len(pool) <= cap:
        return pool
    first = [c for c in pool if first_in(c)]
    first = first[: max(cap, sum(len(c) == 1 for c in first))]
    rest = [c for c in pool if not first_in(c)]
    take = min(cap - len(first), len(rest))
    drawn = run.rng.choice(len(rest), size=take, replace=False) if take > 0 else []
    return first + [rest[int(i)] for i in sorted(drawn)]


def _choose(
    run: _Run,
    model: Estimator,
    sigma: float,
    epsilon: float,
    size_limit: float,
    label: str | None,
    round_: int,
) -> Clique:
    """One exponential-mechanism draw among the candidates the size limit allows.

    Drawing from the whole list and redrawing until the pick is allowed gives exactly
    the exponential mechanism on the allowed set (a conditional of the Gumbel-max draw);
    after a few misses the allowed set is computed in full and drawn from directly. The
    scale is the whole list's (its sensitivity bounds the allowed set's). Only the
    allowed draw leaves, and its one event is charged before any draw.
    """
    domain = run.discretiser.domain
    measured = run.measurements.cliques()
    pool = _subset(candidates(domain, measured, run.spec.max_order), label, run)
    weights = [weight(c, label, run.spec.label_weight) for c in pool]
    covered = [frozenset(c) for c in measured]

    def allowed(clique: Clique) -> bool:
        if any(frozenset(clique) <= m for m in covered):
            return True
        return run.model_size(domain, [*measured, clique]) <= size_limit

    event = selection_event(epsilon, weights)
    run.spend.charge(event)
    answer = lambda c: np.asarray(model.answer(c), dtype=np.float64)  # noqa: E731
    values = scores(pool, run.counts, answer, weights, sigma)
    pick = pool[draw(values, event, run.noise)]
    for _ in range(_LAZY_DRAWS - 1):
        if allowed(pick):
            break
        pick = pool[draw(values, event, run.noise)]
    if not allowed(pick):
        keep = np.array([allowed(c) for c in pool])
        if not keep.any():
            raise AssertionError("the 1-way cliques are always allowed")
        pick = [c for c, k in zip(pool, keep, strict=True) if k][
            draw(values[keep], event, run.noise)
        ]
    run.ledger.record(event, round=round_, clique=list(pick))
    return pick


__all__ = ["EngineResult", "EstimatorFactory", "fit_engine"]
