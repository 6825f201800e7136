"""Values within a fine cell: evenly, or at a public table's repeated values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import fit_engine
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.within import REPEATED, SHAPE_ROWS, cell_values, draw_within, public_shape
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

COLUMN = NumericColumn("tax", 0.0, 3.0, decimals=3)
SCHEMA = Schema((COLUMN, CategoricalColumn("y", ("no", "yes"))), label="y")


DISCRETISER = Discretiser(SCHEMA, 20, 128)


def _cells():
    return DISCRETISER.fine["tax"]


def _codes(public: np.ndarray) -> np.ndarray:
    """The fine cells the discretiser codes ``public`` tax values in."""
    frame = pd.DataFrame({"tax": public, "y": "no"})
    return DISCRETISER.fine_codes(encode(frame, SCHEMA), "tax")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3000), min_size=1, max_size=400))
def test_cell_values_are_the_repeated_public_values_with_their_share_of_each_cell(
    thousandths: list[int],
) -> None:
    cells = _cells()
    public = np.array(thousandths, dtype=float) / 1000.0
    codes = _codes(public)
    found = cell_values(cells, codes, public)
    interval = (codes >= cells.atoms) & (codes < cells.values)
    values, counts = np.unique(public[interval], return_counts=True)
    expected = values[counts >= REPEATED]
    if found is None:
        assert expected.size == 0
        return
    np.testing.assert_array_equal(np.sort(found.value), expected)
    assert np.all(np.diff(found.cell) >= 0)
    for k in range(found.size):
        i, v = found.cell[k], found.value[k]
        last = i == cells.values - 1
        # in its cell, up to the float error the discretiser codes edges with
        assert cells.lo[i] - 1e-9 <= v and (v < cells.hi[i] + 1e-9 or last)
        inside = codes == i  # the cell's public rows (an atom's value is the atom's)
        upto = public[inside & (public <= v) & np.isin(public, expected)].size / inside.sum()
        assert abs(found.upto[k] - upto) < 1e-12


def test_draws_land_on_the_public_values_at_their_shares_else_evenly() -> None:
    cells = _cells()
    lo, hi = cells.lo[cells.atoms + 40], cells.hi[cells.atoms + 40]
    a, b = round(lo + 0.25 * (hi - lo), 3), round(lo + 0.75 * (hi - lo), 3)
    # in the cell: 5 rows at a, 3 at b, 2 once each; another cell holds no repeat
    public = np.array([a] * 5 + [b] * 3 + [lo + 0.1 * (hi - lo), lo + 0.9 * (hi - lo), 0.01])
    found = cell_values(cells, _codes(public), public)
    assert found is not None and found.size == 2
    rng = np.random.default_rng(0)
    picked = np.repeat([cells.atoms + 40, cells.atoms + 41], 20_000)
    even = np.where(picked == cells.atoms + 40, lo, -1.0)  # stand-ins for even draws
    out = draw_within(found, picked, even, rng)
    first = out[:20_000]
    assert abs(np.mean(first == a) - 0.5) < 0.015
    assert abs(np.mean(first == b) - 0.3) < 0.015
    assert abs(np.mean(first == lo) - 0.2) < 0.015
    np.testing.assert_array_equal(out[20_000:], -1.0)  # no public values there: as drawn


def _state_taxes(n: int, seed: int) -> pd.DataFrame:
    """A state-level column: 40 tax rates, each about 2.5% of the rows (no atom)."""
    rng = np.random.default_rng(seed)
    rates = np.round(np.linspace(0.05, 2.9, 40) + 0.0137, 3)
    tax = rates[rng.integers(0, 40, n)]
    return pd.DataFrame({"tax": tax, "y": np.where(tax > 1.2, "yes", "no")})


def _fit(public: pd.DataFrame | None):
    return fit_engine(
        FrameSource(_state_taxes(4000, 1), SCHEMA), SCHEMA, Budget(1.0, 1e-5),
        noise=SeededNoise(7), rng=np.random.default_rng(0), public=public,
    )  # fmt: skip


def test_a_public_table_puts_values_on_the_columns_own_values() -> None:
    public = _state_taxes(4000, 2)
    rates = set(public["tax"])
    with_public = _fit(public)
    without = _fit(None)
    assert with_public.sample(rng=np.random.default_rng(0))["tax"].isin(rates).mean() > 0.9
    assert without.sample(rng=np.random.default_rng(0))["tax"].isin(rates).mean() < 0.5
    facts = with_public.ledger.metadata["engine"]["public"]
    assert facts["values_within_cells"] == ["tax"] and facts["shape_within_bins"] == ["tax"]
    # the released model carries them: a saved model draws the same values
    model = with_public.released()
    assert model.within is not None and set(model.within) == {"tax"}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.1, 1e4), st.floats(0.0, 1.0))
def test_public_shape_keeps_each_bins_weight_and_leans_on_the_public_where_noise_rules(
    seed: int, sigma: float, floored: float
) -> None:
    cells = _cells()
    rng = np.random.default_rng(seed)
    w = rng.uniform(0, 500, cells.size) * (rng.random(cells.size) > floored)
    p = rng.integers(0, 8, cells.size).astype(float)
    mass = rng.uniform(0, 300, 21) * (rng.random(21) > 0.3)
    out = public_shape(w, p, cells, sigma, mass)
    index = np.arange(cells.values)
    for b in np.unique(cells.coarse[index]):
        inside = index[cells.coarse[index] == b]
        total, rows = w[inside].sum(), p[inside].sum()
        assert np.all(out[inside] >= 0)
        if inside.size < 2 or rows < SHAPE_ROWS or (total <= 0 and mass[b] <= 0):
            np.testing.assert_array_equal(out[inside], w[inside])
            continue
        if total <= 0:  # nothing shown: the public shape whole, at the model's rows
            np.testing.assert_allclose(out[inside], mass[b] * p[inside] / rows)
            continue
        assert out[inside].sum() == pytest.approx(total, rel=1e-9, abs=1e-9)
        # a mix of the private shape and the public one, nearer the less noisy
        target = p[inside] * total / rows
        moved = np.abs(target - w[inside]) > 1e-6 * total
        if not moved.any():
            continue
        share = (out[inside] - w[inside])[moved] / (target - w[inside])[moved]
        assert np.allclose(share, share[0]) and 0 <= share[0] <= 1
        noisy = inside.size * sigma**2 / total**2
        if abs(noisy * rows - 1) > 1e-3:
            assert (share[0] > 0.5) == (noisy > 1.0 / rows)
