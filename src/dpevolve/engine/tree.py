"""The spanning-tree phase: ``d - 1`` pairs that join every column (docs/engine.md).

After the 1-ways and before the adaptive rounds, the engine picks pairs as Kruskal's
algorithm would build a maximum spanning tree, as in McKenna, Sheldon & Miklau's MST
mechanism (2021, "Winning the NIST Contest", section 3): each pick is one draw of the
exponential mechanism (:mod:`~dpevolve.engine.select`) among the pairs that join two
components of the pairs picked so far, and each picked pair is then measured. A table
of ``d`` columns so holds at least ``d - 1`` pairs beyond its 1-ways, with every column
in one of them, whatever the adaptive rounds then add.

:func:`spanning` makes the picks for this phase and for the relations phase
(:mod:`~dpevolve.engine.relations`), each over its own pairs and columns.

Privacy. The score of a pair is :func:`~dpevolve.engine.select.quality` against the
independent model of the released 1-ways (:func:`independent`: post-processing), with
its selection weight; its sensitivity is the adaptive rounds' (``2 max w_c``). Which
pairs join two components depends only on earlier picks (released), so the candidate
set of each draw is public, and each draw is an
:class:`~dpevolve.privacy.events.ExponentialEvent` charged and recorded like a round's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol

import numpy as np

from dpevolve.data.sources import PrivateSource
from dpevolve.engine import select
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.plan import Spend
from dpevolve.engine.relations import closing_pairs, quantile_grouping
from dpevolve.measurements import (
    Clique,
    Domain,
    Estimator,
    Grouping,
    MarginalQuery,
    Measurement,
    MeasurementList,
    selection,
)
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import NoiseSource

#: The tree's picks may take the model to this many times ``max_model_mb`` (the
#: rounds' limit): its pairs are the structure the rounds build on. At the limit
#: itself the tree lost pairs on small tables that had taken it past the limit
#: (black_politicians seed 0: TSTR 0.584 -> 0.531; injury, seeds 4 and 5: 0.71 ->
#: 0.60-0.63); the bound is against a model of hundreds of MB, not a tuning.
TREE_HEADROOM = 4.0


class Forest:
    """Components of the columns under the pairs joined so far (union-find by label)."""

    def __init__(self, names: Sequence[str]) -> None:
        self.index = {a: i for i, a in enumerate(names)}
        self.component = np.arange(len(names))

    def ends(self, pairs: Sequence[Clique]) -> tuple[np.ndarray, np.ndarray]:
        """The column indices of each pair's two ends (made once per phase: a phase's
        ``d - 1`` picks each test every pair, and ``O(d^3)`` dictionary look-ups showed
        at d = 200)."""
        first = np.array([self.index[p[0]] for p in pairs], dtype=np.int64)
        second = np.array([self.index[p[1]] for p in pairs], dtype=np.int64)
        return first, second

    def open_mask(
        self, pairs: Sequence[Clique], ends: tuple[np.ndarray, np.ndarray] | None = None
    ) -> np.ndarray:
        """Which ``pairs`` join two different components (public: earlier picks);
        ``ends``: their :meth:`ends`, when made already."""
        first, second = self.ends(pairs) if ends is None else ends
        return np.asarray(self.component[first] != self.component[second])

    def join(self, pair: Clique) -> None:
        """Merge the components of the pair's two columns."""
        keep, gone = (self.component[self.index[a]] for a in pair)
        self.component[self.component == gone] = keep

    def joined(self) -> bool:
        """Whether every column is in one component."""
        return bool(np.all(self.component == self.component[0]))


def independent(first: np.ndarray, second: np.ndarray, total: float) -> np.ndarray:
    """The pair's counts if its two columns were independent, from their (released,
    model-reconciled) 1-way counts: ``x_a x_b^T / n`` (post-processing)."""
    return np.outer(first, second) / max(total, 1.0)


def joined(
    domain: Domain,
    pair: Clique,
    label: str | None,
    numeric: Mapping[str, int],
    groups: int,
    masses: Mapping[str, np.ndarray] | None = None,
) -> MarginalQuery:
    """What the tree measures for a picked ``pair``: the pair cell by cell, or (``label``
    given) the pair with the label in :func:`grouped` groups. Public: a function of the
    pick and the releases before the phase."""
    if label is None:
        return MarginalQuery(pair)
    return grouped(domain, domain.canonical((*pair, label)), numeric, groups, masses)


def grouped(
    domain: Domain,
    clique: Clique,
    numeric: Mapping[str, int],
    groups: int,
    masses: Mapping[str, np.ndarray] | None,
) -> MarginalQuery:
    """``clique`` with each numeric (``numeric`` maps its name to its bins) in ``groups``
    groups of its bins: of about equal mass where ``masses`` gives the model's answer
    to the released 1-ways (:func:`~dpevolve.engine.relations.quantile_grouping`,
    post-processing), else equal-width; the other columns cell by cell."""
    grouping = tuple(_grouping(domain, a, numeric, groups, masses) for a in clique)
    return MarginalQuery(clique, grouping if any(g is not None for g in grouping) else None)


def _grouping(
    domain: Domain,
    column: str,
    numeric: Mapping[str, int],
    groups: int,
    masses: Mapping[str, np.ndarray] | None,
) -> Grouping | None:
    """One column's grouping in the label tree's query; ``None``: kept cell by cell."""
    if column not in numeric or groups >= numeric[column]:
        return None
    if masses is None:
        return select.numeric_grouping(domain.shape((column,))[0], numeric[column], groups)
    # fewer groups than bins: always coarser than the fine cells
    return quantile_grouping(masses[column], numeric[column], groups)


def coarse_pairs(
    domain: Domain,
    names: Sequence[str],
    numeric: Mapping[str, int],
    groups: int,
    masses: Mapping[str, np.ndarray],
    most_cells: float = 0.0,
) -> list[MarginalQuery]:
    """Every pair of ``names`` of a numeric and a categorical column with more than
    ``most_cells`` cells, its numeric in ``groups`` quantile groups of its bins
    (:func:`~dpevolve.engine.relations.quantile_grouping` of the model's answer to the
    released 1-ways: post-processing). A candidate beside the fine pair: at a wide
    table's noise, a fine pair of a number with a category of ten values is 200 cells
    of noise and scores below any pair of two flags, though its columns copy each other
    (an income and its decile). A pair of fewer cells is left fine: its cells support
    the number's 1-way, which its groups would not (public: the domain's sizes); a pair
    of two numbers is the relations phase's (:mod:`~dpevolve.engine.relations`)."""
    out = []
    for pair in combinations(names, 2):
        if sum(a in numeric for a in pair) != 1 or np.prod(domain.shape(pair)) <= most_cells:
            continue
        query = grouped(domain, pair, numeric, groups, masses)
        if query.groups is not None:
            out.append(query)
    return out


class PickRun(Protocol):
    """What a run lends the picks: its door, noise, spend, ledger and measurements."""

    source: PrivateSource
    discretiser: Discretiser
    noise: NoiseSource
    spend: Spend
    ledger: Ledger
    measurements: MeasurementList

    def counts(self, query: MarginalQuery) -> np.ndarray: ...

    def prefetch(self, queries: Sequence[MarginalQuery]) -> None: ...

    def measure(self, query: MarginalQuery, sigma: float, round_: int, label: str) -> None: ...

    def fitted(self) -> list[Measurement]: ...

    def fits(self, cliques: Sequence[Clique], headroom: float = 1.0) -> bool: ...

    def say(self, text: str) -> None: ...


@dataclass(frozen=True)
class Picks:
    """One phase of spanning picks (public): its candidate ``pairs`` (the queries
    scored) and their selection ``weights``, the columns ``names`` to join, each pick's
    ``(sigma, epsilon)``, the round numbered before the first pick, the ``stage`` the
    ledger names, and ``released``: where given, what makes the query released for a
    picked pair in its place (the label tree's pair with the label, :func:`joined`:
    made for the ``d - 2`` picks only, not the ``C(d - 1, 2)`` pairs), all of them
    counted in one pass after the last pick and then released in pick order.
    ``joined``: pairs an earlier phase picked, whose columns start in one component;
    ``closing``: picks after the columns are joined, each closing a triangle
    (:func:`~dpevolve.engine.relations.closing_pairs`; with ``released`` unset)."""

    pairs: list[MarginalQuery]
    weights: np.ndarray
    names: Sequence[str]
    sigma: float
    epsilon: float
    start: int
    stage: str
    released: Callable[[MarginalQuery], MarginalQuery] | None = None
    joined: tuple[Clique, ...] = ()
    closing: int = 0


def label_tree(domain: Domain, label: str | None, groups: int, wide: int) -> bool:
    """Whether the tree releases its pairs with the label (``tree_label_groups`` and
    ``tree_label_columns``: a table with a label and at least ``max(3, wide)``
    columns; public facts of the schema)."""
    return bool(groups) and label is not None and len(domain.names) >= max(3, wide)


def tree_picks(
    domain: Domain,
    label: str | None,
    numeric: dict[str, int],
    groups: int,
    wide: int,
    masses: Mapping[str, np.ndarray] | None = None,
    coarse: int = 0,
    most_cells: float = 0.0,
) -> tuple[list[str], list[MarginalQuery], Callable[[MarginalQuery], MarginalQuery] | None]:
    """The tree phase's public columns, scored pairs and what makes a pick's released
    query: every pair cell by cell (``released`` ``None``), or, with ``groups`` set, a
    ``label`` and at least ``max(3, wide)`` columns (public facts of the schema), the
    pairs of the other columns in the groups they are released in (:func:`grouped`),
    each released with the label (:func:`joined`; ``numeric`` maps a numeric column to
    its bins, ``masses`` its released mass).
    Without the label tree, ``coarse`` groups: :func:`coarse_pairs` beside the fine
    pairs, for those of more than ``most_cells`` cells."""
    with_label = label if label_tree(domain, label, groups, wide) else None
    names = [a for a in domain.names if a != with_label]
    pairs = [MarginalQuery(c) for c in combinations(names, 2)]
    if with_label is None:
        if coarse and masses is not None:
            pairs += coarse_pairs(domain, names, numeric, coarse, masses, most_cells)
        return names, pairs, None

    def released(pair: MarginalQuery) -> MarginalQuery:
        return joined(domain, pair.clique, with_label, numeric, groups, masses)

    # scored in the groups they are released in: cell by cell, a pair of numbers is
    # hundreds of cells of noise and lost the draws to pairs of categories, and the
    # wide tables' numbers were left related through them alone (docs/engine.md)
    scored = [grouped(domain, q.clique, numeric, groups, masses) for q in pairs]
    return names, scored, released


def _scores(run: PickRun, model: Estimator, picks: Picks) -> np.ndarray:
    """Each pair's :func:`~dpevolve.engine.select.quality` against the independent
    model of the released 1-ways (post-processing), the same grouping applied to both
    (private: read only by the charged draws)."""
    ones = {a: np.asarray(model.answer((a,))).ravel() for a in run.discretiser.domain.names}
    values = np.empty(len(picks.pairs))
    for i, q in enumerate(picks.pairs):
        a, b = q.clique
        exact = q.project(run.counts(MarginalQuery(q.clique)))  # grouped: from the fine
        expected = q.project(independent(ones[a], ones[b], run.source.n)).reshape(exact.shape)
        values[i] = select.quality(exact, expected, picks.sigma, float(picks.weights[i]))
    return values


def spanning(
    run: PickRun,
    model: Estimator,
    picks: Picks,
    facts: Callable[[MarginalQuery], dict[str, Any]],
) -> tuple[Estimator, list[dict[str, Any]]]:
    """Kruskal's picks over ``picks.names`` (:class:`Forest`, from the components of
    ``picks.joined``): one charged, recorded draw per pick among the pairs joining two
    components, each pick then released (``picks.released``: its query, after the last
    pick); then ``picks.closing`` closing picks (:func:`closing`). The model is refitted
    once at the end (the scores read only the 1-ways), so the history entries have no
    ``moved``. ``facts`` gives a coarse query's public grouping for the ledger and the
    history."""
    pairs, sigma = picks.pairs, picks.sigma
    values = _scores(run, model, picks)  # private
    forest = Forest(picks.names)
    for pair in picks.joined:
        if all(a in forest.index for a in pair):  # the label tree leaves the label out
            forest.join(pair)
    cliques = [q.clique for q in pairs]
    ends = forest.ends(cliques)
    chosen: list[tuple[int, MarginalQuery]] = []
    round_ = picks.start
    while not forest.joined():
        open_ = np.flatnonzero(forest.open_mask(cliques, ends))
        open_ = open_[bounded(run, picks, open_, [q.clique for _, q in chosen], ends)]
        if open_.size == 0:
            break
        round_ += 1
        index = _draw(run, picks, open_, values, round_, facts)
        pick = pairs[index]
        forest.join(pick.clique)
        if picks.released is None:
            run.measure(pick, sigma, round_, "marginal")  # counted already
            chosen.append((round_, pick))
        else:
            chosen.append((round_, picks.released(pick)))
    if picks.released is not None:
        run.prefetch([q for _, q in chosen])  # one pass for all the picked queries
        for r, query in chosen:
            run.measure(query, sigma, r, "marginal")
    elif picks.closing:
        chosen += closing(run, model.fit(run.fitted()), picks, chosen, round_, facts)
    history = [
        {"round": r, "clique": q.clique, "groups": None, **facts(q), "sigma": sigma,
         "moved": None, "model_mb": None, "stage": picks.stage}
        for r, q in chosen
    ]  # fmt: skip
    run.say(f"{picks.stage}: {len(chosen)} pairs, sigma {sigma:.3g}")
    return model.fit(run.fitted()), history


def bounded(
    run: PickRun,
    picks: Picks,
    open_: np.ndarray,
    picked: Sequence[Clique],
    ends: tuple[np.ndarray, np.ndarray],
) -> np.ndarray:
    """Which pairs of ``open_`` the model holds within :data:`TREE_HEADROOM` times its
    size limit with the cliques ``picked`` so far (public: the domain and the cliques
    alone); ``ends``: every pair's columns, as :meth:`Forest.ends` gives them. Only a
    pair whose columns the model relates already is tested: it closes a cycle, and the
    junction tree of cycles over many numbers holds cliques of five or six of them
    (benefits' 18 numbers, no label: the relations phase's spanning tree and the tree
    phase's over the same columns made a model of 520 MB and a fit of tens of
    minutes). The label tree's label, in every clique it releases, relates nothing
    through itself here: a forest with one column joined to all of its nodes has
    treewidth two, so only the other columns' links can close a wider cycle (counted
    through the label, every pair of the label's columns was tested, thousands a pick:
    the d = 100 table's fit took 215 CPU s against 6)."""
    held = [*(m.clique for m in run.fitted()), *picked]
    attributes = dict.fromkeys(a for c in held for a in c)
    apex = set() if picks.released is None else set(attributes) - set(picks.names)
    linked = Forest(list(dict.fromkeys([*picks.names, *attributes])))
    for clique in held:
        kept = [a for a in clique if a not in apex]
        for a in kept[1:]:
            linked.join((kept[0], a))
    component = linked.component[[linked.index[a] for a in picks.names]]
    first, second = ends
    keep = np.ones(open_.size, dtype=bool)
    for k in np.flatnonzero(component[first[open_]] == component[second[open_]]):
        pair = picks.pairs[int(open_[k])]
        query = picks.released(pair) if picks.released is not None else pair
        keep[k] = run.fits([*picked, query.clique], TREE_HEADROOM)
    return keep


def closing(
    run: PickRun,
    model: Estimator,
    picks: Picks,
    chosen: Sequence[tuple[int, MarginalQuery]],
    round_: int,
    facts: Callable[[MarginalQuery], dict[str, Any]],
) -> list[tuple[int, MarginalQuery]]:
    """Up to ``picks.closing`` charged, recorded draws, each among the pairs that close a
    triangle of the picks so far and keep their graph of treewidth two
    (:func:`~dpevolve.engine.relations.closing_pairs`: public), each then released. A
    pair's score is :func:`~dpevolve.engine.select.quality` against ``model``, fitted
    to the releases so far (post-processing): what the picked pairs already carry
    through the model does not count again."""
    values = np.empty(len(picks.pairs))  # private
    for i, q in enumerate(picks.pairs):
        exact = run.counts(q)
        # the model's counts: post-processing of released values
        answer = q.project(np.asarray(model.answer(q.clique))).reshape(exact.shape)
        values[i] = select.quality(exact, answer, picks.sigma, float(picks.weights[i]))
    cliques = [q.clique for q in picks.pairs]
    picked = [q.clique for _, q in chosen]
    out: list[tuple[int, MarginalQuery]] = []
    for _ in range(picks.closing):
        open_ = np.array(closing_pairs([*picks.joined, *picked], cliques), dtype=np.int64)
        if open_.size == 0:
            break
        round_ += 1
        pick = picks.pairs[_draw(run, picks, open_, values, round_, facts)]
        picked.append(pick.clique)
        run.measure(pick, picks.sigma, round_, "marginal")
        out.append((round_, pick))
    return out


def _draw(
    run: PickRun,
    picks: Picks,
    open_: np.ndarray,
    values: np.ndarray,
    round_: int,
    facts: Callable[[MarginalQuery], dict[str, Any]],
) -> int:
    """One charged, recorded exponential-mechanism draw among the pairs ``open_``
    (public) on their scores ``values`` (private); the index of the pair drawn."""
    event = select.selection_event(picks.epsilon, picks.weights[open_])
    run.spend.charge(event)
    index = int(open_[select.draw(values[open_], event, run.noise)])
    pick = picks.pairs[index]
    run.ledger.record(
        event, round=round_, clique=list(pick.clique), stage=picks.stage, **facts(pick)
    )
    run.measurements.append(selection(index, len(picks.pairs), event))
    return index


__all__ = [
    "TREE_HEADROOM",
    "Forest",
    "PickRun",
    "Picks",
    "bounded",
    "closing",
    "grouped",
    "independent",
    "joined",
    "label_tree",
    "spanning",
    "tree_picks",
]
