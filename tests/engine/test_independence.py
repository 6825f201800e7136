"""A label's released pair denoised toward independence (docs/engine.md, The label's
pairs and their noise): a table of no relation is read as noise, the shrinkage keeps
the release's margins and a relation standing out of its noise, it
brings a noisy table of no relation closer to its truth, and the engine's ledger keeps
the release as made while the estimator sees the shrunk pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import seeded_fit

from dpevolve.data.schema import CategoricalColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.engine.independence import independence_shrink, label_shrunk
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy.events import GaussianEvent


def _independent(rows: np.ndarray, cols: np.ndarray, total: float) -> np.ndarray:
    return total * np.outer(rows / rows.sum(), cols / cols.sum())


def _residual(table: np.ndarray) -> np.ndarray:
    return table - np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()


def test_no_relation_at_even_margins_is_read_as_noise() -> None:
    """Independent tables of even margins at a small table's noise (seeded draws): the
    factor is 0 on most and averages under 0.25, where a table of a 5% flag against a
    10% outcome keeps more (its residual holds three times the noise: docstring)."""
    rng = np.random.default_rng(0)

    def keeps(truth: np.ndarray) -> np.ndarray:
        out = []
        for _ in range(500):
            noisy = truth + rng.normal(0.0, 70.0, truth.shape)
            before, after = _residual(noisy), _residual(independence_shrink(noisy, 70.0))
            out.append(float((after * before).sum() / (before**2).sum()))
        return np.array(out)

    even = keeps(_independent(np.ones(5), np.array([50.0, 50.0]), 2200.0))
    skewed = keeps(_independent(np.array([5.0, 95.0]), np.array([10.0, 90.0]), 2200.0))
    assert np.mean(np.abs(even) < 1e-9) > 0.5 and even.mean() < 0.25
    assert skewed.mean() > even.mean() + 0.1


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 6),
    st.integers(2, 6),
    st.floats(1.0, 200.0),
    st.integers(0, 2**32 - 1),
)
def test_margins_kept_and_the_residual_only_shrinks(
    rows: int, cols: int, sigma: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    noisy = rng.uniform(0, 300, (rows, cols)) + rng.normal(0, sigma, (rows, cols))
    if noisy.sum() <= 0:
        return
    out = independence_shrink(noisy, sigma)
    np.testing.assert_allclose(out.sum(axis=0), noisy.sum(axis=0), atol=1e-8)
    np.testing.assert_allclose(out.sum(axis=1), noisy.sum(axis=1), atol=1e-8)
    before, after = _residual(noisy), _residual(out)
    keep = float((after * before).sum() / (before**2).sum())
    assert -1e-9 <= keep <= 1 + 1e-9
    np.testing.assert_allclose(after, keep * before, atol=1e-6 * max(1.0, np.abs(noisy).max()))


def test_a_rule_well_out_of_its_noise_stands() -> None:
    """A rule at an atom (the label is yes exactly where the value is 0) at noise 10 on
    500 rows a cell keeps at least 99% of its residual."""
    rng = np.random.default_rng(1)
    noisy = np.array([[500.0, 0.0], [0.0, 500.0]]) + rng.normal(0, 10.0, (2, 2))
    out = independence_shrink(noisy, 10.0)
    assert np.abs(out - noisy).max() < 0.01 * 500


def test_no_relation_comes_closer_to_its_truth() -> None:
    """Tables of no relation (a 40% flag against a 45% outcome, five groups against it)
    at the noise of a small table's pair: the shrunk tables' squared error to the truth
    is at most half the releases' on average (seeded draws)."""
    rng = np.random.default_rng(2)
    for truth in (
        _independent(np.array([40.0, 60.0]), np.array([55.0, 45.0]), 2237.0),
        _independent(np.ones(5), np.array([55.0, 45.0]), 2237.0),
    ):
        raw, shrunk = [], []
        for _ in range(400):
            noisy = truth + rng.normal(0, 73.6, truth.shape)
            raw.append(((_residual(noisy) - _residual(truth)) ** 2).sum())
            shrunk.append(((_residual(independence_shrink(noisy, 73.6)) - 0.0) ** 2).sum())
        assert np.mean(shrunk) < 0.5 * np.mean(raw)


def _measurement(query: MarginalQuery, noisy: np.ndarray) -> Measurement:
    noisy.setflags(write=False)
    return Measurement(query, noisy, 50.0, GaussianEvent(np.sqrt(2), 50.0, discrete=True))


def test_only_the_labels_pairs_are_shrunk() -> None:
    """A pair of the label and a category, or a number in groups, is shrunk; a number
    at its bins, another pair, a triple, a parity's answer and a table with no label
    are not."""
    table = np.array([[110.0, 90.0], [95.0, 105.0]])
    pair = _measurement(MarginalQuery(("x", "y")), table.copy())
    grouped = _measurement(MarginalQuery(("u", "y"), groups=((0, 0, 1, 1), None)), table.copy())
    fine = _measurement(MarginalQuery(("u", "y")), table.copy())
    other = _measurement(MarginalQuery(("x", "z")), table.copy())
    triple = _measurement(MarginalQuery(("x", "z", "y")), np.ones((2, 2, 2)))
    parity = _measurement(MarginalQuery(("x", "y")), np.array([200.0, 200.0]))
    for kept in (pair, grouped):
        shrunk = label_shrunk(kept, "y", ("u",))
        assert not np.array_equal(shrunk.noisy, kept.noisy) and not shrunk.noisy.flags.writeable
        assert shrunk.query == kept.query and shrunk.sigma == kept.sigma
    for left in (fine, other, triple, parity):
        assert label_shrunk(left, "y", ("u",)) is left
    assert label_shrunk(pair, None, ()) is pair


def _run(shrink: bool):
    """A label that follows ``a`` (P(yes) 0.8 against 0.2) and ignores ``b``, ``c``."""
    rng = np.random.default_rng(3)
    n = 2000
    a = rng.random(n) < 0.5
    frame = pd.DataFrame(
        {
            "a": a.astype(int).astype(str),
            "b": rng.choice(["p", "q", "r"], n),
            "c": (rng.random(n) < 0.3).astype(int).astype(str),
            "y": (rng.random(n) < np.where(a, 0.8, 0.2)).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            CategoricalColumn("a", ("0", "1")),
            CategoricalColumn("b", ("p", "q", "r")),
            CategoricalColumn("c", ("0", "1")),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    spec = EngineSpec(rounds=2, pe_share=0.0, final_iters=200, label_shrinkage=shrink)
    return seeded_fit(frame, schema, 0, 0, epsilon=0.3, spec=spec)


def _dependence(result, column: str) -> float:
    """The largest gap between P(y = 1 | column) and P(y = 1) in the model."""
    joint = np.clip(np.asarray(result.model.answer(tuple(sorted((column, "y"))))), 0, None)
    joint = joint if sorted((column, "y"))[0] == column else joint.T
    given = joint[:, 1] / joint.sum(axis=1)
    return float(np.abs(given - joint[:, 1].sum() / joint.sum()).max())


def test_the_ledger_keeps_the_release_the_estimator_sees_it_shrunk() -> None:
    """Same noise, with and without ``label_shrinkage``: every release is the same array
    in both runs, their ledgers the same events; the model keeps the label's relation
    to ``a`` and holds the others closer to independence."""
    on, off = _run(True), _run(False)
    released = [(m.query, m.noisy) for m in on.measurements.marginals()]
    assert len(released) == len(off.measurements.marginals())
    for (query, noisy), m in zip(released, off.measurements.marginals(), strict=True):
        assert query == m.query and np.array_equal(noisy, m.noisy)
    assert on.ledger.to_dict()["events"] == off.ledger.to_dict()["events"]
    assert _dependence(on, "a") > 0.25
    assert _dependence(on, "b") + _dependence(on, "c") < _dependence(off, "b") + _dependence(
        off, "c"
    )
