"""Declared values and vacant bins (docs/engine.md, Declared values and vacant bins):
each declared value takes a bin of its own, no bin holds two, the bins holding none
are known empty before any record is read, the model keeps them empty at no cost, and
every value drawn is a declared one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.boundaries import value_edges
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.vacant import VACANT, vacant_bins, vacant_measurements
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

YEARS = (0.5, 2.5, 6.0, 9.0, 13.0, 16.5, 23.0)  # fair's years married, as coded


@settings(max_examples=200, deadline=None)
@given(
    points=st.lists(st.integers(0, 1000), min_size=1, max_size=20, unique=True),
    bins=st.integers(1, 30),
)
def test_each_value_takes_a_bin_of_its_own(points: list[int], bins: int) -> None:
    """Any values on [0, 100] (at most ``bins`` of them): ``bins + 1`` increasing edges
    from 0 to 100, and no bin holds two values."""
    values = np.sort(np.asarray(points, dtype=np.float64) / 10.0)
    if values.size > bins:
        return
    edges = value_edges(values, 0.0, 100.0, bins)
    assert edges[0] == 0.0 and edges[-1] == 100.0 and np.all(np.diff(edges) > 0)
    assert edges.size == bins + 1
    where = np.minimum(np.searchsorted(edges, values, side="right") - 1, bins - 1)
    assert np.unique(where).size == values.size


def test_bins_without_a_value_are_vacant_on_a_grid_only() -> None:
    """Seven declared values on [0, 26]: seven bins hold one each, thirteen none; whole
    numbers 0-4 on [0, 10] leave the half-way bins vacant; an interval partition none."""
    schema = Schema(
        (
            NumericColumn("years", 0, 26, decimals=1, values=YEARS),
            NumericColumn("teens", 0, 10, integer=True),
            NumericColumn("income", 0, 200),
        )
    )
    discretiser = Discretiser(schema, 20, 128)
    assert (~vacant_bins(discretiser, "years")).sum() == len(YEARS)
    assert discretiser.valued == {"years"}
    assert vacant_bins(discretiser, "teens").sum() == 9
    assert not vacant_bins(discretiser, "income").any()
    pseudo = vacant_measurements(discretiser, 1000, 30.0)
    assert {m.clique for m in pseudo} == {("years",), ("teens",)}
    for m in pseudo:
        assert m.event.sensitivity == 0.0 and m.event.label.startswith(VACANT)
        assert m.noisy.tolist() == [0.0, 1000.0] and m.sigma == pytest.approx(3.0)


def _table(rows: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    years = rng.choice(YEARS, size=rows, p=[0.06, 0.33, 0.17, 0.1, 0.08, 0.13, 0.13])
    frame = pd.DataFrame(
        {
            "years": years,
            "kids": np.minimum(rng.poisson(years / 8.0), 4),
            "y": (rng.random(rows) < 0.1 + years / 40.0).astype(int).astype(str),
        }
    )
    schema = Schema(
        (
            NumericColumn("years", 0, 26, decimals=1, values=YEARS),
            NumericColumn("kids", 0, 10, integer=True),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )
    return frame, schema


def test_a_run_keeps_vacant_bins_empty_and_draws_declared_values_only() -> None:
    """A small table at epsilon 0.5 (each bin's noise tens of rows): the model holds
    under 1% of the rows in the vacant bins of both columns, every drawn year is a
    declared one, and the pseudo-measurements are no release (the spend and the
    release count are those of the plan)."""
    frame, schema = _table(2000, 0)
    result = fit_engine(
        FrameSource(frame, schema),
        schema,
        Budget(epsilon=0.5, delta=1e-5),
        EngineSpec(rounds=3, pe_share=0.0),
        noise=SeededNoise(3),
        rng=np.random.default_rng(3),
    )
    for name in ("years", "kids"):
        vacant = vacant_bins(result.discretiser, name)
        one_way = np.asarray(result.model.answer((name,)))[: result.discretiser.bins]
        assert vacant.any() and one_way[vacant].sum() < 0.01 * len(frame)
    drawn = result.sample(5000, np.random.default_rng(0))
    assert set(drawn["years"].unique()) <= set(YEARS)
    labels = [e.label for e in result.ledger.events]
    assert not any(label.startswith(VACANT) for label in labels)
    codes = result.discretiser.codes(encode(frame, schema))
    real = np.bincount(codes[:, 0], minlength=result.discretiser.bins)
    assert (real[vacant_bins(result.discretiser, "years")] == 0).all()
