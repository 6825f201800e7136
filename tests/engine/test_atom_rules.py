"""The label's pairs with the atom columns (:mod:`dpevolve.engine.atom_rules`): which
columns, the charge against the formula, and a rule at an atom kept."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atom_rules import (
    MOST_COLUMNS,
    RESOLVE,
    RULE,
    RULE_SHARE,
    atom_columns,
    release_atom_rules,
)
from dpevolve.engine.atoms import atom_candidates
from dpevolve.engine.bins import THRESHOLD
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import sigma_for
from dpevolve.engine.plan import Plan
from dpevolve.engine.zoom import zoomable
from dpevolve.measurements import HistogramQuery, MarginalQuery, Measurement
from dpevolve.privacy import Budget
from dpevolve.privacy.events import GaussianEvent
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("hours", 0, 60, integer=True),
        NumericColumn("spend", 0.0, 500.0),
        NumericColumn("age", 18, 90, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)


def fine(discretiser: Discretiser, name: str, counts: dict[float, float], sigma: float):
    cells = discretiser.fine[name]
    noisy = np.zeros(cells.size)
    for value, count in counts.items():
        noisy[int(np.flatnonzero(np.isclose(cells.lo[: cells.atoms], value))[0])] = count
    event = GaussianEvent(sigma=sigma, sensitivity=math.sqrt(2), label="fine:" + name)
    return Measurement(HistogramQuery(name, cells.size), noisy, sigma, event)


def test_the_columns_are_those_with_a_released_atom_largest_first() -> None:
    d = Discretiser(SCHEMA, bins=10, fine_cells=128)
    n, sigma = 1000, 5.0
    released = {
        "hours": fine(d, "hours", {40.0: 300.0, 41.0: 10.0}, sigma),
        "spend": fine(d, "spend", {0.0: 500.0}, sigma),
        "age": fine(d, "age", {30.0: 49.0, 31.0: 49.0}, sigma),  # below 5% of n
    }
    assert atom_columns(d, released, n) == ["spend", "hours"]
    # a count the noise could give is no atom, whatever n
    assert atom_columns(d, released, 100) == ["spend", "hours", "age"]
    quiet = {"hours": fine(d, "hours", {40.0: THRESHOLD * 50.0}, 50.0)}
    assert atom_columns(d, quiet, 10) == []


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0.0, 2000.0), min_size=3, max_size=3), st.integers(100, 5000))
def test_an_atom_column_holds_a_cell_of_the_share_above_the_noise(
    counts: list[float], n: int
) -> None:
    d = Discretiser(SCHEMA, bins=10, fine_cells=128)
    sigma = 3.0
    names = ["hours", "spend", "age"]
    values = [20.0, 0.0, 50.0]
    released = {a: fine(d, a, {v: c}, sigma) for a, v, c in zip(names, values, counts, strict=True)}
    picked = atom_columns(d, released, n)
    heavy = [
        a
        for a, c in zip(names, counts, strict=True)
        if c > THRESHOLD * sigma and c >= ATOM_SHARE * n
    ]
    assert sorted(picked) == sorted(heavy)
    order = [counts[names.index(a)] for a in picked]
    assert order == sorted(order, reverse=True)


class Recorder:
    def __init__(self) -> None:
        self.discretiser = Discretiser(SCHEMA, bins=10, fine_cells=128)
        self.calls: list[tuple[MarginalQuery, float, int, str]] = []

    def measure(self, query: MarginalQuery, sigma: float, round_: int, label: str) -> None:
        self.calls.append((query, sigma, round_, label))


def test_each_pair_gets_an_equal_share_at_the_gaussian_formula() -> None:
    run, rho = Recorder(), 0.02
    assert release_atom_rules(run, ["spend", "hours"], rho) == ["spend", "hours"]
    sigmas = {call[1] for call in run.calls}
    (sigma,) = sigmas
    assert sigma == pytest.approx(math.sqrt(2) / math.sqrt(2 * rho / 2))
    assert sum(1.0 / call[1] ** 2 for call in run.calls) == pytest.approx(rho)
    assert [c[0].clique for c in run.calls] == [("spend", "y"), ("hours", "y")]
    assert {c[3] for c in run.calls} == {RULE} and {c[2] for c in run.calls} == {0}
    assert release_atom_rules(Recorder(), [], rho) == []


def test_at_most_the_columns_with_the_largest_atoms() -> None:
    columns = [NumericColumn(f"x{k}", 0, 50, integer=True) for k in range(MOST_COLUMNS + 3)]
    schema = Schema((*columns, CategoricalColumn("y", ("0", "1"))), label="y")
    d = Discretiser(schema, bins=10, fine_cells=128)
    released = {c.name: fine(d, c.name, {7.0: 100.0 + k}, 1.0) for k, c in enumerate(columns)}
    picked = atom_columns(d, released, 1000)
    assert picked == [c.name for c in columns[::-1][:MOST_COLUMNS]]


def test_the_run_charges_the_share_records_it_and_keeps_the_rule() -> None:
    """``y`` is 1 exactly at 0 hours (20% of the rows); hours is a grid column whose
    atom shows in its fine histogram, so its pair with the label is measured."""
    rng = np.random.default_rng(0)
    n = 3000
    at = rng.random(n) < 0.2
    frame = pd.DataFrame(
        {
            "hours": np.where(at, 0, rng.integers(1, 61, n)),
            "spend": np.round(rng.uniform(0, 500, n), 2),
            "age": rng.integers(18, 91, n),
            "y": np.where(at, "1", "0"),
        }
    )
    spec = {"bins": 10, "rounds": 6, "round_iters": 30, "final_iters": 60, "pe_share": 0.0}
    budget = Budget(epsilon=1.0, delta=1e-5)
    result = fit_engine(
        FrameSource(frame, SCHEMA), SCHEMA, budget, spec, noise=SeededNoise(3),
        rng=np.random.default_rng(1),
    )  # fmt: skip
    ledger = result.ledger.to_dict()
    assert ledger["engine"]["atom_rules"][0] == "hours"
    rules = [e for e in ledger["events"] if e["mechanism"] == RULE]
    chosen = EngineSpec.from_any(spec)
    zooms = zoomable(Discretiser(SCHEMA, chosen.bins, chosen.fine_cells))
    plan = Plan.of(budget, chosen, 4, 3, len(atom_candidates(SCHEMA, chosen)), zooms)
    assert sum(e["rho"] for e in rules) == pytest.approx(RULE_SHARE * plan.rounds)
    listed = [m for m in result.measurements.marginals() if m.event.label == RULE]
    assert [m.clique for m in listed] == [tuple(e["clique"]) for e in rules]
    assert ledger["epsilon"] <= 1.0 + 1e-9
    out = result.sample(n, np.random.default_rng(2))
    zero = out["hours"].to_numpy(dtype=float) == 0
    assert abs(zero.mean() - 0.2) < 0.05
    assert (out.loc[zero, "y"] == "1").mean() > 0.9


def test_only_columns_whose_largest_atom_the_pair_resolves() -> None:
    d = Discretiser(SCHEMA, bins=10, fine_cells=128)
    released = {
        "hours": fine(d, "hours", {40.0: 3000.0}, 1.0),
        "spend": fine(d, "spend", {0.0: 600.0}, 1.0),
        "age": fine(d, "age", {30.0: 300.0}, 1.0),
    }
    assert atom_columns(d, released, 1000) == ["hours", "spend", "age"]
    for rho in (1e-3, 4e-3, 1e-2, 1.0):
        picked = atom_columns(d, released, 1000, rho)
        k = len(picked)
        assert picked == ["hours", "spend", "age"][:k]
        if k:  # each kept column's atom holds RESOLVE noise scales at rho / k
            assert 300.0 * (k == 3) + 600.0 * (k == 2) + 3000.0 * (k == 1) >= (
                RESOLVE * sigma_for(rho / k)
            )
        if k < 3:  # one more column would not
            nxt = [3000.0, 600.0, 300.0][k]
            assert nxt < RESOLVE * sigma_for(rho / (k + 1))
    assert atom_columns(d, released, 1000, 1.0) == ["hours", "spend", "age"]
    assert atom_columns(d, released, 1000, 1e-6) == []
