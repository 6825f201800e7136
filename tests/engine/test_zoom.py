"""The zoom (:mod:`dpevolve.engine.zoom`; docs/engine.md, Zoom): the refined partition,
the span read from a released histogram, and the release's noise against its formula."""

from __future__ import annotations

import math
from itertools import pairwise

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import seeded_fit

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec
from dpevolve.engine.boundaries import ROUND_APART, ROUND_REACH, rounded
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, marginal_event, sigma_for
from dpevolve.engine.plan import Plan, Spend
from dpevolve.engine.zoom import (
    LEVEL_SHARES,
    LEVELS,
    ROWS,
    ZOOM,
    ZOOMED,
    release_zoom,
    zoom_cells,
    zoom_spans,
)
from dpevolve.measurements import HistogramQuery, Measurement, MeasurementList
from dpevolve.privacy import Budget, Ledger
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("a", -5.0, 4000.0),
        NumericColumn("k", 0, 100_000, integer=True),
        NumericColumn("g", 0, 50, integer=True),
        CategoricalColumn("y", ("A", "B")),
    ),
    label="y",
)


#: Ranges holding no 0 (an atom there adds a boundary of its own).
PARTITION = Schema(
    (
        NumericColumn("a", 1.0, 4000.0),
        NumericColumn("k", 1, 100_000, integer=True),
        CategoricalColumn("y", ("A", "B")),
    ),
    label="y",
)


def _released(disc: Discretiser, name: str, values: np.ndarray, sigma: float, seed: int):
    """A seeded twin of a released fine histogram of ``values``."""
    frame = pd.DataFrame({"a": 0.0, "k": 0, "g": 0, "y": "A"}, index=range(values.size))
    frame[name] = values
    codes = disc.fine_codes(encode(frame, SCHEMA), name)
    exact = np.bincount(codes, minlength=disc.fine[name].size).astype(float)
    noisy = exact + np.random.default_rng(seed).normal(0.0, sigma, exact.size)
    event = marginal_event(sigma, FINE + name)
    return Measurement(HistogramQuery(name, exact.size), noisy, sigma, event)


@settings(max_examples=25, deadline=None)
@given(
    a=st.floats(1.0, 3000.0),
    width=st.floats(1.0, 900.0),
    name=st.sampled_from(["a", "k"]),
)
def test_the_refined_partition_keeps_the_cells_outside(a: float, width: float, name: str) -> None:
    """Inside the span, ``fine_cells`` equal intervals (none narrower than the value
    step, so each holds a value); outside, the cells of the partition as it was."""
    before = Discretiser(PARTITION, 20, 128)
    column = {c.name: c for c in before.numeric}[name]
    low, high = (a, a + width) if name == "a" else (a * 20.0 + 5.0, (a + width) * 20.0 + 5.0)
    high = min(high, float(column.hi))
    after = Discretiser(PARTITION, 20, 128, zoom={name: [(low, high, 128)]})
    old, new = before.fine[name].boundaries, after.fine[name].boundaries
    outside = old[(old < low - 1e-6 * (high - low)) | (old > high + 1e-6 * (high - low))]
    assert np.all(np.isin(outside, new))
    inner = new[(new >= low) & (new <= high)]
    gaps = np.diff(inner)
    step = 1.0 if name == "k" else 0.0
    assert gaps.min() >= step - 1e-9
    expected = 128 if name == "a" else min(128, math.floor((high - low) / step))
    assert inner.size - 1 == expected
    width = (high - low) / expected
    if name == "k":  # a value step: equal intervals, each holding a value
        assert np.allclose(gaps, width)
    else:  # a boundary next to a round value moved onto it (rounded)
        assert np.all(np.abs(gaps - width) <= ROUND_REACH * width + 1e-9 * width)


@settings(max_examples=100, deadline=None)
@given(a=st.floats(-1000.0, 1000.0), width=st.floats(1e-3, 1e3), cells=st.integers(1, 300))
def test_rounded_boundaries_move_a_little_onto_round_values(
    a: float, width: float, cells: int
) -> None:
    """Each boundary moves by at most ROUND_REACH of a width, onto a multiple of the
    power of ten at least ROUND_APART widths; the ends stay, the order stays."""
    bounds = np.linspace(a, a + width * cells, cells + 1)
    out = rounded(bounds)
    assert out[0] == bounds[0] and out[-1] == bounds[-1]
    assert np.all(np.diff(out) > 0)
    step = bounds[1] - bounds[0]
    moved = out != bounds
    assert np.all(np.abs(out - bounds) <= ROUND_REACH * step * (1 + 1e-9))
    unit = 10.0 ** math.ceil(math.log10(ROUND_APART * step))
    ratio = out[moved] / unit
    assert np.allclose(ratio, np.round(ratio))
    assert np.array_equal(rounded(bounds, 1.0), bounds)  # a value step: kept


def test_a_sign_and_a_round_threshold_become_boundaries() -> None:
    """The N(0, 1) feature of the XOR declared on [-4, 200]: its zoom's cells (82 over
    [-4, 9.6], one boundary at -0.02) get 0; the equal-width partition, 50."""
    zoom = rounded(np.linspace(-4.0, 9.6, 83))
    assert 0.0 in zoom and np.isclose(zoom, -0.0195, atol=1e-3).sum() == 0
    assert 50.0 in rounded(np.linspace(-4.0, 200.0, 129))


def test_data_in_one_cell_zoom_twice_where_the_first_zoom_still_shows_few_cells() -> None:
    """Values in [0, 1] on [-5, 4000]: the first histogram shows them in one cell of
    about 31 (span: that cell widened by half on each side, out to cell boundaries);
    the first zoom, 60 cells over it, in about two; the second zooms again."""
    rng = np.random.default_rng(1)
    values = rng.uniform(0.0, 1.0, 5000)
    disc = Discretiser(SCHEMA, 20, 128)
    first = {"a": _released(disc, "a", values, 40.0, 0)}
    spans = zoom_spans(disc, first, 5000, ["a"], 60)
    a, b, cells = spans["a"]
    bounds = disc.fine["a"].boundaries
    assert a in bounds and b in bounds and a <= 0.0 and b >= 1.0 and cells == 60
    assert np.count_nonzero((bounds >= a) & (bounds <= b)) - 1 <= ZOOM * cells
    refined = Discretiser(SCHEMA, 20, 128, zoom={"a": [(a, b, cells)]})
    second = {"a": _released(refined, "a", values, 40.0, 1)}
    again = zoom_spans(refined, second, 5000, ["a"], 60)
    assert again["a"][0] <= 0.0 and again["a"][1] >= 1.0
    assert again["a"][1] - again["a"][0] <= (b - a) / 4


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 10**6), sigma=st.floats(0.1, 500.0), most=st.integers(1, 512))
def test_the_zoom_cells_hold_their_rows_above_the_noise(n: int, sigma: float, most: int) -> None:
    """``min(most, floor(n / (ROWS sigma)))``, at least one: spread evenly, a cell holds
    ``ROWS`` noise scales of rows (or the most cells allowed)."""
    cells = zoom_cells(n, sigma, most)
    assert 1 <= cells <= most
    assert cells == 1 or n / cells >= ROWS * sigma - 1e-9
    assert cells == most or n / (cells + 1) < ROWS * sigma


def test_a_small_table_does_not_zoom_where_the_cells_would_drown() -> None:
    """2,000 values over a tenth of the range: 128 cells there would gain, but the
    cells that hold 2 noise scales of rows (12 at sigma 80) are no finer than the
    first histogram's 13 there."""
    rng = np.random.default_rng(4)
    values = rng.uniform(0.0, 350.0, 2000)
    disc = Discretiser(SCHEMA, 20, 128)
    first = {"a": _released(disc, "a", values, 80.0, 0)}
    assert "a" in zoom_spans(disc, first, 2000, ["a"], 128)
    assert zoom_spans(disc, first, 2000, ["a"], zoom_cells(2000, 80.0, 128)) == {}


def test_a_column_spread_over_its_range_or_on_a_grid_does_not_zoom() -> None:
    rng = np.random.default_rng(2)
    disc = Discretiser(SCHEMA, 20, 128)
    fine = {
        "a": _released(disc, "a", rng.uniform(-5.0, 4000.0, 5000), 40.0, 0),
        "g": _released(disc, "g", rng.integers(0, 3, 5000).astype(float), 40.0, 0),
    }
    assert zoom_spans(disc, fine, 5000, ["a", "g"], 128) == {}


def test_the_release_is_charged_at_the_formula_and_recorded() -> None:
    """The first level spends its share of ``rho`` split evenly over its zoomed columns: sigma
    ``sqrt(2) / sqrt(2 rho_c)``, one ``zoom:`` event and measurement per column and
    level, and the zoomed histogram stands for the column's fine histogram."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({
        "a": rng.uniform(0.0, 1.0, 4000), "k": rng.integers(10, 20, 4000),
        "g": rng.integers(0, 51, 4000), "y": "A",
    })  # fmt: skip
    source = FrameSource(frame, SCHEMA)
    disc = Discretiser(SCHEMA, 20, 128)
    fine = {name: _released(disc, name, frame[name].to_numpy(float), 5.0, 0) for name in "akg"}
    rho, ledger, measurements = 0.4, Ledger(1e-5), MeasurementList()
    spend = Spend(rho)

    def refine(spans):
        return Discretiser(SCHEMA, 20, 128, zoom=spans)

    zoomed, out = release_zoom(
        source, disc, fine, refine, rho, spend, SeededNoise(0), ledger, measurements, 128
    )
    events = [e for e in ledger.events if e.label.startswith(ZOOMED)]
    first = [e for e in events if e.label in (ZOOMED + "a", ZOOMED + "k")][:2]
    assert {e.label for e in first} == {ZOOMED + "a", ZOOMED + "k"}  # level 1: a and k
    assert all(math.isclose(e.sigma, sigma_for(LEVEL_SHARES[0] * rho / 2)) for e in first)
    assert ZOOMED + "g" not in {e.label for e in events}  # a grid: never
    assert spend.used <= rho * (1 + 1e-12)
    assert math.isclose(spend.used, sum(e.rho for e in events))
    assert len(measurements) == len(events)
    assert set(zoomed.zoom) == {"a", "k"}
    for name in ("a", "k"):
        assert out[name].event.label == ZOOMED + name
        assert out[name].noisy.size == zoomed.fine[name].size
    assert out["g"] is fine["g"]


def test_the_plan_states_the_zoom_share() -> None:
    """The zoom's share comes out of what the 1-ways and the rounds have, and only where
    a column may zoom."""
    spec = EngineSpec()
    budget = Budget(rho=1.0)
    with_zoom = Plan.of(budget, spec, 5, 3, 0, zoomable=2)
    without = Plan.of(budget, spec, 5, 3, 0, zoomable=0)
    assert math.isclose(with_zoom.zoom, spec.zoom_share * with_zoom.total)
    assert without.zoom == 0.0
    parts = with_zoom.fine + with_zoom.atoms + with_zoom.zoom + with_zoom.oneway
    parts += with_zoom.rounds + with_zoom.tree + with_zoom.relations + with_zoom.pe
    assert math.isclose(parts, with_zoom.total)
    assert with_zoom.schedule().zoom == with_zoom.zoom


def test_the_levels_share_the_zoom_s_rho_the_third_least() -> None:
    shares = list(LEVEL_SHARES)
    assert math.isclose(sum(shares), 1.0) and shares[0] == shares[1]
    assert all(a >= b for a, b in pairwise(shares))


def test_a_body_far_inside_a_range_widened_by_rare_huge_values_zooms_to_its_scale() -> None:
    """N(100, 10) with 0.3% of the rows in [1e5, 1e6], declared on [0, 2e6] (a schema
    inferred from such a public table), 4,000 rows at epsilon 1 on seeded twins of the
    noise: the zoom reaches the body's scale in three levels (two left it in cells 59
    wide, two of them holding the body: Kolmogorov-Smirnov distance 0.36-0.63 on four
    noise draws), and the synthetic body lies where the real one does."""
    schema = Schema(
        (NumericColumn("x", 0.0, 2e6, decimals=1), CategoricalColumn("y", ("A", "B"))),
        label="y",
    )
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        body = rng.normal(100.0, 10.0, 4000)
        x = np.round(np.where(rng.random(4000) < 0.003, rng.uniform(1e5, 1e6, 4000), body), 1)
        frame = pd.DataFrame({"x": x, "y": np.where(body > 100.0, "A", "B")})
        result = seeded_fit(frame, schema, seed + 700, seed)
        spans = result.discretiser.zoom["x"]
        out = result.released().sample(4000, np.random.default_rng(seed))["x"].to_numpy(float)
        assert len(spans) == LEVELS and spans[-1][1] - spans[-1][0] < 1000.0
        real = np.quantile(x, [0.1, 0.5, 0.9])
        assert np.all(np.abs(np.quantile(out, [0.1, 0.5, 0.9]) - real) < 5.0), (seed, out)
