"""End bins decoded inward (engine/tails.py): a stretch of bins at a column's end that the
model gives no more than the noise of an empty stretch leaves, and where the releases
show no data, decodes in the nearest bin inside it; nothing else moves."""

from __future__ import annotations

import pickle
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tests.engine.conftest import OneWayAnswers, ks_distance, seeded_fit, with_fillers

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.counts import (
    counted_weights,
    faint,
    group_design,
    held_bins,
    released_counts,
    shows_data,
)
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT
from dpevolve.engine.tails import (
    EMPTY,
    HELD,
    PUBLIC_END,
    Fold,
    beyond_span,
    folded_ends,
    holds_stretch,
    inward,
    noise,
    public_ends,
    released_inward,
    unanchored,
)
from dpevolve.measurements import HistogramQuery, MarginalQuery, Measurement
from dpevolve.privacy import Budget, GaussianEvent
from dpevolve.privacy.noise import make_noise

SIGMA = 100.0
BODY = [0, 0, 0, 300, 500, 400, 250, 0, 0, 0]
SD = np.full(10, SIGMA)


def test_a_noise_island_past_a_gap_decodes_inward() -> None:
    """90 rows in the last bin, two empty bins in between, where the releases show
    nothing: the last three bins decode as bin 6, the empty first three as bin 3."""
    mass = np.array([*BODY[:-1], 90.0])
    target = inward(mass, np.array(BODY, dtype=float), SD)
    assert target.tolist() == [3, 3, 3, 3, 4, 5, 6, 6, 6, 6]


def test_an_island_the_releases_support_stays() -> None:
    """The same island decodes in place where the model gives it more than the floor
    (two noise scales of the three bins), or where its released count stands out by
    SUPPORT scales; a count below that is noise past the gap."""
    scale = SIGMA * np.sqrt(3.0)
    heavy = np.array([*BODY[:-1], DECODE_FLOOR * scale + 1.0])
    assert inward(heavy, np.array(BODY, dtype=float), SD)[-1] == 9
    light = np.array([*BODY[:-1], 90.0])
    count = np.array([*BODY[:-1], SUPPORT * scale + 1.0])
    assert inward(light, count, SD)[-1] == 9
    count[-1] = SUPPORT * scale - 1.0
    assert inward(light, count, SD)[-1] == 6


def test_a_thin_end_bin_the_releases_cannot_tell_from_noise_decodes_inward() -> None:
    """No gap: the last bin holds 150 rows where the releases show -80, or the 150 the
    model holds, both within two noise scales: it decodes as the bin before; a tail the
    releases show above two scales (210 rows) stays; the empty bins before a 300-row
    bin hide no data next to it (every part of the stretch next to the rest is tested,
    not only the whole)."""
    mass = np.array([0.0, 0.0, 0.0, 300.0, 500.0, 400.0, 250.0, 150.0])
    count = np.array([0.0, 0.0, 0.0, 300.0, 500.0, 400.0, 250.0, -80.0])
    target = inward(mass, count, np.full(8, SIGMA))
    assert target.tolist() == [3, 3, 3, 3, 4, 5, 6, 6]
    count[-1] = 150.0
    assert inward(mass, count, np.full(8, SIGMA)).tolist() == [3, 3, 3, 3, 4, 5, 6, 6]
    mass[-1] = count[-1] = DECODE_FLOOR * SIGMA + 10.0
    assert inward(mass, count, np.full(8, SIGMA)).tolist() == [3, 3, 3, 3, 4, 5, 6, 7]


def test_noise_is_the_formula() -> None:
    """Cumulative mass within DECODE_FLOOR scales and count within DECODE_FLOOR (SUPPORT
    past a gap) scales, every prefix from the inside."""
    sd = np.array([10.0, 10.0])
    assert noise(np.array([20.0, 8.0]), np.array([-20.0, 8.0]), sd, gap=False)
    assert noise(np.array([20.0, 8.0]), np.array([20.0, 8.0]), sd, gap=False)
    assert not noise(np.array([20.0, 8.0]), np.array([20.1, 8.0]), sd, gap=False)
    assert not noise(np.array([20.1, 0.0]), np.array([0.0, 0.0]), sd, gap=False)
    assert not noise(np.array([0.0, 29.0]), np.array([0.0, 0.0]), sd, gap=False)
    assert not noise(np.array([0.0, 0.0]), np.array([25.0, -60.0]), sd, gap=False)
    assert noise(np.array([0.0, 0.0]), np.array([25.0, 0.0]), sd, gap=True)
    assert not noise(np.array([0.0, 0.0]), np.array([40.1, 0.0]), sd, gap=True)


# cps91's ages, seed 3 (2,253 rows; bins of 2.75 years from 10 to 65): no bin's count
# stands 4 scales out, yet the column's body does; the model gave the empty last bin 253
# rows of noise, past a bin it gives nothing.
AGE_MASS = [1.0, 5.0, 2.7, 0.0, 57.6, 242.6, 93.9, 258.0, 192.3, 215.9, 229.4, 88.3,
            149.7, 199.3, 160.8, 0.5, 77.0, 26.1, 0.0, 252.9]  # fmt: skip
AGE_COUNT = [132.7, 136.6, 81.1, -25.2, 253.7, 223.6, 181.8, 153.7, 217.5, 111.0, 233.6,
             151.6, 242.2, 83.9, 210.4, 134.1, 159.7, -41.8, -57.3, 190.2]  # fmt: skip
AGE_SD = [87.9, 87.9, 87.9, 80.3] * 5


def test_a_small_tables_column_shows_its_data_where_its_bins_together_stand_out() -> None:
    """No bin of cps91's ages is held, but their total stands 7.2 scales out: the
    releases show the column, its ends fold as any column's (the noise bin past the
    data, [62.25, 65], decodes inward; as a hidden column's it had drawn 8.3% of the
    rows beyond the data). 400 values among 4,000 rows, 20 bins of 20 rows under
    noise of 60 (the total 1.7 scales out), show nothing."""
    count, sd = np.array(AGE_COUNT), np.array(AGE_SD)
    assert held_bins(count, sd) == ()
    assert shows_data(count, sd)
    assert inward(np.array(AGE_MASS), count, sd)[-3:].tolist() == [16, 16, 16]
    assert not shows_data(np.full(20, 20.0), np.full(20, 60.0))
    assert shows_data(np.r_[np.zeros(19), 241.0], np.full(20, 60.0))  # one bin held


def test_released_counts_combine_every_release_by_generalised_least_squares() -> None:
    """A 1-way (sigma 4), a 2-way summed over its other attribute (2 cells, sigma 3), a
    1-way grouping the bins in pairs (sigma 1) and the fine histogram summed over each
    bin's cells (sigma 5): the generalised least-squares counts and their scales. The
    grouped release sharpens each pair's sum, which the bins share: black_politicians'
    squire indices, measured with five other columns at six groups, had their last
    bin's 17% of the rows counted from the 1-way and the fine cells alone."""
    schema = Schema((NumericColumn("x", 0.0, 4.0), CategoricalColumn("y", ("a", "b"))), label="y")
    disc = Discretiser(schema, bins=4, fine_cells=16)
    cells = disc.fine["x"]
    event = GaussianEvent(1.0, 1.0)
    one = Measurement(MarginalQuery(("x",)), np.array([10.0, 20.0, 30.0, 40.0]), 4.0, event)
    two_noisy = np.arange(8, dtype=float).reshape(4, 2)
    two = Measurement(MarginalQuery(("x", "y")), two_noisy, 3.0, event)
    pairs = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    grouped = Measurement(
        MarginalQuery(("x",), groups=((0, 0, 1, 1),)), np.array([25.0, 75.0]), 1.0, event
    )
    fine_noisy = np.arange(cells.size, dtype=float)
    fine = Measurement(HistogramQuery("x", cells.size), fine_noisy, 5.0, event)
    count, sd = released_counts(disc, "x", [one, two, grouped], fine)
    width = np.bincount(cells.coarse, minlength=4)[:4]
    sums = np.bincount(cells.coarse, weights=fine_noisy)[:4]
    eye = np.eye(4)
    designs = [eye, eye, pairs, eye]
    weights = [np.full(4, 1 / 16), np.full(4, 1 / 18), np.full(2, 1.0), 1 / (25 * width)]
    answers = [one.noisy, two_noisy.sum(axis=1), grouped.noisy, sums]
    information = sum(a.T @ np.diag(w) @ a for a, w in zip(designs, weights, strict=True))
    total = sum(a.T @ (w * y) for a, w, y in zip(designs, weights, answers, strict=True))
    covariance = np.linalg.inv(information)
    assert np.allclose(count, covariance @ total)
    assert np.allclose(sd, np.sqrt(np.diag(covariance)))
    _, alone_sd = released_counts(disc, "x", [one, two], fine)
    assert np.all(sd < alone_sd)


@settings(max_examples=50, deadline=None)
@given(
    truth=st.lists(st.floats(0.0, 500.0), min_size=4, max_size=4).map(np.array),
    grouping=st.lists(st.integers(0, 2), min_size=4, max_size=4),
    sigma=st.floats(0.5, 50.0),
)
def test_released_counts_read_noiseless_releases_exactly(
    truth: np.ndarray, grouping: list[int], sigma: float
) -> None:
    """Releases without noise, a grouped one among them, give the counts back."""
    schema = Schema((NumericColumn("x", 0.0, 4.0), CategoricalColumn("y", ("a", "b"))), label="y")
    disc = Discretiser(schema, bins=4, fine_cells=16)
    groups = tuple(int(g) for g in np.unique(grouping, return_inverse=True)[1])
    event = GaussianEvent(1.0, 1.0)
    one = Measurement(MarginalQuery(("x",)), truth, 4.0, event)
    summed = np.bincount(groups, weights=truth)
    grouped = Measurement(MarginalQuery(("x",), groups=(groups,)), summed, sigma, event)
    count, sd = released_counts(disc, "x", [one, grouped])
    assert np.allclose(count, truth, atol=1e-6 * (1.0 + truth.max()))
    assert np.all(sd <= 4.0 + 1e-9)


@settings(max_examples=200, deadline=None)
@given(
    mass=st.lists(st.one_of(st.just(0.0), st.floats(0.0, 1000.0)), min_size=1, max_size=25).map(
        np.array
    ),
    count=st.lists(st.floats(-500.0, 1000.0), min_size=25, max_size=25).map(np.array),
    sigma=st.floats(1.0, 300.0),
)
def test_only_noise_at_the_ends_moves_and_only_inward(
    mass: np.ndarray, count: np.ndarray, sigma: float
) -> None:
    """A moved bin lies in a stretch at its end of the column that is noise, and decodes
    as the nearest held bin inside; every part of the stretch next to that bin holds at
    most the floor and shows at most SUPPORT scales; a column whose every held bin holds
    more than the floor and whose releases show each keeps them all."""
    count = count[: mass.size]
    sd = np.full(mass.size, sigma)
    target = inward(mass, count, sd)
    held = mass >= HELD
    for b in np.flatnonzero(target != np.arange(mass.size)):
        t = int(target[b])
        assert held[t]
        kept = held & (target == np.arange(mass.size))
        assert not kept[min(b, t) + 1 : max(b, t)].any()  # t: the nearest held bin kept
        # the stretch moved on b's side, from its inner end out: the floor and
        # SUPPORT, cumulatively
        side = np.arange(t + 1, mass.size) if b > t else np.arange(t - 1, -1, -1)
        part = side[target[side] != side]
        scale = sigma * np.sqrt(np.arange(1, part.size + 1))
        assert (np.cumsum(mass[part]) <= DECODE_FLOOR * scale + 1e-9).all()
        assert (np.cumsum(count[part]) <= SUPPORT * scale + 1e-9).all()
    strong = held & (mass > DECODE_FLOOR * sigma) & (count > SUPPORT * sigma)
    if held.any() and (strong == held).all():
        assert (target[held] == np.flatnonzero(held)).all()


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.triangular(10.0, 20.0, 30.0, n)  # bounded, no point mass at the ends
    y = np.where(x + rng.normal(0.0, 2.0, n) > 20.0, "yes", "no")
    return pd.DataFrame({"x": x, "y": y})


SCHEMA = Schema((NumericColumn("x", 0.0, 100.0), CategoricalColumn("y", ("no", "yes"))), label="y")


def _beyond(out: np.ndarray, frame: pd.DataFrame) -> float:
    lo, hi = frame["x"].min(), frame["x"].max()
    slack = 0.1 * (hi - lo)
    return float(((out < lo - slack) | (out > hi + slack)).mean())


def _released(frame: pd.DataFrame, seed: int, empty: bool):
    """The released model of ``frame`` at epsilon 0.3 (seeded noise), its folded bins
    held empty or not (``EngineSpec.empty_folds``)."""
    return fit_engine(
        FrameSource(frame, SCHEMA),
        SCHEMA,
        Budget(epsilon=0.3, delta=1e-5),
        EngineSpec(empty_folds=empty),
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
    ).released()


def test_a_widened_range_keeps_the_rows_near_the_data() -> None:
    """Data in [10, 30] on a declared [0, 100], 2,000 rows at epsilon 0.3 (seeded twins
    of the noise), eight seeds: the rows beyond the data by more than a tenth of their
    width fall well below those of the model fitted and decoded without the folds
    (measured: 1.0% against 2.0%; a fine histogram's false cell under a small island can
    keep it in place), or below half a percent (with the bins placed where the released
    masses are and their end bins decoded within the released support: 0.4% against
    0.6%; with the tree's pair coarse, one draw of the first four, 2.8%, the others
    none; with the folded bins held empty in a refit, 0.46% against 0.67%, 20,000 rows
    drawn from each model so that where a bin's few rows land is not what is measured:
    0.42% with the folds alone)."""
    after, before = [], []
    for seed in range(8):
        frame = _table(2000, seed)

        out = (
            _released(frame, seed, True)
            .sample(20_000, np.random.default_rng(seed))["x"]
            .to_numpy(float)
        )
        after.append(_beyond(out, frame))
        plain = replace(_released(frame, seed, False), inward={})
        out = plain.sample(20_000, np.random.default_rng(seed))["x"].to_numpy(float)
        before.append(_beyond(out, frame))
    assert np.mean(after) <= max(0.6 * np.mean(before), 0.005), (after, before)


class _Parity(MarginalQuery):
    """A coarse query of another shape (an extension's): no groups, yet coarse."""

    @property
    def coarse(self) -> bool:
        return True


def test_a_query_counts_a_column_by_its_groups_unless_of_another_shape() -> None:
    assert np.array_equal(group_design(MarginalQuery(("a", "b")), 0, 3), np.eye(3))
    grouped_b = MarginalQuery(("a", "b"), groups=(None, (0, 0, 1)))
    assert np.array_equal(group_design(grouped_b, 0, 2), np.eye(2))
    assert np.array_equal(group_design(grouped_b, 1, 3), [[1, 1, 0], [0, 0, 1]])
    assert group_design(_Parity(("a", "b")), 0, 3) is None


@settings(max_examples=100, deadline=None)
@given(
    bins=st.integers(4, 20),
    low=st.integers(0, 3),
    high=st.integers(0, 3),
    mass=st.lists(st.floats(0.0, 500.0), min_size=20, max_size=20),
    sd=st.floats(1.0, 80.0),
)
def test_an_end_folds_into_an_end_bin_only_where_that_bin_holds_noise(
    bins: int, low: int, high: int, mass: list[float], sd: float
) -> None:
    """The first ``low`` and last ``high`` bins fold into their neighbours further in:
    an end that decodes as itself stays an end bin; a fold target is an end bin, and
    any end bin thin, exactly where the model gives it at most ``DECODE_FLOOR`` noise
    scales."""
    assume(low + high <= bins - 2)  # each end folds into a bin of its own
    target = np.arange(bins)
    target[:low] = low
    target[bins - high :] = bins - 1 - high
    m = np.asarray(mass[:bins])
    ends, thin = folded_ends(target, m, np.full(bins, sd))
    for end, into in ((0, low), (bins - 1, bins - 1 - high)):
        noise = m[into] <= DECODE_FLOOR * sd
        assert (into in ends) == (into == end or noise)
        assert (into in thin) == noise
    assert set(ends) <= {low, bins - 1 - high} and set(thin) <= set(ends)


def test_a_fold_saved_before_held_bins_loads_and_decodes_as_before() -> None:
    """A model file of the same format written before ``held``, ``reach`` and
    ``values``: the unpickled fold has none in its state and reads the defaults
    (nothing held, no value shown)."""
    fold = Fold(np.arange(4), (0, 3), ())
    state = {k: v for k, v in fold.__dict__.items() if k not in ("held", "reach", "values")}
    old = Fold.__new__(Fold)
    old.__dict__.update(state)
    loaded = pickle.loads(pickle.dumps(old))
    assert loaded.held == () and loaded.reach == () and loaded.values == ()
    assert loaded.ends == (0, 3) and np.array_equal(loaded.target, np.arange(4))


def test_bins_a_public_table_shows_data_in_are_never_folded() -> None:
    """The noise island past a gap folds inward; where a public table shows data in its
    last bin, the stretch holding that bin stays (the empty bins before it still fold
    where a shorter stretch is noise: here none is, the island keeps them apart)."""
    mass = np.array([*BODY[:-1], 90.0])
    count = np.array(BODY, dtype=float)
    assert inward(mass, count, SD)[-1] == 6
    kept = inward(mass, count, SD, kept={9})
    assert kept[-1] == 9 and kept[:3].tolist() == [3, 3, 3]


@settings(max_examples=60, deadline=None)
@given(
    mass=st.lists(st.floats(0.0, 400.0), min_size=8, max_size=8).map(np.array),
    count=st.lists(st.floats(-200.0, 400.0), min_size=8, max_size=8).map(np.array),
    kept=st.sets(st.integers(0, 7), max_size=3),
)
def test_a_kept_bin_decodes_as_itself(mass: np.ndarray, count: np.ndarray, kept: set[int]) -> None:
    target = inward(mass, count, np.full(8, SIGMA), kept=kept)
    assert all(target[b] == b for b in kept)


# fertil2's husbands' schooling (seed 0, 1,741 rows): 0 years (held, an atom) and a thin
# tail over 1-20 years; the bins past 4 years hold 404 model rows, every part within 2
# noise scales, their released count 1.4 scales of the stretch.
SCHOOL_MASS = [232.0, 0.0, 91.0, 11.0, 77.0, 0.0, 2.0, 0.0, 99.0, 4.0, 0.0, 153.0,
               0.0, 0.0, 0.0, 0.0, 38.0, 0.0, 31.0, 0.0]  # fmt: skip
SCHOOL_COUNT = [286.0, -38.0, 114.0, 86.0, 49.0, -12.0, -15.0, 45.0, 63.0, 88.0, 17.0,
                81.0, -48.0, 53.0, 25.0, 16.0, 55.0, 8.0, 45.0, -89.0]  # fmt: skip
SCHOOL_SD = [44.0, 55.0, 55.0, 65.0, 77.0, 65.0, 65.0, 65.0, 77.0, 60.0, 60.0, 60.0, 76.0,
             65.0, 65.0, 65.0, 76.0, 56.0, 56.0, 51.0]  # fmt: skip


def test_a_thin_tail_past_a_bin_holding_no_data_stays_unless_its_count_shows_it_empty() -> None:
    """The tail past 4 years had folded whole into the bin at 4 (11 model rows; the bin
    at 0 is the only one the releases show data in): every row drawn at 4 where the
    data hold 29. The fold moves 404 rows, more than that bin's noise leaves, so the
    stretch must show itself empty (its count within EMPTY scales, every part): it
    does not, and the tail decodes in place up to 13 years; the 69 rows past it are
    within the noise of the bin they fold into. Where the stretch's counts are noise
    about zero, it folds as before; as it does into a bin the releases show data in."""
    mass, count, sd = (np.array(v) for v in (SCHOOL_MASS, SCHOOL_COUNT, SCHOOL_SD))
    target = inward(mass, count, sd, kept=(0,))
    assert (target[:12] == np.arange(12)).all() and (target[12:] == 11).all()
    assert not noise(mass[4:], count[4:], sd[4:], gap=False, empty=True)
    assert noise(mass[4:], count[4:], sd[4:], gap=False)  # the old bar passed it
    quiet = count.copy()
    quiet[4:] = 0.0
    assert (inward(mass, quiet, sd, kept=(0,))[4:] == 3).all()
    assert (inward(mass, count, sd, kept=(0, 3))[4:] == 3).all()


@settings(max_examples=80, deadline=None)
@given(
    mass=st.lists(st.floats(0.0, 100.0), min_size=12, max_size=12).map(np.array),
    count=st.lists(st.floats(-100.0, 150.0), min_size=12, max_size=12).map(np.array),
    sd=st.lists(st.floats(30.0, 80.0), min_size=12, max_size=12).map(np.array),
    kept=st.sets(st.integers(0, 11), min_size=1, max_size=3),
)
def test_a_fold_into_a_bin_holding_no_data_shows_its_stretch_empty(
    mass: np.ndarray, count: np.ndarray, sd: np.ndarray, kept: set[int]
) -> None:
    """Every fold that moves more than its target's noise into a bin the releases do
    not show, where another bin holds data, comes from a stretch whose every part next
    to the target stands at most EMPTY scales above zero."""
    target = inward(mass, count, sd, kept=kept)
    index = np.arange(mass.size)
    for into in np.unique(target[target != index]):
        for side in (index < into, index > into):  # one fold from each end at most
            moved = np.flatnonzero(side & (target == into))
            if not moved.size or not unanchored(float(mass[moved].sum()), int(into), sd, kept):
                continue
            part = moved[::-1] if moved[0] < into else moved  # from the target outwards
            scale = np.sqrt(np.cumsum(sd[part] ** 2))
            assert (np.cumsum(count[part]) <= EMPTY * scale + 1e-9).all()


def test_bins_past_the_shown_span_fold_into_a_bin_holding_no_data_only_when_empty() -> None:
    """Below the weights' span, four bins the model gives 120 rows (within 2 noise
    scales of the 1-way, 100) fold into bin 4, which no release shows data in, only
    where their count is within EMPTY scales of their own noise (2 x 40): at 90 they
    decode in place, at 70 they fold; into a held bin they fold either way."""
    edges = np.arange(11.0)
    mass = np.array([30.0, 30.0, 30.0, 30.0, 20.0, 300.0, 300.0, 200.0, 100.0, 50.0])
    sd = np.full(10, 40.0)
    count = mass.copy()
    count[:4] = 90.0 / 4
    span = (4.5, 10.0)
    assert (beyond_span(edges, span, mass, 100.0, (5, 6), sd, count)[:4] == np.arange(4)).all()
    count[:4] = 70.0 / 4
    assert (beyond_span(edges, span, mass, 100.0, (5, 6), sd, count)[:4] == 4).all()
    count[:4] = 90.0 / 4
    assert (beyond_span(edges, span, mass, 100.0, (4, 5, 6), sd, count)[:4] == 4).all()


def test_a_column_the_noise_hides_everywhere_folds_at_most_one_bin_s_noise() -> None:
    """Every bin's count under 4 noise scales and the model's mass spread as the noise
    left it: both ends' stretches are noise, and folding them (130 rows from below,
    200 from above) would leave 330 of the 420 rows in bin 4. Each end's fold moves at
    most 2 noise scales of one bin, the rows of the k-th bin from the end counted k
    times: from below, bins 0-1 into bin 2 (30 rows at depth 1; bins 0-2 would count
    30 + 3 x 60 = 210 > 200), from above bins 8-9 into bin 7 (30 rows at depth 2; bins
    7-9 would count 210). (The shapes benchmark's column 90% missing had folded its
    ten lowest bins, 148 rows, the noisy body among them, five bins up: KS 0.92.)"""
    mass = np.array([30.0, 0.0, 60.0, 40.0, 90.0, 120.0, 0.0, 50.0, 30.0, 0.0])
    count = np.array([20.0, -40.0, 70.0, 10.0, 60.0, 40.0, -80.0, 90.0, 10.0, -30.0])
    assert inward(mass, count, SD).tolist() == [2, 2, 2, 3, 4, 5, 6, 7, 7, 7]


# driving's weekend fatality rates (480 rows, seed 0): no bin 4 noise scales out, the
# data in [1.2, 13.8], the model's 80 rows at [14, 16) drawn past them
WEEKEND_MASS = np.array([0.0, 193.0, 205.7, 0.0, 0.0, 0.0, 0.0, 80.1, 1.2, 0.0])
WEEKEND_COUNT = np.array([-18.3, 167.5, 190.7, -5.8, -209.7, 3.9, 90.1, 43.4, 107.2, -91.3])
WEEKEND_SD = np.array([73.2, 73.1, 61.6, 80.8, 80.8, 80.8, 80.8, 64.2, 64.2, 61.7])


def test_a_column_that_cannot_be_missing_folds_into_a_bin_that_can_hold_the_stretch() -> None:
    """A column the noise hides everywhere, whose every row holds a value: its top
    stretch (81 model rows, 243 counted by depth) folds into 4-6, released at 191 +- 62
    with room for them under 2 noise scales; a column that may be missing keeps the
    depth-weighted floor, and so does one whose stretch that bin cannot hold."""
    assert not shows_data(WEEKEND_COUNT, WEEKEND_SD)
    hidden = inward(WEEKEND_MASS, WEEKEND_COUNT, WEEKEND_SD)
    assert hidden[7] == 7
    certain = inward(WEEKEND_MASS, WEEKEND_COUNT, WEEKEND_SD, certain=True)
    assert certain.tolist() == [1, 1, 2, 2, 2, 2, 2, 2, 2, 2]
    crowded = WEEKEND_MASS.copy()
    crowded[7] = 120.0  # 121.2 rows against the bin's room of 108.2
    assert inward(crowded, WEEKEND_COUNT, WEEKEND_SD, certain=True)[7] == 7


@pytest.mark.parametrize("nullable", [False, True])
def test_the_folds_read_from_the_schema_whether_a_column_can_be_missing(nullable: bool) -> None:
    """The weekend rates through :func:`released_inward`, one 1-way at noise 70: a
    column that cannot be missing folds its top stretch into 4-6; one that may be (its
    missing cell released at 0, its 480 present rows not faint) keeps the floor."""
    column = NumericColumn("rate", 0.0, 20.0, nullable=nullable)
    disc = Discretiser(Schema((column,)), bins=10, fine_cells=40)
    extra = [0.0] if nullable else []
    event = GaussianEvent(np.sqrt(2.0), 70.0, label="marginal")
    oneway = Measurement(MarginalQuery(("rate",)), np.r_[WEEKEND_COUNT, extra], 70.0, event)
    weights = {"rate": np.zeros(disc.fine["rate"].size)}
    mass = OneWayAnswers(np.r_[WEEKEND_MASS, extra])
    fold = released_inward(disc, mass, [oneway], weights, rows=480)["rate"]  # type: ignore[arg-type]
    assert (fold.target[7] == 7) == nullable
    assert nullable or fold.target[3:10].tolist() == [2] * 7


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(0.0, 300.0), min_size=10, max_size=10),
    st.lists(st.floats(-300.0, 390.0), min_size=10, max_size=10),
    st.booleans(),
)
def test_a_hidden_column_s_folds_stay_within_their_depth_weighted_floor(
    mass: list[float], count: list[float], certain: bool
) -> None:
    """No count stands 4 noise scales out, nor does any pooled run of them (a column
    the releases show no data in): per end, a fold only moves rows inwards from an end,
    and the rows folded, the k-th bin from the end counted k times, stay within 2 noise
    scales of one bin, unless the column cannot be missing (``certain``) and the bin
    they go into stands 2 noise scales out with room under 2 scales for them."""
    m, c = np.array(mass), np.array(count)
    assume(not shows_data(c, SD))  # 390 and 390 side by side stand 5.5 scales together
    target = inward(m, c, SD, certain=certain)
    for side in (1, -1):  # folded up from the low end, down from the top
        moved = np.flatnonzero((target - np.arange(10)) * side > 0)
        if not moved.size:
            continue
        assert np.all(np.diff(moved) == 1) and (moved[0] == 0 or moved[-1] == 9)
        depth = moved + 1 if side > 0 else 10 - moved
        if (m[moved] * depth).sum() > DECODE_FLOOR * SIGMA + 1e-9:
            into = int(target[moved[0]])
            assert certain and holds_stretch(float(m[moved].sum()), into, m, c, SD)
            assert c[into] > DECODE_FLOOR * SIGMA
            assert m[moved].sum() + m[into] <= c[into] + DECODE_FLOOR * SIGMA + 1e-9


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(0.0, 200.0), min_size=12, max_size=12),
    st.lists(st.floats(-300.0, 900.0), min_size=4, max_size=4),
    st.floats(1.0, 100.0),
)
def test_cell_weights_stay_only_where_their_bin_s_releases_can_hold_them(
    weights: list[float], count: list[float], sigma: float
) -> None:
    """Three cells per bin, four bins and a missing cell: where neither a bin's count
    nor the four together stand SUPPORT noise scales out (the data are hidden), every
    value cell weighs nothing; else a bin's cells keep
    their weights exactly when together they hold at most SUPPORT scales more than the
    bin's released count or that count shows data (above DECODE_FLOOR scales), and are
    all zero otherwise. The missing cell is untouched."""
    discretiser = Discretiser(
        Schema((NumericColumn("x", 0.0, 4.0, nullable=True),)), bins=4, fine_cells=12
    )
    cells = discretiser.fine["x"]
    w = np.resize(np.append(np.resize(np.array(weights), cells.values), 500.0), cells.size)
    out = counted_weights(w, cells, np.array(count), np.full(4, sigma))
    assert out[-1] == w[-1]
    shown = max(count) > SUPPORT * sigma or sum(count) > SUPPORT * sigma * np.sqrt(4)
    for b in range(4):
        inside = np.flatnonzero(cells.coarse[: cells.values] == b)
        backed = w[inside].sum() <= count[b] + SUPPORT * sigma or count[b] > DECODE_FLOOR * sigma
        assert (out[inside] == (w[inside] if shown and backed else 0.0)).all()


def test_a_mostly_missing_column_keeps_its_spread() -> None:
    """400 values of N(0, 1) among 4,000 rows (the rest missing) on [-5, 3.5], at
    epsilon 1 (seeded twins of the noise that had drawn every value within 0.05 of -3.97,
    and within [-0.81, -0.54]): the synthetic values spread as the real ones do, within
    a Kolmogorov-Smirnov distance of 0.35 (measured 0.29 and 0.17; a single point is 1),
    and none past the declared range's empty ends by a tenth of the data's width."""
    schema = Schema(
        (
            NumericColumn("x", -5.0, 3.5, nullable=True),
            NumericColumn("z", 0.0, 100.0),
            CategoricalColumn("y", ("no", "yes")),
        ),
        label="y",
    )
    for seed in (0, 4):
        rng = np.random.default_rng(seed)
        x = np.where(rng.random(4000) < 0.9, np.nan, np.clip(rng.normal(0, 1, 4000), -4.5, 3.4))
        z = rng.triangular(10, 20, 60, 4000)
        y = np.where(z + rng.normal(0, 5, 4000) > 30, "yes", "no")
        frame = pd.DataFrame({"x": x, "z": z, "y": y})
        result = seeded_fit(frame, schema, seed + 500, seed)
        out = result.released().sample(4000, np.random.default_rng(seed))["x"].to_numpy(float)
        real, synth = x[~np.isnan(x)], out[~np.isnan(out)]
        ks = ks_distance(real, synth)
        assert ks <= 0.35, (seed, ks)
        slack = 0.1 * np.ptp(real)
        assert ((synth < real.min() - slack) | (synth > real.max() + slack)).mean() <= 0.01


def test_a_column_whose_present_rows_the_releases_cannot_show_decodes_missing() -> None:
    """A disability rating, 1 to 6, for 1.2% of 3,000 rows, declared on [0, 15] (NIST's
    ACS excerpts), its values under the noise at epsilon 1 (seeded twins). Where its
    present rows stand at most SUPPORT scales above zero too (noise draws 0-2: 54 +- 26,
    21 +- 24 and 70 +- 26 rows for 37, 34 and 38), its rows decode missing (before,
    values drawn at 7-14 on draws like them); held by 5% of the rows (about 160, 6 to 7
    scales out) it keeps values; the other columns decode as before."""
    schema = Schema(
        (
            NumericColumn("rating", 0, 15, integer=True, nullable=True),
            NumericColumn("z", 0.0, 100.0),
            CategoricalColumn("y", ("no", "yes")),
        ),
        label="y",
    )
    for seed, share, hidden in (
        (0, 0.012, True),
        (1, 0.012, True),
        (2, 0.012, True),
        (0, 0.05, False),
    ):
        rng = np.random.default_rng(seed)
        rating = np.where(rng.random(3000) < share, rng.integers(1, 7, 3000), np.nan)
        z = rng.triangular(10, 20, 60, 3000)
        y = np.where(z + rng.normal(0, 5, 3000) > 30, "yes", "no")
        frame = pd.DataFrame({"rating": rating, "z": z, "y": y})
        result = seeded_fit(frame, schema, seed + 700, seed)
        measured = list(result.measurements.marginals())
        count, sd = released_counts(
            result.discretiser, "rating", measured, result.fine["rating"], missing=True
        )
        assert faint(3000 - count[-1], sd[-1]) == hidden
        out = result.released().sample(3000, np.random.default_rng(seed))
        assert out["rating"].isna().all() == hidden
        assert ks_distance(z, out["z"].to_numpy(float)) < 0.1


def test_faint_present_rows_stand_at_most_the_floor_and_the_missing_cell_is_counted() -> None:
    """The support's bar, for a column's present rows; the missing cell's count combined
    across a 1-way (sigma 4) and the fine histogram (sigma 5) as a bin's is."""
    assert faint(SUPPORT * 10.0, 10.0) and not faint(SUPPORT * 10.0 + 1e-6, 10.0)
    schema = Schema((NumericColumn("x", 0.0, 4.0, nullable=True),))
    disc = Discretiser(schema, bins=4, fine_cells=16)
    cells = disc.fine["x"]
    event = GaussianEvent(1.0, 1.0)
    one = Measurement(MarginalQuery(("x",)), np.array([1.0, 2.0, 3.0, 4.0, 90.0]), 4.0, event)
    fine_noisy = np.r_[np.zeros(cells.size - 1), 100.0]
    fine = Measurement(HistogramQuery("x", cells.size), fine_noisy, 5.0, event)
    count, sd = released_counts(disc, "x", [one], fine, missing=True)
    assert count.size == 5 and np.allclose(count[:4], released_counts(disc, "x", [one], fine)[0])
    assert count[-1] == pytest.approx((90.0 / 16 + 100.0 / 25) / (1 / 16 + 1 / 25))
    assert sd[-1] == pytest.approx((1 / 16 + 1 / 25) ** -0.5)


def test_a_stretch_a_public_table_shows_nothing_in_needs_a_sure_count_to_stay() -> None:
    """Incomes top-coded at 501, public and private alike (NIST's poverty ratio): the
    bin past the atom bin holds 72 model rows and a released count 2.02 noise scales up,
    on noise alone. Read alone, that count keeps it (it may be a thin tail); where the
    public table shows no data there, it is tested as past a gap, at SUPPORT scales,
    and decodes as the atom's bin. A count standing SUPPORT scales out stays."""
    mass = np.array([600.0, 900.0, 800.0, 4000.0, 72.0])
    sd = np.full(5, 58.7)
    count = np.array([620.0, 920.0, 790.0, 3950.0, 2.02 * 58.7])
    assert inward(mass, count, sd).tolist() == [0, 1, 2, 3, 4]
    assert inward(mass, count, sd, absent=(4,)).tolist() == [0, 1, 2, 3, 3]
    sure_ = count.copy()
    sure_[4] = (SUPPORT + 0.01) * 58.7
    assert inward(mass, sure_, sd, absent=(4,)).tolist() == [0, 1, 2, 3, 4]
    assert inward(mass, count, sd, absent=(2,)).tolist() == [0, 1, 2, 3, 4]  # not the stretch


def _births(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    """A small birth-weight table (bwght's shape): the birth order, 1 to 6 (58%, 28%,
    10%, ...) on a declared [0, 15], and nine other numbers that spread the budget."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {"parity": rng.choice([1, 2, 3, 4, 5, 6], n, p=[0.58, 0.28, 0.096, 0.025, 0.015, 0.004])}
    )
    columns: list[NumericColumn | CategoricalColumn] = [
        NumericColumn("parity", 0, 15, integer=True)
    ]
    return with_fillers(frame, columns, 9, "male", rng)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_bin_the_releases_show_data_in_is_never_folded(seed: int) -> None:
    """On 554 rows with ten numbers, every release of a column is noise of the order of
    its count, so from either end every stretch of bins passes for noise, the body
    included. A bin whose releases together stand 4 noise scales out holds data and
    decodes as itself, and nothing folds across it: bwght's birth order (1 in 58% of
    the rows) had folded whole into a bin at 14, where the model held half a row, and
    every row was drawn at 14."""
    frame, schema = _births(554, seed)
    result = seeded_fit(frame, schema, noise_seed=7000 + seed, seed=seed)
    model = result.released()
    fold = model.inward["parity"]
    for b in fold.held:
        assert fold.target[b] == b
    out = model.sample(554, np.random.default_rng(seed))["parity"].to_numpy(float)
    assert np.mean(out <= 6) >= 0.95


# wagepan's years of experience (seed 0, 1,743 rows, whole numbers 0-22 in 20 bins): 4
# and 9 have bins of their own, each leaving a vacant sliver beside it (bins 4, 6, 11
# and 13); the data run on past 9 (102, 63, 34, ... rows at 10, 11, 12, ...).
EXPER_MASS = [43.0, 36.0, 0.0, 187.0, 0.0, 221.0, 0.0, 175.0, 197.0, 220.0, 203.0, 0.0,
              257.0, 0.0, 65.0, 125.0, 0.0, 0.0, 13.0, 0.0]  # fmt: skip
EXPER_COUNT = [75.0, 68.0, -38.0, 218.0, -94.0, 253.0, 10.0, 180.0, 210.0, 222.0, 219.0,
               -46.0, 275.0, 105.0, 81.0, 141.0, -7.0, -6.0, 28.0, -132.0]  # fmt: skip
EXPER_SD = [52.0, 52.0, 52.0, 52.0, 102.0, 52.0, 65.0, 52.0, 40.0, 40.0, 35.0, 65.0, 52.0,
            120.0, 53.0, 53.0, 53.0, 53.0, 53.0, 102.0]  # fmt: skip
EXPER_VACANT = {4, 6, 11, 13}
EXPER_HELD = (3, 5, 8, 9, 10, 12)


def test_a_vacant_bin_beside_a_stretch_is_no_gap() -> None:
    """Read as an island past a gap (the vacant sliver after 9 holds nothing), the
    years past 9 folded whole onto 9: 461 rows drawn there, 198 in the data. A vacant
    bin holds no value by construction, not by the data: the stretch's innermost bin
    that can hold one (10 years, 65 model rows) starts it, no gap, and only the noise
    past 12 years folds."""
    mass, count, sd = (np.array(v) for v in (EXPER_MASS, EXPER_COUNT, EXPER_SD))
    assert (inward(mass, count, sd, EXPER_HELD)[13:] == 12).all()
    target = inward(mass, count, sd, EXPER_HELD, (), EXPER_VACANT)
    assert target[:16].tolist() == [3, 3, 3, 3, *range(4, 16)]
    assert (target[16:] == 15).all()


def test_bins_past_the_span_fold_only_where_no_inner_part_stands_out() -> None:
    """The fine histogram (noise 57) showed nothing past 9.3 years, but the releases
    count 81 and 141 rows at 10 and 11 (together 222 +- 75): those bins stay. With
    their counts noise, the stretch folds, into 9's own bin, not the vacant sliver
    beside it."""
    mass, count, sd = (np.array(v) for v in (EXPER_MASS, EXPER_COUNT, EXPER_SD))
    edges = np.array([0, 0.5, 1.5, 2.5, 3.5, 4, 4, 4.5, 5.5, 6.5, 7.5, 8.5, 9, 9, 9.5, 10.5,
                      11.5, 12.5, 13.5, 14.5, 22.0])  # fmt: skip
    edges[[5, 6, 12, 13]] += np.array([-1e-8, 1e-8, -1e-8, 1e-8])
    span = (2.5, 9.3)
    shown = beyond_span(edges, span, mass, 167.0, EXPER_HELD, sd, count, EXPER_VACANT)
    assert (shown[3:] == np.arange(3, 20)).all()
    quiet = count.copy()
    quiet[[14, 15]] = [20.0, 30.0]
    folded = beyond_span(edges, span, mass, 167.0, EXPER_HELD, sd, quiet, EXPER_VACANT)
    assert (folded[14:] == 12).all() and folded[13] == 13


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 500.0), min_size=20, max_size=20))
def test_public_ends_are_the_end_bins_holding_a_share_of_the_public_rows(
    per_bin: list[float],
) -> None:
    """Four fine cells per bin: an end bin is returned exactly when its cells hold at
    least PUBLIC_END of the public rows."""
    discretiser = Discretiser(Schema((NumericColumn("v", 0.0, 20.0),)), bins=5, fine_cells=20)
    cells = discretiser.fine["v"]
    counts = np.array(per_bin)[: cells.size]
    per = np.bincount(cells.coarse[: cells.values], weights=counts[: cells.values], minlength=5)
    total = counts[: cells.values].sum()
    expected = tuple(b for b in (0, 4) if total > 0 and per[b] >= PUBLIC_END * total)
    assert public_ends(cells, counts, 5) == expected


def test_an_end_bin_holding_a_share_of_the_public_rows_is_never_folded() -> None:
    """black_politicians' lowest squire index (0.027: 4.6% of the public rows, 5.4% of
    the private) alone in the first bin, released at 31 +- 62 beside a body of bins
    standing out: as a thin tail the bin folded into the next and no row was drawn at
    0.027; held by the public table's share, it decodes as itself."""
    discretiser = Discretiser(Schema((NumericColumn("s", 0.0, 0.7),)), bins=10, fine_cells=40)
    mass = np.array([63.0, 378, 251, 310, 554, 139, 80, 62, 56, 111])
    count = np.array([31.0, 376, 273, 363, 571, 125, 86, 55, 47, 125])
    sd = np.full(10, 62.0)
    event = GaussianEvent(np.sqrt(2.0), 62.0, label="marginal")
    oneway = Measurement(MarginalQuery(("s",)), count, 62.0, event)
    weights = {"s": np.zeros(discretiser.fine["s"].size)}
    args = (discretiser, OneWayAnswers(mass), [oneway], weights)
    folded = released_inward(*args, counts={"s": (count, sd)})  # type: ignore[arg-type]
    assert folded["s"].target[0] == 1
    held = released_inward(*args, counts={"s": (count, sd)}, held_ends={"s": (0,)})  # type: ignore[arg-type]
    assert held["s"].target[0] == 0
