"""Adaptive selection: which marginal to measure next (AIM's exponential mechanism).

McKenna, Mullins, Sheldon & Miklau 2022, "AIM: An Adaptive and Iterative Mechanism for
Differentially Private Synthetic Data", section 4. Each round scores every candidate
clique ``c`` by how wrong the current model is on it, less the error a fresh
measurement would have anyway:

``q_c = w_c (||x_c - xhat_c||_1 - sqrt(2 / pi) sigma n_c)``

with ``x_c`` the private counts, ``xhat_c`` the model's counts, ``sigma`` the round's
noise scale (``sqrt(2 / pi) sigma`` is the mean absolute value of one cell's noise) and
``n_c`` the clique's cell count; then draws one by the exponential mechanism.

Sensitivity (replace-one). ``xhat_c``, ``sigma``, ``w_c`` and ``n_c`` are functions of
public inputs and earlier releases only, so they are fixed when the round's private
data is read (adaptive composition conditions on earlier outputs). Replacing one record
``r`` by ``r'`` changes ``x_c`` to ``x_c - e_{c(r)} + e_{c(r')}``, so by the triangle
inequality ``| ||x_c' - xhat_c||_1 - ||x_c - xhat_c||_1 | <= ||x_c' - x_c||_1 <= 2``;
a record turned invalid under ``on_invalid="drop"`` (``n`` stays public) leaves one
cell, ``<= 1``. Hence ``|q_c(D) - q_c(D')| <= 2 w_c <= Delta = 2 max_c w_c``.

Drawing ``c`` with probability proportional to ``exp(epsilon q_c / (2 Delta))`` (the
noise source's Gumbel noisy max with scale ``2 Delta / epsilon``) is
``epsilon``-DP and ``epsilon^2 / 8``-zCDP (bounded range; Cesar & Rogers 2021):
:class:`~dpevolve.privacy.events.ExponentialEvent`.

Coarse candidates (:func:`coarse_candidates`) count a clique's records per group
combination, numerics in a few public groups of their bins: the coarse counts move by
``e_{g(r')} - e_{g(r)}`` under a replacement, so the same bound holds (L1 at most 2, and
``xhat_c`` is the model's marginal aggregated by the same public map).

Candidates are public too: every column and pair (``C(d, 2)``), plus the triples grown
from already selected pairs (never all ``C(d, 3)``) and, up to ``max_order``, larger
cliques grown from selected ones, each kept only if the model with it stays under the
annealed size limit (computed on the fine clique: the model holds fine attributes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from itertools import combinations, product
from typing import TypeVar

import numpy as np

from dpevolve.measurements import Clique, Domain, Grouping, MarginalQuery, even_grouping
from dpevolve.privacy.events import ExponentialEvent
from dpevolve.privacy.noise import NoiseSource

#: Mean absolute value of a standard normal: ``E|N(0, 1)| = sqrt(2 / pi)``.
ABS_NOISE = math.sqrt(2.0 / math.pi)

#: Replace-one sensitivity of ``||x_c - xhat_c||_1`` (see the module docstring).
L1_SENSITIVITY = 2.0


def weight(clique: Clique, label: str | None, label_weight: float) -> float:
    """Selection weight ``w_c``: ``|c| / 2`` (AIM's workload overlap for a 3-way
    workload grows about that way), times ``label_weight`` if ``c`` holds the label."""
    w = len(clique) / 2.0
    return w * label_weight if label is not None and label in clique else w


def is_parity(query: MarginalQuery, numeric: Mapping[str, int], label: str | None) -> bool:
    """Whether ``query`` is a parity query (public): the label with three or more other
    columns, every one numeric and cut in two (:func:`parity_candidates`,
    :func:`parity_neighbours`)."""
    if label is None or label not in query.clique or query.groups is None:
        return False
    others = [(a, g) for a, g in zip(query.clique, query.groups, strict=True) if a != label]
    return len(others) >= 3 and all(
        a in numeric and _cut_of(g, numeric[a]) is not None for a, g in others
    )


def query_weight(
    query: MarginalQuery,
    label: str | None,
    numeric: Mapping[str, int],
    *,
    label_weight: float,
    coarse_weight: float,
    parity_weight: float,
) -> float:
    """Selection weight of a candidate query: :func:`weight` of its clique, times
    ``parity_weight`` for a parity query (:func:`is_parity`) and ``coarse_weight`` for
    another coarse query of three or more columns (``EngineSpec``'s weights)."""
    w = weight(query.clique, label, label_weight)
    if is_parity(query, numeric, label):
        return w * parity_weight
    return w * coarse_weight if query.coarse and len(query.clique) > 2 else w


def candidates(domain: Domain, selected: Iterable[Clique], max_order: int) -> list[Clique]:
    """Public candidates: every column and pair, plus every selected clique of 2 to
    ``max_order - 1`` columns grown by one column (triples from selected pairs, ...)."""
    names = domain.names
    out: dict[Clique, None] = {(a,): None for a in names}
    out.update({domain.canonical(p): None for p in combinations(names, 2)})
    for clique in selected:
        if not 2 <= len(clique) < max_order:
            continue
        for extra in names:
            if extra not in clique:
                out[domain.canonical((*clique, extra))] = None
    return list(out)


def numeric_grouping(cells: int, bins: int, groups: int) -> Grouping:
    """``bins`` equal-width bins in ``groups`` equal-width groups of the declared range; a
    nullable column's missing cell (``cells = bins + 1``) a group of its own."""
    base = even_grouping(bins, groups)
    return base + (max(base) + 1,) * (cells - bins)


def cut_in_two(bins: int, cut: int) -> Grouping:
    """``bins`` bins in two groups: those below bin edge ``cut``, and the rest."""
    return tuple(int(i >= cut) for i in range(bins))


def split_grouping(cells: int, bins: int, at: float) -> Grouping | None:
    """``bins`` equal-width bins in two groups, cut at the fraction ``at`` of the declared
    range (rounded to a bin edge); a nullable column's missing cell a group of its own.
    ``None`` when the cut falls on an end of the range."""
    cut = round(at * bins)
    if not 0 < cut < bins:
        return None
    base = cut_in_two(bins, cut)
    return base + (2,) * (cells - bins)


def quantile_split(mass: np.ndarray, bins: int, at: float) -> Grouping | None:
    """``bins`` bins in two groups, cut at the bin edge where the cumulative ``mass``
    (the model's answer to the released 1-ways: post-processing) is nearest ``at``; a
    nullable column's missing cell a group of its own. ``None`` when that edge is an
    end of the range, or nothing was released (no mass)."""
    values = np.clip(np.asarray(mass, dtype=np.float64).ravel()[:bins], 0.0, None)
    total = float(values.sum())
    if total <= 0.0 or bins < 2:
        return None
    inner = np.cumsum(values)[:-1] / total  # the mass below each inner edge
    cut = int(np.argmin(np.abs(inner - at))) + 1
    base = cut_in_two(bins, cut)
    return base + (2,) * (np.asarray(mass).size - bins)


def parity_candidates(
    domain: Domain,
    label: str | None,
    numeric: Mapping[str, int],
    masses: Mapping[str, np.ndarray],
    quantiles: Sequence[float],
    order: int,
    all_limit: int,
) -> list[MarginalQuery]:
    """The label's all-numeric cliques of ``order`` columns (when they number at most
    ``all_limit``: :func:`coarse_candidates`' rule), each numeric cut in two at the bin
    edge nearest each of ``quantiles`` of its released mass (:func:`quantile_split`),
    one candidate per combination of one cut per column (public: the schema, the
    released 1-ways and the spec fix the set before any draw).

    A parity of signs shows in no smaller marginal, and its signs may change anywhere:
    a cut at the middle of the declared range misses a change at a third of the data,
    so each column's cut is a choice of its own. At most ``all_limit`` cliques times
    ``len(quantiles) ** (order - 1)`` candidates.
    """
    if label is None or not quantiles or order < 4:
        return []
    numerics = [a for a in domain.names if a != label and a in numeric]
    if math.comb(len(numerics), order - 1) > all_limit:
        return []
    cuts: dict[str, list[Grouping]] = {}
    for a in numerics:
        found = (quantile_split(masses[a], numeric[a], at) for at in quantiles)
        cuts[a] = list(dict.fromkeys(g for g in found if g is not None))
    out: dict[MarginalQuery, None] = {}
    for others in combinations(numerics, order - 1):
        clique = domain.canonical((*others, label))
        columns = [cuts.get(a, [None]) for a in clique]
        for grouping in product(*columns):
            out[MarginalQuery(clique, tuple(grouping))] = None
    return list(out)


def _cut_of(grouping: Grouping | None, bins: int) -> int | None:
    """The bin edge a two-group grouping cuts at (``None``: not a cut in two)."""
    if grouping is None:
        return None
    base = grouping[:bins]
    cut = sum(1 for g in base if g == 0)
    if not 0 < cut < bins or base != cut_in_two(bins, cut):
        return None
    return cut


def parity_neighbours(
    measured: Iterable[MarginalQuery], numeric: Mapping[str, int], reach: int
) -> list[MarginalQuery]:
    """Every measured query whose numerics are each cut in two (a parity clique) with one
    column's cut moved by 1 to ``reach`` bin edges either way (public: the released
    picks and the bins).

    The parity candidates cut at a few released quantiles, and a draw among them lands
    near the cuts where the label's parity changes, rarely on them: a cut one bin off
    leaves a twentieth of the rows with the wrong label in every column it misses. The
    model refitted to a near cut is wrong exactly between it and the true one, so the
    next rounds can move each cut there.
    """
    out: dict[MarginalQuery, None] = {}
    for query in measured:
        if not query.coarse or query.groups is None:
            continue
        cuts = {
            a: _cut_of(g, numeric[a])
            for a, g in zip(query.clique, query.groups, strict=True)
            if a in numeric
        }
        if len(cuts) < 2 or any(c is None for c in cuts.values()):
            continue
        for k, a in enumerate(query.clique):
            cut = cuts.get(a)
            if cut is None:
                continue
            bins, grouping = numeric[a], query.groups[k]
            assert grouping is not None
            for step in (*range(-reach, 0), *range(1, reach + 1)):
                moved = split_at(grouping, bins, cut + step)
                if moved is not None:
                    groups = (*query.groups[:k], moved, *query.groups[k + 1 :])
                    out[MarginalQuery(query.clique, groups)] = None
    return list(out)


def split_at(grouping: Grouping, bins: int, cut: int) -> Grouping | None:
    """``grouping`` (a cut in two of ``bins`` bins, extra cells after them) cut at bin
    edge ``cut`` instead; ``None`` at an end of the range."""
    if not 0 < cut < bins:
        return None
    return cut_in_two(bins, cut) + tuple(grouping[bins:])


def coarse_candidates(
    domain: Domain,
    selected: Iterable[Clique],
    label: str | None,
    numeric: Mapping[str, int],
    groups: Sequence[int],
    max_order: int,
    all_limit: int = 0,
    splits: Sequence[float] = (),
) -> list[MarginalQuery]:
    """Coarse label cliques (public): the label with every pair of other columns, and
    with every selected clique of 2 or more columns grown by one column, up to
    ``max_order`` columns, holding at least one numeric; each numeric (``numeric`` maps
    its name to its bins) at each number of ``groups`` and cut in two at each of
    ``splits`` (fractions of the declared range; one grouping for all the clique's
    numerics), other columns at full resolution.

    When the label's cliques of ``max_order`` columns whose other columns are all
    numeric number at most ``all_limit`` (``C(k, max_order - 1)`` of the ``k`` numerics:
    public), all of them are proposed from the first round: a parity of signs shows in
    no smaller marginal, so the selection cannot grow towards it.

    Linear in the selected cliques times ``d`` plus ``C(d, 2)`` (and at most
    ``all_limit`` more): never all ``C(d, 3)``.
    """
    if label is None or not (groups or splits) or max_order < 3:
        return []
    names = [a for a in domain.names if a != label]
    bases: dict[Clique, None] = {}
    for pair in combinations(names, 2):
        bases[domain.canonical((*pair, label))] = None
    numerics = [a for a in names if a in numeric]
    if max_order > 3 and math.comb(len(numerics), max_order - 1) <= all_limit:
        for others in combinations(numerics, max_order - 1):
            bases[domain.canonical((*others, label))] = None
    for clique in selected:
        rest = [a for a in clique if a != label]
        if len(rest) < 2 or len(rest) + 2 > max_order:
            continue
        for extra in names:
            if extra not in rest:
                bases[domain.canonical((*rest, extra, label))] = None
    ways: list[Callable[[int, int], Grouping | None]] = [
        *(partial(_even_or_none, groups=g) for g in groups),
        *(partial(split_grouping, at=at) for at in splits),
    ]
    out: dict[MarginalQuery, None] = {}
    for clique in bases:
        if not any(a in numeric for a in clique):
            continue
        for way in ways:
            grouping = tuple(
                way(domain.shape((a,))[0], numeric[a]) if a in numeric else None for a in clique
            )
            if all(g is None for g in grouping):
                continue  # as fine as the bins: the fine candidate already covers it
            out[MarginalQuery(clique, grouping)] = None
    return list(out)


def _even_or_none(cells: int, bins: int, groups: int) -> Grouping | None:
    """:func:`numeric_grouping`, or ``None`` when it would be no coarser than the bins."""
    return numeric_grouping(cells, bins, groups) if groups < bins else None


def coarse_pairs(
    domain: Domain, numeric: Mapping[str, int], groups: Sequence[int]
) -> list[MarginalQuery]:
    """Every pair holding a numeric (``numeric`` maps its name to its bins), each numeric
    at each number of ``groups``: a marginal with fewer cells, so less noise in total,
    for when ``sigma`` is too large for the fine pair (public, ``O(d^2)``)."""
    out: dict[MarginalQuery, None] = {}
    for pair in combinations(domain.names, 2):
        if not any(a in numeric for a in pair):
            continue
        for g in groups:
            if all(g >= numeric[a] for a in pair if a in numeric):
                continue
            grouping = tuple(
                numeric_grouping(domain.shape((a,))[0], numeric[a], g)
                if a in numeric and g < numeric[a]
                else None
                for a in pair
            )
            out[MarginalQuery(pair, grouping)] = None
    return list(out)


def quality(exact: np.ndarray, model: np.ndarray, sigma: float, w: float) -> float:
    """``w (||x - xhat||_1 - sqrt(2/pi) sigma n)`` of one candidate."""
    error = float(np.abs(np.asarray(exact) - np.asarray(model)).sum())
    return w * (error - ABS_NOISE * sigma * exact.size)


Q = TypeVar("Q")


def scores(
    cliques: Sequence[Q],
    exact: Callable[[Q], np.ndarray],
    model: Callable[[Q], np.ndarray],
    weights: Sequence[float],
    sigma: float,
) -> np.ndarray:
    """:func:`quality` of every candidate (private: only a draw from them is released).

    Parameters
    ----------
    cliques
        Public candidates (cliques or queries).
    exact, model
        A candidate's private counts and the current model's counts (same shape; for a
        coarse query both aggregated by its groups).
    weights
        ``w_c`` per candidate (public, positive).
    sigma
        The noise scale the chosen clique will be measured with (public).
    """
    return np.array(
        [quality(exact(c), model(c), sigma, w) for c, w in zip(cliques, weights, strict=True)]
    )


def selection_event(epsilon: float, weights: Sequence[float] | np.ndarray) -> ExponentialEvent:
    """The cost of one draw at ``epsilon`` over candidates of these weights:
    sensitivity ``2 max w_c`` (module docstring), ``epsilon^2 / 8``-zCDP."""
    return ExponentialEvent(epsilon, L1_SENSITIVITY * float(np.max(weights)), label="select")


def draw(values: np.ndarray, event: ExponentialEvent, noise: NoiseSource) -> int:
    """Index drawn with probability proportional to ``exp(epsilon q / (2 Delta))``.

    The raw scores go to the noise source unshifted: subtracting their (private)
    maximum would be one more float path to reason about.
    """
    return noise.noisy_argmax(values, event.scale)


__all__ = [
    "ABS_NOISE",
    "L1_SENSITIVITY",
    "candidates",
    "coarse_candidates",
    "coarse_pairs",
    "cut_in_two",
    "draw",
    "is_parity",
    "numeric_grouping",
    "parity_candidates",
    "parity_neighbours",
    "quality",
    "quantile_split",
    "query_weight",
    "scores",
    "selection_event",
    "split_grouping",
    "weight",
]
