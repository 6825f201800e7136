"""Decoding bounded by the released 1-way counts (engine/tails.py, ``supported``): a run
of noise islands past the mass the releases show decodes at its edge, a thin tail the
releases support stays; and the counts pooled from every release holding a column."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.engine.smoothing import SUPPORT
from dpevolve.engine.tails import KEEP, pooled_ones, redraw_or, supported
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

SIGMA = 100.0


def test_noise_islands_past_the_mass_decode_at_its_edge() -> None:
    """Four islands of about one noise scale each (together past any one cell's noise)
    beyond a body the releases show: every bin past the body decodes as its last bin."""
    counts = np.array([0.0, 900.0, 1200.0, 700.0, -40.0, 110.0, -90.0, 95.0, 120.0, 80.0])
    assert supported(counts, SIGMA).tolist() == [1, 1, 2, 3, 3, 3, 3, 3, 3, 3]


def test_a_supported_thin_tail_stays() -> None:
    """Past the body, 350, 100 and 400 rows: the last two pool (the fit rises towards
    the body) to 250 a bin, past KEEP noise scales over sqrt(2), so the tail stays; the
    two bins past it (their counts noise) decode as its outermost bin."""
    assert KEEP * SIGMA / np.sqrt(2) < 250.0 < KEEP * SIGMA
    counts = np.array([900.0, 1200.0, 350.0, 100.0, 400.0, 10.0, -20.0])
    assert supported(counts, SIGMA).tolist() == [0, 1, 2, 3, 4, 4, 4]


def test_nothing_moves_without_a_certain_bin_or_past_the_last_one() -> None:
    assert supported(np.full(6, 2.0 * SIGMA), SIGMA).tolist() == list(range(6))
    body = np.full(6, (SUPPORT + 1.0) * SIGMA)
    assert supported(body, SIGMA).tolist() == list(range(6))


@settings(max_examples=300, deadline=None)
@given(
    counts=st.lists(st.floats(-400.0, 2000.0), min_size=1, max_size=25).map(np.array),
    sigma=st.floats(1.0, 300.0),
)
def test_bins_move_only_outward_of_the_certain_ones_and_only_inward(
    counts: np.ndarray, sigma: float
) -> None:
    """A moved bin lies outside every certain bin (count past SUPPORT scales) and decodes
    as a kept bin between it and them; the bins from the certain ones outwards to a
    kept one are all kept."""
    target = supported(counts, sigma)
    index = np.arange(counts.size)
    certain = np.flatnonzero(counts > SUPPORT * sigma)
    kept = target == index
    assert kept[target].all()
    for b in np.flatnonzero(~kept):
        assert b < certain[0] or b > certain[-1]
        t = int(target[b])
        assert (b < t <= certain[0]) or (certain[-1] <= t < b)
        assert kept[min(b, t) : max(b, t) + 1].sum() == 1  # the outermost kept one


def _measurement(clique: tuple[str, ...], noisy: np.ndarray, sigma: float) -> Measurement:
    event = GaussianEvent(1.0, sigma, label="marginal")
    return Measurement(MarginalQuery(clique), noisy, sigma, event)


def test_pooled_ones_weigh_each_release_by_its_precision() -> None:
    """A 1-way at sigma 10 and a 2-way at sigma 5 over 4 cells of the other column: the
    2-way's sums carry variance 4 * 25 = 100, so the two weigh the same (unit vs the
    formula); the other column gets the 2-way's other sums at that scale."""
    one = np.array([100.0, 200.0, 300.0])
    two = np.arange(12, dtype=float).reshape(3, 4) * 10.0
    pooled = pooled_ones([_measurement(("x",), one, 10.0), _measurement(("x", "y"), two, 5.0)])
    counts, sigma = pooled["x"]
    np.testing.assert_allclose(counts, 0.5 * (one + two.sum(axis=1)))
    assert np.isclose(sigma, 1.0 / np.sqrt(1 / 100 + 1 / 100))
    counts_y, sigma_y = pooled["y"]
    np.testing.assert_allclose(counts_y, two.sum(axis=0))
    assert np.isclose(sigma_y, 5.0 * np.sqrt(3))


def test_a_bin_the_fine_histogram_shows_is_kept_with_those_inside_it() -> None:
    """The same noise islands, but the fine histogram shows data in bin 7: bins 4 to 7
    stay, the two past it decode as bin 7."""
    counts = np.array([0.0, 900.0, 1200.0, 700.0, -40.0, 110.0, -90.0, 95.0, 120.0, 80.0])
    shown = np.zeros(counts.size, dtype=bool)
    shown[7] = True
    assert supported(counts, SIGMA, shown).tolist() == [1, 1, 2, 3, 4, 5, 6, 7, 7, 7]


def test_rows_in_a_bin_given_up_are_drawn_again_else_decode_at_the_edge() -> None:
    """Column 1's bin 3 is given up (target -1 - 2: redraw, else bin 2): its rows are
    replaced by fresh draws; where every draw lands there again, they decode in bin 2;
    bin 0 maps to bin 1 (a plain inward target) in the fresh rows too."""
    target = np.array([1, 1, 2, -1 - 2])
    codes = np.array([[0, 0], [1, 3], [2, 2], [3, 3]])
    fresh = np.array([[5, 0], [6, 1]])
    out = redraw_or(codes, {1: target}, lambda k: fresh[:k])
    assert out.tolist() == [[0, 1], [5, 1], [2, 2], [6, 1]]
    stuck = redraw_or(codes, {1: target}, lambda k: np.tile([[9, 3]], (k, 1)))
    assert stuck.tolist() == [[0, 1], [9, 2], [2, 2], [9, 2]]
