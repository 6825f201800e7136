"""Smooth bin masses (docs/engine.md, Smooth bin masses): the smoother keeps an even
density and counts that stand clear of their noise, lowers the error of noisy counts
of a smooth density, leaves an atom's own bin as released, and reaches the last fit as
a free pseudo-measurement that brings the model's 1-ways nearer the data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.bins import released_edges
from dpevolve.engine.density import (
    DENSITY,
    density_bins,
    density_measurements,
    density_widths,
    smoothed,
)
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise


@settings(max_examples=60, deadline=None)
@given(
    width=st.lists(st.floats(0.05, 20.0), min_size=5, max_size=25),
    density=st.floats(1.0, 500.0),
    noise=st.floats(0.5, 200.0),
)
def test_an_even_density_is_kept_whatever_the_weight(width, density, noise) -> None:
    """Counts of one density over bins of any widths are in the penalty's null space:
    every ``lambda`` keeps them, so the smoother returns them as they are."""
    width = np.asarray(width)
    count = density * width
    out, _, _ = smoothed(count, np.full(width.size, noise), width)
    np.testing.assert_allclose(out, count, rtol=1e-6, atol=1e-6 * float(count.max()))


def test_counts_clear_of_their_noise_are_left() -> None:
    """A bimodal histogram of 20,000 rows at noise 1: the risk estimate keeps the
    smoothing too weak to move any bin by more than a few noise scales."""
    centres = np.arange(20)
    count = 20000 * (np.exp(-((centres - 5) ** 2) / 4) + np.exp(-((centres - 14) ** 2) / 2))
    count /= count.sum() / 20000
    out, _, _ = smoothed(count, np.ones(20), np.ones(20))
    assert np.abs(out - count).max() < 4.0


def test_noisy_counts_of_a_smooth_density_come_nearer_the_truth() -> None:
    """A seeded twin of a small table's bins: 2,000 rows of a skewed density over 20
    bins, noise 50 per bin (a quarter of the largest bin). Over 200 draws the smoothed
    counts' squared error is under half the released counts'."""
    centres = np.arange(20) + 0.5
    truth = centres * np.exp(-centres / 4)
    truth = 2000 * truth / truth.sum()
    rng = np.random.default_rng(0)
    raw, smooth = [], []
    for _ in range(200):
        count = truth + 50 * rng.standard_normal(20)
        out, _, _ = smoothed(count, np.full(20, 50.0), np.ones(20))
        raw.append(np.sum((count - truth) ** 2))
        smooth.append(np.sum((out - truth) ** 2))
    assert np.mean(smooth) < 0.5 * np.mean(raw)


def test_an_atoms_own_bin_is_not_smoothed() -> None:
    """Bins placed from a released fine histogram of spending, 40% of it exactly 0: the
    bin of the atom (its one cell a single value) keeps its count, every bin of the
    intervals is smoothed; on a grid (one cell per value, point masses) none is."""
    schema = Schema((NumericColumn("spend", 0.0, 1000.0, atoms=(0.0,)),))
    rng = np.random.default_rng(0)
    spend = np.where(rng.random(4000) < 0.4, 0.0, rng.gamma(2.0, 60.0, size=4000))
    frame = pd.DataFrame({"spend": np.clip(spend, 0, 1000)})
    base = Discretiser(schema, 20, 128)
    _, exact = count_marginals(FrameSource(frame, schema), base, [], ["spend"])
    event = marginal_event(5.0, FINE + "spend")
    released = {"spend": release(exact["spend"], ("spend",), event, SeededNoise(0))}
    edges = released_edges(base, released, len(frame))
    placed = Discretiser(schema, 20, 128, edges, nested=edges)
    cells = placed.fine["spend"]
    atom = int(cells.coarse[cells.lo[: cells.atoms].tolist().index(0.0)])
    smooth = density_bins(placed, "spend")
    assert not smooth[atom] and smooth.sum() == 19
    grid = Discretiser(Schema((NumericColumn("kids", 0, 12, integer=True),)), 20, 120)
    assert not density_bins(grid, "kids").any()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 150), st.integers(2, 120), st.lists(st.integers(0, 120), max_size=3))
def test_a_grid_of_more_values_than_bins_is_smoothed_but_its_known_values(
    low: int, values: int, known: list[int]
) -> None:
    """A grid of whole numbers (one fine cell per value): where it holds more values
    than bins (ages in years, years of experience), a density read in whole numbers,
    every bin is smoothed but one holding a known value alone; where it holds no more
    (teens in a household: point masses), none; a bin's width is its number of
    values."""
    atoms = tuple(sorted({float(low + k) for k in known if k < values}))
    column = NumericColumn("x", low, low + values - 1, integer=True, atoms=atoms)
    disc = Discretiser(Schema((column,)), 20, 128)
    cells = disc.fine["x"]
    if not cells.grid:
        return
    smooth = density_bins(disc, "x")
    per_bin = np.bincount(cells.coarse[: cells.values], minlength=20)[:20]
    assert np.array_equal(density_widths(disc, "x"), per_bin)
    if values <= 20:
        assert not smooth.any()
        return
    alone = {int(cells.coarse[c]) for c in np.flatnonzero(cells.known_cells)}
    alone = {b for b in alone if per_bin[b] == 1}
    expected = [per_bin[b] > 0 and b not in alone for b in range(20)]
    assert smooth.tolist() == expected


def _frame(rows: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    income = rng.gamma(3.0, 12.0, size=rows)
    frame = pd.DataFrame(
        {
            "income": np.clip(income, 0, 200),
            "score": np.clip(rng.normal(45, 12, size=rows), 0, 100),
            "y": (income > 40).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            NumericColumn("income", 0, 200),
            NumericColumn("score", 0, 100),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    return frame, schema


def _run(frame: pd.DataFrame, schema: Schema, on: bool, epsilon: float = 0.3):
    # the 1-ways at their usual share (``oneway_most`` 0): the smoothing's work, alone
    spec = EngineSpec(
        rounds=2, pe_share=0.0, final_iters=200, density_smoothing=on, oneway_most=0.0
    )
    return fit_engine(
        FrameSource(frame, schema),
        schema,
        Budget(epsilon=epsilon, delta=1e-5),
        spec,
        noise=SeededNoise(1),
        rng=np.random.default_rng(1),
    )


@pytest.fixture(scope="module")
def runs():
    frame, schema = _frame(1500, 0)
    return frame, _run(frame, schema, True), _run(frame, schema, False)


def test_smoothing_is_free_and_in_the_ledger(runs) -> None:
    """Same noise with and without: the same releases and the same spend; the ledger
    names the columns smoothed and their weights; the pseudo-measurements cost nothing
    and are no release."""
    _, on, off = runs
    assert [e.to_dict() for e in on.ledger.events] == [e.to_dict() for e in off.ledger.events]
    assert len(on.measurements) == len(off.measurements)
    density = on.ledger.metadata["engine"]["density"]
    assert set(density) <= {"income", "score"} and density
    assert all(weight > 0 for weight in density.values())
    extra, chosen = density_measurements(on.discretiser, on.measurements.marginals(), on.fine)
    assert chosen == density  # a column smoothed at lambda 0 would count its releases twice
    assert {m.clique for m in extra} == {(name,) for name in density}
    assert all(m.event.sensitivity == 0.0 and m.event.label.startswith(DENSITY) for m in extra)


def test_the_model_keeps_less_of_each_bins_noise(runs) -> None:
    """At epsilon 0.3 on 1,500 rows (noise of the order of a bin's rows), the smoothed
    model's 1-ways lie nearer the table's than the model fitted to the releases alone."""
    frame, on, off = runs
    codes = on.discretiser.codes(encode(frame, on.schema))

    def tv(result, name: str) -> float:
        k = result.discretiser.domain.index(name)
        real = np.bincount(codes[:, k], minlength=result.discretiser.bins)[
            : result.discretiser.bins
        ]
        model = np.asarray(result.model.answer((name,)))[: result.discretiser.bins]
        return 0.5 * float(np.abs(real / real.sum() - model / model.sum()).sum())

    assert on.discretiser.edges("income").tolist() == off.discretiser.edges("income").tolist()
    gain = sum(tv(off, c) - tv(on, c) for c in ("income", "score"))
    assert gain > 0.02


def test_values_between_atoms_that_the_noise_hides_are_not_smoothed() -> None:
    """Years married coded at five declared values (fair's), none between them: the
    intervals between the atoms hold noise alone, so that column keeps its releases,
    while a skewed income beside it is smoothed."""
    rng = np.random.default_rng(2)
    years = rng.choice([0.5, 2.5, 6.0, 9.0, 13.0], size=4000)
    frame = pd.DataFrame(
        {
            "years": years,
            "income": np.clip(rng.gamma(3.0, 12.0, size=4000), 0, 200),
            "y": (rng.random(4000) < 0.3).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            NumericColumn("years", 0, 26, atoms=(0.5, 2.5, 6.0, 9.0, 13.0)),
            NumericColumn("income", 0, 200),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    result = _run(frame, schema, True, epsilon=1.0)
    cells = result.discretiser.fine["years"]
    values = cells.lo[: cells.atoms].tolist()
    held = [int(cells.coarse[values.index(v)]) for v in (0.5, 2.5, 6.0, 9.0, 13.0)]
    smooth = density_bins(result.discretiser, "years")
    assert len(set(held)) == 5 and not smooth[held].any()  # every value its own bin
    density = result.ledger.metadata["engine"]["density"]
    assert "income" in density and "years" not in density
