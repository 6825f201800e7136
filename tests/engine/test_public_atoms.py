"""A public table's heavy values as cells of the fine partition (engine/public.py,
``PublicInputs.atoms``; ``Discretiser(..., atoms=...)``): a value holding a large share
decodes to itself, not to a point near it, on a continuous column too."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpevolve.data.atoms import ATOM_SHARE, heavy_values
from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.bins import ATOM_BINS
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.public import PublicInputs
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise

#: Eight heavy values of a float32 column (state unemployment rates), more than the
#: ATOM_BINS share of 20 bins can give bins of their own.
RATES = np.float32([4.2, 5.1, 5.3, 6.0, 7.3, 8.1, 9.4, 10.2]).astype(np.float64)
SCHEMA = Schema(
    (NumericColumn("rate", 1.5, 12.0), CategoricalColumn("y", ("no", "yes"))), label="y"
)


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    heavy = rng.random(n) < 0.8
    rate = np.where(heavy, rng.choice(RATES, n), rng.uniform(2.0, 11.0, n))
    y = np.where(rate > 6.5, "yes", "no")
    return pd.DataFrame({"rate": rate, "y": y})


def test_every_heavy_public_value_is_an_atom_of_the_fine_partition() -> None:
    inputs = PublicInputs.of(_table(4000, 0), SCHEMA, EngineSpec())
    assert inputs.atoms is not None
    assert inputs.atoms["rate"] == sorted(RATES.tolist())  # each ~10% >= ATOM_SHARE
    assert len(RATES) > int(ATOM_BINS * 20) and 0.8 / len(RATES) > ATOM_SHARE
    disc = Discretiser(SCHEMA, 20, 128, inputs.edges, atoms=inputs.atoms)
    cells = disc.fine["rate"]
    assert set(RATES) <= set(cells.lo[: cells.atoms].tolist())
    codes = disc.fine_codes(encode(pd.DataFrame({"rate": RATES, "y": "no"}), SCHEMA), "rate")
    assert np.array_equal(cells.lo[codes], RATES)  # each value is its own cell


def test_the_heavy_values_decode_to_themselves() -> None:
    """With the public table passed, the synthetic table holds the heavy values exactly
    (float equality), at about their share (seeded twins of the noise)."""
    private, public = _table(4000, 1), _table(4000, 2)
    result = fit_engine(
        FrameSource(private, SCHEMA), SCHEMA, Budget(epsilon=1.0, delta=1e-5),
        noise=make_noise(11), rng=np.random.default_rng(0), public=public,
    )  # fmt: skip
    out = result.sample(4000, np.random.default_rng(0))["rate"].to_numpy(float)
    for value in RATES:
        assert abs(np.mean(out == value) - np.mean(private["rate"] == value)) < 0.04, value


def test_public_atoms_of_single_precision_lie_on_the_column_grid() -> None:
    """A float32 public value (4.2 read as 4.19999980926514) in a column of one decimal
    is the atom 4.2, the value the fine partition codes rows to."""
    values = np.float32([4.2] * 30 + [5.0 + 0.1 * k for k in range(40)]).astype(np.float64)
    assert [v for v, _ in heavy_values(values, 0.1)] == [4.2]


def test_public_values_one_on_the_grid_are_one_atom_with_their_rows() -> None:
    """Two float32 spellings of 4.2 (each 20% of the rows) are the one atom 4.2 holding
    40%, listed once (the cap on atoms' bins counts it once)."""
    values = np.r_[[4.2] * 20, [np.float32(4.2)] * 20, 5.0 + 0.1 * np.arange(60)]
    assert heavy_values(values, 0.1) == [(4.2, 0.4)]
