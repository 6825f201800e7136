"""Decoding bounded where the releases show data (issue 25: rows far beyond the private
range): a thin tail next to the data keeps its decoding weights (smoothing.adjacent_run),
and end bins wholly beyond the shown span, holding no more than the noise of an empty
stretch, decode as the nearest bin inside it (tails.beyond_span)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine.cells import MARGIN, falling, shown_span, thinning
from dpevolve.engine.counts import held_bins
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.reach import (
    EVEN,
    FALL,
    THINNING,
    end_reach,
    inner_densities,
    reaching,
    shown_reach,
)
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT, adjacent_run, decode_weights
from dpevolve.engine.tails import beyond_span

SCHEMA = Schema((NumericColumn("v", 0.0, 500.0), CategoricalColumn("y", ("no", "yes"))), label="y")


def test_adjacent_run_is_the_most_significant_prefix() -> None:
    """The formula: the k maximising (sum of the first k counts) / (sigma sqrt(k)), where
    that passes SUPPORT; empty cells past a real tail are not taken with it."""
    sigma = 10.0
    counts = np.array([50.0, 80.0, 0.0, 0.0, 2.0, -3.0])
    score = np.cumsum(counts) / (sigma * np.sqrt(np.arange(1, 7)))
    assert score.max() > SUPPORT
    assert adjacent_run(counts, sigma) == int(np.argmax(score)) + 1 == 2
    assert adjacent_run(np.array([30.0, 5.0]), sigma) == 0  # 3.0 and 2.5 scales
    assert adjacent_run(np.array([]), sigma) == 0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_pure_noise_next_to_the_data_is_rarely_a_tail(seed: int) -> None:
    """100 empty cells of noise: a run is kept by chance far less than once in 30."""
    rng = np.random.default_rng(seed)
    kept = sum(adjacent_run(rng.normal(0.0, 1.0, 100), 1.0) > 0 for _ in range(30))
    assert kept <= 2


def test_a_thin_tail_in_a_loose_range_keeps_its_weights() -> None:
    """cps91's wages: 528 rows in one cell, a thin tail over the next four, 100 empty
    cells of noise beyond out to a loose declared end. Pooled from the far end the tail
    was floored (every value decoded within one cell); now its cells weigh something,
    and the far cells still nothing."""
    disc = Discretiser(SCHEMA, 20, 128)
    cells = disc.fine["v"]
    sigma = 77.0
    truth = np.zeros(cells.size)
    first = cells.atoms + 1  # [4.2, 8.3)
    truth[first : first + 5] = [528.0, 300.0, 180.0, 140.0, 160.0]
    noisy = truth + np.random.default_rng(3).normal(0.0, sigma, cells.size) * (truth == 0)
    weights = decode_weights(noisy, sigma, cells)
    assert (weights[first : first + 4] > 0).all()
    assert weights[first + 12 :].sum() == 0.0


def test_beyond_span_moves_only_light_end_bins_wholly_outside() -> None:
    edges = np.linspace(10.0, 65.0, 21)  # cps91's ages, bins of 2.75
    span = (20.3, 64.7)
    mass = np.r_[73.7, 20.6, 2.4, 38.5, 31.2, np.full(15, 150.0)]
    target = beyond_span(edges, span, mass, 107.0)
    assert target[:3].tolist() == [3, 3, 3]  # [10, 18.25) lies below 20.3
    assert np.array_equal(target[3:], np.arange(3, 20))  # the top bin reaches 65 > 64.7
    heavy = mass.copy()
    heavy[0] = DECODE_FLOOR * 107.0  # more than the noise of an empty stretch: kept
    assert np.array_equal(beyond_span(edges, span, heavy, 107.0), np.arange(20))


def test_beyond_span_reads_a_stretch_at_the_noise_of_its_counts_across_the_releases() -> None:
    """cps91's wives' schooling: the bin of 18 years (6% of the rows) lies past the span
    the fine histogram shows, its model mass 152 under two 1-way noise scales (107),
    yet its count across the releases stands 3.9 of their scales (42) out. Read at the
    stretch's own scale (sqrt of its bins' squared scales, 62 for two bins), it is
    data and stays; with scales no sharper than the 1-way's, the 1-way's rules."""
    edges = np.arange(21.0)
    span = (0.0, 17.5)
    mass = np.r_[np.full(18, 100.0), 152.5, 34.0]
    assert beyond_span(edges, span, mass, 107.0)[18:].tolist() == [17, 17]
    sd = np.r_[np.full(19, 42.1), 45.2]
    assert beyond_span(edges, span, mass, 107.0, sd=sd)[18:].tolist() == [18, 19]
    loose = np.full(20, 300.0)  # noisier than the 1-way: the 1-way's scale bounds it
    assert beyond_span(edges, span, mass, 107.0, sd=loose)[18:].tolist() == [17, 17]


@settings(max_examples=200, deadline=None)
@given(
    mass=st.lists(st.floats(0.0, 500.0), min_size=20, max_size=20).map(np.array),
    low=st.floats(0.0, 100.0),
    width=st.floats(1.0, 100.0),
    sigma=st.floats(1.0, 300.0),
    held=st.sets(st.integers(0, 19), max_size=3),
    sd=st.one_of(st.none(), st.lists(st.floats(1.0, 300.0), min_size=20, max_size=20)),
)
def test_beyond_span_maps_into_the_span_and_never_outwards(
    mass: np.ndarray,
    low: float,
    width: float,
    sigma: float,
    held: set[int],
    sd: list[float] | None,
) -> None:
    edges = np.linspace(0.0, 100.0, 21)
    scales = None if sd is None else np.array(sd)
    target = beyond_span(edges, (low, low + width), mass, sigma, held, scales)
    moved = np.flatnonzero(target != np.arange(20))
    assert not set(moved) & held  # a bin the releases show data in stays
    for b in moved:
        assert edges[b + 1] <= low or edges[b] >= low + width  # only bins wholly outside
        t = target[b]
        inside = edges[t + 1] > low and edges[t] < low + width
        assert inside or t in held  # into one that is not, or the outermost held one
        assert abs(t - b) > 0
        assert not any(min(b, t) < h < max(b, t) for h in held)  # never past a held bin


def test_shown_span_is_the_weighted_cells_widened_by_the_margin() -> None:
    disc = Discretiser(SCHEMA, 20, 128)
    cells = disc.fine["v"]
    weights = np.zeros(cells.size)
    weights[cells.atoms + 3] = 1.0
    weights[cells.atoms + 10] = 2.0
    low, high = cells.lo[cells.atoms + 3], cells.hi[cells.atoms + 10]
    assert np.allclose(
        shown_span(cells, weights), (low - MARGIN * (high - low), high + MARGIN * (high - low))
    )
    assert shown_span(cells, np.zeros(cells.size)) is None


def _moved_shown(fine_cells: int, low: float):
    """A moved column (bins on [20, 60], its tails out to 0 and 500) whose decoding
    weights show data in [low, 60) alone; the discretiser, its cells, the weights and
    which cells hold them."""
    edges = np.r_[0.0, np.linspace(20.0, 60.0, 19), 500.0]
    disc = Discretiser(SCHEMA, 20, fine_cells, {"v": edges})
    cells = disc.fine["v"]
    body = (cells.lo >= low) & (cells.hi <= 60.0) & (np.arange(cells.size) >= cells.atoms)
    return disc, cells, body.astype(float), body


def test_a_moved_tail_bin_keeps_near_the_shown_data_whatever_the_cover() -> None:
    """A public range's tail bin out to the declared end ([60, 500]) with weights only in
    [20, 60) holding far less than 90% of the rows: its rows decode within the shown
    span's margin, not across the tail; an interior bin without weights is unchanged."""
    disc, cells, weights, _ = _moved_shown(128, 20.0)
    codes = np.zeros((500, 2), dtype=np.int64)
    codes[:, 0] = 19
    rows = 10_000  # the weights hold a tiny share: no cover
    out = disc.decode(codes, np.random.default_rng(0), {"v": weights}, rows)["v"]
    reach = 60.0 + MARGIN * 40.0 + (500.0 - 60.0) / cells.per_bin  # one cell past it
    assert out.min() >= 60.0 and out.max() <= reach
    wide = disc.decode(codes, np.random.default_rng(0), {"v": weights})["v"]
    assert wide.max() > 300.0  # without the row count: the bin as drawn


def test_a_moved_tail_bin_wholly_past_the_shown_data_decodes_in_its_nearest_cells() -> None:
    """A moved column's first bin ([0, 20)) wholly below the shown data ([30, 60)): its
    rows decode in its cells within the margin's reach of its cell nearest the data;
    where the model gives the bin no more than noise (``thin``) and the weights hold far
    less than 90% of the rows, in that one cell (alcohol's empty first bin of
    unemployment rates, given 2.0 noise scales, drew rows 1.8 below the data across the
    margin's reach)."""
    disc, cells, weights, body = _moved_shown(2048, 30.0)
    codes = np.zeros((500, 2), dtype=np.int64)  # every row in bin 0
    nearest = int(np.argmax(np.where(cells.coarse == 0, cells.hi, -np.inf)))
    shown = float(np.max(cells.hi[body]) - np.min(cells.lo[body]))
    reach = cells.lo[nearest] - MARGIN * (1.0 + 2.0 * MARGIN) * shown
    for rows in (10_000, int(weights.sum())):  # without and with the cover
        held = disc.decode(codes, np.random.default_rng(0), {"v": weights}, rows)["v"]
        assert held.min() >= reach - 1e-9 and held.min() < cells.lo[nearest]
        assert held.max() <= 20.0
    rng = np.random.default_rng(0)
    thin = disc.decode(codes, rng, {"v": weights}, 10_000, {"v": (0, 19)}, {"v": (0,)})["v"]
    assert thin.min() >= cells.lo[nearest] and thin.max() <= 20.0


def test_held_bins_are_those_standing_support_scales_above_zero() -> None:
    count = np.array([500.0, 40.0, 41.0, -5.0, 90.0, 7.0])
    sd = np.array([10.0, 10.0, 10.0, 10.0, np.inf, 1.0])
    assert held_bins(count, sd) == (0, 2, 5)  # 40 is 4 scales, not above; inf: unmeasured


def _interior_without_weights() -> tuple[Discretiser, np.ndarray, np.ndarray, int]:
    """Weights (the fine histogram) show data in [0, 200) and nothing above, holding
    every row (cover); bin 10 ([250, 275)) is interior, its cells weighing nothing."""
    disc = Discretiser(SCHEMA, 20, 128)
    cells = disc.fine["v"]
    weights = ((cells.hi <= 200.0) & (np.arange(cells.size) >= cells.atoms)).astype(float)
    weights *= 1000.0 / weights.sum()
    codes = np.zeros((400, 2), dtype=np.int64)
    codes[:, 0] = 10
    return disc, weights, codes, 1000


def test_a_bin_between_the_ends_keeps_its_rows_whatever_the_fine_cells() -> None:
    """Restaurant inspections' chains of 219-650 locations: 394 of 10,871 rows spread
    too thin for any fine cell to show them, yet their bins' counts stand far out of the
    noise; cps91's other incomes past 45, 18% of the rows, in bins no release shows
    alone. A bin between the ends decodes within its own cells, held or not (the folds
    move a stretch that is noise before decoding); an end bin keeps near the shown
    data."""
    disc, weights, codes, rows = _interior_without_weights()
    edges = disc.edges("v")
    for held in ((10,), ()):
        drawn = disc.decode(codes, np.random.default_rng(0), {"v": weights}, rows, held={"v": held})
        values = drawn["v"].to_numpy()
        assert values.min() >= edges[10] and values.max() <= edges[11]
        assert np.unique(np.floor(values / 5.0)).size > 3  # spread over the bin, not one cell
    end = codes.copy()
    end[:, 0] = 19
    ends = disc.decode(end, np.random.default_rng(0), {"v": weights}, rows, held={"v": (19,)})
    assert ends["v"].max() < edges[19]  # an end bin keeps near the shown data, as before


def test_beyond_span_keeps_a_bin_the_releases_show_data_in() -> None:
    """cps91's husbands' earnings: the bins past the shown span (1,008) hold 171 model
    rows, under 2 noise scales of the 1-way (112) together, but the first of them is
    4.3 scales out across the releases: it stays, and only the bins past it fold."""
    edges = np.linspace(0.0, 2200.0, 21)
    mass = np.r_[np.full(10, 200.0), 82.7, 14.1, 11.9, 1.5, 0.0, 5.7, 19.8, 33.5, 0.0, 1.6]
    folded = beyond_span(edges, (-91.7, 1008.3), mass, 112.0)
    assert folded[10:].tolist() == [9] * 10
    kept = beyond_span(edges, (-91.7, 1008.3), mass, 112.0, held=(10,))
    assert kept[:11].tolist() == list(range(11)) and kept[11:].tolist() == [10] * 9


def test_end_reach_is_the_end_count_falling_from_the_pooled_density_next_to_it() -> None:
    """From the bin's inner edge outwards, a density falling linearly from that of the
    bins next to it to zero, holding the part of the bin's count its noise does not
    explain (``reaching``): FALL times the even extent; held even, the whole count, where
    that would run past the declared end and the bins further in are not denser by 2
    noise scales of the difference."""
    edges = np.array([0.0, 1.0, 2.0, 3.0, 3.0 + 1e-9, 4.0, 20.0])
    count = np.array([100.0, 90.0, 30.0, 500.0, 30.0, 120.0])
    sd = np.full(6, 10.0)
    # from the end bin inwards: [3, 4) holds 30 (3 scales: not yet); the atom's own bin
    # at 3 shows no density; [2, 3) with it 60 rows over width 2 (4.2 scales): 30 a unit,
    # and further in [1, 2) 90 a unit: denser by 60 against a noise of 12.2
    top = end_reach(edges, count, sd, 5, top=True, atom_width=1e-6)
    assert top == pytest.approx((4.0, 4.0 + FALL * reaching(120.0, 10.0) / 30.0, THINNING))
    # the first bin's 100 rows at the 90 a unit of the next would
    # thin out past the declared end, 0, and the bins past it are sparser (30 a unit):
    # even, past its width (decoding keeps its own cells)
    bottom = end_reach(edges, count, sd, 0, top=False, atom_width=1e-6)
    assert bottom == pytest.approx((1.0, 1.0 - 100.0 / 90.0, EVEN))
    flipped = end_reach(-edges[::-1], count[::-1], sd, 0, top=False, atom_width=1e-6)
    assert flipped == pytest.approx((-top[0], -top[1], top[2]))
    quiet = count.copy()
    quiet[5] = 19.0  # under 2 scales: what an empty bin's noise leaves
    assert end_reach(edges, quiet, sd, 5, top=True, atom_width=1e-6) is None
    faint = count.copy()
    faint[5] = 30.0  # 3 scales: not held, yet more than noise leaves (black_politicians)
    assert end_reach(edges, faint, sd, 5, top=True, atom_width=1e-6) == pytest.approx(
        (4.0, 4.0 + FALL * reaching(30.0, 10.0) / 30.0, THINNING)
    )
    # just past the bar, the reach starts from nothing (no jump from the bin's own cells)
    faint[5] = 20.0 + 1e-6
    assert end_reach(edges, faint, sd, 5, top=True, atom_width=1e-6)[1] == pytest.approx(4.0)
    assert end_reach(edges, count, np.full(6, 1e3), 5, top=True) is None  # nothing stands out
    # 300 rows in the last bin thin out to 24, past the declared 20: the bins further
    # in denser by 60 (4.9 scales), still thinning; denser by 22 (1.8), even
    full = count.copy()
    full[5] = 300.0
    assert end_reach(edges, full, sd, 5, top=True, atom_width=1e-6) == pytest.approx(
        (4.0, 4.0 + FALL * reaching(300.0, 10.0) / 30.0, THINNING)
    )
    full[1] = 52.0
    assert end_reach(edges, full, sd, 5, top=True, atom_width=1e-6) == pytest.approx(
        (4.0, 4.0 + 300.0 / 30.0, EVEN)
    )
    # no second run of bins to compare with: by the declared end alone
    alone = end_reach(edges[2:], count[2:], sd[2:], 3, top=True, atom_width=1e-6)
    assert alone == pytest.approx((4.0, 4.0 + FALL * reaching(120.0, 10.0) / 30.0, THINNING))
    alone = end_reach(edges[2:], full[2:], sd[2:], 3, top=True, atom_width=1e-6)
    assert alone == pytest.approx((4.0, 4.0 + 300.0 / 30.0, EVEN))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.1, 1e4), st.floats(1.0, 50.0))
def test_reaching_is_nothing_at_the_bar_and_the_count_far_past_it(sd: float, scales: float) -> None:
    """The rows an end bin's count reaches out with: none at the folds' bar of 2 noise
    scales, growing with the count, never more than it, all but (2 / scales)^2 of it."""
    count = scales * sd
    out = reaching(count, sd)
    assert 0.0 <= out <= count
    assert reaching(2.0 * sd, sd) == pytest.approx(0.0, abs=1e-9 * sd)
    assert reaching(1.01 * count, sd) >= out
    if scales >= 2.0:
        assert out == pytest.approx(count * (1.0 - (2.0 / scales) ** 2))


def test_inner_densities_pool_each_run_until_it_stands_out() -> None:
    """Inwards from the end bin, a run pools bins (atoms' own bins passed over) until its
    count stands 4 noise scales out; the next run starts afresh; two at most."""
    edges = np.array([0.0, 1.0, 2.0, 3.0, 3.0 + 1e-9, 4.0, 20.0])
    count = np.array([100.0, 90.0, 30.0, 500.0, 30.0, 120.0])
    sd = np.full(6, 10.0)
    runs = inner_densities(edges, count, sd, 5, top=True, atom_width=1e-6)
    assert np.ravel(runs) == pytest.approx([30.0, np.sqrt(200.0) / 2.0, 90.0, 10.0])
    runs = inner_densities(edges, count, sd, 0, top=False, atom_width=1e-6)
    assert np.ravel(runs) == pytest.approx([90.0, 10.0, 30.0, np.sqrt(200.0) / 2.0])
    assert inner_densities(edges, count, np.full(6, 1e3), 5, top=True) == []


@settings(max_examples=100, deadline=None)
@given(
    rate=st.floats(0.05, 2.0),
    scale=st.floats(1.0, 50.0),
    rows=st.integers(2_000, 50_000),
)
def test_a_tail_thinning_out_is_reached_no_further_than_its_data(
    rate: float, scale: float, rows: int
) -> None:
    """Exponential data cut into 19 bins of ``scale`` and an end bin out to 1,000
    scales, counts as they are (noise 1): the end bin's reach stays within its data's
    99.9% point (every bin's density falls outwards)."""
    edges = np.r_[np.arange(20) * scale, 1000.0 * scale]
    cdf = 1.0 - np.exp(-rate * edges / scale)
    count = rows * np.diff(cdf)
    sd = np.ones(20)
    reach = end_reach(edges, count, sd, 19, top=True)
    if reach is not None:
        assert edges[19] == reach[0] < reach[1] <= edges[20]
        assert reach[1] <= -np.log(1e-3 * np.exp(-rate * 19)) * scale / rate + 1e-9


@settings(max_examples=100, deadline=None)
@given(
    length=st.floats(0.1, 40.0),
    fill=st.floats(0.51, 1.0),
    scale=st.floats(1.0, 50.0),
    rows=st.integers(2_000, 50_000),
    noise=st.floats(0.0, 2.0),
)
def test_data_stopping_sharply_are_reached_to_their_end_and_no_further(
    length: float, fill: float, scale: float, rows: int, noise: float
) -> None:
    """Even data out to ``last``, ``length`` scales into the end bin, which they fill to
    ``fill`` of its width (19 bins of ``scale``, the end bin out to the declared end),
    counts as they are: a tail thinning out from their density would run past the
    declared end and the bins further in are no denser, so the end bin's rows lie at
    their density out to ``last`` exactly (the triangle had reached past the data by
    half their length in the bin); with the counts off by ``noise`` noise scales, no
    further than the triangle."""
    last = (19.0 + length) * scale
    edges = np.r_[np.arange(20) * scale, 19.0 * scale + length * scale / fill]
    even = rows * np.diff(np.minimum(edges, last)) / last
    sd = np.ones(20)
    reach = end_reach(edges, even, sd, 19, top=True)
    assert reach == pytest.approx((edges[19], last, EVEN))
    # the bins next to the end bin low by ``noise`` each, those further in high
    off = even + noise * np.r_[np.ones(17), -np.ones(2), 0.0]
    shifted = end_reach(edges, off, sd, 19, top=True)
    assert shifted is not None
    density = float(np.mean(off[17:19])) / scale
    assert shifted[1] <= edges[19] + FALL * even[19] / density + 1e-9


def _shown_near_the_edge(rest: float) -> tuple[Discretiser, np.ndarray, np.ndarray, float]:
    """Bin 0 of four on [0, 500) (cells of 500 / 120) with its three top cells weighted
    40 each and ``rest`` more rows than that in the bin's count (the fine histogram
    shows 120 of the bin's rows); the weights' lower edge."""
    disc = Discretiser(SCHEMA, 4, 120)
    cells = disc.fine["v"]
    weights = np.zeros(cells.size)
    inside = np.flatnonzero(cells.coarse == 0)
    weights[inside[-3:]] = 40.0
    weights[np.flatnonzero(cells.coarse == 1)] = 40.0
    count = np.zeros(4)
    count[0] = 120.0 + rest
    return disc, weights, count, float(cells.lo[inside[-3]])


def test_shown_reach_is_the_rest_of_the_count_falling_from_the_last_shown_cell() -> None:
    disc, weights, count, apex = _shown_near_the_edge(60.0)
    cells = disc.fine["v"]
    sd = np.full(4, 10.0)
    last = np.flatnonzero(cells.coarse == 0)[-1]
    density = 40.0 / float(cells.hi[last] - cells.lo[last])
    assert shown_reach(cells, weights, count, sd, 0, top=False) == pytest.approx(
        (apex, apex - FALL * reaching(60.0, 10.0) / density, THINNING)
    )  # the part of the 60 rows the cells miss that the noise does not explain
    # no tail: the cells hold the count, or what they miss is within 2 noise scales
    for rest in (-5.0, 19.0):
        _, _, near, _ = _shown_near_the_edge(rest)
        assert shown_reach(cells, weights, near, sd, 0, top=False) is None
    assert shown_reach(cells, np.zeros(cells.size), count, sd, 0, top=False) is None
    # a weighted run that does not start at the bin's inner edge: the rows the cells
    # miss may lie in the gap (injury's ages: the densest values floored)
    gap = weights.copy()
    gap[last] = 0.0
    assert shown_reach(cells, gap, count, sd, 0, top=False) is None


@settings(max_examples=25, deadline=None)
@given(rest=st.floats(10.0, 400.0))
def test_an_end_bins_rows_the_cells_do_not_show_thin_out_past_them(rest: float) -> None:
    """twoyear's test scores: the fine histogram shows the top of the lowest bin, the
    bin's count holds as many again. Decoded, the rest lands past the shown cells, its
    share as the count says, thinning out (the nearer half of its reach holds three
    quarters of it) and never past the reach."""
    disc, weights, count, apex = _shown_near_the_edge(rest)
    cells = disc.fine["v"]
    foot = shown_reach(cells, weights, count, np.ones(4), 0, top=False)[1]
    codes = np.zeros((20_000, 2), dtype=np.int64)
    out = disc.decode(
        codes, np.random.default_rng(1), {"v": weights}, 10_000, reach={"v": {0: (apex, foot)}}
    )["v"].to_numpy()
    past = out < apex
    assert past.mean() == pytest.approx(rest / (120.0 + rest), abs=0.02)
    inside = np.flatnonzero(cells.coarse == 0)
    cell = float(np.max(cells.hi[inside] - cells.lo[inside]))  # the widest cell meeting the foot
    assert out.min() >= max(foot, 0.0) - cell
    if apex - foot > 4 * cell:
        near = (out >= 0.5 * (apex + foot)) & past
        assert near.sum() / past.sum() == pytest.approx(0.75, abs=0.05)


def test_a_held_bin_at_the_datas_end_decodes_within_its_reach_unless_its_cells_show_data() -> None:
    """black_politicians' median household income of black residents: the bins past
    [2, 9) fold into it, so it is the data's top end; its cells show nothing, and its
    rows decode within its reach (had been drawn across all of [2, 9): 5% of the rows
    at 7-9, the data's 99th percentile 3.7). Where its cells do show data, they lead."""
    disc, weights, codes, rows = _interior_without_weights()
    edges = disc.edges("v")
    span = (float(edges[10]), float(edges[10]) + 5.0)
    reach = {"v": {10: span}}
    out = disc.decode(codes, np.random.default_rng(0), {"v": weights}, rows, reach=reach)
    values = out["v"].to_numpy()
    cell = 500.0 / 100  # one fine cell: cells_within keeps every cell meeting the span
    assert values.min() >= span[0] and values.max() <= span[1] + cell
    shown = weights.copy()
    shown[np.flatnonzero(disc.fine["v"].coarse == 10)[-1]] = 50.0  # the bin's last cell
    led = disc.decode(codes, np.random.default_rng(0), {"v": shown}, rows, reach=reach)
    assert led["v"].min() >= edges[11] - cell  # the weighted cell, not the reach


@settings(max_examples=100, deadline=None)
@given(
    start=st.floats(0.0, 400.0),
    length=st.floats(1.0, 400.0),
    downward=st.booleans(),
    level=st.sampled_from([THINNING, 0.3, EVEN]),
)
def test_a_falling_density_holds_half_its_base_times_its_height(
    start: float, length: float, downward: bool, level: float
) -> None:
    """Over cells covering it, the weights of a density falling linearly from 1 at the
    apex to ``level`` at the foot sum to the trapezoid's area, ``length (1 + level) /
    2`` (the midpoint rule is exact for a linear density, whatever the cells), and fall
    away from the apex; none past the foot, whatever ``level``."""
    cells = Discretiser(SCHEMA, 20, 128).fine["v"]
    inside = np.arange(cells.atoms, cells.values)
    apex = start if not downward else min(start + length, 500.0)
    foot = min(apex + length, 500.0) if not downward else max(apex - length, 0.0)
    weights = falling(cells, inside, apex, foot, level)
    assert weights.sum() == pytest.approx(abs(foot - apex) * (1.0 + level) / 2.0, rel=1e-9)
    low, high = min(apex, foot), max(apex, foot)
    a = np.clip(cells.lo[inside], low, high)
    b = np.clip(cells.hi[inside], low, high)
    part = b - a > 0
    height = weights[part] / (b - a)[part]  # the density at each part's middle
    order = np.argsort(np.abs(0.5 * (a + b)[part] - apex))
    assert np.all(np.diff(height[order]) <= 1e-9)
    assert not weights[~part].any()  # nothing outside the triangle


def test_an_even_reach_draws_evenly_to_its_foot_and_no_further() -> None:
    """A grid column's end bin decoded with an even reach (cps91's ages, even to 59 in a
    last bin declared to 65): every whole number from the apex to the foot about as
    often, none past the foot; the same span thinning out draws each fewer times than
    the one before."""
    schema = Schema(
        (NumericColumn("a", 0, 30, integer=True), CategoricalColumn("y", ("0", "1"))),
        label="y",
    )
    disc = Discretiser(schema, 3, 128)
    cells = disc.fine["a"]
    last = int(cells.coarse[: cells.values].max())
    edges = disc.edges("a")
    apex, foot = float(edges[last]), float(edges[last]) + 6.0
    codes = np.zeros((30_000, 2), dtype=np.int64)
    codes[:, 0] = last
    weights = np.zeros(cells.size)

    def draw(level: float) -> np.ndarray:
        reach = {"a": {last: (apex, foot, level)}}
        frame = disc.decode(codes, np.random.default_rng(3), {"a": weights}, 30_000, reach=reach)
        return frame["a"].to_numpy(dtype=np.float64)

    values, counts = np.unique(draw(EVEN), return_counts=True)
    assert values.tolist() == list(range(int(apex), int(foot) + 1))
    assert counts.max() / counts.min() < 1.1
    values, counts = np.unique(draw(THINNING), return_counts=True)
    assert values.tolist() == list(range(int(apex), int(foot)))  # the foot weighs nothing
    assert np.all(np.diff(counts) < 0)


@settings(max_examples=20, deadline=None)
@given(foot=st.floats(1.0, 24.0), level=st.sampled_from([THINNING, EVEN]))
def test_a_known_value_past_the_reach_keeps_its_rows(foot: float, level: float) -> None:
    """ma2019's household weights: 0 is declared (6% of the rows) and lies in the first
    bin, [0, 25), whose cells show nothing and whose rows reach from 25 down to
    ``foot``. The intervals are drawn within the reach, the known value wherever it
    lies, at its floor (5% of the column's rows); before, a reach stopping short of 0
    had dropped it."""
    schema = Schema(
        (NumericColumn("v", 0.0, 500.0, atoms=(0.0,)), CategoricalColumn("y", ("no", "yes"))),
        label="y",
    )
    disc = Discretiser(schema, 20, 128)
    edges = disc.edges("v")
    codes = np.zeros((20_000, 2), dtype=np.int64)
    reach = {"v": {0: (float(edges[1]), foot, level)}}
    weights = np.zeros(disc.fine["v"].size)
    out = disc.decode(codes, np.random.default_rng(5), {"v": weights}, 20_000, reach=reach)
    values = out["v"].to_numpy(dtype=np.float64)
    assert np.mean(values == 0.0) == pytest.approx(0.05, abs=0.01)
    rest = values[values != 0.0]
    cell = float(np.max(np.diff(disc.fine["v"].boundaries)))  # cells meeting the reach
    assert rest.min() >= foot - cell and rest.max() <= edges[1]


def test_on_a_grid_the_tail_starts_past_the_last_weighted_value() -> None:
    """Whole numbers 0-30, one cell per value: the values 20-24 weighted 10 each, the
    rest of the bin's rows thin out from half a step past 24; the last weighted value
    keeps its own weight (the tail does not start on it), and the tail's values fall
    away, holding the triangle's rows."""
    schema = Schema(
        (NumericColumn("a", 0, 30, integer=True), CategoricalColumn("y", ("0", "1"))),
        label="y",
    )
    cells = Discretiser(schema, 20, 128).fine["a"]
    assert cells.grid
    inside = np.flatnonzero((cells.lo >= 20) & (cells.lo <= 30))
    weights = np.zeros(cells.size)
    weights[(cells.lo >= 20) & (cells.lo <= 24)] = 10.0
    kept, p = thinning(cells, inside, weights, 24.5, 29.5)
    by_value = dict(zip(cells.lo[kept].tolist(), p.tolist(), strict=True))
    assert by_value[24.0] == 10.0
    # from 24.5 to 29.5 at 10 rows a value at first: 25 rows, the midpoint rule exact
    tail = [by_value[v] for v in (25.0, 26.0, 27.0, 28.0, 29.0)]
    assert tail == pytest.approx([9.0, 7.0, 5.0, 3.0, 1.0])
    assert by_value[30.0] == 0.0
