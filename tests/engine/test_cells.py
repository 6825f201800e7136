"""Which cells a bin whose own cells weigh nothing decodes in: a column whose released
weights lie on its whole numbers keeps to them (docs/engine.md, Decoding values within
a bin)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine.cells import COVER, whole_atoms
from dpevolve.engine.discretise import Discretiser

SCHEMA = Schema(
    (NumericColumn("years", 6.0, 20.0, decimals=1), CategoricalColumn("y", ("no", "yes"))),
    label="y",
)


def _weights(disc: Discretiser, on_whole: float, seed: int) -> np.ndarray:
    """Weights on the whole years 12-16 (``on_whole`` of them) and on fractions in
    [12, 17) (the rest); nothing below 12, as a noisy histogram floors a thin part."""
    cells = disc.fine["years"]
    rng = np.random.default_rng(seed)
    whole = (cells.lo == cells.hi) & (cells.lo >= 12.0) & (cells.lo <= 16.0)
    whole &= np.round(cells.lo) == cells.lo
    frac = (cells.lo != cells.hi) & (cells.lo >= 12.0) & (cells.hi <= 17.0)
    w = np.zeros(cells.size)
    w[whole] = rng.uniform(0.5, 1.5, whole.sum())
    w[frac] = rng.uniform(0.5, 1.5, frac.sum())
    w[whole] *= on_whole / w[whole].sum()
    w[frac] *= (1.0 - on_whole) / w[frac].sum()
    return w * 2000


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), on_whole=st.floats(COVER + 0.01, 1.0))
def test_a_bin_of_floored_cells_decodes_at_whole_numbers_where_the_data_hold_them(
    seed: int, on_whole: float
) -> None:
    """Whole years released with ``decimals: 1`` (catholic's mothers' schooling): the
    first bin's cells weigh nothing, the weights lie on whole years; its rows decode
    at whole years, never at a fraction the data do not hold."""
    disc = Discretiser(SCHEMA, 4, 128)  # bin 0: [6, 9.5)
    weights = _weights(disc, on_whole, seed)
    assert whole_atoms(disc.fine["years"], weights) is not None
    codes = np.zeros((1000, 2), dtype=np.int64)
    rng = np.random.default_rng(seed)
    out = disc.decode(codes, rng, {"years": weights}, 5000)["years"].to_numpy()
    assert np.all(out == np.round(out)) and out.min() >= 6.0 and out.max() < 9.5


def test_weights_off_the_whole_numbers_keep_the_fractions() -> None:
    """Where the weights do not lie on the whole numbers (a third on fractions), the
    bin decodes across its cells as before, fractions included."""
    disc = Discretiser(SCHEMA, 4, 128)
    weights = _weights(disc, 0.66, 0)
    assert whole_atoms(disc.fine["years"], weights) is None
    codes = np.zeros((1000, 2), dtype=np.int64)
    out = disc.decode(codes, np.random.default_rng(0), {"years": weights}, 5000)["years"]
    assert np.any(out.to_numpy() != np.round(out.to_numpy()))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    on_whole=st.floats(COVER + 0.01, 1.0),
    reach=st.floats(0.3, 2.9),
)
def test_an_end_bin_thinning_out_keeps_to_whole_numbers(
    seed: int, on_whole: float, reach: float
) -> None:
    """catholic's fathers' schooling: the last bin, [17, 20], holds whole years its
    cells do not show; its rows thin out from 17 over ``reach`` years. Decoded, they lie
    at whole years within the reach only (before: fractions up to its foot, past the
    data), and fewer at each year further out."""
    disc = Discretiser(SCHEMA, 4, 128)  # bin 3: [16.5, 20]
    weights = _weights(disc, on_whole, seed)
    cells = disc.fine["years"]
    weights[cells.coarse == 3] = 0.0
    assert whole_atoms(cells, weights) is not None
    apex = 17.0
    codes = np.zeros((4000, 2), dtype=np.int64)
    codes[:, 0] = 3
    rng = np.random.default_rng(seed)
    out = disc.decode(
        codes, rng, {"years": weights}, 5000, ends={"years": (0, 3)},
        reach={"years": {3: (apex, apex + reach)}},
    )["years"].to_numpy()  # fmt: skip
    assert np.all(out == np.round(out))
    assert out.min() >= apex and out.max() <= apex + reach
    counts = np.bincount((out - apex).astype(int))
    assert np.all(np.diff(counts) <= 0)
