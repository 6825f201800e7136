"""Discretisation: the evaluation's bins, fine cells inside their bin, decoding."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.discretise import Discretiser
from dpevolve.metrics import bin_codes


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": np.where(rng.random(n) < 0.4, 40, rng.integers(17, 91, n)),
            "spend": np.where(
                rng.random(n) < 0.1, np.nan, np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * 100)
            ),
            "job": rng.choice(["a", "b", None], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


def _codes_on(disc: Discretiser, frame: pd.DataFrame, column) -> np.ndarray:
    """The evaluation's codes (docs/math.md §7) of a categorical column, or of a
    numeric one on the discretiser's edges (equal-width where its range is cut at
    round values, else at round values: ``round_edges``)."""
    if not isinstance(column, NumericColumn):
        return bin_codes(frame, column)
    x = frame[column.name].to_numpy(dtype=np.float64)
    codes = np.searchsorted(disc.edges(column.name)[1:-1], x, side="right")
    codes[np.isnan(x)] = disc.bins
    return codes


def test_codes_are_the_evaluation_bins_and_fine_cells_sit_inside_them(nulls_schema) -> None:
    frame, _ = nulls_schema.validate(_table(3000))
    # the declared end points and exact edges are where two float paths could disagree
    edges = pd.DataFrame({"age": [17, 90, 53], "spend": [0.0, 100.0, 25.0], "job": "a", "y": "no"})
    frame = pd.concat([frame, nulls_schema.validate(edges)[0]], ignore_index=True)
    records = encode(frame, nulls_schema)
    disc = Discretiser(nulls_schema, bins=20, fine_cells=64)
    codes = disc.codes(records)
    assert disc.domain.sizes == (20, 21, 4, 2)
    # spend's [0, 100] is cut at round values already: the evaluation's equal bins
    assert np.array_equal(codes[:, 1], bin_codes(frame, nulls_schema["spend"]))
    # [17, 90]: an edge between 64 and 65 (round edges on the fine cells), not every 3.65
    assert np.any((disc.edges("age") > 64.0) & (disc.edges("age") <= 65.0))
    for j, column in enumerate(nulls_schema.columns):
        expected = _codes_on(disc, frame, column)
        assert np.array_equal(codes[:, j], expected), column.name
        if isinstance(column, NumericColumn):
            fine = disc.fine_codes(records, column.name)
            cells = disc.fine[column.name]
            assert fine.min() >= 0 and fine.max() < cells.size
            assert np.array_equal(cells.coarse[fine], codes[:, j]), column.name


def test_an_integer_column_gets_one_fine_cell_per_value_and_floats_get_atoms(nulls_schema) -> None:
    disc = Discretiser(nulls_schema, bins=20, fine_cells=128)
    age, spend = disc.fine["age"], disc.fine["spend"]
    assert age.grid and age.size == 74 and np.array_equal(age.lo, np.arange(17, 91))
    assert not spend.grid and spend.atoms == 2  # 0 and 100, the declared end points
    assert spend.nullable and np.isnan(spend.lo[-1])
    small = Discretiser(nulls_schema, bins=20, fine_cells=30)
    assert not small.fine["age"].grid  # 74 values do not fit 30 cells: sub-bins


def test_decoding_keeps_the_bin_point_masses_and_types(nulls_schema) -> None:
    frame, _ = nulls_schema.validate(_table(4000, seed=1))
    records = encode(frame, nulls_schema)
    disc = Discretiser(nulls_schema, bins=20, fine_cells=128)
    codes = disc.codes(records)
    fine = {
        c.name: np.bincount(disc.fine_codes(records, c.name), minlength=disc.fine[c.name].size)
        for c in disc.numeric
    }
    rng = np.random.default_rng(0)
    out = disc.decode(codes, rng, {k: v.astype(float) for k, v in fine.items()})
    clean, report = nulls_schema.validate(out)  # raises if a value is outside the domain
    assert report.rows_in == len(out)
    assert out["age"].dtype == np.int64
    for j, column in enumerate(nulls_schema.columns):
        assert np.array_equal(_codes_on(disc, clean, column), codes[:, j]), column.name
    # the point masses come back from the fine histogram, not from uniform draws in a bin
    assert (out["age"] == 40).mean() == pytest.approx((frame["age"] == 40).mean(), abs=0.03)
    assert (out["spend"] == 0).mean() == pytest.approx((frame["spend"] == 0).mean(), abs=0.03)
    assert out["spend"].isna().mean() == pytest.approx(frame["spend"].isna().mean(), abs=1e-12)
    uniform = disc.decode(codes, rng, None)
    assert (uniform["spend"] == 0).mean() < 0.01
    nulls_schema.validate(uniform)


@dataclass(frozen=True)
class _Decimal(NumericColumn):
    decimals: int = 1


def test_a_decimals_column_decodes_on_its_grid() -> None:
    schema = Schema((_Decimal("rate", 0.0, 5.0, decimals=1),))
    disc = Discretiser(schema, bins=20, fine_cells=128)
    assert disc.fine["rate"].grid and disc.fine["rate"].size == 51
    codes = np.arange(20).repeat(5)[:, None]
    out = disc.decode(codes, np.random.default_rng(0))
    assert np.allclose(out["rate"], np.round(out["rate"], 1))
    clean, _ = schema.validate(out)
    assert np.array_equal(bin_codes(clean, schema["rate"]), codes[:, 0])
