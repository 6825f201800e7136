"""Association shrinkage of a released pair of numbers (docs/engine.md, Relations
between numbers): the fit recovers a table the model holds exactly, the shrinkage keeps
a table the model cannot explain, and on noisy strong relations it removes the bias that
clipping leaves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import seeded_fit

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.engine.association import (
    association_fit,
    midrank_scores,
    shrink_pair,
    shrunk,
    value_cells,
)
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy.events import GaussianEvent


def _model_table(rows: int, cols: int, phi: float, total: float = 5000.0) -> np.ndarray:
    """A linear-by-linear table raked to uniform margins, so that its own margins'
    scores are the ones it was made with (the fit's own family)."""
    u = midrank_scores(np.ones(rows))
    v = midrank_scores(np.ones(cols))
    cells = np.exp(phi * np.outer(u, v))
    for _ in range(200):
        cells /= cells.sum(axis=1, keepdims=True) * rows
        cells /= cells.sum(axis=0, keepdims=True) * cols
    return total * cells / cells.sum()


def _spearman(table: np.ndarray) -> float:
    p = np.clip(table, 0.0, None)
    p = p / p.sum()
    u, v = midrank_scores(p.sum(1)), midrank_scores(p.sum(0))
    return float((p * np.outer(u, v)).sum())


def test_scores_are_centred_and_scaled() -> None:
    margin = np.array([5.0, 1.0, 0.0, 3.0])
    scores = midrank_scores(margin)
    mass = margin / margin.sum()
    assert abs(float((mass * scores).sum())) < 1e-6
    assert float((mass * scores**2).sum()) == pytest.approx(1.0, rel=1e-6)
    assert np.all(np.diff(scores) >= 0)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(3, 7),
    cols=st.integers(3, 7),
    phi=st.floats(-1.5, 1.5),
)
def test_fit_recovers_its_own_family(rows: int, cols: int, phi: float) -> None:
    table = _model_table(rows, cols, phi)
    assert np.allclose(association_fit(table), table, rtol=1e-3, atol=1e-2)
    # noiseless: the residual is zero, the table is the fit
    assert np.allclose(shrink_pair(table, 20.0, (rows, cols)), table, atol=1e-2)


# A coarse pair of the shapes benchmark (column 90% missing against one with outliers):
# most of its value cells noise, seven of them below zero.
BELOW_ZERO = np.array(
    [
        [84.3, 126.7, 83.9, -24.5, -68.6],
        [28.7, -59.9, -4.0, -80.8, -122.5],
        [-0.1, 153.0, 15.8, -14.1, 21.1],
        [15.0, 38.0, -60.4, 34.6, -1.6],
    ]
)


def test_a_fit_whose_cells_the_noise_sent_below_zero_moves_with_its_release_alone() -> None:
    """Unridged, the cells' parameters ran off to -80,000 and the solver stopped in a
    flat valley where its path (the last bits of sums that vary with where numpy's
    temporaries lie in memory) decided: a one-bit change of a released cell moved the
    fit by 0.01, and two runs of one seed drew different rows. Now the fit converges:
    a last-bit change of any cell moves it by under 1e-9 counts; every cell is finite
    and non-negative, the heaviest near the release's."""
    fit = association_fit(BELOW_ZERO)
    for cell in np.ndindex(BELOW_ZERO.shape):
        nudged = BELOW_ZERO.copy()
        nudged[cell] = np.nextafter(nudged[cell], np.inf)
        assert np.abs(association_fit(nudged) - fit).max() < 1e-9, cell
    assert np.all(np.isfinite(fit)) and np.all(fit >= 0.0)
    assert fit[0, :3].sum() == pytest.approx(BELOW_ZERO[0, :3].sum(), rel=0.2)


def test_a_table_of_another_shape_stands() -> None:
    """A U-shaped relation (no rank order) far above the noise is released as is."""
    u = np.linspace(-1, 1, 6)
    table = 400.0 * np.exp(-4.0 * (u[:, None] ** 2 - u[None, :]) ** 2)
    out = shrink_pair(table, 1.0, (6, 6))
    assert np.abs(out - table).max() < 0.05 * table.max()


def test_the_missing_cells_stay_as_released() -> None:
    rng = np.random.default_rng(0)
    table = _model_table(5, 4, 1.0) + rng.normal(0, 20.0, (5, 4))
    padded = np.zeros((6, 5))
    padded[:5, :4] = table
    padded[5, :] = rng.normal(50, 20, 5)
    padded[:, 4] = rng.normal(50, 20, 6)
    out = shrink_pair(padded, 20.0, (5, 4))
    assert np.array_equal(out[5, :], padded[5, :])
    assert np.array_equal(out[:, 4], padded[:, 4])
    assert not np.allclose(out[:5, :4], table)


def test_too_small_a_table_is_released_as_is() -> None:
    table = np.array([[10.0, -3.0], [2.0, 40.0]])
    assert np.array_equal(shrink_pair(table, 5.0, (2, 2)), table)


def test_strong_relations_keep_their_rank_order_under_noise() -> None:
    """Seeded twin of a release: 6 x 6 quantile groups of a Gaussian pair (rho 0.9,
    2,400 rows) at sigma 24 (catholic's relations phase). Clipping the noisy counts loses
    about 0.1 of Spearman on average; the shrunk table stays within 0.05."""
    rng = np.random.default_rng(3)
    z = rng.multivariate_normal([0, 0], [[1, 0.9], [0.9, 1]], 2400)
    cuts = np.linspace(0, 1, 7)[1:-1]
    a = np.searchsorted(np.quantile(z[:, 0], cuts), z[:, 0])
    b = np.searchsorted(np.quantile(z[:, 1], cuts), z[:, 1])
    table = np.zeros((6, 6))
    np.add.at(table, (a, b), 1)
    truth = _spearman(table)
    clipped, kept = [], []
    for _ in range(30):
        noisy = table + rng.normal(0, 24.0, table.shape)
        clipped.append(_spearman(noisy))
        kept.append(_spearman(shrink_pair(noisy, 24.0, (6, 6))))
    assert truth - np.mean(clipped) > 0.07
    assert abs(truth - np.mean(kept)) < 0.05


def _measurement(query: MarginalQuery, noisy: np.ndarray) -> Measurement:
    return Measurement(query, noisy, 20.0, GaussianEvent(np.sqrt(2), 20.0, discrete=True))


def test_value_cells_read_the_groups() -> None:
    values = {"a": 6, "b": 6}
    fine = MarginalQuery(("a", "b"))
    grouped = MarginalQuery(("a", "b"), ((0, 0, 1, 1, 2, 2, 3), None))
    assert value_cells(fine, values) == (6, 6)
    assert value_cells(grouped, values) == (3, 6)
    assert value_cells(MarginalQuery(("a", "y")), values) is None


def test_only_coarse_pairs_of_numbers_are_shrunk() -> None:
    rng = np.random.default_rng(1)
    noisy = _model_table(6, 6, 1.2) + rng.normal(0, 20.0, (6, 6))
    values = {"a": 7, "b": 6}
    grouped = ((0, 0, 1, 2, 3, 4, 5), None)
    pair = _measurement(MarginalQuery(("a", "b"), grouped), noisy)
    seen = shrunk(pair, values)
    assert seen.sigma == pair.sigma and seen.event is pair.event
    assert not np.allclose(seen.noisy, noisy)
    assert np.array_equal(pair.noisy, noisy)  # the release itself is untouched
    label = _measurement(MarginalQuery(("a", "y"), grouped), noisy)
    fine = _measurement(MarginalQuery(("b", "c")), noisy)
    assert shrunk(label, values) is label
    assert shrunk(fine, {"b": 6, "c": 6}) is fine


def _run(shrink: bool):
    rng = np.random.default_rng(5)
    base = rng.normal(size=3000)
    frame = pd.DataFrame(
        {
            "u": np.clip(50 + 10 * base + 3 * rng.normal(size=3000), 0, 100),
            "v": np.clip(50 + 10 * base + 3 * rng.normal(size=3000), 0, 100),
            "y": (rng.random(3000) < 0.5).astype(int).astype(str),
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
    spec = EngineSpec(rounds=2, pe_share=0.0, final_iters=100, pair_shrinkage=shrink)
    return seeded_fit(frame, schema, 0, 0, spec=spec)


def test_the_estimator_sees_the_shrunk_pair_the_ledger_the_release() -> None:
    """Same noise, with and without ``pair_shrinkage``: the relations phase's release
    (made before any pair is fitted) is the same array in both runs' measurement lists
    and ledgers, and the model fitted to the shrunk pair answers it differently."""
    on, off = _run(True), _run(False)

    def first_pair(result):
        return next(m for m in result.measurements.marginals() if m.clique == ("u", "v"))

    a, b = first_pair(on), first_pair(off)
    assert a.query == b.query and np.array_equal(a.noisy, b.noisy)
    events = [e for e in on.ledger.to_dict()["events"] if e.get("stage") == "relations"]
    assert events == [e for e in off.ledger.to_dict()["events"] if e.get("stage") == "relations"]
    model_on = np.asarray(on.model.answer(("u", "v")))
    model_off = np.asarray(off.model.answer(("u", "v")))
    assert np.abs(model_on - model_off).max() > 1.0
