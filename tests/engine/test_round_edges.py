"""Bins cut at round values (:func:`~dpevolve.engine.boundaries.round_edges`;
docs/engine.md, Bins): a rule that changes at a round threshold changes between bins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.boundaries import ROUND_MANTISSAS, round_edges, rounded, snapped
from dpevolve.engine.discretise import Discretiser


def _round_widths(low: float, high: float) -> list[float]:
    """Every round width (1, 2, 2.5 or 5 times a power of ten) in ``[low, high]``."""
    out = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.floor(math.log10(high)) + 2):
        out += [m * 10.0 ** (exponent - 1) for m in ROUND_MANTISSAS]
    return [w for w in out if low * (1 - 1e-9) <= w <= high * (1 + 1e-9)]


@settings(max_examples=200, deadline=None)
@given(
    lo=st.floats(-1e6, 1e6),
    span=st.floats(1e-3, 1e6),
    bins=st.integers(2, 64),
)
def test_round_edges_are_bins_of_the_range_at_round_values(
    lo: float, span: float, bins: int
) -> None:
    """``bins`` increasing bins from ``lo`` to ``hi``; either the equal-width ones or
    the two end bins of equal width and every edge between them a multiple of half a
    round width at least the equal width and at most twice it, no bin wider than that
    round width's twice."""
    hi = lo + span
    edges = round_edges(lo, hi, bins)
    assert edges.size == bins + 1 and edges[0] == lo and edges[-1] == hi
    assert np.all(np.diff(edges) > 0)
    equal = np.linspace(lo, hi, bins + 1)
    if np.array_equal(edges, equal):
        return
    width = span / bins
    assert np.isclose(edges[1] - edges[0], width) and np.isclose(edges[-1] - edges[-2], width)
    if bins < 5:
        return
    inner = edges[2:-2]
    fits = [
        w
        for w in _round_widths(width, 2.0 * width)
        if np.allclose(inner / (w / 2), np.round(inner / (w / 2)), rtol=0, atol=1e-6)
    ]
    assert fits
    assert np.diff(edges).max() <= 2.0 * max(fits) * (1 + 1e-9)


@pytest.mark.parametrize(
    ("lo", "hi", "step", "cuts"),
    [
        (-12.0, 12.0, None, (0.0, 3.0)),  # an inferred [-12, 12]: equal bins cut at 2.4, 3.6
        (0.0, 95.0, None, (50.0,)),
        (-4.0, 5.0, None, (0.0,)),
        (-4.0, 200.0, None, (50.0, 100.0)),
        (17.0, 90.0, 1.0, (25.0, 65.0)),  # whole halves in an integer column
        (-5.0, 4000.0, None, (1000.0, 3000.0)),
    ],
)
def test_round_thresholds_are_edges(
    lo: float, hi: float, step: float | None, cuts: tuple[float, ...]
) -> None:
    edges = round_edges(lo, hi, 20, step)
    assert all(c in edges for c in cuts)
    if step is not None:  # inside the two equal end bins
        assert np.allclose(edges[2:-2], np.round(edges[2:-2] / step) * step)


def test_ranges_cut_at_round_values_keep_their_equal_bins() -> None:
    for lo, hi in ((0.0, 1.0), (-10.0, 10.0), (0.0, 100.0), (0.0, 1e6)):
        assert np.array_equal(round_edges(lo, hi, 20), np.linspace(lo, hi, 21))
    # a width no multiple of the value step: the equal bins
    assert np.array_equal(round_edges(3.0, 7.0, 20, 1.0), np.linspace(3.0, 7.0, 21))


def test_a_sliver_at_an_end_joins_its_neighbour() -> None:
    """[-5, 4000]: inside its equal end bin [-5, 195.25] the multiples of 250 would leave
    [195.25, 250] a bin of its own."""
    edges = round_edges(-5.0, 4000.0, 20)
    assert edges[2] - edges[1] >= 125.0


def test_fine_cells_sit_inside_the_round_bins() -> None:
    """The default bins lie on the fine partition's boundaries: every fine cell in one
    bin; the partition itself is the equal-width one (the released histograms' cells do
    not move with the bins)."""
    schema = Schema((NumericColumn("x", -12.0, 12.0), NumericColumn("k", 17, 90, integer=True)))
    disc = Discretiser(schema, bins=20, fine_cells=128)
    for name in ("x", "k"):
        edges = disc.edges(name)
        cells = disc.fine[name]
        inner = cells.atoms
        if cells.grid:
            continue
        lo, hi = cells.lo[inner:], cells.hi[inner:]
        bins_lo = np.searchsorted(edges, lo, side="right") - 1
        bins_hi = np.searchsorted(edges, hi, side="left") - 1
        assert np.array_equal(bins_lo, bins_hi)
    assert 3.0 in disc.edges("x")


@settings(max_examples=100, deadline=None)
@given(lo=st.floats(-1e4, 1e4), span=st.floats(1e-2, 1e4), cells=st.integers(20, 200))
def test_snapped_edges_are_boundaries_of_the_partition(lo: float, span: float, cells: int) -> None:
    """Round edges moved onto a partition's boundaries (every cell in one bin), or the
    equal ones where two would meet; a round value that is a boundary stays."""
    hi = lo + span
    bounds = rounded(np.linspace(lo, hi, cells + 1))
    equal = np.linspace(lo, hi, 21)
    out = snapped(equal, round_edges(lo, hi, 20), bounds)
    assert out.size == 21 and out[0] == lo and out[-1] == hi and np.all(np.diff(out) > 0)
    if not np.array_equal(out, equal):
        assert np.all(np.isin(out[1:-1], bounds))
    target = round_edges(lo, hi, 20)[1:-1]
    kept = target[np.isin(target, bounds)]
    if not np.array_equal(out, equal):
        assert np.all(np.isin(kept, out))
