"""The atom release (:mod:`dpevolve.engine.atoms`): public candidates, exact counts, the
charge against the formula, and atoms found without public data kept as cells."""

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
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atoms import (
    ATOMS,
    CANDIDATES,
    CandidateCounts,
    candidate_values,
    found_atoms,
    noise_floor,
    release_atoms,
)
from dpevolve.engine.bins import THRESHOLD
from dpevolve.engine.plan import Plan, Spend
from dpevolve.measurements import MeasurementList
from dpevolve.privacy import Budget, Ledger
from dpevolve.privacy.noise import SeededNoise

TAX = NumericColumn("tax", 0.0, 2.8, decimals=3)
SCHEMA = Schema(
    (TAX, NumericColumn("age", 0, 90, integer=True), CategoricalColumn("y", ("0", "1"))),
    label="y",
)


def test_candidates_are_the_value_grid_or_round_values() -> None:
    values = candidate_values(TAX, 128)
    assert values.size == 2801 and values[0] == 0.0 and values[-1] == 2.8
    assert values[90] == 0.09  # written as the column writes it
    assert candidate_values(NumericColumn("age", 0, 90, integer=True), 128).size == 0
    wide = candidate_values(NumericColumn("x", 0.0, 1e6), 128)
    assert wide.size <= CANDIDATES and wide[1] - wide[0] == 1000.0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2800), min_size=1, max_size=60))
def test_counts_are_the_rows_at_each_candidate(milli: list[int]) -> None:
    frame = pd.DataFrame(
        {"tax": [m / 1000 for m in milli], "age": 30, "y": "0"}, columns=SCHEMA.names
    )
    values = candidate_values(TAX, 128)
    query = CandidateCounts(SCHEMA, {"tax": values})
    counts = query.split(query.counts(encode(frame, SCHEMA)))["tax"]
    expected = np.bincount(milli, minlength=values.size)
    assert np.array_equal(counts, expected)


def test_a_replaced_row_moves_the_counts_by_at_most_sqrt2() -> None:
    values = candidate_values(TAX, 128)
    query = CandidateCounts(SCHEMA, {"tax": values})
    base = [0.09] * 5 + [1.5]
    for here, there in [(0.09, 2.8), (0.0, 0.0015), (2.8, 0.09)]:
        a = pd.DataFrame({"tax": [*base, here], "age": 1, "y": "0"})[list(SCHEMA.names)]
        b = pd.DataFrame({"tax": [*base, there], "age": 1, "y": "0"})[list(SCHEMA.names)]
        gap = query.counts(encode(a, SCHEMA)) - query.counts(encode(b, SCHEMA))
        assert np.linalg.norm(gap) <= math.sqrt(2) + 1e-12


def test_the_release_is_charged_by_the_formula_and_recorded() -> None:
    frame = pd.DataFrame({"tax": [0.09] * 100 + [1.234] * 300, "age": 40, "y": "1"})
    source = FrameSource(frame[list(SCHEMA.names)], SCHEMA)
    ledger, spend, listed = Ledger(1e-6), Spend(1.0), MeasurementList()
    rho = 0.5
    found = release_atoms(
        source, SCHEMA, {"tax": candidate_values(TAX, 128)}, rho, 20, spend, SeededNoise(1),
        ledger, listed,
    )  # fmt: skip
    assert found == {"tax": [1.234, 0.09]}  # largest first
    (event,) = spend.events
    assert event.label == ATOMS + "tax"
    assert event.sigma == pytest.approx(math.sqrt(2) / math.sqrt(2 * rho))
    assert event.rho == pytest.approx(1.0 / event.sigma**2) == pytest.approx(rho)
    assert spend.used == pytest.approx(rho)
    (entry,) = ledger.to_dict()["events"]
    assert entry["mechanism"] == ATOMS + "tax" and entry["rho"] == pytest.approx(rho)
    assert listed.events() == [event]
    assert listed.items[0].noisy.size == candidate_values(TAX, 128).size


def test_found_atoms_need_the_share_the_noise_floor_and_a_spike() -> None:
    values = np.arange(10, dtype=float)
    noisy = np.array([0, 0, 60, 0, 0, 0, 30, 30, 30, 30], dtype=float)
    assert found_atoms(values, noisy, 1.0, 100, 5) == [2.0]  # a run is no atom
    assert found_atoms(values, noisy, 20.0, 100, 5) == []  # 60 < 4 sigma
    assert found_atoms(values, noisy, 1.0, 2000, 5) == []  # 60 < 5% of n
    assert noise_floor(10) == THRESHOLD
    assert noise_floor(10**6) > noise_floor(4096) >= THRESHOLD


def test_plan_takes_the_atom_share_only_with_candidates() -> None:
    spec = EngineSpec()
    budget = Budget(epsilon=1.0, delta=1e-5)
    without = Plan.of(budget, spec, 5, 3)
    with_atoms = Plan.of(budget, spec, 5, 3, candidates=2)
    assert without.atoms == 0.0
    assert with_atoms.atoms == pytest.approx(spec.atom_share * with_atoms.total)
    assert with_atoms.rounds < without.rounds and with_atoms.fine == without.fine
    for plan in (without, with_atoms):
        spent = plan.fine + plan.atoms + plan.oneway + plan.rounds + plan.tree + plan.relations
        assert spent + plan.pe == pytest.approx(plan.total)


def test_a_rule_at_an_atom_off_the_fine_cells_is_kept_without_public_data() -> None:
    """``y`` is 1 exactly at tax 0.09 (30% of the rows): the atom is found by the
    release, gets a bin of its own, and the output keeps it and its rule."""
    rng = np.random.default_rng(0)
    n = 3000
    at = rng.random(n) < 0.3
    tax = np.where(at, 0.09, np.round(rng.uniform(0.2, 2.5, n), 3))
    frame = pd.DataFrame({"tax": tax, "age": rng.integers(20, 70, n), "y": np.where(at, "1", "0")})
    spec = {"bins": 10, "rounds": 6, "round_iters": 30, "final_iters": 60, "pe_share": 0.0}
    result = fit_engine(
        FrameSource(frame, SCHEMA), SCHEMA, Budget(epsilon=2.0, delta=1e-5), spec,
        noise=SeededNoise(3), rng=np.random.default_rng(1),
    )  # fmt: skip
    assert result.ledger.to_dict()["engine"]["released_atoms"]["tax"][0] == 0.09
    out = result.sample(3000, np.random.default_rng(2))
    hit = np.isclose(out["tax"].to_numpy(dtype=float), 0.09)
    assert abs(hit.mean() - 0.3) < 0.05
    assert (out.loc[hit, "y"] == "1").mean() > 0.9
    assert (out.loc[~hit, "y"] == "0").mean() > 0.9


def test_a_column_of_seven_values_keeps_all_seven_without_public_data() -> None:
    """Seven values on a tenth grid, 6-33% of the rows each (fair's years married):
    every one is found and decodes to itself at about its share, where a quarter of
    the bins (five atoms) lost two of them."""
    values = np.array([0.5, 2.5, 6.0, 9.0, 13.0, 16.5, 23.0])
    shares = np.array([0.06, 0.33, 0.17, 0.1, 0.08, 0.13, 0.13])
    years = NumericColumn("years", 0.0, 26.0, decimals=1)
    schema = Schema((years, CategoricalColumn("y", ("0", "1"))), label="y")
    rng = np.random.default_rng(0)
    column = rng.choice(values, size=6000, p=shares / shares.sum())
    frame = pd.DataFrame({"years": column, "y": np.where(column > 8, "1", "0")})
    spec = {"bins": 20, "rounds": 4, "round_iters": 30, "final_iters": 60, "pe_share": 0.0}
    result = fit_engine(
        FrameSource(frame, schema), schema, Budget(epsilon=2.0, delta=1e-5), spec,
        noise=SeededNoise(4), rng=np.random.default_rng(1),
    )  # fmt: skip
    out = result.sample(6000, np.random.default_rng(2))["years"].to_numpy(dtype=float)
    for value, share in zip(values, shares / shares.sum(), strict=True):
        assert abs(np.isclose(out, value).mean() - share) < 0.03, value
