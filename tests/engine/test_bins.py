"""Bins from the released fine histograms: the rule, the nesting, what they read, the cost."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import cut_rule_accuracy

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.bins import (
    LOOSE,
    ROUND_EDGE_REACH,
    THRESHOLD,
    histogram_quantile,
    no_wider_cell_between,
    released_edges,
    round_points,
    snapper,
)
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.engine.smoothing import decode_weights
from dpevolve.errors import InputError
from dpevolve.measurements import Measurement
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        CategoricalColumn("tag", ("a", "b")),
        NumericColumn("x", -10.0, 10.0),
        NumericColumn("k", 0, 60, integer=True),
        NumericColumn("t", 0.0, 1.0),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)
SPEC = {"bins": 8, "fine_cells": 96, "rounds": 4, "round_iters": 20, "final_iters": 40}


def _loose(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    """x in about [1, 5] of [-10, 10]; k in [40, 50] of [0, 60] (one fine cell a value);
    t fills [0, 1]."""
    rng = np.random.default_rng(seed)
    tag = rng.choice(["a", "b"], n)
    x = np.clip(rng.normal(2.0 + shift, 0.6, n) + (tag == "b") * 1.5, -10, 10)
    yes = (x > 2.8) ^ (tag == "b")
    return pd.DataFrame(
        {
            "tag": tag,
            "x": x,
            "k": rng.integers(40, 51, n),
            "t": rng.random(n),
            "y": np.where(yes, "yes", "no"),
        }
    )


def _released(disc: Discretiser, frame: pd.DataFrame, sigma: float, seed: int = 0):
    """The fine histograms of ``frame`` released at ``sigma`` (seeded noise)."""
    names = [c.name for c in disc.numeric]
    _, exact = count_marginals(FrameSource(frame, SCHEMA), disc, [], names)
    noise = SeededNoise(seed)
    return {a: release(exact[a], (a,), marginal_event(sigma, FINE + a), noise) for a in names}


def test_loose_columns_get_bins_over_their_released_range_on_fine_boundaries() -> None:
    disc = Discretiser(SCHEMA, 8, 96)
    frame = _loose(5000, 1)
    edges = released_edges(disc, _released(disc, frame, sigma=5.0), len(frame))
    assert set(edges) == {"x", "k"}  # t fills its declared range: equal-width
    x = edges["x"]
    assert x[0] == -10.0 and x[-1] == 10.0 and x.size == 9 and np.all(np.diff(x) > 0)
    assert np.all(np.isin(x, disc.fine["x"].boundaries))  # every fine cell in one bin
    lo, hi = np.quantile(frame["x"], [0.005, 0.995])
    inner = x[1:-1]
    assert inner.min() >= lo - 0.5 and inner.max() <= hi + 0.5
    assert (inner.max() - inner.min()) <= LOOSE * 20
    assert np.all(edges["k"][1:-1] % 1 == 0.5)  # integers cut half-way between values


def test_nested_bins_keep_the_released_fine_partition_and_code_consistently() -> None:
    base = Discretiser(SCHEMA, 8, 96)
    frame = _loose(3000, 2)
    edges = released_edges(base, _released(base, frame, sigma=5.0), len(frame))
    disc = Discretiser(SCHEMA, 8, 96, edges, nested=edges)
    for name in ("x", "k", "t"):
        assert np.array_equal(disc.fine[name].lo, base.fine[name].lo, equal_nan=True)
        assert np.array_equal(disc.fine[name].hi, base.fine[name].hi, equal_nan=True)
    records = encode(frame, SCHEMA)
    codes = disc.codes(records)
    for name in ("x", "k"):
        j = disc.domain.index(name)
        fine = disc.fine_codes(records, name)
        assert np.array_equal(disc.fine[name].coarse[fine], codes[:, j])
        expected = np.clip(np.searchsorted(edges[name], frame[name], side="right") - 1, 0, 7)
        assert np.array_equal(codes[:, j], expected)
    decoded = disc.decode(codes, np.random.default_rng(0))
    assert np.array_equal(disc.codes(encode(decoded, SCHEMA)), codes)  # values stay in bin
    with pytest.raises(ValueError, match="fine partition"):
        Discretiser(SCHEMA, 8, 96, {"x": np.linspace(-10, 10, 9) + np.eye(9)[1] * 0.01}, {"x"})


def test_noise_alone_places_no_bins() -> None:
    """Empty histograms: the threshold keeps clipped noise from faking a range."""
    disc = Discretiser(SCHEMA, 8, 96)
    for seed in range(5):
        noise = SeededNoise(seed)
        released = {
            a: release(np.zeros(disc.fine[a].size), (a,), marginal_event(50.0, FINE + a), noise)
            for a in ("x", "k", "t")
        }
        assert released_edges(disc, released, 1000) == {}


def test_a_small_table_under_large_noise_keeps_equal_width_bins() -> None:
    disc = Discretiser(SCHEMA, 8, 96)
    sigma = 100.0
    frame = _loose(int(THRESHOLD * sigma), 4)  # no cell clears the threshold
    assert released_edges(disc, _released(disc, frame, sigma=sigma), len(frame)) == {}


def test_a_full_range_under_noise_is_not_taken_for_a_loose_one() -> None:
    """Uniform over the declared range at a few noise scales per cell: the cells above
    the threshold are a random subset, whose range must not move the bins."""
    disc = Discretiser(SCHEMA, 8, 96)
    frame = _loose(6000, 5).assign(x=np.random.default_rng(5).uniform(-10, 10, 6000))
    per_cell = 6000 / disc.fine["x"].size
    for seed in range(5):
        released = _released(disc, frame, sigma=per_cell / 2.0, seed=seed)  # few survive
        assert "x" not in released_edges(disc, released, len(frame))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 50), min_size=4, max_size=30), st.floats(0.01, 0.99))
def test_the_histogram_quantile_is_monotone_and_inside_the_mass(counts, q) -> None:
    disc = Discretiser(SCHEMA, 8, 96)
    cells = disc.fine["t"]
    weights = np.zeros(cells.size)
    weights[cells.atoms : cells.atoms + len(counts)] = counts
    quantile = histogram_quantile(cells, weights)
    if sum(counts) == 0:
        assert quantile is None
        return
    assert quantile is not None
    a, b = quantile(np.array([q, min(1.0, q + 0.01)]))
    assert a <= b
    occupied = np.flatnonzero(np.asarray(counts) > 0) + cells.atoms
    assert cells.lo[occupied].min() - 1e-12 <= a <= cells.hi[occupied].max() + 1e-12


def test_the_histogram_quantile_of_a_uniform_interval_and_an_atom() -> None:
    disc = Discretiser(SCHEMA, 8, 96)
    cells = disc.fine["t"]
    weights = np.zeros(cells.size)
    weights[0] = 50.0  # the atom at lo = 0
    weights[cells.atoms] = 50.0  # the first interval, uniform
    quantile = histogram_quantile(cells, weights)
    assert quantile is not None
    width = cells.hi[cells.atoms] - cells.lo[cells.atoms]
    assert quantile(np.array([0.25]))[0] == 0.0
    assert quantile(np.array([0.75]))[0] == pytest.approx(0.5 * width)


class _FixedFine:
    """Seeded noise, except that the fine histograms come out as given, whatever the
    private counts (so two private tables release the same values)."""

    def __init__(self, fine: list[np.ndarray], seed: int = 1) -> None:
        self.fine = list(fine)
        self.inner = SeededNoise(seed)

    def gaussian(self, values: Any, sigma: float) -> np.ndarray:
        if self.fine:
            return self.fine.pop(0)
        return self.inner.gaussian(values, sigma)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _fit(frame: pd.DataFrame, noise: Any, **options: Any):
    # no atom release: the fine histograms are the first releases (``_FixedFine``)
    options = {"atom_share": 0.0, **options}
    return fit_engine(
        FrameSource(frame, SCHEMA),
        SCHEMA,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**{**SPEC, **options}),
        noise=noise,
        rng=np.random.default_rng(0),
    )


def test_the_bins_are_a_function_of_released_values_only() -> None:
    """Two private tables, the same released fine histograms: the same bins; other
    released histograms: other bins. The ledger records them (shareable)."""
    disc = Discretiser(SCHEMA, 8, 96)
    one = [m.noisy.copy() for m in _released(disc, _loose(20000, 5), sigma=5.0).values()]
    other = [m.noisy.copy() for m in _released(disc, _loose(20000, 6, 1.5), 5.0).values()]
    here = _fit(_loose(20000, 7), _FixedFine(one))
    there = _fit(_loose(15000, 8, shift=-1.0), _FixedFine(one))
    bins = here.ledger.metadata["engine"]["released_bins"]
    assert set(bins) == {"x", "k"}
    assert there.ledger.metadata["engine"]["released_bins"] == bins
    for name in ("x", "k"):
        assert np.array_equal(
            here.discretiser.fine[name].coarse, there.discretiser.fine[name].coarse
        )
    moved = _fit(_loose(20000, 7), _FixedFine(other))
    assert moved.ledger.metadata["engine"]["released_bins"]["x"] != bins["x"]


def test_the_option_spends_the_same_and_pays_on_a_loose_range() -> None:
    """Same releases and charges with the bins on or off; on, the model finds y's cut
    at 2.8 inside x's narrow range (a seeded, statistical check)."""
    private, test = _loose(20000, 7), _loose(2000, 11)
    on = _fit(private, SeededNoise(1))
    assert "x" in on.ledger.metadata["engine"]["released_bins"]
    off = _fit(private, SeededNoise(1), adaptive_bins="off")
    assert on.ledger.result().epsilon == pytest.approx(off.ledger.result().epsilon)
    assert len(on.fine) == len(off.fine) == 3
    assert [e.sigma for e in on.ledger.events[:7]] == [e.sigma for e in off.ledger.events[:7]]
    assert off.ledger.metadata["engine"].get("released_bins") is None

    def accuracy(result) -> float:
        return cut_rule_accuracy(result.sample(4000, np.random.default_rng(5)), test)

    assert accuracy(on) > accuracy(off) + 0.1


def test_the_spec_checks_the_option() -> None:
    assert EngineSpec().adaptive_bins == "released"
    with pytest.raises(InputError, match="adaptive_bins"):
        EngineSpec(adaptive_bins="public")


def test_public_bins_take_precedence_over_released_ones() -> None:
    """A column a public table placed keeps its public bins; the others may move."""
    private, public = _loose(3000, 7), _loose(2000, 8)
    result = fit_engine(
        FrameSource(private, SCHEMA),
        SCHEMA,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(**SPEC),
        noise=SeededNoise(1),
        rng=np.random.default_rng(0),
        public=public.drop(columns=["k"]).assign(k=np.linspace(0, 60, 2000).round()),
    )
    engine: dict[str, Any] = result.ledger.metadata["engine"]
    assert set(engine["public"]["bins"]) == {"x"}
    assert set(engine["released_bins"]) == {"k"}
    assert isinstance(result.fine["x"], Measurement)


def test_decoding_ignores_fine_cells_within_the_noise() -> None:
    """A bin with signal cells draws nothing from its noise-level cells; a bin of noise
    alone falls back to equal weights (stays inside the bin)."""
    disc = Discretiser(SCHEMA, 8, 96)
    cells = disc.fine["x"]
    sigma = 10.0
    # noise everywhere (a constant 1.5 sigma over every cell would be a thin spread of
    # data, which smoothing.adjacent_run keeps: its total stands out)
    noisy = np.random.default_rng(7).normal(0.0, sigma, cells.size)
    signal = cells.atoms + 3  # one interval of the first bin
    noisy[signal] = 50 * sigma
    weights = decode_weights(noisy, sigma, cells)
    assert weights[signal] == noisy[signal] and np.count_nonzero(weights) == 1
    codes = np.zeros((500, len(SCHEMA.columns)), dtype=np.int64)
    x = disc.domain.index("x")
    codes[250:, x] = 5  # a bin with no signal
    out = disc.decode(codes, np.random.default_rng(0), {"x": weights})
    first = out["x"].to_numpy()[:250]
    assert np.all((first >= cells.lo[signal]) & (first <= cells.hi[signal]))
    back = disc.codes(encode(out, SCHEMA))[:, x]
    assert np.array_equal(back, codes[:, x])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-40, 40), min_size=2, max_size=30, unique=True),
    st.lists(st.floats(-45.0, 45.0), min_size=1, max_size=10),
)
def test_edges_snap_to_the_grid_and_onto_zero_when_next_to_it(steps, points) -> None:
    grid = np.sort(np.array([0.0] + [0.37 * k for k in steps if k]))
    inner = np.sort(np.array(points))
    out = snapper(grid)(inner)
    assert np.all(np.isin(out, grid)) and np.all(np.diff(out) >= 0)  # order kept
    nearest = grid[np.argmin(np.abs(grid[None, :] - inner[:, None]), axis=1)]
    moved = np.flatnonzero(out != nearest)
    at = np.searchsorted(grid, nearest)
    rounds = round_points(grid, inner)
    # moved edges only onto round points of the grid, from a neighbour of one
    assert np.all(np.isin(np.searchsorted(grid, out[moved]), rounds))
    assert np.all(np.abs(np.searchsorted(grid, out[moved]) - at[moved]) <= ROUND_EDGE_REACH)
    zero = int(np.flatnonzero(grid == 0.0)[0])
    reach = [
        abs(k - zero) <= ROUND_EDGE_REACH and no_wider_cell_between(grid, int(k), zero) for k in at
    ]
    if rounds.size == 1:  # 0 alone is round: whether an edge lands on it
        assert (0.0 in out) == any(reach)


def test_round_points_are_multiples_of_the_largest_power_of_ten_within_the_edges() -> None:
    """An XOR feature N(50, 10) on a grid of 1.6: with edges over [28, 76], 50 is
    round (a multiple of 10) and the edge next to it moves onto it; 0 always is."""
    grid = np.array([-4.0, 0.0, 30.0, 48.4, 50.0, 51.6, 53.2, 60.0, 100.0])
    rounds = grid[round_points(grid, np.array([28.0, 48.4, 53.2, 76.0]))]
    assert rounds.tolist() == [0.0, 30.0, 50.0, 60.0, 100.0]
    assert snapper(grid)(np.array([48.3, 52.0])).tolist() == [50.0, 51.6]  # not 30: a wide cell
    assert grid[round_points(grid, np.array([1.0]))].tolist() == [0.0]  # no span: 0 alone
