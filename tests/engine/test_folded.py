"""Folded bins held empty (docs/engine.md, Folded bins held empty): the bins a column's
folds move are held empty in a last refit, at no cost, so the model's rows there go
where the releases put the column's rows instead of piling up in the bin they fold
into; the rows decode with the folds of the fit before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import OneWayAnswers

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.vacant import (
    FOLDED,
    SHARPNESS,
    closed_ends,
    folded_measurements,
    vacant_bins,
)
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

BINS = 8
SCHEMA = Schema(
    (
        NumericColumn("wage", 0, 80, nullable=True),
        NumericColumn("kids", 0, 12, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)


@settings(max_examples=200, deadline=None)
@given(
    wage=st.lists(st.integers(0, BINS), min_size=BINS + 1, max_size=BINS + 1),
    kids=st.lists(st.integers(0, BINS - 1), min_size=BINS, max_size=BINS),
    n=st.integers(1, 10_000),
    absent=st.floats(-50.0, 20_000.0),
    sigma=st.floats(0.1, 100.0),
)
def test_the_moved_bins_and_only_they_are_held_at_zero(
    wage: list[int], kids: list[int], n: int, absent: float, sigma: float
) -> None:
    """Any targets (a nullable column's missing cell last) and any missing mass the model
    gives: one free pseudo-measurement per column whose folds move a value bin into
    another, grouping the moved bins (less the vacant ones the schema already empties)
    at 0 rows, the other value bins at the rest of ``n`` and a nullable column's missing
    cell apart, at the model's missing rows (within [0, n]), ``SHARPNESS`` times
    sharper than the 1-ways; a bin sent to the missing cell, or a column nothing moves,
    holds nothing up."""
    discretiser = Discretiser(SCHEMA, BINS, 64)
    targets = {"wage": np.asarray(wage), "kids": np.asarray(kids)}
    mass = np.zeros(BINS + 1)
    mass[BINS] = absent
    model = OneWayAnswers(mass)
    out = {m.clique[0]: m for m in folded_measurements(discretiser, targets, model, n, sigma)}  # type: ignore[arg-type]
    for name, target in targets.items():
        moved = (target[:BINS] != np.arange(BINS)) & (target[:BINS] < BINS)
        held = moved & ~vacant_bins(discretiser, name)
        if not held.any() or moved.all():
            assert name not in out
            continue
        m = out[name]
        grouping = np.asarray(m.query.groups[0])
        assert grouping.size == discretiser.domain.cells((name,))
        assert (grouping[:BINS] == 0).tolist() == held.tolist()
        assert set(grouping[:BINS]) <= {0, 1}
        if name == "wage":
            kept = min(max(absent, 0.0), float(n))
            assert grouping[BINS] == 2
            assert m.noisy.tolist() == pytest.approx([0.0, n - kept, kept])
        else:
            assert m.noisy.tolist() == [0.0, float(n)]
        assert m.sigma == pytest.approx(sigma / SHARPNESS)
        assert m.event.sensitivity == 0.0 and m.event.label == FOLDED + name


def _wages(rows: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    """Hourly wages, lognormal about 9 (none above 45; a quarter of them missing),
    declared on [0, 500] as a public schema might: the bins run 4 wide to 79 (most of
    them past the data) and the noise lifts some of those."""
    rng = np.random.default_rng(seed)
    wage = np.round(np.exp(rng.normal(2.2, 0.5, rows)), 2)
    wage[rng.random(rows) < 0.25] = np.nan
    hours = rng.integers(10, 60, rows)
    frame = pd.DataFrame(
        {
            "wage": wage,
            "hours": hours,
            "y": (np.nan_to_num(wage) * hours > 400).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            NumericColumn("wage", 0, 500, decimals=2, nullable=True),
            NumericColumn("hours", 0, 100, integer=True),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    return frame, schema


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_run_moves_the_folded_rows_where_the_releases_put_the_column(seed: int) -> None:
    """The same releases with and without the refit (seeded noise): the same spend and
    events (the pseudo-measurements are no release), the rows decoded with the folds
    the fit without it reads (their ends closed), and the model's wages in the bins
    those folds move (noise past the data) fewer than half as many and under 1% of the
    rows, its missing wages as many as before within 1% of the rows (moved rows go to
    the values)."""
    frame, schema = _wages(2000, 0)

    def run(empty: bool):
        return fit_engine(
            FrameSource(frame, schema),
            schema,
            Budget(epsilon=1.0, delta=1e-5),
            # the label's pairs as released: with them shrunk, seed 1's model already
            # holds under 2 rows in the folded bins, nothing for the refit to halve
            EngineSpec(rounds=3, pe_share=0.0, empty_folds=empty, label_shrinkage=False),
            noise=SeededNoise(seed),
            rng=np.random.default_rng(seed),
        )

    on, off = run(True), run(False)
    assert [(e.label, e.rho) for e in on.ledger.events] == [
        (e.label, e.rho) for e in off.ledger.events
    ]
    assert not any(e.label.startswith(FOLDED) for e in on.ledger.events)
    before = off.released().inward
    assert on.folds is not None and set(on.folds) == set(before)
    bins = on.discretiser.bins
    for name, fold in on.folds.items():
        assert fold.target.tolist() == closed_ends(before[name].target, bins).tolist()
    target = on.folds["wage"].target[:bins]
    moved = target != np.arange(bins)
    assert moved.any()
    mass_on = float(np.asarray(on.model.answer(("wage",)))[:bins][moved].sum())
    mass_off = float(np.asarray(off.model.answer(("wage",)))[:bins][moved].sum())
    assert mass_on < 0.5 * mass_off and mass_on < 0.01 * len(frame)
    absent_on = float(np.asarray(on.model.answer(("wage",)))[bins])
    absent_off = float(np.asarray(off.model.answer(("wage",)))[bins])
    assert abs(absent_on - absent_off) < 0.01 * len(frame)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_rows_moved_go_to_the_values_not_to_the_missing_cell(seed: int) -> None:
    """A small table (450 rows, noise of the order of most bins' counts) whose years of
    schooling, declared nullable, miss none and are 12 in 60% of the rows: the folds
    move 13-15 of the 20 bins into 12's. The refit keeps the missing cell's rows within
    1% of the rows of the fit before (held with the moved bins at ``n``, it had taken
    up to 22 of them, 5% of the rows: the moved rows went where nothing held them)."""
    rng = np.random.default_rng(0)
    rows = 450
    years = [8, 10, 11, 12, 13, 14, 16, 17]
    shares = [0.04, 0.05, 0.03, 0.6, 0.06, 0.08, 0.1, 0.04]
    school = rng.choice(years, size=rows, p=shares).astype(float)
    weight = rng.normal(120, 20, rows).round()
    noisy = weight + 3 * school + rng.normal(0, 20, rows)
    frame = pd.DataFrame(
        {"school": school, "weight": weight, "y": (noisy > 160).astype(int).astype(str)}
    )
    schema = Schema(
        (
            NumericColumn("school", 0, 20, integer=True, nullable=True, atoms=(12.0,)),
            NumericColumn("weight", 0, 300, integer=True),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )

    def absent(empty: bool) -> float:
        result = fit_engine(
            FrameSource(frame, schema),
            schema,
            Budget(epsilon=1.0, delta=1e-5),
            # a bin a year, as bwght's 555 rows had before small tables got 10 bins
            EngineSpec(bins=20, pe_share=0.0, empty_folds=empty),
            noise=SeededNoise(seed),
            rng=np.random.default_rng(seed),
        )
        bins = result.discretiser.bins
        if empty:
            assert result.folds is not None
            assert (result.folds["school"].target[:bins] != np.arange(bins)).sum() >= 10
        return float(np.asarray(result.model.answer(("school",)))[bins])

    assert abs(absent(True) - absent(False)) < 0.01 * rows


@settings(max_examples=200, deadline=None)
@given(target=st.lists(st.integers(0, BINS), min_size=BINS + 1, max_size=BINS + 1))
def test_a_bin_nearer_an_end_than_its_fold_folds_there_too(target: list[int]) -> None:
    """Any targets: the bins below the bin the lowest one decodes as, and above the one
    the highest decodes as, decode as those; every other cell as before (the missing
    cell, and every bin where the ends fold past each other or into the missing cell)."""
    given_target = np.asarray(target)
    out = closed_ends(given_target, BINS)
    low, high = target[0], target[BINS - 1]
    for b in range(BINS + 1):
        if low <= high < BINS and b < low:
            assert out[b] == low
        elif low <= high < BINS and high < b < BINS:
            assert out[b] == high
        else:
            assert out[b] == given_target[b]
