"""Decoding within the released support: nothing drawn far beyond where the released fine
histogram shows data, however much mass the model gives an empty bin."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine.cells import MARGIN
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.smoothing import decode_weights

SCHEMA = Schema(
    (
        NumericColumn("v", 0.0, 100.0),
        NumericColumn("k", 0, 110, integer=True),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)


def _histogram(cells, lo: float, hi: float, n: int, sigma: float, seed: int) -> np.ndarray:
    """A seeded twin of a released fine histogram: ``n`` values spread over [lo, hi]."""
    rng = np.random.default_rng(seed)
    centre = np.where(np.arange(cells.size) < cells.atoms, cells.lo, 0.5 * (cells.lo + cells.hi))
    inside = (centre >= lo) & (centre <= hi) & (np.arange(cells.size) >= cells.atoms)
    if cells.grid:
        inside = (cells.lo >= lo) & (cells.lo <= hi)
    truth = np.where(inside, n / max(1, inside.sum()), 0.0)
    return truth + rng.normal(0.0, sigma, cells.size)


def _shown(cells, low: float, high: float, cover: float, n: int, seed: int):
    """Decoding weights on the value cells within [low, high] holding ``cover`` of the
    ``n`` rows (cells above the noise), nothing elsewhere; and which cells those are."""
    rng = np.random.default_rng(seed)
    shown = (cells.lo >= low) & (cells.hi <= high) & (np.arange(cells.size) >= cells.atoms)
    weights = np.where(shown, rng.uniform(0.5, 1.5, cells.size), 0.0)
    return weights * cover * n / weights.sum(), shown


def _decoded(disc: Discretiser, codes: np.ndarray, weights: np.ndarray, n: int | None, seed: int):
    return disc.decode(codes, np.random.default_rng(seed), {"v": weights}, n)["v"].to_numpy()


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["v", "k"]))
def test_an_empty_end_bin_decodes_next_to_the_data(seed: int, name: str) -> None:
    """Data in [40, 60]; the model draws the end bins as often as the data's. With the
    row count given, no value lands beyond the data by more than ``MARGIN`` of their
    width and one bin (10: a bin reaching into the margin decodes within it). A bin
    between the ends decodes within itself: the folds (``tails.released_inward``) move
    a stretch the releases show as noise before decoding."""
    disc = Discretiser(SCHEMA, 10, 96)
    cells = disc.fine[name]
    n, sigma = 5000, 20.0
    weights = decode_weights(_histogram(cells, 40.0, 60.0, n, sigma, seed), sigma, cells)
    column = 0 if name == "v" else 1
    codes = np.zeros((2000, 3), dtype=np.int64)
    codes[:, column] = np.array([0, 4, 5, 9])[np.arange(2000) % 4]  # the ends, as noise
    out = disc.decode(codes, np.random.default_rng(seed), {name: weights}, n)[name]
    reach = MARGIN * 20.0 + 10.0
    beyond = ((out < 40.0 - reach) | (out > 60.0 + reach)).mean()
    assert beyond <= 0.001
    before = disc.decode(codes, np.random.default_rng(seed), {name: weights})[name]
    assert ((before < 25.0) | (before > 75.0)).mean() > 0.3  # without it: bins as drawn
    edges = disc.edges(name)
    codes[:, column] = np.array([2, 7])[np.arange(2000) % 2]
    inner = disc.decode(codes, np.random.default_rng(seed), {name: weights}, n)[name]
    bins = np.searchsorted(edges, inner.to_numpy(), side="right") - 1
    assert np.array_equal(np.minimum(bins, 9), codes[:, column])


def test_a_noisy_histogram_keeps_the_models_bins() -> None:
    """Where the cells above the noise hold too little of the rows to say where the data
    are, a bin of floored cells decodes within itself (equal weights), as before."""
    disc = Discretiser(SCHEMA, 10, 96)
    cells = disc.fine["v"]
    n, sigma = 500, 60.0  # about 4 rows a cell against noise of 60
    weights = decode_weights(_histogram(cells, 0.0, 100.0, n, sigma, 1), sigma, cells)
    codes = np.zeros((1000, 3), dtype=np.int64)
    codes[:, 0] = np.arange(1000) % 10
    out = disc.decode(codes, np.random.default_rng(0), {"v": weights}, n)["v"].to_numpy()
    bins = np.minimum((out // 10).astype(int), 9)
    assert np.array_equal(bins, codes[:, 0])


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    low=st.floats(9.5, 13.0),
    cover=st.floats(0.05, 0.85),
)
def test_an_end_bin_straddling_the_datas_end_keeps_near_them(
    seed: int, low: float, cover: float
) -> None:
    """A column whose bins were not moved, its first bin reaching from the declared end
    into the data (black_politicians' ``black_medianhh``: declared on [-5, 100], held in
    [-0.1, 10], bin 0 = [-5, 0.25]). Its cells weigh nothing and the weighted cells hold
    too little of the ``n`` rows to bound every bin (``cover``): the end bin still
    decodes within the margin of the weighted span where that reaches into it, never
    across its whole width."""
    disc = Discretiser(SCHEMA, 10, 96)
    cells = disc.fine["v"]
    weights, shown = _shown(cells, low, 60.0, cover, 5000, seed)
    first = float(np.min(cells.lo[shown]))
    span = float(np.max(cells.hi[shown])) - first
    codes = np.zeros((2000, 3), dtype=np.int64)  # every row in bin 0: [0, 10)
    out = _decoded(disc, codes, weights, 5000, seed)
    width = float(np.max(cells.hi - cells.lo))
    assert first - MARGIN * span < 10.0  # the margin reaches into bin 0
    assert out.min() >= first - MARGIN * span - width and out.max() < 10.0
    before = _decoded(disc, codes, weights, None, seed)
    assert before.min() < 2.0  # without the row count: the bin as drawn


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    high=st.floats(55.0, 80.0),
    cover=st.floats(0.05, 0.85),
)
def test_an_end_bin_wholly_past_the_data_decodes_at_its_side_nearest_them(
    seed: int, high: float, cover: float
) -> None:
    """A column whose bins were not moved, its last bin wholly past the weighted cells'
    span widened by the margin, its cells weighing nothing and the weighted cells
    holding too little of the ``n`` rows to bound every bin (``cover``): the model's
    rows there (noise in an empty end bin: catholic's math scores) decode in the bin's
    cell nearest the data, not across the bin out to the declared end."""
    disc = Discretiser(SCHEMA, 10, 96)
    cells = disc.fine["v"]
    weights, shown = _shown(cells, 20.0, high, cover, 5000, seed)
    last = float(np.max(cells.hi[shown]))
    assert last + MARGIN * (last - 20.0) < 90.0  # the last bin lies wholly past the margin
    codes = np.zeros((2000, 3), dtype=np.int64)
    codes[:, 0] = 9
    out = _decoded(disc, codes, weights, 5000, seed)
    nearest = int(np.argmin(np.where(cells.coarse == 9, cells.lo, np.inf)))
    assert out.min() >= 90.0 and out.max() <= cells.hi[nearest]
    before = _decoded(disc, codes, weights, None, seed)
    assert before.max() > 98.0  # without the row count: the bin as drawn


@settings(max_examples=20, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    high=st.floats(42.0, 55.0),
    cover=st.floats(0.05, 0.85),
    target=st.integers(6, 8),
)
def test_a_bin_the_ends_fold_into_decodes_as_an_end_bin(
    seed: int, high: float, cover: float, target: int
) -> None:
    """The model's end bins folded into a bin past the data (``ends``: twoyear's fold
    target, held by 0.6 model rows, took the 66 rows of the noise beyond it): that bin
    decodes as an end bin, in its cell nearest the data, not across its width."""
    disc = Discretiser(SCHEMA, 10, 96)
    cells = disc.fine["v"]
    weights, _ = _shown(cells, 20.0, high, cover, 5000, seed)
    codes = np.zeros((2000, 3), dtype=np.int64)
    codes[:, 0] = target
    rng = np.random.default_rng(seed)
    out = disc.decode(codes, rng, {"v": weights}, 5000, {"v": (0, target)})["v"].to_numpy()
    nearest = int(np.argmin(np.where(cells.coarse == target, cells.lo, np.inf)))
    assert out.min() >= 10.0 * target and out.max() <= cells.hi[nearest]
    inner = _decoded(disc, codes, weights, 5000, seed)
    assert inner.max() > 10.0 * target + 8.0  # an inner bin: drawn across its width
