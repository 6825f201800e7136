"""Decoding weights (engine/smoothing.py): smoothing chosen by SURE, then the floor."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.smoothing import (
    BANDWIDTHS,
    DECODE_FLOOR,
    LONE_POINT,
    decode_weights,
    monotone,
    monotone_apart,
    smoothable,
    smoother,
    sure,
    without_lone_points,
)

SCHEMA = Schema(
    (
        NumericColumn("x", -10.0, 10.0),
        NumericColumn("k", 0, 60, integer=True, nullable=True),
    )
)


def _cells(name: str, bins: int = 8, edges=None, nested=()):
    return Discretiser(SCHEMA, bins, 96, edges=edges, nested=nested).fine[name]


UNEVEN = {"x": np.array([-10.0, -1.0, 0.0, 0.5, 1.0, 2.0, 4.0, 6.0, 10.0])}


@settings(max_examples=30, deadline=None)
@given(
    h=st.sampled_from(BANDWIDTHS),
    which=st.sampled_from(["x", "k", "uneven"]),
)
def test_the_kernel_never_mixes_atoms_missing_cells_or_uneven_bins(h, which) -> None:
    cells = _cells("x", edges=UNEVEN) if which == "uneven" else _cells(which)
    matrix = smoother(cells, h)
    assert np.allclose(matrix.sum(axis=1), 1.0) and np.all(matrix >= 0)
    keep = smoothable(cells)
    off = ~np.eye(cells.size, dtype=bool) & (matrix > 0)
    rows, cols = np.nonzero(off)
    assert np.all(keep[rows] & keep[cols])  # atoms and the missing cell stay alone
    if which == "uneven":  # unequal sub-bins: never across a bin's edge
        assert np.all(cells.coarse[rows] == cells.coarse[cols])
    if which == "k":
        assert not keep[-1]  # the nullable column's missing cell


def test_sure_is_unbiased_for_the_risk() -> None:
    """Seeded twin: SURE's mean over draws equals the smoother's true squared error."""
    cells = _cells("x")
    rng = np.random.default_rng(0)
    truth = np.where(smoothable(cells), 80.0 + 40.0 * np.sin(np.arange(cells.size) / 7), 0.0)
    sigma, matrix = 30.0, smoother(cells, 2.0)
    draws = truth + rng.normal(0.0, sigma, size=(4000, cells.size))
    risk = np.mean([np.sum((matrix @ y - truth) ** 2) for y in draws])
    estimate = np.mean([sure(y, sigma, matrix) for y in draws])
    assert estimate == pytest.approx(risk, rel=0.03)


def test_an_even_spread_is_averaged_and_a_spike_kept() -> None:
    """Seeded twin of a released histogram: even values decode near-evenly (the floored
    counts alone are lumpy); a point mass keeps its count."""
    cells = _cells("x")
    rng = np.random.default_rng(1)
    keep = smoothable(cells)
    even = np.where(keep, 90.0, 0.0)
    sigma = 38.0
    errors = {"smoothed": [], "raw": []}
    for _ in range(20):
        noisy = even + rng.normal(0.0, sigma, cells.size)
        raw = np.where(noisy > 2 * sigma, noisy, 0.0)
        for name, w in (("smoothed", decode_weights(noisy, sigma, cells)), ("raw", raw)):
            errors[name].append(np.abs(w[keep] / w[keep].sum() - 1.0 / keep.sum()).sum())
    assert np.mean(errors["smoothed"]) < 0.5 * np.mean(errors["raw"])
    grid = _cells("k")
    spike = np.zeros(grid.size)
    spike[40] = 14_000.0
    spike[grid.lo < 60] += 200.0
    noisy = spike + rng.normal(0.0, sigma, grid.size)
    weights = decode_weights(noisy, sigma, grid)
    same_bin = grid.coarse == grid.coarse[40]
    assert weights[40] / weights[same_bin].sum() > 0.95 * spike[40] / spike[same_bin].sum()


def test_cells_within_the_noise_weigh_nothing() -> None:
    cells = _cells("x")
    rng = np.random.default_rng(2)
    noisy = rng.normal(0.0, 10.0, cells.size)
    signal = cells.atoms + np.arange(6, 12)
    noisy[signal] += 500.0
    weights = decode_weights(noisy, 10.0, cells)
    clipped = np.clip(noisy, 0.0, None)  # without the floor: about 12% noise
    assert clipped[signal].sum() < 0.92 * clipped.sum()
    assert weights[signal].sum() > 0.97 * weights.sum()
    with pytest.raises(ValueError, match="one count per fine cell"):
        decode_weights(noisy[:-1], 10.0, cells)


@settings(max_examples=100, deadline=None)
@given(z=st.floats(0.0, 3.99), inside=st.floats(0.0, 3.99))  # no cell sure: the floor alone
def test_a_lone_point_past_the_data_shown_weighs_only_above_lone_point(
    z: float, inside: float
) -> None:
    """A single value among a continuous column's intervals is not smoothed. Past the
    span the weighted intervals show, in a bin whose intervals weigh nothing, it weighs
    only above LONE_POINT noise scales (black_politicians' median household income,
    seed 4: its declared end, 16, 2.66 scales up, drew all 277 rows of the last bin
    where the data stop at 13.7); within that span it keeps the floor of DECODE_FLOOR."""
    cells = _cells("x")
    assert cells.lo[: cells.atoms].tolist() == [-10.0, 0.0, 10.0]
    sigma = 50.0
    noisy = np.zeros(cells.size)
    body = (np.arange(cells.size) >= cells.atoms) & (cells.lo >= -3.0) & (cells.hi <= 3.0)
    noisy[body] = 150.0  # the data the intervals show, about [-3, 3], no cell sure (4 sigma)
    noisy[2], noisy[1] = z * sigma, inside * sigma  # the declared end 10, and 0
    weights = decode_weights(noisy, sigma, cells)
    assert weights[2] == (noisy[2] if z > LONE_POINT else 0.0)
    assert weights[1] == (noisy[1] if inside > DECODE_FLOOR else 0.0)
    assert np.array_equal(without_lone_points(weights, noisy, sigma, cells)[1:], weights[1:])


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=40))
def test_pool_adjacent_violators_is_the_monotone_fit(values) -> None:
    fit, pooled = monotone(np.array(values))
    assert np.all(np.diff(fit) >= -1e-9)
    assert fit.sum() == pytest.approx(sum(values), abs=1e-6)
    assert np.all(pooled >= 1) and np.all(pooled <= len(values))
    same, _ = monotone(np.sort(values))
    assert np.allclose(same, np.sort(values))  # already monotone: unchanged
    # no other monotone sequence is closer (a perturbation of the fit's blocks)
    other = np.maximum.accumulate(np.array(values))
    assert np.sum((fit - values) ** 2) <= np.sum((other - values) ** 2) + 1e-6


def test_a_moved_columns_tail_decodes_next_to_the_data() -> None:
    """Seeded twin of a released fine histogram: the data sit in the centre and just
    inside the tail bins; far out there is only noise, which must draw no value."""
    edges = {"x": np.r_[-10.0, np.linspace(-1.0, 1.0, 7), 10.0]}
    cells = Discretiser(SCHEMA, 8, 96, edges=edges).fine["x"]
    tails = [0, 7]  # the first and last bin: [-10, -1) and [1, 10]
    rng = np.random.default_rng(3)
    centre = 0.5 * (cells.lo + cells.hi)
    truth = np.where(smoothable(cells), 4000.0 * np.exp(-0.5 * (centre / 0.8) ** 2), 0.0)
    sigma = 40.0
    far = smoothable(cells) & (np.abs(centre) > 5.0)
    near = smoothable(cells) & np.isin(cells.coarse, tails) & (truth > 10 * sigma)
    assert far.any() and near.any()
    leaked = {True: [], False: []}
    for _ in range(20):
        noisy = truth + rng.normal(0.0, sigma, cells.size)
        for tail in (True, False):
            w = decode_weights(noisy, sigma, cells, tails=tail)
            inside = np.isin(cells.coarse, tails)
            leaked[tail].append(w[far].sum() / w[inside].sum())
            assert w[near].sum() > 0
    # measured: 0.4% of the tails' weight far out with the monotone fit; without it
    # 0.9% before the support step fitted every column's outer cells, 0.4% since
    assert np.mean(leaked[True]) < 0.006
    assert np.mean(leaked[False]) < 0.006


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.floats(-100.0, 100.0), min_size=1, max_size=30),
    data=st.data(),
)
def test_sure_cells_split_the_monotone_fit(values, data) -> None:
    """Each run between sure entries is its own monotone fit; a sure entry keeps its
    value in a pool of one; without sure entries it is the plain fit."""
    values = np.array(values)
    sure_ = np.array(data.draw(st.lists(st.booleans(), min_size=values.size, max_size=values.size)))
    fit, pooled = monotone_apart(values, sure_)
    assert np.array_equal(fit[sure_], values[sure_]) and np.all(pooled[sure_] == 1)
    cuts = np.flatnonzero(sure_)
    for start, stop in zip(np.r_[0, cuts + 1], np.r_[cuts, values.size], strict=True):
        alone, sizes = monotone(values[start:stop])
        assert np.allclose(fit[start:stop], alone) and np.array_equal(pooled[start:stop], sizes)
    plain = monotone_apart(values, np.zeros(values.size, dtype=bool))
    assert all(np.allclose(a, b) for a, b in zip(plain, monotone(values), strict=True))


def test_a_far_cluster_standing_out_in_a_tail_keeps_its_weight() -> None:
    """Seeded twin: the body in the centre, a cluster far out in the top tail bin (a
    census table's densest area) standing 6 noise scales out, nothing between. The tail
    fit thins out towards the cluster only up to it: the cluster's cell keeps its
    weight (pooled with the empty cells between, it weighed nothing, and its bin's rows
    were drawn across the bin), and the empty far cells still weigh nothing."""
    edges = {"x": np.r_[-10.0, np.linspace(-1.0, 1.0, 7), 10.0]}
    cells = Discretiser(SCHEMA, 8, 96, edges=edges).fine["x"]
    centre = 0.5 * (cells.lo + cells.hi)
    keep = smoothable(cells)
    truth = np.where(keep, 4000.0 * np.exp(-0.5 * (centre / 0.5) ** 2), 0.0)
    cluster = int(np.flatnonzero(keep & (cells.lo <= 7.0) & (cells.hi > 7.0))[0])
    sigma = 40.0
    truth[cluster] = 6 * sigma
    rng = np.random.default_rng(5)
    empty = keep & (centre > 3.0) & (np.arange(cells.size) != cluster)
    for _ in range(20):
        noisy = truth + rng.normal(0.0, sigma, cells.size)
        noisy[cluster] = truth[cluster]
        w = decode_weights(noisy, sigma, cells, tails=True)
        assert w[cluster] == pytest.approx(truth[cluster])
        assert w[empty].sum() <= 0.01 * w[cluster]


@settings(max_examples=60, deadline=None)
@given(
    lo=st.integers(-50, 50),
    span=st.integers(1, 400),
    integer=st.booleans(),
    nullable=st.booleans(),
    bins=st.integers(2, 20),
    fine=st.integers(8, 160),
    moved=st.booleans(),
    sigma=st.floats(0.5, 200.0),
    seed=st.integers(0, 2**16),
)
def test_any_column_decodes_after_its_release(
    lo, span, integer, nullable, bins, fine, moved, sigma, seed
) -> None:
    """Decoding runs after the budget is spent: it must not fail on any declared column,
    and its weights are finite, non-negative, one per fine cell."""
    column = NumericColumn("v", float(lo), float(lo + span), integer=integer, nullable=nullable)
    schema = Schema((column,))
    edges = None
    if moved and bins >= 4 and not integer:  # (the engine snaps an integer column's edges)
        inner = np.linspace(lo + 0.4 * span, lo + 0.6 * span, bins - 1)
        edges = {"v": np.r_[float(lo), inner, float(lo + span)]}
    try:
        disc = Discretiser(schema, bins, fine, edges=edges)
    except ValueError:
        return  # edges the discretiser refuses are refused before any release
    cells = disc.fine["v"]
    rng = np.random.default_rng(seed)
    noisy = rng.normal(0.0, sigma, cells.size) + rng.integers(0, 500, cells.size)
    weights = decode_weights(noisy, sigma, cells, tails=edges is not None)
    assert weights.shape == (cells.size,)
    assert np.all(np.isfinite(weights)) and np.all(weights >= 0)
    codes = rng.integers(0, disc.domain.shape(("v",))[0], size=(200, 1))
    out = disc.decode(codes, rng, {"v": weights})
    present = out["v"].notna().to_numpy()
    values = out["v"].to_numpy(dtype=float)[present]
    assert np.all((values >= column.lo) & (values <= column.hi))
    back = disc.codes(encode(out, schema))[:, 0]
    # a value stays in its bin (a bin holding no value of an integer grid decodes to the
    # nearest value, outside it)
    held = present & np.isin(codes[:, 0], cells.coarse)
    assert np.array_equal(back[held], codes[held, 0])


QUARTERS = NumericColumn("q", 0.0, 4.5, decimals=1, atoms=(0.0, 1.0, 2.0, 3.0, 4.0))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-300.0, 600.0), min_size=46, max_size=46),
    st.floats(20.0, 120.0),
)
def test_a_known_value_weighs_at_least_its_count_from_the_decode_floor(
    counts: list[float], sigma: float
) -> None:
    """On a grid of tenths with the whole quarters declared, a declared value whose
    released count stands DECODE_FLOOR scales out weighs at least that count,
    whatever the smoothing did with its neighbours; a value not declared gets no such
    floor (its weight is the smoothing's and the support's alone)."""
    cells = Discretiser(Schema((QUARTERS,)), 20, 128).fine["q"]
    assert cells.grid and cells.known_cells.sum() == 5
    noisy = np.array(counts)
    weights = decode_weights(noisy, sigma, cells)
    standing = cells.known_cells & (noisy > DECODE_FLOOR * sigma)
    assert np.all(weights[standing] >= noisy[standing])
    assert np.all(weights >= 0.0)


def test_a_declared_value_standing_out_decodes_its_bin_where_it_is() -> None:
    """crime1's quarters employed (1,090 rows, noise 85): 0 declared, released at 303,
    its neighbours noise. Its first bin, [0, 0.25), had drawn its 275 rows at 0.2 (the
    bin's cell nearest the cells that stood out), where no row lies; now at 0."""
    edges = {"q": np.linspace(0, 4.5, 21)}
    cells = Discretiser(Schema((QUARTERS,)), 20, 128, edges=edges).fine["q"]
    noisy = np.zeros(cells.size)
    noisy[:3] = [303.0, -70.0, -96.0]
    noisy[40] = 351.0
    weights = decode_weights(noisy, 84.9, cells)
    first = np.flatnonzero(cells.coarse == 0)
    assert weights[first].tolist() == [303.0, 0.0, 0.0]


PARITY = NumericColumn("parity", 0, 15, integer=True, atoms=(1.0, 2.0))


@settings(max_examples=30, deadline=None)
@given(h=st.sampled_from(BANDWIDTHS), column=st.sampled_from([PARITY, QUARTERS]))
def test_a_known_value_on_a_grid_is_never_averaged(h, column) -> None:
    """On a grid as among intervals, a value the data are known to hold is a point mass:
    the kernel neither spreads its count over its neighbours nor theirs over it."""
    cells = Discretiser(Schema((column,)), 10, 128).fine[column.name]
    assert cells.grid and cells.known_cells.any()
    matrix = smoother(cells, h)
    known = cells.known_cells
    assert np.array_equal(matrix[known], np.eye(cells.size)[known])
    assert np.all(matrix[~known][:, known] == 0.0)


def test_a_spike_lends_no_weight_to_the_empty_end_beside_it() -> None:
    """bwght's parity (554 rows, noise 88.6): 58% of the rows at 1, none at the declared
    end 0, released there at 75 (0.85 scales). Smoothed with the spike beside it, 0 had
    weighed 106 and a tenth of a run's rows were drawn there; the spike, a declared
    value, is a point mass the kernel leaves alone, and 0 weighs nothing."""
    cells = Discretiser(Schema((PARITY,)), 10, 128).fine["parity"]
    noisy = np.zeros(cells.size)
    noisy[:8] = [75.4, 350.5, 179.3, 40.0, -13.2, 10.0, -43.9, 5.0]
    weights = decode_weights(noisy, 88.6, cells)
    assert weights[0] == 0.0 and weights[1] >= 350.5
