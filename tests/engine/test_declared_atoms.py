"""Atoms the schema declares (``atoms:``, as ``schema infer`` lists a public table's
heavy values): cells of the fine partition from the start, counted by the column's fine
histogram from the start; the atom release still searches the column for others
(docs/engine.md, Atoms)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import synthesize
from dpevolve.engine.atoms import atom_candidates
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.spec import EngineSpec

#: Log family income reported in brackets: each row holds a bracket's midpoint (the
#: shares of the suite's ``catholic``), written to 6 decimals.
BRACKETS = np.array([9.433484, 9.769957, 10.02127, 10.30895, 10.65726, 11.04292])
SHARES = np.array([0.10, 0.10, 0.15, 0.25, 0.25, 0.15])
INCOME = NumericColumn("income", 5.0, 13.0, decimals=6)


def bracket_table(n: int, seed: int) -> pd.DataFrame:
    """Incomes at the brackets, a label more likely the higher the bracket (0.1 to 0.9),
    and a second column unrelated to either."""
    rng = np.random.default_rng(seed)
    at = rng.choice(BRACKETS.size, n, p=SHARES)
    high = rng.random(n) < np.linspace(0.1, 0.9, BRACKETS.size)[at]
    return pd.DataFrame(
        {"income": BRACKETS[at], "z": rng.integers(0, 40, n), "y": np.where(high, "1", "0")}
    )


def schema_with(atoms: tuple[float, ...]) -> Schema:
    return Schema(
        (
            dataclasses.replace(INCOME, atoms=atoms),
            NumericColumn("z", 0, 40, integer=True),
            CategoricalColumn("y", ("0", "1")),
        ),
        label="y",
    )


def test_a_declared_atom_is_a_fine_cell_and_the_search_goes_on() -> None:
    declared = schema_with(tuple(BRACKETS))
    cells = Discretiser(declared, 20, 128).fine["income"]
    assert set(BRACKETS) <= set(cells.lo[: cells.atoms].tolist())
    plain = Discretiser(schema_with(()), 20, 128).fine["income"]
    assert not set(BRACKETS) & set(plain.lo[: plain.atoms].tolist())
    spec = EngineSpec()
    assert np.array_equal(
        atom_candidates(declared, spec)["income"], atom_candidates(schema_with(()), spec)["income"]
    )


def test_declared_brackets_are_drawn_as_themselves_with_their_rule() -> None:
    """At epsilon 1 on 2,400 rows the search for the brackets (3% of the budget, split
    over its zoom levels) misses two or more of the six on this noise draw; declared, 95%
    of the synthetic incomes are brackets, each at its share within 0.05, and the label's
    rate at a bracket is within 0.05 of the real one on average over the rows (a bracket
    of a tenth of the rows alone errs by up to 0.17 over noise draws 0-5)."""
    frame = bracket_table(2400, 0)
    searched, out = (
        synthesize(frame, schema_with(atoms), epsilon=1.0, delta=1e-5, seed=0, noise_seed=7)
        for atoms in ((), tuple(BRACKETS))
    )
    assert sum(not (searched["income"] == value).any() for value in BRACKETS) >= 2
    assert out["income"].isin(BRACKETS).mean() >= 0.95  # the rest: noise in other cells
    rule_error = 0.0
    for value, share in zip(BRACKETS, SHARES, strict=True):
        rows = out["income"] == value
        assert abs(rows.mean() - share) < 0.05
        real = (frame.loc[frame["income"] == value, "y"] == "1").mean()
        rule_error += share * abs((out.loc[rows, "y"] == "1").mean() - real)
    assert rule_error < 0.05
