"""A coarse pair's shape within its groups (docs/engine.md, A pair's shape within its
groups): the bins' association is the one whose grouped table the release fits, the
estimator keeps the tilt inside the groups and the groups' totals as fitted, and on a
Gaussian pair counted exactly the tilt gives back what the groups lose."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineResult, EngineSpec, fit_engine
from dpevolve.engine.tilt import MOST, fine_association, pair_tilt, raked, rank_correlation
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
    tilt = pair_tilt(Measurement(query, padded, 10.0, EVENT), {"a": 8, "b": 6}, counts.get)
    assert tilt is not None and tilt.shape == (8, 7)
    assert np.all(tilt[:, 6] == 0) and np.all(np.diff(tilt[-1, :6]) > 0)
    fine = Measurement(MarginalQuery(("a", "b")), np.ones((8, 6)), 10.0, EVENT)
    assert pair_tilt(fine, {"a": 8, "b": 6}, counts.get) is None
    assert pair_tilt(_pair(8, 6, 3, release[:3]), {"a": 8}, counts.get) is None
    one = MarginalQuery(("a", "b"), ((0,) * 8, even_grouping(6, 3)))
    lone = Measurement(one, np.ones((1, 3)), 10.0, EVENT)
    assert pair_tilt(lone, {"a": 8, "b": 6}, counts.get) is None


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
            tilt=pair_tilt(pair, {"a": bins, "b": bins}, released.get),
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
