"""Candidate values never become point masses the data do not hold.

The fine partition of a continuous column holds single values as cells of their own:
its declared ends, 0 and, over a short range, its whole numbers. They are candidates: a
release may show rows there, but nothing says the data hold any. Decoding gives one
weight only on its own released count (docs/engine.md, Decoding values within a bin).
Found on black_politicians (2,237 rows, declared on [0, 16] with 4 decimals): past the
cells the noise leaves standing, each whole number had been pooled with the intervals
beside it and weighed as one of them, and a bin whose cells weighed nothing drew its
candidate as often as an interval: 5.7% of the rows at exactly 4.0, where the data hold
none. A value the schema declares (``atoms``) or a release finds is no candidate.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine.cells import COVER, whole_atoms
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.smoothing import SUPPORT, decode_weights

INCOME = NumericColumn("income", 0.0, 16.0, decimals=4)
LABEL = CategoricalColumn("y", ("no", "yes"))


def _released(cells, lo: float, hi: float, n: int, sigma: float, seed: int) -> np.ndarray:
    """A seeded twin of a released fine histogram: ``n`` values spread over the
    intervals in [lo, hi], none on a single value."""
    rng = np.random.default_rng(seed)
    intervals = np.arange(cells.size) >= cells.atoms
    inside = intervals & (cells.lo >= lo) & (cells.hi <= hi)
    truth = np.where(inside, n / inside.sum(), 0.0)
    return truth + rng.normal(0.0, sigma, cells.size)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 100_000), sigma=st.floats(20.0, 90.0))
def test_a_candidate_past_the_sure_cells_weighs_only_on_its_own_count(
    seed: int, sigma: float
) -> None:
    """Data spread over [2, 6]: a whole number outside the span of the cells standing
    :data:`SUPPORT` noise scales out weighs nothing unless its own count does too."""
    cells = Discretiser(Schema((INCOME, LABEL), label="y"), 20, 128).fine["income"]
    counts = _released(cells, 2.0, 6.0, 2200, sigma, seed)
    weights = decode_weights(counts, sigma, cells)
    sure = np.flatnonzero(counts > SUPPORT * sigma)
    if sure.size == 0:
        return
    low, high = cells.lo[sure].min(), cells.hi[sure].max()
    atoms = np.arange(cells.atoms)
    outside = (cells.lo[atoms] < low) | (cells.lo[atoms] > high)
    faint = counts[atoms] <= SUPPORT * sigma
    assert np.all(weights[atoms[outside & faint]] == 0.0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_a_bin_whose_cells_weigh_nothing_draws_no_candidate(seed: int) -> None:
    """The last bin, [4, 16], weighs nothing; the weights show data in [2, 4). Its
    rows decode next to the data, on the intervals: none at exactly 4.0 or any whole
    number (before: half of them at 4.0, the candidate as likely as an interval)."""
    disc = Discretiser(Schema((INCOME, LABEL), label="y"), 20, 128, edges={
        "income": np.r_[np.linspace(0.0, 4.0, 20), 16.0]
    })  # fmt: skip
    cells = disc.fine["income"]
    rng = np.random.default_rng(seed)
    shown = (np.arange(cells.size) >= cells.atoms) & (cells.lo >= 2.0) & (cells.hi <= 4.0)
    weights = np.where(shown, rng.uniform(50.0, 150.0, cells.size), 0.0)
    codes = np.zeros((2000, 2), dtype=np.int64)
    codes[:, 0] = 19
    out = disc.decode(codes, rng, {"income": weights}, int(weights.sum()))["income"].to_numpy()
    assert out.min() >= 4.0
    assert np.mean(out == np.round(out)) < 0.01


def test_a_declared_value_in_such_a_bin_still_draws() -> None:
    """A value the schema declares is data, not a candidate: the same weightless bin
    holding a declared 4.1 draws it (as one of the bin's cells)."""
    declared = NumericColumn("income", 0.0, 16.0, decimals=4, atoms=(4.1,))
    disc = Discretiser(Schema((declared, LABEL), label="y"), 20, 128, edges={
        "income": np.r_[np.linspace(0.0, 4.0, 20), 16.0]
    }, atoms={"income": (4.1,)})  # fmt: skip
    cells = disc.fine["income"]
    rng = np.random.default_rng(0)
    shown = (np.arange(cells.size) >= cells.atoms) & (cells.lo >= 2.0) & (cells.hi <= 4.0)
    weights = np.where(shown, 100.0, 0.0)
    codes = np.zeros((2000, 2), dtype=np.int64)
    codes[:, 0] = 19
    out = disc.decode(codes, rng, {"income": weights}, int(weights.sum()))["income"].to_numpy()
    assert np.any(out == 4.1)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_declared_whole_numbers_keep_their_rule_without_the_ends(seed: int) -> None:
    """A tax rate declared on [0, 45] with one decimal, its declared values 10, 13, 14,
    18 and 24 holding the weights: the whole numbers a weightless bin decodes at are
    those values, not the declared ends, which are no values of a range of whole
    numbers here (alcohol's cigarette tax: 5.6% of a run's rows at 0, where the data
    start at 2). Its first bin then decodes across its own cells."""
    values = (10.0, 13.0, 14.0, 18.0, 24.0)
    tax = NumericColumn("tax", 0.0, 45.0, decimals=1, atoms=values)
    disc = Discretiser(Schema((tax, LABEL), label="y"), 20, 128, atoms={"tax": values})
    cells = disc.fine["tax"]
    rng = np.random.default_rng(seed)
    weights = np.zeros(cells.size)
    on = np.isin(cells.lo, values) & (np.arange(cells.size) < cells.atoms)
    weights[on] = rng.uniform(200.0, 400.0, on.sum())
    near = (np.arange(cells.size) >= cells.atoms) & (cells.lo >= 10.0) & (cells.hi <= 25.0)
    share = (1 - COVER) * weights[on].sum() / near.sum()
    weights[near] = rng.uniform(0.0, 1.0, near.sum()) * share
    whole = whole_atoms(cells, weights)
    assert whole is not None and set(cells.lo[whole]) == set(values)
    codes = np.zeros((2000, 2), dtype=np.int64)  # the first bin, [0, 2.25)
    out = disc.decode(codes, rng, {"tax": weights}, int(weights.sum()))["tax"].to_numpy()
    assert np.mean(out == 0.0) < 0.05
