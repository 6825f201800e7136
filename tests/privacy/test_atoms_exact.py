"""The atom release (:mod:`dpevolve.engine.atoms`) in whole coupled runs and on
adversarial neighbours.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must pay for every call, the atom
release included (its count vectors within ``sqrt(2)`` of each other, at the ledger's
sigma), and end in the same ledger, bins, decoding and rows: the atoms found, and the
cells and bins they get, are post-processing of the release. The moving record decides
whether a candidate holds the 5% an atom needs. Empirical: the release alone on those
neighbours, a Clopper-Pearson lower bound on epsilon never above its claim. A
declared atom (the schema's ``atoms``) is searched by no release: its count is the
fine histogram's, on the same neighbours and at the edge of its tolerance.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atoms import ATOMS, CandidateCounts, candidate_values, children
from dpevolve.engine.discretise import Discretiser, atom_tolerance
from dpevolve.engine.measure import FINE, count_marginals
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import Case, pair_audit, spread_rows

SCHEMA = Schema(
    (
        NumericColumn("tax", 0.0, 3.0, decimals=2),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=4, fine_cells=16, rounds=2, pe_share=0.0, atom_share=0.2)
BUDGET = Budget(rho=80.0)


def atom_case(schema: Schema, decimals: int, atom: float, pairs: list) -> Case:
    """Thirty-nine rows: ``atom`` holds one (the others in [1.5, 2.9] at ``decimals``);
    with the moving record two, 5% of the 40 rows (an atom by a hair)."""
    rows = spread_rows(lambda rng: round(float(rng.uniform(1.5, 2.9)), decimals), (atom, 3, "1"))
    return Case(schema, SPEC, BUDGET, rows, pairs)


#: (record of D, record of D', on_invalid of D'): the atom's third row moved to the
#: far end, an end point, a row off the candidates' grid dropped, one clipped.
PAIRS = [
    ((1.23, 5, "1"), (3.0, 15, "0"), "error"),
    ((0.0, 0, "0"), (1.23, 7, "1"), "error"),
    ((1.23, 5, "1"), (9.99, 5, "1"), "drop"),
    ((1.23, 5, "1"), (9.99, 5, "1"), "clip"),
]
CASE = atom_case(SCHEMA, 2, 1.23, PAIRS)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_atom_release_is_paid_for_and_the_rest_is_post_processing(pair) -> None:
    assert CASE.violations(pair) == []


def test_the_audit_bound_stays_below_the_claim() -> None:
    """The release of the atom's candidate count on the hardest pair: the event
    ``noisy count at 1.23 >= 2`` (threshold between the neighbours' counts)."""
    values = candidate_values(SCHEMA.columns[0], 16)
    query = CandidateCounts(SCHEMA, {"tax": values})
    at = int(np.flatnonzero(np.isclose(values, 1.23))[0])
    tables = CASE.tables(*PAIRS[0][:2])
    shift, audit = pair_audit(
        lambda t: query.counts(encode(t, SCHEMA)), tables, at, "atoms:tax", (21, 22)
    )
    assert shift <= math.sqrt(2)
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]  # the audit has power


#: A column of 30,001 values, too many for one level: its atom is found by zooming
#: (0.001 cells, then the values inside the kept one), two releases per run.
ZOOM = Schema(
    (
        NumericColumn("rate", 0.0, 3.0, decimals=4),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)

#: The atom's second row moved off it, to the next value (the same level-0 cell), and
#: to a row the schema refuses.
ZOOM_PAIRS = [
    ((1.2347, 5, "1"), (2.9, 15, "0"), "error"),
    ((1.2347, 5, "1"), (1.2348, 5, "1"), "error"),
    ((1.2347, 5, "1"), (9.99, 5, "1"), "drop"),
]
ZOOM_CASE = atom_case(ZOOM, 4, 1.2347, ZOOM_PAIRS)


@pytest.mark.parametrize("pair", ZOOM_PAIRS)
def test_every_zoom_level_is_paid_for_and_the_rest_is_post_processing(pair) -> None:
    assert ZOOM_CASE.violations(pair) == []


def test_the_zoom_audit_bound_stays_below_the_claim() -> None:
    """The last level (the values in the kept cell) on the pair that moves the atom's
    row to the next value: ``noisy count at 1.2347 >= 2``."""
    values = children(np.array([1.235]), 0.001, 1e-4)
    query = CandidateCounts(ZOOM, {"rate": values})
    at = int(np.flatnonzero(np.isclose(values, 1.2347))[0])
    tables = ZOOM_CASE.tables(*ZOOM_PAIRS[1][:2])
    shift, audit = pair_audit(
        lambda t: query.counts(encode(t, ZOOM)), tables, at, "atoms:rate", (23, 24)
    )
    assert shift == pytest.approx(math.sqrt(2))
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]


#: The zoom table with its atom declared, as ``schema infer`` writes a public table's
#: heavy value (``atoms: [1.2347]``): a cell of the fine partition, counted with the
#: column's fine histogram, while the ``atoms:`` release still searches the column.
DECLARED = Schema(
    (
        NumericColumn("rate", 0.0, 3.0, decimals=4, atoms=(1.2347,)),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
#: Off the column's grid, just short of and just past half a step from the atom (values
#: round to the grid before they are coded: the first is the atom, the second the next
#: value), and a hair from it (the float error of the encoding).
NEAR, PAST = 1.234749, 1.234751
HAIR = 1.2347 + 0.999 * atom_tolerance(DECLARED.columns[0])

#: The atom's second row moved off it (far, to the next value, to a hair from it, to
#: either side of half a step), a row the schema refuses dropped, one clipped.
DECLARED_PAIRS = [
    ((1.2347, 5, "1"), (2.9, 15, "0"), "error"),
    ((1.2347, 5, "1"), (1.2348, 5, "1"), "error"),
    ((1.2347, 5, "1"), (HAIR, 5, "0"), "error"),
    ((NEAR, 5, "1"), (PAST, 5, "0"), "error"),
    ((1.2347, 5, "1"), (9.99, 5, "1"), "drop"),
    ((1.2347, 5, "1"), (9.99, 5, "1"), "clip"),
]
DECLARED_CASE = atom_case(DECLARED, 4, 1.2347, DECLARED_PAIRS)


@pytest.mark.parametrize("pair", DECLARED_PAIRS)
def test_a_declared_atom_is_counted_by_the_paid_fine_histogram(pair) -> None:
    assert DECLARED_CASE.violations(pair) == []


def test_a_declared_atom_is_a_cell_of_its_own_beside_the_search() -> None:
    """The audits above have power: the declared atom is a cell of the fine partition,
    its rows (the atom's two) apart from their neighbours' (the value next to it is in
    another cell), and the search is released beside it."""
    here, _ = DECLARED_CASE.tables(*DECLARED_PAIRS[0][:2])
    result = fit_engine(
        FrameSource(here, DECLARED), DECLARED, BUDGET, SPEC,
        noise=SeededNoise(3), rng=np.random.default_rng(0),
    )  # fmt: skip
    labels = [e.label for e in result.ledger.events]
    assert [label for label in labels if label.startswith(ATOMS)]
    cells = result.discretiser.fine["rate"]
    assert 1.2347 in cells.lo[: cells.atoms].tolist()
    counts = fine_counts(here, result.discretiser)
    at = int(np.flatnonzero(cells.lo[: cells.atoms] == 1.2347)[0])
    assert counts[at] == 2


def fine_counts(table: pd.DataFrame, discretiser: Discretiser) -> np.ndarray:
    """The exact fine histogram of ``rate`` (private: what the engine releases)."""
    _, exact = count_marginals(FrameSource(table, DECLARED), discretiser, [], ["rate"])
    return exact["rate"]


def test_the_declared_atom_audit_bound_stays_below_the_claim() -> None:
    """The fine histogram of ``rate`` on the pair that moves the atom's row from just
    short of half a step from it to just past: ``noisy count at 1.2347 >= 2``."""
    discretiser = Discretiser(DECLARED, SPEC.bins, SPEC.fine_cells)
    cells = discretiser.fine["rate"]
    at = int(np.flatnonzero(cells.lo[: cells.atoms] == 1.2347)[0])
    tables = DECLARED_CASE.tables(*DECLARED_PAIRS[3][:2])
    shift, audit = pair_audit(
        lambda t: fine_counts(t, discretiser), tables, at, FINE + "rate", (25, 26)
    )
    assert shift == pytest.approx(math.sqrt(2))
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]
