"""A declared atom's own bin holds data for the folds wherever the releases cannot rule
out the share it is declared to hold (engine/counts.py, engine/tails.py; docs/engine.md,
Atoms)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import seeded_fit, with_fillers

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.cells import FineCells
from dpevolve.engine.counts import declared_atom_bins
from dpevolve.engine.discretise import Discretiser, atom_tolerance
from dpevolve.engine.smoothing import DECODE_FLOOR


def _law() -> NumericColumn:
    return NumericColumn("law", 0.0, 1.0, decimals=3, atoms=(0.0, 1.0))


def _cells() -> tuple[NumericColumn, FineCells]:
    """The law column and its fine cells, each atom a bin of its own, the other edges
    on the fine partition (as placed from a release)."""
    column = _law()
    schema = Schema((column,))
    bounds = Discretiser(schema, bins=10).fine["law"].boundaries
    tolerance = atom_tolerance(column)
    edges = np.array([0.0, tolerance, *bounds[24:97:12], 1.0 - tolerance, 1.0])
    return column, Discretiser(schema, bins=10, edges={"law": edges}, nested={"law"}).fine["law"]


def test_a_declared_atom_the_releases_cannot_rule_out_keeps_its_bin() -> None:
    """A declared atom holds ATOM_SHARE of the rows: its own bin is kept unless its count
    stands DECODE_FLOOR scales under that share; an atom only a release found is no
    such prior."""
    column, cells = _cells()
    top = int(cells.coarse[list(cells.lo[: cells.atoms]).index(1.0)])
    count, sd = np.zeros(10), np.full(10, 45.0)
    count[top] = 81.0
    assert top in declared_atom_bins(cells, column.atoms, count, sd, 480.0)
    # 10,000 rows: 5% is 500, and 81 + 2 x 45 rules it out
    assert top not in declared_atom_bins(cells, column.atoms, count, sd, 10_000.0)
    border = ATOM_SHARE * 10_000.0 - DECODE_FLOOR * 45.0
    count[top] = border
    assert top in declared_atom_bins(cells, column.atoms, count, sd, 10_000.0)
    count[top] = border - 1.0
    assert top not in declared_atom_bins(cells, column.atoms, count, sd, 10_000.0)
    assert not declared_atom_bins(cells, (), count, sd, 480.0)


@settings(max_examples=100, deadline=None)
@given(
    count=st.lists(st.floats(-500.0, 5000.0), min_size=10, max_size=10).map(np.array),
    sd=st.lists(st.floats(1.0, 300.0), min_size=10, max_size=10).map(np.array),
    present=st.floats(0.0, 100_000.0),
)
def test_a_declared_atom_s_bin_is_kept_exactly_where_its_share_is_not_ruled_out(
    count: np.ndarray, sd: np.ndarray, present: float
) -> None:
    """Only the declared atoms' own bins (the first and the last), each where its count
    and DECODE_FLOOR noise scales reach ATOM_SHARE of the present rows; more rows
    counted never drop a bin."""
    column, cells = _cells()
    kept = declared_atom_bins(cells, column.atoms, count, sd, present)
    assert kept == {b for b in (0, 9) if count[b] + DECODE_FLOOR * sd[b] >= ATOM_SHARE * present}
    assert kept <= declared_atom_bins(cells, column.atoms, count + 1.0, sd, present)


def _laws(n: int, seed: int) -> tuple[pd.DataFrame, Schema]:
    """A small table of state laws (driving's shape): the share of a year a law was in
    force (0 in 40% of the rows, 1 in 56%, a fraction in 4%; 0 and 1 declared atoms),
    and thirty other numbers that spread the budget."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, n, p=[0.40, 0.56, 0.04])
    law = np.where(kind == 0, 0.0, np.where(kind == 1, 1.0, rng.uniform(0.0, 1.0, n).round(3)))
    frame = pd.DataFrame({"law": law})
    return with_fillers(frame, [_law()], 30, "urban", rng)


def test_a_small_table_keeps_both_values_of_a_law_in_force_or_not() -> None:
    """On 480 rows with 31 numbers, each release of the law's column is noise of the
    order of its counts: on this seed the nine bins below 1 (0's own among them),
    released at 200 +- 176 rows together, read as noise and folded into 1's bin, every
    row drawn at 1 (0 in 36% of the rows). 1's bin shows 301 +- 54 of the 480: the rest
    lie below, and both values stay."""
    frame, schema = _laws(480, 4)
    result = seeded_fit(frame, schema, noise_seed=7104, seed=4)
    out = result.released().sample(480, np.random.default_rng(4))["law"].to_numpy(float)
    assert np.mean(out == 0.0) >= 0.05
    assert np.mean(out == 1.0) >= 0.05
