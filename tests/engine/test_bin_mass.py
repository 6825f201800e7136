"""Bins where the data are under heavy noise: released masses read from pooled runs of
fine cells (:func:`~dpevolve.engine.bins.released_mass`), gaps filled next to the data,
and a moved column's end bins decoded within the released support."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.bins import released_edges, released_support
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.mass import THRESHOLD, released_mass
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("wage", 0.0, 500.0),  # held in about [2, 80]: skewed, declared loose
        NumericColumn("k", 0, 99, integer=True),
        NumericColumn("u", 0.0, 1.0),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)


def _skewed(n: int, seed: int) -> pd.DataFrame:
    """A wage-like column: lognormal around 9, a long thin tail (about cps91's hrwage);
    k uniform on 0..99; u uniform on [0, 1]."""
    rng = np.random.default_rng(seed)
    wage = np.clip(np.exp(rng.normal(np.log(9.0), 0.55, n)), 0.5, 120.0)
    return pd.DataFrame(
        {
            "wage": wage,
            "k": rng.integers(0, 100, n),
            "u": rng.random(n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


def _released(disc: Discretiser, frame: pd.DataFrame, sigma: float, seed: int):
    names = [c.name for c in disc.numeric]
    _, exact = count_marginals(FrameSource(frame, SCHEMA), disc, [], names)
    noise = SeededNoise(seed)
    return {a: release(exact[a], (a,), marginal_event(sigma, FINE + a), noise) for a in names}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 400), min_size=3, max_size=40), st.sampled_from(["wage", "k"]))
def test_without_noise_the_masses_are_the_counts(counts, name) -> None:
    """Counts well above a tiny noise scale are read as they are, nothing added."""
    disc = Discretiser(SCHEMA, 20, 128)
    cells = disc.fine[name]
    exact = np.zeros(cells.size)
    start = cells.atoms if not cells.grid else 0
    exact[start : start + len(counts)] = counts
    mass = released_mass(cells, exact, 1e-6, int(exact.sum()))
    assert np.allclose(mass, exact)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-300, 3000), min_size=5, max_size=60),
    st.floats(1.0, 200.0),
    st.integers(0, 20000),
)
def test_the_masses_are_nonnegative_and_hold_the_rows(noisy, sigma, n) -> None:
    """Never negative; where anything is read, the value cells hold at least the rows
    (``n``) and exactly what was read when that is more."""
    disc = Discretiser(SCHEMA, 20, 128)
    cells = disc.fine["wage"]
    counts = np.zeros(cells.size)
    counts[cells.atoms : cells.atoms + len(noisy)] = noisy
    mass = released_mass(cells, counts, sigma, n)
    assert np.all(mass >= 0)
    if mass.any():
        assert mass.sum() >= n - 1e-6 * max(1, n)
    else:
        assert np.all(counts <= THRESHOLD * sigma * np.sqrt(cells.size))


def test_a_skewed_column_gets_bins_where_its_values_are() -> None:
    """cps91's wages under cps91's noise (2,250 rows, sigma 77 per fine cell): no single
    fine cell above the threshold covers 90% of the rows, yet the bins go where the
    values are: no bin holds half of them (equal-width bins put over 90% in one; the
    fine cells, 4 wide, bound how finely they can go), and the inner edges hug the
    data rather than the loose range's empty end."""
    disc = Discretiser(SCHEMA, 20, 128)
    for seed in range(6):
        frame = _skewed(2250, seed)
        edges = released_edges(disc, _released(disc, frame, 77.0, seed), len(frame))
        assert "wage" in edges
        wage = edges["wage"]
        share = np.bincount(np.searchsorted(wage[1:-1], frame["wage"], side="right"))
        assert share.max() / len(frame) < 0.5, (seed, share)
        even = np.bincount(np.searchsorted(disc.edges("wage")[1:-1], frame["wage"]))
        assert even.max() / len(frame) > 0.9
        assert np.all(np.isin(wage, disc.fine["wage"].boundaries))
        assert np.quantile(wage[1:-1], 0.75) < 80.0, wage  # not spread over [0, 500]


def test_an_even_column_keeps_its_bins_under_noise() -> None:
    """Uniform over the declared range, read in a few pooled blocks by chance: the rows
    not read are spread where the counts show them, and the bins stay equal-width (or
    nearly: no bin holds more than twice its share)."""
    disc = Discretiser(SCHEMA, 20, 128)
    for seed in range(6):
        frame = _skewed(2250, seed)
        placed = released_edges(disc, _released(disc, frame, 77.0, seed), len(frame))
        for name in ("k", "u"):
            edges = placed.get(name, disc.edges(name))
            share = np.bincount(
                np.searchsorted(edges[1:-1], frame[name], side="right"), minlength=20
            )
            assert share.max() / len(frame) <= 2 / 20, (seed, name, edges)


def test_a_moved_columns_end_bins_decode_within_the_released_support() -> None:
    """The last bin reaches out to 500; its rows decode within the span the released
    masses show (widened by the margin) or, where the bin lies wholly past it, in its
    cells nearest it, not across the empty range."""
    base = Discretiser(SCHEMA, 20, 128)
    frame = _skewed(2250, 3)
    released = _released(base, frame, 77.0, 3)
    edges = released_edges(base, released, len(frame))
    support = released_support(base, released, len(frame), edges)
    low, high = support["wage"]
    assert -50.0 < low and high < 150.0
    disc = Discretiser(SCHEMA, 20, 128, edges, nested=edges, support=support)
    codes = disc.codes(encode(frame, SCHEMA))
    j = disc.domain.index("wage")
    codes[:, j] = 19  # every row in the end bin
    out = disc.decode(codes, np.random.default_rng(0), None, rows=len(frame))
    values = out["wage"].to_numpy(float)
    start = disc.edges("wage")[19]
    width = float(np.diff(disc.fine["wage"].boundaries).max())
    assert values.min() >= start and values.max() <= max(high, start + width) + 1e-9


def test_a_held_end_bins_one_run_of_weights_past_the_support_overrules_it() -> None:
    """injury's ages: 42% of the rows in the last bin, weighted in one run over 40-68,
    had all been drawn within the support the first histogram showed (46 and below).
    A held end bin whose weights lie mostly past the support (here the bin lies wholly
    past it: its nearest cell stands for it), in one run from there, decodes among
    them; a run set apart by a floored gap (noise), or a bin the releases do not show
    data in, keeps to the support."""
    base = Discretiser(SCHEMA, 20, 128)
    frame = _skewed(2250, 3)
    released = _released(base, frame, 77.0, 3)
    edges = released_edges(base, released, len(frame))
    support = released_support(base, released, len(frame), edges)
    disc = Discretiser(SCHEMA, 20, 128, edges, nested=edges, support=support)
    cells = disc.fine["wage"]
    start = float(disc.edges("wage")[19])
    assert start >= support["wage"][1]
    inside = np.flatnonzero(cells.coarse == 19)
    run = inside[(cells.lo[inside] >= start) & (cells.lo[inside] < start + 60.0)]
    run = run[np.argsort(cells.lo[run])]
    weights = np.zeros(cells.size)
    weights[run] = 30.0
    codes = disc.codes(encode(frame, SCHEMA))
    codes[:, disc.domain.index("wage")] = 19
    cell = float(np.diff(cells.boundaries).max())

    def top(w: np.ndarray, held: tuple[int, ...]) -> float:
        out = disc.decode(
            codes, np.random.default_rng(0), {"wage": w}, len(frame), held={"wage": held}
        )
        return float(out["wage"].max())

    assert top(weights, (19,)) > start + 50.0
    assert top(weights, ()) <= start + cell + 1e-9
    island = weights.copy()
    island[run[1 : run.size // 2]] = 0.0  # the nearest cell, a gap, then the rest
    assert top(island, (19,)) <= start + cell + 1e-9
