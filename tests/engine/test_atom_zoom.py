"""The zooming atom release (:mod:`dpevolve.engine.atoms`): public levels, the cells
each level counts, the charge per level against the formula, and an atom found in a
column whose values are too many for one level."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.atoms import (
    ATOMS,
    CandidateCounts,
    candidate_values,
    children,
    kept_cells,
    release_atoms,
    zoom_spacings,
)
from dpevolve.engine.measure import sigma_for
from dpevolve.engine.plan import Spend
from dpevolve.measurements import MeasurementList
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import SeededNoise

INCOME = NumericColumn("income", 5.0, 13.0, decimals=6)
SCHEMA = Schema((INCOME, CategoricalColumn("y", ("0", "1"))), label="y")


def test_levels_go_down_to_the_value_step_by_powers_of_ten() -> None:
    values = candidate_values(INCOME, 128)
    assert values[1] - values[0] == pytest.approx(0.01)
    assert zoom_spacings(INCOME, values, 5) == [1e-4, 1e-6]  # 100 children of 5 cells
    assert zoom_spacings(INCOME, values, 50) == [1e-3, 1e-4, 1e-5, 1e-6]
    tax = NumericColumn("tax", 0.0, 2.8, decimals=3)  # the candidates are its values
    assert zoom_spacings(tax, candidate_values(tax, 128), 5) == []
    free = NumericColumn("x", 0.0, 1e6)  # no value step: one level
    assert zoom_spacings(free, candidate_values(free, 128), 5) == []
    big = NumericColumn("balance", -8000, 100000, integer=True)
    assert zoom_spacings(big, candidate_values(big, 128), 5) == [1.0]


def test_children_are_the_multiples_inside_each_kept_cell() -> None:
    kids = children(np.array([10.66, 9.43]), 0.01, 1e-4)
    assert kids.size == 200 and kids[0] == 9.425 and kids[-1] == 10.6649
    assert np.all(np.diff(kids) > 0)
    assert 10.6573 in kids and 10.655 in kids and 10.665 not in kids


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(5_000_000, 13_000_000), min_size=1, max_size=40))
def test_a_zoom_level_counts_each_row_once_at_most_at_its_nearest_cell(micro: list[int]) -> None:
    raw = np.array(micro) / 1e6
    frame = pd.DataFrame({"income": raw, "y": "0"})
    centres = np.array([9.43, 10.0, 10.66])
    query = CandidateCounts(SCHEMA, {"income": centres}, halfwidths={"income": 0.005})
    counts = query.split(query.counts(encode(frame, SCHEMA)))["income"]
    expected = [np.sum(np.abs(raw - c) <= 0.005 + 1e-9) for c in centres]
    assert counts.sum() <= len(micro)
    assert np.abs(counts - expected).max() <= 1  # a row on a cell's edge goes one way


def test_a_replaced_row_moves_a_zoom_level_by_at_most_sqrt2() -> None:
    centres = np.array([9.43, 10.0, 10.66])
    query = CandidateCounts(SCHEMA, {"income": centres}, halfwidths={"income": 0.005})
    base = [10.65726] * 5 + [9.43]
    for here, there in [(10.65726, 9.4301), (5.0, 10.0), (9.43, 13.0)]:
        a = pd.DataFrame({"income": [*base, here], "y": "0"})
        b = pd.DataFrame({"income": [*base, there], "y": "0"})
        gap = query.counts(encode(a, SCHEMA)) - query.counts(encode(b, SCHEMA))
        assert np.linalg.norm(gap) <= math.sqrt(2) + 1e-12


def test_kept_cells_need_the_share_and_the_noise_floor_not_a_spike() -> None:
    noisy = np.array([0, 60, 60, 60, 0, 10, 0, 0, 0, 0], dtype=float)
    assert list(kept_cells(noisy, 1.0, 1000, 5)) == [1, 2, 3]  # 10 < 5% of n
    assert list(kept_cells(noisy, 1.0, 100, 5)) == [1, 2, 3, 5]
    assert list(kept_cells(noisy, 1.0, 1000, 2)) == [1, 2]
    assert list(kept_cells(noisy, 20.0, 1000, 5)) == []  # 60 < 4 sigma


def test_each_level_is_charged_by_the_formula_and_the_atom_is_found() -> None:
    rng = np.random.default_rng(0)
    values = np.round(rng.uniform(5.0, 13.0, 400), 6)
    frame = pd.DataFrame({"income": [*values, *[10.65726] * 300], "y": "1"})
    source = FrameSource(frame, SCHEMA)
    ledger, spend, listed = Ledger(1e-6), Spend(10.0), MeasurementList()
    rho = 3.0
    candidates = {"income": candidate_values(INCOME, 128)}
    found = release_atoms(
        source, SCHEMA, candidates, rho, 20, spend, SeededNoise(1), ledger, listed
    )
    assert found == {"income": [10.65726]}
    events = ledger.to_dict()["events"]
    assert [e["level"] for e in events] == [0, 1, 2]
    assert {e["mechanism"] for e in events} == {ATOMS + "income"}
    sigma = sigma_for(rho / 3)
    assert all(e["sigma"] == pytest.approx(sigma) for e in events)
    assert spend.used == pytest.approx(rho)
    assert [m.noisy.size for m in listed.items] == [801, 100, 100]
    assert listed.events() == list(spend.events)


def test_a_column_whose_level_keeps_nothing_stops_there() -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"income": np.round(rng.uniform(5.0, 13.0, 700), 6), "y": "1"})
    ledger, spend, listed = Ledger(1e-6), Spend(10.0), MeasurementList()
    candidates = {"income": candidate_values(INCOME, 128)}
    found = release_atoms(
        FrameSource(frame, SCHEMA), SCHEMA, candidates, 3.0, 20, spend, SeededNoise(2),
        ledger, listed,
    )  # fmt: skip
    assert found == {}
    assert [e["level"] for e in ledger.to_dict()["events"]] == [0]
    assert spend.used == pytest.approx(1.0)  # the later levels are not spent
