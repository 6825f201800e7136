"""Selection: the candidate set, the score's sensitivity, and an exact DP check.

The exact check computes the exponential mechanism's output distribution over the
candidates on every pair of neighbouring tables of a tiny domain (from the engine's own
counting and scoring code) and compares the privacy loss with the claim: every log
ratio within ``epsilon`` (pure DP), every loss range within ``epsilon`` (bounded
range), and every Renyi divergence within ``alpha epsilon^2 / 8`` (the zCDP charged).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import special

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import MARGINAL_SENSITIVITY, count_marginals
from dpevolve.engine.select import (
    ABS_NOISE,
    L1_SENSITIVITY,
    candidates,
    coarse_candidates,
    coarse_pairs,
    draw,
    scores,
    selection_event,
    split_grouping,
    weight,
)
from dpevolve.measurements import Domain, MarginalQuery
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("x", 0, 3, integer=True),
        CategoricalColumn("c", ("p", "q", "r"), nullable=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
CELLS = list(itertools.product([0, 1, 2, 3], ["p", "q", None], ["0", "1"]))


def test_candidates_are_pairs_and_triples_grown_from_selected_pairs() -> None:
    domain = Domain(tuple(f"a{i}" for i in range(30)), (2,) * 30)
    base = candidates(domain, (), 3)
    assert len(base) == 30 + math.comb(30, 2)
    grown = candidates(domain, [("a1", "a5"), ("a0", "a1", "a2"), ("a3",)], 3)
    triples = [c for c in grown if len(c) == 3]
    assert len(triples) == 28 and all({"a1", "a5"} <= set(c) for c in triples)
    assert candidates(domain, [("a1", "a5")], 2) == base
    assert candidates(domain, [("a0", "a1", "a2")], 3) == base  # no 4-ways at order 3
    fours = [c for c in candidates(domain, [("a0", "a1", "a2")], 4) if len(c) == 4]
    assert len(fours) == 27 and all({"a0", "a1", "a2"} <= set(c) for c in fours)


def test_weights_favour_the_label() -> None:
    assert weight(("a", "b"), "y", 2.0) == 1.0
    assert weight(("a", "y"), "y", 2.0) == 2.0
    assert weight(("a", "b", "y"), "y", 2.0) == 3.0
    assert weight(("a",), None, 2.0) == 0.5
    event = selection_event(0.4, [0.5, 1.0, 3.0])
    assert event.sensitivity == L1_SENSITIVITY * 3.0 and event.scale == pytest.approx(30.0)
    assert event.rho == pytest.approx(0.02)


def _tables():
    """Neighbouring pairs: three fixed records plus one replaced (every cell, boundary
    values of x and the missing category included), and the replaced record dropped."""
    rest = [CELLS[0], CELLS[5], CELLS[11]]
    cols = ["x", "c", "y"]
    for i, j in itertools.combinations(range(len(CELLS)), 2):
        yield (
            pd.DataFrame([*rest, CELLS[i]], columns=cols),
            pd.DataFrame([*rest, CELLS[j]], columns=cols),
            "error",
        )
    for i in range(0, len(CELLS), 5):
        invalid = pd.DataFrame([*rest, (9, "p", "0")], columns=cols)  # x outside [0, 3]
        yield pd.DataFrame([*rest, CELLS[i]], columns=cols), invalid, "drop"


def _log_probabilities(frame, on_invalid, model, pool, weights, sigma, event):
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    exact, _ = count_marginals(FrameSource(frame, SCHEMA, on_invalid=on_invalid), disc, pool)
    values = scores(pool, exact.__getitem__, model.__getitem__, weights, sigma)
    logits = values / event.scale
    return values, logits - special.logsumexp(logits)


def test_the_selection_is_exactly_as_private_as_claimed() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    domain = disc.domain
    pool = candidates(domain, [("x", "y")], 3)
    weights = [weight(c, "y", 2.0) for c in pool]
    rng = np.random.default_rng(0)
    # the model's answers are fixed by earlier releases: any public array will do; cells
    # at 0 and 2 let one replacement move a score by the full 2 w_c
    model = {c: rng.choice([0.0, 2.0], size=domain.shape(c)) for c in pool}
    sigma = 0.3
    epsilon = 2.0
    event = selection_event(epsilon, weights)
    worst_score = worst_ratio = worst_range = 0.0
    alphas = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    worst_renyi = 0.0
    for a, b, on_invalid in _tables():
        qa, la = _log_probabilities(a, "error", model, pool, weights, sigma, event)
        qb, lb = _log_probabilities(b, on_invalid, model, pool, weights, sigma, event)
        worst_score = max(worst_score, float(np.max(np.abs(qa - qb))))
        loss = la - lb
        worst_ratio = max(worst_ratio, float(np.max(np.abs(loss))))
        worst_range = max(worst_range, float(loss.max() - loss.min()))
        for p, q in ((la, lb), (lb, la)):
            renyi = special.logsumexp(alphas[:, None] * p - (alphas[:, None] - 1) * q, axis=1)
            worst_renyi = max(worst_renyi, float(np.max(renyi / (alphas - 1) / alphas)))
    assert worst_score <= event.sensitivity + 1e-9
    assert worst_score == pytest.approx(event.sensitivity)  # the bound is attained
    assert worst_ratio <= epsilon + 1e-9
    assert worst_range <= epsilon + 1e-9
    assert worst_renyi <= event.rho / 1.0 + 1e-12  # D_alpha / alpha <= rho = eps^2 / 8
    assert worst_ratio > 0.2 * epsilon


def test_the_draw_follows_the_exponential_mechanism() -> None:
    values = np.array([0.0, 3.0, 3.5, -10.0])
    event = selection_event(1.0, [1.0])  # scale 4
    noise = SeededNoise(7)
    counts = Counter(draw(values, event, noise) for _ in range(20_000))
    expected = special.softmax(values / event.scale)
    observed = np.array([counts[i] for i in range(4)]) / 20_000
    assert np.allclose(observed, expected, atol=0.012)


def test_quality_subtracts_the_expected_noise() -> None:
    from dpevolve.engine.select import quality

    exact = np.array([[3.0, 1.0], [0.0, 0.0]])
    model = np.array([[1.0, 1.0], [1.0, 1.0]])
    assert quality(exact, model, 2.0, 1.5) == pytest.approx(1.5 * (4.0 - ABS_NOISE * 2.0 * 4))


def _coarse_pool(domain):
    fine = [MarginalQuery(c) for c in candidates(domain, [("x", "c")], 3)]
    coarse = coarse_candidates(domain, [("x", "c")], "y", {"x": 4}, (2, 3), 4, 1, (0.25, 0.75))
    return fine + coarse_pairs(domain, {"x": 4}, (2,)) + coarse


def test_split_grouping_cuts_the_range_in_two_at_a_bin_edge() -> None:
    assert split_grouping(8, 8, 0.625) == (0, 0, 0, 0, 0, 1, 1, 1)
    assert split_grouping(9, 8, 0.25) == (0, 0, 1, 1, 1, 1, 1, 1, 2)  # missing cell apart
    assert split_grouping(8, 8, 0.01) is None and split_grouping(8, 8, 0.99) is None
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    splits = coarse_candidates(disc.domain, [], "y", {"x": 4}, (), 4, 0, (0.25, 0.5, 0.75))
    assert [q.groups[0] for q in splits] == [(0, 1, 1, 1), (0, 0, 1, 1), (0, 0, 0, 1)]
    same = coarse_candidates(disc.domain, [], "y", {"x": 4}, (2,), 4, 0, (0.5,))
    assert len(same) == 1  # the midpoint split is the 2-group query: proposed once


def test_all_label_cliques_of_the_top_order_when_few() -> None:
    names = ("a", "b", "c", "y")
    domain = Domain(names, (20, 20, 20, 2))
    numeric = {a: 20 for a in "abc"}
    grown = coarse_candidates(domain, [], "y", numeric, (2,), 4, 0)
    assert {len(q.clique) for q in grown} == {3}  # a parity of a, b, c is never reached
    every = coarse_candidates(domain, [], "y", numeric, (2,), 4, 1)
    assert {q.clique for q in every if len(q.clique) == 4} == {("a", "b", "c", "y")}
    assert coarse_candidates(domain, [], "y", numeric, (2,), 3, 1) == grown  # order 3
    mixed = coarse_candidates(domain, [], "y", {"a": 20, "b": 20}, (2,), 4, 1)
    assert {len(q.clique) for q in mixed} == {3}  # only cliques of numerics: no c
    wide = Domain((*(f"a{i}" for i in range(40)), "y"), (20,) * 40 + (2,))
    many = coarse_candidates(wide, [], "y", {f"a{i}": 20 for i in range(12)}, (2,), 4, 120)
    assert {len(q.clique) for q in many} == {3}  # C(12, 3) > 120: grown only


def test_coarse_candidates_group_numerics_and_grow_linearly() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    coarse = coarse_candidates(disc.domain, [("x", "c")], "y", {"x": 4}, (2, 3), 4)
    assert {q.clique for q in coarse} == {("x", "c", "y")}
    assert sorted(q.shape(disc.domain) for q in coarse) == [(2, 4, 2), (3, 4, 2)]
    names = (*(f"a{i}" for i in range(40)), "y")
    domain = Domain(names, (20,) * 40 + (2,))
    numeric = {a: 20 for a in names[::3]}
    wide = coarse_candidates(domain, [("a0", "a1"), ("a2", "a3", "y")], "y", numeric, (2, 4), 4)
    pairs_with_numeric = sum(
        any(a in numeric for a in p) for p in itertools.combinations(names[:-1], 2)
    )
    fours = {q.clique for q in wide if len(q.clique) == 4}
    assert len(fours) == 38 + 38  # two selected cliques, each grown by every other column
    assert len(wide) <= 2 * (pairs_with_numeric + len(fours))
    assert all(len(q.clique) <= 4 and "y" in q.clique and q.coarse for q in wide)


def test_coarse_counts_move_by_at_most_the_fine_bound() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    pool = [q for q in _coarse_pool(disc.domain) if q.coarse]
    cliques = list(dict.fromkeys(q.clique for q in pool))
    for a, b, on_invalid in _tables():
        fa, _ = count_marginals(FrameSource(a, SCHEMA), disc, cliques)
        fb, _ = count_marginals(FrameSource(b, SCHEMA, on_invalid=on_invalid), disc, cliques)
        for q in pool:
            diff = (q.project(fa[q.clique]) - q.project(fb[q.clique])).ravel()
            assert np.abs(diff).sum() <= L1_SENSITIVITY
            assert np.linalg.norm(diff) <= MARGINAL_SENSITIVITY + 1e-12


def test_selection_over_coarse_candidates_is_exactly_as_private_as_claimed() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    domain = disc.domain
    pool = _coarse_pool(domain)
    assert any(q.coarse for q in pool)
    weights = [weight(q.clique, "y", 2.0) for q in pool]
    rng = np.random.default_rng(1)
    model = {q: rng.choice([0.0, 2.0], size=q.shape(domain)) for q in pool}
    sigma, epsilon = 0.3, 2.0
    event = selection_event(epsilon, weights)

    def log_probabilities(frame, on_invalid):
        source = FrameSource(frame, SCHEMA, on_invalid=on_invalid)
        fine, _ = count_marginals(source, disc, list(dict.fromkeys(q.clique for q in pool)))
        exact = {q: q.project(fine[q.clique]) for q in pool}
        values = scores(pool, exact.__getitem__, model.__getitem__, weights, sigma)
        logits = values / event.scale
        return values, logits - special.logsumexp(logits)

    worst_score = worst_range = worst_renyi = 0.0
    alphas = np.array([1.5, 2.0, 4.0, 16.0, 64.0])
    for a, b, on_invalid in _tables():
        qa, la = log_probabilities(a, "error")
        qb, lb = log_probabilities(b, on_invalid)
        worst_score = max(worst_score, float(np.max(np.abs(qa - qb))))
        loss = la - lb
        worst_range = max(worst_range, float(loss.max() - loss.min()))
        for p, q in ((la, lb), (lb, la)):
            renyi = special.logsumexp(alphas[:, None] * p - (alphas[:, None] - 1) * q, axis=1)
            worst_renyi = max(worst_renyi, float(np.max(renyi / (alphas - 1) / alphas)))
    assert worst_score <= event.sensitivity + 1e-9
    assert worst_range <= epsilon + 1e-9
    assert worst_renyi <= event.rho + 1e-12
    assert worst_range > 0.2 * epsilon


def test_coarse_pairs_are_the_pairs_holding_a_numeric() -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    pairs = coarse_pairs(disc.domain, {"x": 4}, (2, 4))
    assert [(q.clique, q.shape(disc.domain)) for q in pairs] == [
        (("x", "c"), (2, 4)),
        (("x", "y"), (2, 2)),
    ]  # 4 groups of 4 bins is the fine pair itself
