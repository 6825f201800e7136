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
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.engine.atoms import CandidateCounts, candidate_values, children
from dpevolve.privacy import Budget

from .exact import engine_violations, neighbour_tables, threshold_audit

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


def base() -> list[tuple[float, int, str]]:
    """Thirty-nine rows: 1.23 holds one; with the moving record two, 5% of the 40 rows
    (an atom by a hair)."""
    rng = np.random.default_rng(4)
    spread = [
        (round(float(rng.uniform(1.5, 2.9)), 2), int(rng.integers(0, 16)), "0") for _ in range(38)
    ]
    return [*spread, (1.23, 3, "1")]


#: (record of D, record of D', on_invalid of D'): the atom's third row moved to the
#: far end, an end point, a row off the candidates' grid dropped, one clipped.
PAIRS = [
    ((1.23, 5, "1"), (3.0, 15, "0"), "error"),
    ((0.0, 0, "0"), (1.23, 7, "1"), "error"),
    ((1.23, 5, "1"), (9.99, 5, "1"), "drop"),
    ((1.23, 5, "1"), (9.99, 5, "1"), "clip"),
]


def tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    return neighbour_tables(SCHEMA, base(), here, there)


@pytest.mark.parametrize(("here", "there", "on_invalid"), PAIRS)
def test_the_atom_release_is_paid_for_and_the_rest_is_post_processing(
    here, there, on_invalid
) -> None:
    assert engine_violations(SCHEMA, *tables(here, there), on_invalid, SPEC, BUDGET) == []


def test_the_audit_bound_stays_below_the_claim() -> None:
    """The release of the atom's candidate count on the hardest pair: the event
    ``noisy count at 1.23 >= 2`` (threshold between the neighbours' counts)."""
    values = candidate_values(SCHEMA.columns[0], 16)
    query = CandidateCounts(SCHEMA, {"tax": values})
    here, there = tables(*PAIRS[0][:2])
    counts_d = query.counts(encode(here, SCHEMA))
    counts_n = query.counts(encode(there, SCHEMA))
    assert np.linalg.norm(counts_d - counts_n) <= math.sqrt(2)
    at = int(np.flatnonzero(np.isclose(values, 1.23))[0])
    audit = threshold_audit((counts_d, counts_n), at, "atoms:tax", (21, 22))
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


def zoom_tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(4)
    rows = [
        (round(float(rng.uniform(1.5, 2.9)), 4), int(rng.integers(0, 16)), "0") for _ in range(38)
    ]
    rows.append((1.2347, 3, "1"))
    return neighbour_tables(ZOOM, rows, here, there)


@pytest.mark.parametrize(("here", "there", "on_invalid"), ZOOM_PAIRS)
def test_every_zoom_level_is_paid_for_and_the_rest_is_post_processing(
    here, there, on_invalid
) -> None:
    assert engine_violations(ZOOM, *zoom_tables(here, there), on_invalid, SPEC, BUDGET) == []


def test_the_zoom_audit_bound_stays_below_the_claim() -> None:
    """The last level (the values in the kept cell) on the pair that moves the atom's
    row to the next value: ``noisy count at 1.2347 >= 2``."""
    query = CandidateCounts(ZOOM, {"rate": children(np.array([1.235]), 0.001, 1e-4)})
    here, there = zoom_tables(*ZOOM_PAIRS[1][:2])
    counts_d = query.counts(encode(here, ZOOM))
    counts_n = query.counts(encode(there, ZOOM))
    assert np.linalg.norm(counts_d - counts_n) == pytest.approx(math.sqrt(2))
    values = children(np.array([1.235]), 0.001, 1e-4)
    at = int(np.flatnonzero(np.isclose(values, 1.2347))[0])
    audit = threshold_audit((counts_d, counts_n), at, "atoms:rate", (23, 24))
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]
