"""The label's pairs with the atom columns (:mod:`dpevolve.engine.atom_rules`) in whole
coupled runs and on adversarial neighbours.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must pay for every call, the pairs with
the label included (each a 2-way marginal within ``sqrt(2)`` of its neighbour's, at
the ledger's sigma), and end in the same ledger, bins, decoding and rows: which
columns are paired is post-processing of the released fine histograms. The moving
record decides whether a value holds the 5% an atom needs. Empirical: one pair's
release on those neighbours, a Clopper-Pearson lower bound on epsilon never above its
claim.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.engine.atom_rules import RULE
from dpevolve.engine.discretise import Discretiser
from dpevolve.privacy import Budget

from .exact import engine_violations, neighbour_tables, threshold_audit

SCHEMA = Schema(
    (
        NumericColumn("hours", 0, 12, integer=True),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=4, fine_cells=16, rounds=2, pe_share=0.0)
BUDGET = Budget(rho=80.0)


def base() -> list[tuple[int, int, str]]:
    """Thirty-nine rows: hours 0 holds one; with the moving record two, 5% of the 40
    rows (an atom, and its column paired with the label, by a hair)."""
    rng = np.random.default_rng(4)
    spread = [(int(rng.integers(3, 13)), int(rng.integers(0, 16)), "0") for _ in range(38)]
    return [*spread, (0, 3, "1")]


#: (record of D, record of D', on_invalid of D'): the atom's second row moved away,
#: its label flipped, a row off the range dropped, one clipped.
PAIRS = [
    ((0, 5, "1"), (12, 15, "0"), "error"),
    ((0, 5, "1"), (0, 5, "0"), "error"),
    ((0, 5, "1"), (99, 5, "1"), "drop"),
    ((7, 5, "1"), (99, 5, "0"), "clip"),
]


def tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    return neighbour_tables(SCHEMA, base(), here, there)


@pytest.mark.parametrize(("here", "there", "on_invalid"), PAIRS)
def test_the_pairs_with_the_label_are_paid_for_and_the_rest_is_post_processing(
    here, there, on_invalid
) -> None:
    assert engine_violations(SCHEMA, *tables(here, there), on_invalid, SPEC, BUDGET) == []


def test_the_audit_bound_stays_below_the_claim() -> None:
    """The release of hours x y on the hardest pair: the event ``noisy count at
    (hours 0, y 1) >= 2`` (threshold between the neighbours' counts)."""
    d = Discretiser(SCHEMA, bins=4, fine_cells=16)
    here, there = tables(*PAIRS[0][:2])

    def counts(frame: pd.DataFrame) -> np.ndarray:
        codes = d.codes(encode(frame, SCHEMA))
        flat = codes[:, 0] * 2 + codes[:, 2]
        return np.bincount(flat, minlength=8).astype(float)

    counts_d, counts_n = counts(here), counts(there)
    assert np.linalg.norm(counts_d - counts_n) <= math.sqrt(2)
    at = 1  # hours bin 0, y = 1
    audit = threshold_audit((counts_d, counts_n), at, RULE, (21, 22))
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]  # the audit has power
