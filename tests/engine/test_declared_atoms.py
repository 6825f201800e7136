"""Atoms the schema declares (``atoms:``, as ``schema infer`` lists a public table's
heavy values): cells of the fine partition from the start, counted by the column's fine
histogram from the start; the atom release still searches the column for others
(docs/engine.md, Atoms)."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import synthesize
from dpevolve.engine.atoms import atom_candidates
from dpevolve.engine.bins import declared_atoms, known_weights, released_atoms, released_edges
from dpevolve.engine.counts import known_atom_bins
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.mass import KNOWN_THRESHOLD, THRESHOLD
from dpevolve.engine.measure import FINE, count_marginals, marginal_event, release
from dpevolve.engine.spec import EngineSpec
from dpevolve.privacy.noise import SeededNoise

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


def test_a_declared_value_is_heavy_from_fewer_noise_scales_than_a_candidate() -> None:
    """A released count between KNOWN_THRESHOLD and THRESHOLD noise scales, 7% of the
    rows: at a declared bracket the column's bins give it a bin of its own (injury's
    weekly benefits of 246.84 and 265.04, 6% of the rows each at 3.8 and 3.9 scales,
    had lost theirs and were drawn nowhere); at a candidate (the declared end 5.0,
    which nothing says the data hold) they do not; under KNOWN_THRESHOLD, neither."""
    cells = Discretiser(schema_with((BRACKETS[0],)), 20, 128).fine["income"]
    values = cells.lo[: cells.atoms].tolist()
    declared, end = values.index(BRACKETS[0]), values.index(5.0)
    assert not cells.candidates[declared] and cells.candidates[end]
    sigma, n = 40.0, 2000
    counts = np.zeros(cells.size)
    counts[[declared, end]] = 0.5 * (KNOWN_THRESHOLD + THRESHOLD) * sigma  # 140: 7%
    heavy = released_atoms(cells, known_weights(cells, counts, sigma), n)
    assert [value for value, _ in heavy] == [BRACKETS[0]]
    counts[[declared, end]] = (KNOWN_THRESHOLD - 0.1) * sigma
    assert released_atoms(cells, known_weights(cells, counts, sigma), n) == []


def test_a_declared_value_s_own_bin_holds_data_from_fewer_noise_scales() -> None:
    """Bins placed from a released fine histogram give every bracket a bin of its own;
    such a bin whose count, across the releases, stands KNOWN_THRESHOLD noise scales
    out holds data (it is never folded into the data's body: NIST's household weights
    of 0, 6% of the rows at 3.9 scales, had been); under that it does not, nor does a
    candidate's (the declared ends')."""
    schema = schema_with(tuple(BRACKETS))
    base = Discretiser(schema, 20, 128)
    frame = bracket_table(2400, 0)
    _, exact = count_marginals(FrameSource(frame, schema), base, [], ["income", "z"])
    event = marginal_event(5.0, FINE + "income")
    released = {"income": release(exact["income"], ("income",), event, SeededNoise(0))}
    edges = released_edges(base, released, len(frame))
    cells = Discretiser(schema, 20, 128, edges, nested=edges).fine["income"]
    per_bin = np.bincount(cells.coarse[: cells.values], minlength=20)
    values = cells.lo[: cells.atoms].tolist()
    own = {int(cells.coarse[values.index(v)]) for v in BRACKETS}
    assert all(per_bin[b] == 1 for b in own)
    sd = np.full(20, 30.0)
    count = np.full(20, (KNOWN_THRESHOLD + 0.1) * 30.0)
    assert known_atom_bins(cells, count, sd) == own
    assert known_atom_bins(cells, count - 6.0, sd) == set()


@settings(max_examples=60, deadline=None)
@given(
    counts=st.lists(st.floats(-300, 300), min_size=6, max_size=6),
    taken=st.sets(st.sampled_from(BRACKETS.tolist())),
)
def test_declared_atoms_are_the_untaken_ones_largest_release_first(counts, taken) -> None:
    schema = schema_with(tuple(BRACKETS))
    cells = Discretiser(schema, 20, 128).fine["income"]
    released = np.zeros(cells.size)
    index = [cells.lo[: cells.atoms].tolist().index(v) for v in BRACKETS]
    released[index] = counts
    out = declared_atoms(schema.columns[0], cells, released, taken)
    assert set(out) == set(BRACKETS.tolist()) - taken
    shown = [released[index[BRACKETS.tolist().index(v)]] for v in out]
    assert all(a >= b for a, b in pairwise(shown))


def test_declared_atoms_keep_their_bins_when_the_release_shows_nothing() -> None:
    """A release all noise (every cell at zero: no mass read, no atom shown) leaves the
    declared brackets their bins of their own, each holding that one value; undeclared,
    the bins stay equal-width (nothing placed)."""
    schema = schema_with((BRACKETS[0], BRACKETS[3]))
    base = Discretiser(schema, 20, 128)
    cells = base.fine["income"]
    event = marginal_event(40.0, FINE + "income")
    nothing = np.zeros(cells.size)
    released = {"income": release(nothing, ("income",), event, SeededNoise(0))}
    released["income"] = dataclasses.replace(released["income"], noisy=nothing)
    edges = released_edges(base, released, 2000)
    placed = Discretiser(schema, 20, 128, edges, nested=edges).fine["income"]
    values = placed.lo[: placed.atoms].tolist()
    per_bin = np.bincount(placed.coarse[: placed.values], minlength=20)
    for v in (BRACKETS[0], BRACKETS[3]):
        assert per_bin[int(placed.coarse[values.index(v)])] == 1
    plain = Discretiser(schema_with(()), 20, 128)
    empty = np.zeros(plain.fine["income"].size)
    unseen = dataclasses.replace(released["income"], noisy=empty)
    assert released_edges(plain, {"income": unseen}, 2000) == {}
