"""The engine's run: select, measure, estimate, generate (docs/architecture.md).

One run, as in AIM (McKenna et al. 2022, Alg. 2), under replace-one adjacency:

1. the plan (:mod:`~dpevolve.engine.plan`) splits ``rho`` before any record is read and
   hands the run a :class:`~dpevolve.engine.plan.Schedule`: each stage's noise scale;
2. one pass over the :class:`~dpevolve.data.sources.PrivateSource` counts the fine
   numeric histograms, which are released (discrete Gaussian); where a declared range
   is loose the bins are then placed from them (``EngineSpec.adaptive_bins``:
   post-processing, :mod:`~dpevolve.engine.bins`);
3. a second pass counts every 1-way and 2-way marginal on those bins (private: none of
   it leaves unreleased), every 1-way is released and the estimator is fitted to them;
4. the relations phase (:mod:`~dpevolve.engine.relations`, ``relation_share``) picks
   and releases ``k - 1`` pairs joining the ``k`` numeric columns, on quantile groups;
   the tree phase (:mod:`~dpevolve.engine.tree`, ``tree_share``) picks and releases
   ``d - 1`` pairs joining every column, one exponential-mechanism draw each; then
   each column still apart from the label is released with it
   (:mod:`~dpevolve.engine.label_pairs`, ``label_share``; no draw);
5. the adaptive rounds (:mod:`~dpevolve.engine.rounds`): each draws a clique by the
   exponential mechanism on where the model is most wrong, releases it, refits (warm
   start), and anneals;
6. the PE stage (:mod:`~dpevolve.engine.refine`, ``pe_share``) releases nearest-candidate
   votes over the model's draws, which reweight the rows the model draws;
7. :meth:`EngineResult.sample` draws fresh rows from the model and decodes them.

Every release is charged to a :class:`~dpevolve.engine.plan.Spend` before its noise is
drawn, appended to the measurement list and recorded in the ledger. Everything after a
release reads only released values and public inputs: post-processing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.association import shrunk
from dpevolve.engine.atom_rules import atom_columns, release_atom_rules
from dpevolve.engine.atoms import release_atoms
from dpevolve.engine.bins import released_edges, released_support
from dpevolve.engine.density import density_measurements
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.independence import label_shrunk
from dpevolve.engine.label_pairs import label_pairs
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.engine.model import PublicFacts, released_model
from dpevolve.engine.plan import Schedule, Spend
from dpevolve.engine.points import point_measurements
from dpevolve.engine.public import PublicInputs, warm_start
from dpevolve.engine.refine import StageInputs, refine
from dpevolve.engine.relations import relation_picks, relation_queries
from dpevolve.engine.result import EngineResult
from dpevolve.engine.rounds import adaptive_rounds, grouping_facts
from dpevolve.engine.select import ABS_NOISE, candidates, weight
from dpevolve.engine.spec import EngineSpec
from dpevolve.engine.tails import Fold
from dpevolve.engine.tilt import ordered_columns, release_tilts
from dpevolve.engine.tree import Picks, label_tree, spanning, tree_picks
from dpevolve.engine.vacant import closed_ends, folded_measurements, vacant_measurements
from dpevolve.engine.zeros import zero_measurements
from dpevolve.engine.zoom import Span, release_zoom
from dpevolve.measurements import (
    Clique,
    Domain,
    Estimator,
    HistogramQuery,
    MarginalQuery,
    Measurement,
    MeasurementList,
)
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import NoiseSource

#: Builds the estimator: ``(domain, total rows, spec) -> Estimator``.
EstimatorFactory = Callable[[Domain, int, EngineSpec], Estimator]


def default_estimator(domain: Domain, total: int, spec: EngineSpec) -> Estimator:
    """The graphical model of :mod:`dpevolve.estimate`."""
    from dpevolve.estimate import MarkovRandomField

    return MarkovRandomField(domain, total, iterations=spec.round_iters, tol=spec.round_tol)


def default_model_size(domain: Domain, cliques: Sequence[Clique]) -> float:
    """Model size (MB) of a graphical model over ``cliques`` (:mod:`dpevolve.estimate`)."""
    from dpevolve.estimate import model_size_mb

    return float(model_size_mb(domain, list(cliques)))


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
    exact: dict[MarginalQuery, np.ndarray]
    model_size: Callable[[Domain, Sequence[Clique]], float]
    progress: bool
    backend: Backend | None
    prior: tuple[Measurement, ...] = ()
    shrunk: dict[int, tuple[Measurement, Measurement]] = field(default_factory=dict)

    def fitted(self, tilted: bool = False) -> list[Measurement]:
        """What the estimator reconciles: the public pseudo-measurements (free, never
        released), the private measurements as :meth:`denoised` reads them and, where
        ``tilted`` (the last fits, once every pick is made), a pair's association carried
        into the bins of its groups (``EngineSpec.pair_tilt``; post-processing)."""
        released = self.measurements.marginals()
        for m in released:
            if id(m) not in self.shrunk or self.shrunk[id(m)][0] is not m:
                self.shrunk[id(m)] = (m, self.denoised(m))
        seen = [self.shrunk[id(m)][1] for m in released]
        if tilted and self.spec.pair_tilt:
            domain, spec = self.discretiser.domain, self.spec
            flags = label_tree(domain, self.discretiser.schema.label, spec.tree_label_groups,
                               spec.tree_label_columns)  # fmt: skip
            carried = release_tilts(self.discretiser, released, flags)
            pairs = zip(seen, carried, strict=True)
            seen = [s if t is None else replace(s, tilt=t) for s, t in pairs]
        return [*self.prior, *seen]

    def denoised(self, measurement: Measurement) -> Measurement:
        """One release as the estimator sees it, shrunk (post-processing): a coarse pair of
        numbers toward its association fit, a pair of the label toward independence."""
        if self.spec.pair_shrinkage:
            measurement = shrunk(measurement, ordered_columns(self.discretiser))
        if self.spec.label_shrinkage:
            numeric = [c.name for c in self.discretiser.numeric]
            measurement = label_shrunk(measurement, self.discretiser.schema.label, numeric)
        return measurement

    def model_cliques(self) -> list[Clique]:
        """The cliques the model holds (public ones included)."""
        return [m.clique for m in self.fitted()]

    def fits(self, cliques: Sequence[Clique], headroom: float = 1.0) -> bool:
        """Whether the model with ``cliques`` added holds ``headroom * max_model_mb``."""
        size = self.model_size(self.discretiser.domain, [*self.model_cliques(), *cliques])
        return size <= headroom * self.spec.max_model_mb

    def counts(self, query: MarginalQuery) -> np.ndarray:
        self.prefetch([query])
        return self.exact[query]

    def prefetch(self, queries: Sequence[MarginalQuery]) -> None:
        """Count the queries not counted yet (grown candidates) in one more pass; a
        coarse query keeps only its aggregated counts."""
        missing = [q for q in queries if q not in self.exact]
        if missing:
            cliques = list(dict.fromkeys(q.clique for q in missing))
            fine, _ = count_marginals(self.source, self.discretiser, cliques, backend=self.backend)
            self.exact.update({q: q.project(fine[q.clique]) for q in missing})

    def measure(self, query: MarginalQuery, sigma: float, round_: int, label: str) -> None:
        event = marginal_event(sigma, label)
        self.spend.charge(event)
        clique = query.clique
        self.measurements.append(
            release(self.counts(query), clique, event, self.noise, query=query)
        )
        self.ledger.record(event, round=round_, clique=list(clique), **grouping_facts(query))

    def say(self, text: str) -> None:
        if self.progress:
            print(f"engine: {text}", file=sys.stderr, flush=True)


def run_engine(
    source: PrivateSource,
    discretiser: Discretiser,
    schedule: Schedule,
    spec: EngineSpec,
    *,
    noise: NoiseSource,
    rng: np.random.Generator,
    ledger: Ledger,
    given: PublicInputs | None = None,
    sought: dict[str, np.ndarray] | None = None,
    progress: bool = False,
    estimator: EstimatorFactory | None = None,
    model_size: Callable[[Domain, Sequence[Clique]], float] | None = None,
    backend: Backend | None = None,
) -> EngineResult:
    """Run the engine at the noise scales of ``schedule``; see the module docstring.

    :func:`~dpevolve.engine.method.fit_engine` makes the discretiser and the schedule
    from the budget (the budget stops at the plan) and documents the other parameters;
    ``given`` are its public inputs, ``sought`` the atom candidates to release.
    """
    chosen = spec
    schema = discretiser.schema
    edges = given.edges if given is not None else {}
    atoms = (given.atoms or {}) if given is not None else {}
    domain = discretiser.domain
    n = int(source.n)
    about: dict[str, Any] = {"spec": chosen.to_dict(), "plan_rho": schedule.total}
    ledger.add_metadata(engine=about)
    build = estimator if estimator is not None else default_estimator
    size = model_size if model_size is not None else default_model_size
    run = _Run(
        source, discretiser, chosen, noise, rng, ledger, Spend(schedule.total),
        MeasurementList(), {}, size, progress, backend,
    )  # fmt: skip
    found = _release_atoms(run, schedule, sought or {}, edges, atoms, about)
    atoms = {**atoms, **found}
    fine = _release_fine(run, schedule)
    fine = _zoom(run, schedule, fine, edges, atoms, about)
    if chosen.adaptive_bins == "released":
        placed = released_edges(run.discretiser, fine, n, skip=edges, known=found)
        if placed:
            run.discretiser = Discretiser(
                schema, run.discretiser.bins, chosen.fine_cells, {**edges, **placed}, nested=placed,
                atoms=atoms, support=released_support(run.discretiser, fine, n, placed),
                zoom=run.discretiser.zoom,
            )  # fmt: skip
        # post-processing of the released fine histograms: shareable
        about["released_bins"] = {a: [float(e) for e in v] for a, v in placed.items()}
        ledger.add_metadata(engine=about)
    if given is not None:
        given.read(run.discretiser)
    _release_ones(run, schedule)
    _release_rules(run, schedule.atom_rules, fine, about)
    run.prior = tuple(vacant_measurements(run.discretiser, n, schedule.oneway))
    model = _first_fit(run, domain, build(domain, n, chosen), given, about)
    model, history = _selected(run, schedule, model)
    public_bins = given.value_bins(run.discretiser) if given is not None else None
    within = given.within if given is not None else None
    public_fine = given.fine if given is not None else None
    facts = PublicFacts(public_bins, within, public_fine)
    model, folds = _final_fit(run, model, fine, about, facts, schedule.oneway)
    result = EngineResult(
        schema, run.discretiser, run.measurements, fine, ledger, model, n, history,
        public_bins=public_bins, within=within, public_fine=public_fine, folds=folds,
    )  # fmt: skip
    if schedule.pe > 0:
        stage = StageInputs(
            source, schema, noise, ledger, run.spend, schedule.pe, chosen.pe_rounds,
            chosen.pe_candidates, chosen.pe_pool, len(history) + 1, chosen.pe_rake, backend,
            run.measurements,
        )  # fmt: skip
        result.refinement = refine(result.released().sample, stage, rng)
    marginals = len(run.measurements.marginals())
    run.say(f"{marginals} marginals, rho {run.spend.used:.4g} of {schedule.total:.4g}")
    return result


def _first_fit(
    run: _Run, domain: Domain, model: Estimator, given: PublicInputs | None, about: dict[str, Any]
) -> Estimator:
    """The model fitted to the released 1-ways, warm-started from the public prior
    where a public table gives one (free: :mod:`~dpevolve.engine.public`)."""
    if given is not None:
        prior = given.prior(domain, int(run.source.n), run.measurements.marginals())
        about["public"] = given.facts(prior)
        run.ledger.add_metadata(engine=about)
        if prior is not None:
            run.prior = (*run.prior, *prior.measurements)
            model = warm_start(model, prior)
    return model.fit(run.fitted())


def _selected(
    run: _Run, schedule: Schedule, model: Estimator
) -> tuple[Estimator, list[dict[str, Any]]]:
    """The selected releases after the 1-ways: the relations phase, the tree phase,
    the label pairs, then the adaptive rounds (:mod:`~dpevolve.engine.rounds`); their
    history."""
    history: list[dict[str, Any]] = []
    if schedule.relations is not None:
        model, history = _relations(run, schedule.relations, model)
    # the rounds are numbered after the planned tree (the label tree picks one fewer)
    start = len(history) + schedule.tree_edges
    if schedule.tree is not None:
        # after closed triangles the tree starts from the numbers' component
        joined = tuple(tuple(h["clique"]) for h in history) if _closed(run, history) else ()
        model, picked = _tree(run, schedule.tree, model, len(history), joined)
        history += picked
    model, paired = label_pairs(run, schedule, model, start)
    history += paired + adaptive_rounds(run, schedule, model, start=start + len(paired))
    return model, history


def _closed(run: _Run, history: list[dict[str, Any]]) -> bool:
    """Whether the relations phase closed a triangle (picked more than ``k - 1`` pairs)."""
    return len(history) > len(run.discretiser.numeric) - 1


def _final_fit(
    run: _Run,
    model: Estimator,
    fine: dict[str, Measurement],
    about: dict[str, Any],
    facts: PublicFacts,
    oneway: float,
) -> tuple[Estimator, dict[str, Fold] | None]:
    """The last, longer fit (warm start; the refits before it stop at ``round_tol``),
    with each numeric column's smoothed 1-way (``EngineSpec.density_smoothing``:
    :mod:`~dpevolve.engine.density`, its ``lambda`` per column in the ledger) and its
    point bins' fine counts (:mod:`~dpevolve.engine.points`). With ``empty_folds`` it is
    refitted with the bins its folds move held empty (:mod:`~dpevolve.engine.vacant`, the
    ends closed), and those folds are returned (``facts``: a public table's, for them;
    ``oneway``: the 1-ways' noise scale); with ``hold_zeros`` that refit also holds
    empty the cells the releases show a rule at (:mod:`~dpevolve.engine.zeros`)."""
    smoothed: list[Measurement] = []
    if run.spec.density_smoothing:
        smoothed, about["density"] = density_measurements(
            run.discretiser, run.measurements.marginals(), fine
        )
        run.ledger.add_metadata(engine=about)
    if hasattr(model, "iterations"):
        model.iterations = run.spec.final_iters
    if hasattr(model, "tol"):
        model.tol = run.spec.final_tol
    n = int(run.source.n)
    fitted = [*run.fitted(tilted=True), *smoothed, *point_measurements(run.discretiser, fine, n)]
    model = model.fit(fitted)
    marginals = run.measurements.marginals()
    # read from the last fit: a cell's row and column held at a looser fit's counts (the
    # rounds' last refit, before the point bins' counts) drew an atom nowhere
    held = zero_measurements(run.discretiser, marginals, model, n) if run.spec.hold_zeros else []
    if not run.spec.empty_folds:
        return (model.fit([*fitted, *held]) if held else model), None
    # the folds of this fit decode the rows: read again from the refit, whose folded
    # stretches are empty, the bins beside them would fold in turn
    read = released_model(run.discretiser, model, n, marginals, fine, None, facts).inward
    bins = run.discretiser.bins
    folds = {name: replace(f, target=closed_ends(f.target, bins)) for name, f in read.items()}
    targets = {name: fold.target for name, fold in folds.items()}
    folded = folded_measurements(run.discretiser, targets, model, n, oneway)
    if folded or held:
        model = model.fit([*fitted, *folded, *held])
    return model, folds


def _release_atoms(
    run: _Run,
    schedule: Schedule,
    sought: dict[str, np.ndarray],
    edges: dict[str, np.ndarray],
    atoms: dict[str, list[float]],
    about: dict[str, Any],
) -> dict[str, list[float]]:
    """Release the candidate counts (:mod:`~dpevolve.engine.atoms`); the atoms found
    become cells of the fine partition (post-processing: shareable, in the ledger)."""
    found = release_atoms(
        run.source, run.discretiser.schema, sought, schedule.atoms, run.discretiser.bins, run.spend,
        run.noise, run.ledger, run.measurements, run.backend,
    )  # fmt: skip
    if found:
        before = run.discretiser
        run.discretiser = Discretiser(
            before.schema, before.bins, run.spec.fine_cells, edges, atoms={**atoms, **found}
        )
        about["released_atoms"] = found
        run.ledger.add_metadata(engine=about)
    return found


def _zoom(
    run: _Run,
    schedule: Schedule,
    fine: dict[str, Measurement],
    edges: dict[str, np.ndarray],
    atoms: dict[str, list[float]],
    about: dict[str, Any],
) -> dict[str, Measurement]:
    """Release finer fine histograms where the first show a column's values in a small
    part of its range (:mod:`~dpevolve.engine.zoom`); the spans go in the ledger
    (post-processing of the fine histograms: shareable)."""
    spec, schema, bins = run.spec, run.discretiser.schema, run.discretiser.bins

    def refine(spans: Mapping[str, list[Span]]) -> Discretiser:
        return Discretiser(schema, bins, spec.fine_cells, edges, atoms=atoms, zoom=spans)

    run.discretiser, fine = release_zoom(
        run.source, run.discretiser, fine, refine, schedule.zoom, run.spend, run.noise,
        run.ledger, run.measurements, spec.fine_cells, run.backend, skip=edges,
    )  # fmt: skip
    if run.discretiser.zoom:
        about["zoom"] = {a: [list(s) for s in v] for a, v in run.discretiser.zoom.items()}
        run.ledger.add_metadata(engine=about)
    return fine


def _release_rules(
    run: _Run, rho: float, fine: dict[str, Measurement], about: dict[str, Any]
) -> None:
    """Measure the label's pairs with the atom columns (:mod:`~dpevolve.engine.atom_rules`,
    ``rho`` in all); the columns go in the ledger (post-processing of the fine
    histograms: shareable)."""
    rules = atom_columns(run.discretiser, fine, int(run.source.n), rho)
    if release_atom_rules(run, rules, rho):
        about["atom_rules"] = rules
        run.ledger.add_metadata(engine=about)


def _release_fine(run: _Run, schedule: Schedule) -> dict[str, Measurement]:
    """Count and release the fine histograms of the numeric columns (one pass); the
    bins may then be placed from them (:func:`~dpevolve.engine.bins.released_edges`)."""
    sigma = schedule.fine
    numeric = [c.name for c in run.discretiser.numeric] if sigma is not None else []
    if sigma is None or not numeric:
        return {}
    _, fine_exact = count_marginals(run.source, run.discretiser, [], numeric, backend=run.backend)
    fine: dict[str, Measurement] = {}
    for name in numeric:
        event = marginal_event(sigma, FINE + name)
        run.spend.charge(event)
        counts = release(fine_exact[name], (name,), event, run.noise)
        query = HistogramQuery(name, int(fine_exact[name].size))
        fine[name] = Measurement(query, counts.noisy, counts.sigma, event)
        run.measurements.append(fine[name])
        run.ledger.record(event, round=0, clique=[name], cells=int(fine_exact[name].size))
    return fine


def _release_ones(run: _Run, schedule: Schedule) -> None:
    """Count every 1- and 2-way marginal on the final bins (one pass); release the
    1-ways."""
    domain = run.discretiser.domain
    ones: list[Clique] = [(a,) for a in domain.names]
    pairs: list[Clique] = [c for c in candidates(domain, (), 2) if len(c) == 2]
    exact, _ = count_marginals(run.source, run.discretiser, ones + pairs, backend=run.backend)
    run.exact.update({MarginalQuery(c): v for c, v in exact.items()})
    for clique in ones:
        run.measure(MarginalQuery(clique), schedule.oneway, 0, "marginal")


def _tree(
    run: _Run,
    scales: tuple[float, float],
    model: Estimator,
    start: int = 0,
    joined: tuple[Clique, ...] = (),
) -> tuple[Estimator, list[dict[str, Any]]]:
    """The spanning-tree phase (:mod:`~dpevolve.engine.tree`): charged, recorded draws
    among the pairs joining two components, each pair then released (with the label,
    numerics grouped, under ``tree_label_groups``: :func:`~dpevolve.engine.tree.joined`).
    The components start from the pairs ``joined`` by a relations phase that closed
    triangles: numbers it related are not paired again cell by cell (nor made a cycle
    whose junction tree clique would hold four or five of them); what the plan gave the
    picks not made goes to the rounds."""
    domain = run.discretiser.domain
    label = run.discretiser.schema.label
    numeric = {c.name: run.discretiser.bins for c in run.discretiser.numeric}
    spec = run.spec
    masses = (
        {a: np.asarray(model.answer((a,))).ravel() for a in numeric}
        if spec.tree_label_quantiles or spec.tree_groups
        else None
    )  # the released 1-ways' model answer: post-processing
    sigma, epsilon = scales
    # a pair is also a coarse candidate where its fine cells' noise outweighs its rows
    most_cells = run.source.n / (ABS_NOISE * sigma)
    names, pairs, released = tree_picks(
        domain, label, numeric, spec.tree_label_groups, spec.tree_label_columns, masses,
        spec.tree_groups, most_cells,
    )  # fmt: skip
    weights = np.array([weight(q.clique, label, spec.label_weight) for q in pairs])
    picks = Picks(pairs, weights, names, sigma, epsilon, start, "tree", released, joined)
    return spanning(run, model, picks, grouping_facts)


def _relations(
    run: _Run, scales: tuple[float, float], model: Estimator
) -> tuple[Estimator, list[dict[str, Any]]]:
    """The relations phase (:mod:`~dpevolve.engine.relations`): ``k - 1`` charged,
    recorded draws among the numeric pairs on quantile groups of the model's released
    1-ways joining the numeric columns, then (``relation_width`` 2) ``k - 2`` closing
    triangles, each picked pair then released coarse."""
    domain = run.discretiser.domain
    numeric = [c.name for c in run.discretiser.numeric]
    masses = {a: np.asarray(model.answer((a,))).ravel() for a in numeric}
    pairs = relation_queries(
        domain, numeric, masses, run.discretiser.bins, run.spec.relation_groups
    )
    if not pairs:
        return model, []
    sigma, epsilon = scales
    weights = np.ones(len(pairs))
    width = run.spec.relation_width_for(len(numeric))
    closing = relation_picks(len(numeric), width) - (len(numeric) - 1)
    picks = Picks(pairs, weights, numeric, sigma, epsilon, 0, "relations", closing=closing)
    return spanning(run, model, picks, grouping_facts)


__all__ = ["EstimatorFactory", "run_engine"]
