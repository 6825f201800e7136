"""The atom release (:mod:`dpevolve.engine.atoms`) in whole coupled runs and on
adversarial neighbours.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must pay for every call, the atom
release included (its count vectors within ``sqrt(2)`` of each other, at the ledger's
sigma), and end in the same ledger, bins, decoding and rows: the atoms found, and the
cells and bins they get, are post-processing of the release. The moving record decides
whether a candidate holds the 5% an atom needs. Empirical: the release alone on those
neighbours, a Clopper-Pearson lower bound on epsilon never above its claim.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.engine.atoms import CandidateCounts, candidate_values, children
from dpevolve.privacy import Budget

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
