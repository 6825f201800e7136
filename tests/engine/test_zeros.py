"""Structural zeros (docs/engine.md, Structural zeros): a cell of a released pair of two
single values that the releases show empty where independence puts many rows is held
empty in the last fit, at no cost."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.vacant import SHARPNESS
from dpevolve.engine.zeros import (
    EMPTY,
    EXPECTED,
    ZERO,
    held_empty,
    shown_cells,
    single_cells,
    zero_measurements,
)
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import Budget, GaussianEvent
from dpevolve.privacy.noise import SeededNoise

finite = st.floats(-1e6, 1e6)


@settings(max_examples=300, deadline=None)
@given(count=finite, expected=finite, sigma=st.floats(1e-3, 1e3), scale=st.floats(1e-2, 1e2))
def test_a_cell_is_held_where_its_releases_show_it_empty_against_many_expected(
    count: float, expected: float, sigma: float, scale: float
) -> None:
    """Held exactly when the combined release stands at most ``EMPTY`` scales and the
    independent expectation at least ``EXPECTED``; a lower release or a higher
    expectation holds it still; counts and noise scaled together decide alike."""
    held = held_empty(count, sigma, expected)
    assert held == (count <= EMPTY * sigma and expected >= EXPECTED * sigma)
    if held:
        assert held_empty(count - sigma, sigma, expected)
        assert held_empty(count, sigma, expected + sigma)
    # away from the bars (rounding aside), scaling changes nothing
    margin = 1e-6 * sigma
    if abs(count - EMPTY * sigma) > margin and abs(expected - EXPECTED * sigma) > margin:
        assert held_empty(count * scale, sigma * scale, expected * scale) == held


def test_no_cell_is_held_without_a_noise_scale() -> None:
    for sigma in (0.0, -1.0, float("nan"), float("inf")):
        assert not held_empty(-100.0, sigma, 1e9)


def test_single_cells_are_categories_point_bins_and_the_missing_cell() -> None:
    """A category is one value; an integer column of few values has a bin per value;
    a continuous column's bins hold intervals, its missing cell none of them."""
    schema = Schema(
        (
            CategoricalColumn("c", ("a", "b", "d")),
            NumericColumn("kids", 0, 3, integer=True),
            NumericColumn("wage", 0, 100, nullable=True),
        )
    )
    discretiser = Discretiser(schema, 4, 64)
    assert single_cells(discretiser, "c") == frozenset(range(3))
    assert single_cells(discretiser, "kids") == frozenset(range(4))
    assert single_cells(discretiser, "wage") == frozenset({4})


#: A count of children (a bin per value: each a single value) and a label; the rule
#: ``y = 1`` exactly when there are children, released cell by cell.
KIDS = Schema(
    (NumericColumn("kids", 0, 3, integer=True), CategoricalColumn("y", ("0", "1"))),
    label="y",
)
RELEASED = np.array([[100.0, 3.0], [-2.0, 40.0], [1.0, 30.0], [4.0, 22.0]])


def test_the_releases_of_a_cell_combine_by_their_precision() -> None:
    """A pair released fine (noise 2) and grouped (noise 4, the kids 1-3 one group):
    the single cells of both combine, (kids 0, y 1) at ``(3 / 4 + 5 / 16) / (1 / 4 +
    1 / 16)`` with noise ``(1 / 4 + 1 / 16) ** -0.5``; the group of three values holds
    no single cell."""
    discretiser = Discretiser(KIDS, 4, 64)
    names = ("kids", "y")
    fine = RELEASED
    coarse = np.array([[98.0, 5.0], [2.0, 95.0]])
    query = MarginalQuery(names, ((0, 1, 1, 1), None))
    released = [
        Measurement(MarginalQuery(names), fine, 2.0, GaussianEvent(1.0, 2.0)),
        Measurement(query, coarse, 4.0, GaussianEvent(1.0, 4.0)),
    ]
    shown = shown_cells(discretiser, released)
    assert set(shown) == {(names, (a, b)) for a in range(4) for b in range(2)}
    precision = 1 / 4 + 1 / 16
    count, sigma = shown[(names, (0, 1))]
    assert count == pytest.approx((3 / 4 + 5 / 16) / precision)
    assert sigma == pytest.approx(precision**-0.5)
    assert shown[(names, (2, 0))] == pytest.approx((1.0, 2.0))


class PairAnswers:
    """A model answering one pair (and its 1-ways) from a fixed joint table."""

    def __init__(self, names: tuple[str, str], joint: np.ndarray) -> None:
        self.names, self.joint = names, np.asarray(joint, dtype=np.float64)

    def answer(self, clique: tuple[str, ...]) -> np.ndarray:
        if tuple(clique) == self.names:
            return self.joint
        return self.joint.sum(axis=1 - self.names.index(clique[0]))


def test_the_pseudo_measurement_holds_the_cell_at_zero_and_its_sides_at_the_model() -> None:
    """A rule ``y = 1`` exactly when ``kids`` > 0, released at noise 5: the cell
    (kids 0, y 1) released at 3 against an expectation of 60 is held: grouped apart at 0
    rows, the rest of its row and column at the model's counts of kids 0 and y 1, the
    rest of the rows after them, free, ``SHARPNESS`` times sharper than the release."""
    discretiser = Discretiser(KIDS, 4, 64)
    names = ("kids", "y")
    noisy = RELEASED
    sigma = 5.0
    released = Measurement(MarginalQuery(names), noisy, sigma, GaussianEvent(1.0, sigma))
    joint = np.array([[95.0, 6.0], [10.0, 40.0], [8.0, 30.0], [7.0, 28.0]])
    n = int(joint.sum())
    out = zero_measurements(discretiser, [released], PairAnswers(names, joint), n)  # type: ignore[arg-type]
    assert len(out) == 1
    m = out[0]
    assert m.query.groups == ((0, 1, 1, 1), (1, 0))
    assert m.sigma == pytest.approx(sigma / SHARPNESS)
    assert m.event.label == ZERO + "kids,y" and m.event.is_free
    row, col = joint[0].sum(), joint[:, 1].sum()
    np.testing.assert_allclose(m.noisy, [[0.0, row], [col, n - row - col]])


def _rule_table(rows: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    spend = np.where(rng.random(rows) < 0.4, 0.0, np.round(rng.gamma(2.0, 300.0, rows), 2))
    frame = pd.DataFrame(
        {
            "spend": spend,
            "age": rng.integers(18, 90, rows),
            "any": np.where(spend > 0, "yes", "no"),
        }
    )
    schema = Schema(
        (
            NumericColumn("spend", 0, 5_000, decimals=2),
            NumericColumn("age", 0, 100, integer=True),
            CategoricalColumn("any", ("no", "yes")),
        ),
        label="any",
    )
    return frame, schema


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_run_keeps_the_rule_at_the_atom_at_no_cost(seed: int) -> None:
    """ "any is yes exactly when spend > 0" on 2,000 rows at epsilon 1 (seeded noise):
    with the cells held, the same spend and events (the pseudo-measurements are no
    release), and the rows drawn at spend 0 say yes at most 1% of the time, no more
    often than without."""
    frame, schema = _rule_table(2000, seed)

    def run(hold: bool):
        result = fit_engine(
            FrameSource(frame, schema),
            schema,
            Budget(epsilon=1.0, delta=1e-5),
            EngineSpec(rounds=3, pe_share=0.0, hold_zeros=hold),
            noise=SeededNoise(seed),
            rng=np.random.default_rng(seed),
        )
        rows = result.sample(4000, np.random.default_rng(seed))
        at_zero = pd.to_numeric(rows["spend"]) == 0
        return result, float((rows.loc[at_zero, "any"] == "yes").mean())

    (on, broken_on), (off, broken_off) = run(True), run(False)
    assert [(e.label, e.rho) for e in on.ledger.events] == [
        (e.label, e.rho) for e in off.ledger.events
    ]
    assert not any(e.label.startswith(ZERO) for e in on.ledger.events)
    assert broken_on <= 0.01
    assert broken_on <= broken_off
