"""A coarse pair's shape within its groups (docs/engine.md, A pair's shape within its
groups): the bins' association is the one whose grouped table the release fits, the
estimator keeps the tilt inside the groups and the groups' totals as fitted, and on a
Gaussian pair counted exactly the tilt gives back what the groups lose."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineResult, EngineSpec, fit_engine
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.tilt import (
    MOST,
    associations,
    fine_association,
    flag_counts,
    ordered_columns,
    raked,
    rank_correlation,
    tilts,
)
from dpevolve.errors import InputError
from dpevolve.estimate import MarkovRandomField
from dpevolve.estimate.objective import targets
from dpevolve.measurements import Domain, MarginalQuery, Measurement, even_grouping
from dpevolve.privacy import Budget
from dpevolve.privacy.events import GaussianEvent
from dpevolve.privacy.noise import SeededNoise

EVENT = GaussianEvent(1.0, 10.0)


@settings(max_examples=20, deadline=None)
@given(
    phi=st.floats(-6.0, 6.0).filter(lambda x: abs(x) > 0.05),
    bins=st.integers(8, 20),
    count=st.integers(3, 6),
    seed=st.integers(0, 1000),
)
def test_the_bins_association_is_the_one_whose_groups_the_release_shows(
    phi: float, bins: int, count: int, seed: int
) -> None:
    """Made at ``phi`` over random margins and summed into groups: the groups' rank
    correlation is weaker than the bins', and the inverse gives ``phi`` back."""
    rng = np.random.default_rng(seed)
    rows, cols = rng.uniform(20, 200, bins), rng.uniform(20, 200, bins)
    cols *= rows.sum() / cols.sum()
    groups = MarginalQuery(("a", "b"), (even_grouping(bins, count), even_grouping(bins, count)))
    table = raked(phi, rows, cols)
    seen = rank_correlation(groups.project(table))
    assert 0 < abs(seen) < abs(rank_correlation(table))
    assert fine_association(seen, rows, cols, groups) == pytest.approx(phi, abs=0.02)


def test_no_relation_no_tilt_and_the_strongest_is_bounded() -> None:
    rows = np.full(10, 100.0)
    groups = MarginalQuery(("a", "b"), (even_grouping(10, 4), even_grouping(10, 4)))
    assert fine_association(0.0, rows, rows, groups) == 0.0
    assert fine_association(1.0, rows, rows, groups) == MOST
    assert fine_association(-1.0, rows, rows, groups) == -MOST


def _one_tilt(
    measurement: Measurement, values: dict[str, int], counts: Callable[[str], np.ndarray]
) -> np.ndarray | None:
    return tilts([measurement], values, counts)[0]


def _pair(a: int, b: int, groups: int, noisy: np.ndarray) -> Measurement:
    query = MarginalQuery(("a", "b"), (even_grouping(a, groups), even_grouping(b, groups)))
    return Measurement(query, noisy, 10.0, EVENT)


def test_the_tilt_lies_on_the_value_cells_of_coarse_pairs_of_numbers() -> None:
    """A nullable column's missing cell (after its value bins) carries none; a fine
    pair, a pair with a categorical and a pair in one group get no tilt."""
    counts = {"a": np.linspace(50, 150, 8), "b": np.linspace(150, 50, 6)}
    release = 100 * np.exp(np.outer(np.arange(4.0) - 1.5, np.arange(3.0) - 1.0))
    query = MarginalQuery(("a", "b"), (even_grouping(8, 4), (*even_grouping(6, 3)[:5], 2, 3)))
    padded = np.zeros((4, 4))
    padded[:, :3] = release
    tilt = _one_tilt(Measurement(query, padded, 10.0, EVENT), {"a": 8, "b": 6}, counts.get)
    assert tilt is not None and tilt.shape == (8, 7)
    assert np.all(tilt[:, 6] == 0) and np.all(np.diff(tilt[-1, :6]) > 0)
    fine = Measurement(MarginalQuery(("a", "b")), np.ones((8, 6)), 10.0, EVENT)
    assert _one_tilt(fine, {"a": 8, "b": 6}, counts.get) is None
    assert _one_tilt(_pair(8, 6, 3, release[:3]), {"a": 8}, counts.get) is None
    one = MarginalQuery(("a", "b"), ((0,) * 8, even_grouping(6, 3)))
    lone = Measurement(one, np.ones((1, 3)), 10.0, EVENT)
    assert _one_tilt(lone, {"a": 8, "b": 6}, counts.get) is None


def _triple(table: np.ndarray, groups: int, sigma: float) -> Measurement:
    """A pair of numbers with a flag (``c``, two cells) in ``groups`` groups each."""
    bins = table.shape[0]
    grouping = even_grouping(bins, groups)
    query = MarginalQuery(("a", "b", "c"), (grouping, grouping, None))
    return Measurement(query, query.project(table), sigma, EVENT)


def test_a_pair_of_numbers_within_a_larger_clique_is_tilted_across_its_other_columns() -> None:
    """A triple of two grouped numbers and a flag: the pair's tilt lies on its value
    cells, the same for each value of the flag, and is the tilt the pair's own release
    (the triple summed over the flag) would carry."""
    pair = _gaussian_counts(0.8, 12)
    table = np.stack([0.4 * pair, 0.6 * pair], axis=-1)
    counts = {"a": pair.sum(1), "b": pair.sum(0)}
    values = {"a": 12, "b": 12}
    (tilt,) = tilts([_triple(table, 4, 10.0)], values, counts.get)
    assert tilt is not None and tilt.shape == (12, 12, 2)
    assert np.array_equal(tilt[..., 0], tilt[..., 1]) and tilt[-1, -1, 0] > 0
    alone = Measurement(_pair(12, 12, 4, np.zeros((4, 4))).query, np.zeros((4, 4)), 1.0, EVENT)
    alone = Measurement(alone.query, alone.query.project(pair), 10.0 * np.sqrt(2), EVENT)
    (own,) = tilts([alone], values, counts.get)
    assert own is not None and np.allclose(tilt[..., 0], own)
    flag = MarginalQuery(("a", "c"), (even_grouping(12, 4), None))
    with_flag = Measurement(flag, flag.project(table.sum(1)), 10.0, EVENT)
    assert tilts([with_flag], values, counts.get) == [None]


@settings(max_examples=15, deadline=None)
@given(
    sigmas=st.lists(st.floats(2.0, 60.0), min_size=2, max_size=4),
    rho=st.floats(-0.9, 0.9).filter(lambda x: abs(x) > 0.2),
)
def test_a_pair_held_by_several_releases_carries_one_tilt_of_their_weighted_association(
    sigmas: list[float], rho: float
) -> None:
    """The estimator adds every tilt it is given, so a pair held coarse by several
    releases (its own, in a triple, repeated) has one tilt, on the most precise release,
    at the precision-weighted mean of the releases' associations."""
    pair = _gaussian_counts(rho, 10)
    table = np.stack([0.5 * pair, 0.5 * pair], axis=-1)
    counts = {"a": pair.sum(1), "b": pair.sum(0)}
    values = {"a": 10, "b": 10}
    noise = np.random.default_rng(int(1000 * rho) % 97)
    releases = []
    for k, sigma in enumerate(sigmas):
        made = _triple(table, 3 + k % 3, sigma) if k % 2 else _pair(10, 10, 3 + k % 3, pair)
        exact = made.query.project(table if k % 2 else pair)
        releases.append(
            Measurement(made.query, exact + noise.normal(0, sigma, exact.shape), sigma, EVENT)
        )
    carried = tilts(releases, values, counts.get)
    found = [associations(m, values, counts.get) for m in releases]
    precision = np.array([f[0].precision for f in found])
    assert [t is not None for t in carried] == [
        k == int(np.argmax(precision)) for k in range(len(releases))
    ]
    (tilt,) = [t for t in carried if t is not None]
    mean = float(np.dot(precision, [f[0].fine for f in found]) / precision.sum())
    scores = found[int(np.argmax(precision))][0].scores
    assert np.allclose(tilt.reshape(10, 10, -1)[..., 0], mean * np.outer(*scores))


def test_targets_carry_the_precision_weighted_tilt_and_check_its_shape() -> None:
    domain = Domain(("a", "b"), (4, 4))
    query = MarginalQuery(("a", "b"), (even_grouping(4, 2), even_grouping(4, 2)))
    ones = np.ones((2, 2))
    tilt = np.arange(16.0).reshape(4, 4)
    loud = Measurement(query, ones, 20.0, EVENT, tilt=tilt)
    quiet = Measurement(query, ones, 10.0, EVENT, tilt=3 * tilt)
    plain = Measurement(query, ones, 10.0, EVENT)
    (goal,) = targets(domain, [loud, quiet, plain])
    assert goal.tilt is not None
    assert np.allclose(goal.tilt, (tilt / 400 + 3 * tilt / 100) / (1 / 400 + 1 / 100))
    assert targets(domain, [plain])[0].tilt is None
    with pytest.raises(InputError, match="tilt"):
        targets(domain, [Measurement(query, ones, 10.0, EVENT, tilt=np.ones((2, 2)))])


def _gaussian_counts(rho: float, bins: int) -> np.ndarray:
    """Exact counts of 100,000 Gaussian-copula rows in ``bins`` quantile bins each."""
    z = np.random.default_rng(3).multivariate_normal([0, 0], [[1, rho], [rho, 1]], 100_000)
    cells = np.minimum((norm.cdf(z) * bins).astype(int), bins - 1)
    table = np.zeros((bins, bins))
    np.add.at(table, (cells[:, 0], cells[:, 1]), 1)
    return table


def _fitted(table: np.ndarray, groups: int, tilted: bool) -> np.ndarray:
    """The model fitted to the exact 1-ways and the exact grouped pair."""
    bins = table.shape[0]
    domain = Domain(("a", "b"), (bins, bins))
    pair = _pair(bins, bins, groups, np.zeros((groups, groups)))
    pair = Measurement(pair.query, pair.query.project(table), 1.0, EVENT)
    if tilted:
        released = {"a": table.sum(1), "b": table.sum(0)}
        pair = Measurement(
            pair.query,
            pair.noisy,
            1.0,
            EVENT,
            tilt=_one_tilt(pair, {"a": bins, "b": bins}, released.get),
        )
    ones = [
        Measurement(MarginalQuery(("a",)), table.sum(1), 1.0, EVENT),
        Measurement(MarginalQuery(("b",)), table.sum(0), 1.0, EVENT),
    ]
    model = MarkovRandomField(domain, table.sum(), iterations=3000, tol=0.0)
    model.fit([*ones, pair])
    return np.asarray(model.answer(("a", "b")))


@pytest.mark.parametrize("rho", [0.6, 0.9])
def test_the_estimator_keeps_the_tilt_within_groups_and_their_totals(rho: float) -> None:
    """Exact counts of a Gaussian pair, 5 x 5 groups of 20 x 20 bins: the groups alone
    lose over 0.02 of the rank correlation; with the tilt the loss is within 0.015, and
    the groups' totals are the release's either way."""
    table = _gaussian_counts(rho, 20)
    query = _pair(20, 20, 5, np.zeros((5, 5))).query
    truth = rank_correlation(table)
    plain, tilted = _fitted(table, 5, False), _fitted(table, 5, True)
    for answer in (plain, tilted):
        assert np.abs(query.project(answer) - query.project(table)).max() < 0.01 * table.sum() / 25
    assert truth - rank_correlation(plain) > 0.02
    assert abs(rank_correlation(tilted) - truth) < 0.015


def test_the_estimator_keeps_a_triples_tilt_within_its_groups() -> None:
    """Exact counts of a Gaussian pair (rank correlation 0.78) with a flag, released
    as a triple in 5 x 5 groups: the tilt brings the model's pair within 0.015 of it."""
    pair = _gaussian_counts(0.8, 20)
    table = np.stack([0.3 * pair, 0.7 * pair], axis=-1)
    triple = _triple(table, 5, 1.0)
    released = {"a": pair.sum(1), "b": pair.sum(0)}
    ones = [
        Measurement(MarginalQuery((name,)), table.sum(axis=axes), 1.0, EVENT)
        for name, axes in (("a", (1, 2)), ("b", (0, 2)), ("c", (0, 1)))
    ]
    (tilt,) = tilts([triple], {"a": 20, "b": 20}, released.get)
    answers = []
    for measured in (triple, Measurement(triple.query, triple.noisy, 1.0, EVENT, tilt=tilt)):
        domain = Domain(("a", "b", "c"), (20, 20, 2))
        model = MarkovRandomField(domain, table.sum(), iterations=3000, tol=0.0)
        model.fit([*ones, measured])
        answers.append(rank_correlation(np.asarray(model.answer(("a", "b")))))
    truth = rank_correlation(pair)
    assert truth - answers[0] > 0.02 and abs(answers[1] - truth) < 0.015


def test_a_flag_with_a_number_in_groups_keeps_its_trend_within_them() -> None:
    """A flag whose log-odds rise along a number (exact counts, 20 bins in 4 groups):
    the groups alone hold the flag's share flat within each group; the tilt of the
    number against the flag's two cells brings the rank correlation back within 0.01,
    the groups' totals kept."""
    x = np.linspace(-2, 2, 20)
    rows = 500 * np.exp(-(x**2) / 2)
    share = 1 / (1 + np.exp(-1.5 * x))
    table = np.stack([rows * (1 - share), rows * share], axis=-1)
    query = MarginalQuery(("a", "y"), (even_grouping(20, 4), None))
    pair = Measurement(query, query.project(table), 1.0, EVENT)
    counts = {"a": table.sum(1), "y": flag_counts("y", [pair])}
    (tilt,) = tilts([pair], {"a": 20, "y": 2}, counts.get)
    assert tilt is not None and tilt.shape == (20, 2)
    ones = [
        Measurement(MarginalQuery(("a",)), table.sum(1), 1.0, EVENT),
        Measurement(MarginalQuery(("y",)), table.sum(0), 1.0, EVENT),
    ]
    answers = []
    for measured in (pair, Measurement(query, pair.noisy, 1.0, EVENT, tilt=tilt)):
        model = MarkovRandomField(
            Domain(("a", "y"), (20, 2)), table.sum(), iterations=3000, tol=0.0
        )
        model.fit([*ones, measured])
        answer = np.asarray(model.answer(("a", "y")))
        assert np.abs(query.project(answer) - pair.noisy).max() < 0.01 * table.sum() / 8
        answers.append(rank_correlation(answer))
    truth = rank_correlation(table)
    assert truth - answers[0] > 0.02 and abs(answers[1] - truth) < 0.01


def test_the_ordered_columns_are_the_numbers_and_the_flags() -> None:
    """On the label tree's tables, a category of two values and no missing cell is
    ordered as its two cells; one of three values, or a flag with a missing cell, is
    not; elsewhere only the numbers are (on the suite's tables the flags' tilt cost
    TSTR: docs/engine.md). A flag's counts combine every release holding it by
    precision."""
    schema = Schema(
        (
            NumericColumn("u", 0, 10),
            CategoricalColumn("f", ("0", "1")),
            CategoricalColumn("g", ("a", "b", "c")),
            CategoricalColumn("h", ("0", "1"), nullable=True),
        )
    )
    discretiser = Discretiser(schema, bins=8)
    assert ordered_columns(discretiser, flags=True) == {"u": 8, "f": 2}
    assert ordered_columns(discretiser) == {"u": 8}
    one = Measurement(MarginalQuery(("f",)), np.array([30.0, 70.0]), 1.0, EVENT)
    two = Measurement(
        MarginalQuery(("f", "g")), np.array([[10.0, 10, 20], [20, 20, 20]]), 2.0, EVENT
    )
    expected = (np.array([30.0, 70.0]) / 1 + np.array([40.0, 60.0]) / (4 * 3)) / (1 + 1 / 12)
    assert np.allclose(flag_counts("f", [one, two]), expected)
    assert np.array_equal(flag_counts("f", []), np.ones(2))


def _run(tilt: bool) -> tuple[EngineResult, float]:
    """A seeded run on a pair of rank correlation 0.89 and its Spearman error."""
    rng = np.random.default_rng(11)
    z = rng.multivariate_normal([0, 0], [[1, 0.9], [0.9, 1]], 3000)
    frame = pd.DataFrame(
        {
            "u": np.clip(50 + 15 * z[:, 0], 0, 100),
            "v": np.clip(50 + 15 * z[:, 1], 0, 100),
            "y": np.where(z[:, 0] + rng.normal(size=3000) > 0, "1", "0"),
        }
    )
    schema = Schema(
        (
            NumericColumn("u", 0, 100),
            NumericColumn("v", 0, 100),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    result = fit_engine(
        FrameSource(frame, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(pe_share=0.0, pair_tilt=tilt),
        noise=SeededNoise(0),
        rng=np.random.default_rng(0),
    )
    fake = result.sample(3000, np.random.default_rng(1))
    real = frame[["u", "v"]].corr("spearman").iloc[0, 1]
    return result, abs(fake[["u", "v"]].corr("spearman").iloc[0, 1] - real)


def test_a_seeded_run_keeps_more_of_a_strong_pair_and_releases_the_same() -> None:
    """Seeded twin, same noise: the tilt is post-processing of the last fits, so the
    releases and the ledger are the same with and without it; a pair of rank
    correlation 0.89 measured in groups comes closer with it."""
    (on, error_on), (off, error_off) = _run(True), _run(False)
    released_on, released_off = on.measurements.marginals(), off.measurements.marginals()
    assert any(m.coarse and m.clique == ("u", "v") for m in released_on)
    assert [m.query for m in released_on] == [m.query for m in released_off]
    assert all(
        np.array_equal(a.noisy, b.noisy) for a, b in zip(released_on, released_off, strict=True)
    )
    assert on.ledger.to_dict()["events"] == off.ledger.to_dict()["events"]
    assert error_on < error_off - 0.01
