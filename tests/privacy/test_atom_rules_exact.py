"""The label's pairs with the atom columns (:mod:`dpevolve.engine.atom_rules`) in whole
coupled runs and on adversarial neighbours.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must pay for every call, the pairs with
the label included (each a 2-way marginal within ``sqrt(2)`` of its neighbour's, at
the ledger's sigma), and end in the same ledger, bins, decoding and rows: which
columns are paired is post-processing of the released fine histograms. On the small
tables the moving record decides whether a value holds the 5% an atom needs, but no
atom there holds the :data:`~dpevolve.engine.atom_rules.RESOLVE` noise scales a pair
needs: nothing is paired. On the wide ones (:data:`WIDE`, 400 rows) the atom at 0
holds 20 rows (5%) or 19 as the moving record says, and 31 where a pair is surely
released (its label flipped, a row dropped). Empirical: one pair's
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
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atom_rules import RULE
from dpevolve.engine.discretise import Discretiser
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import Case, pair_audit, spread_rows

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


#: (record of D, record of D', on_invalid of D'): the atom's second row moved away,
#: its label flipped, a row off the range dropped, one clipped.
PAIRS = [
    ((0, 5, "1"), (12, 15, "0"), "error"),
    ((0, 5, "1"), (0, 5, "0"), "error"),
    ((0, 5, "1"), (99, 5, "1"), "drop"),
    ((7, 5, "1"), (99, 5, "0"), "clip"),
]
#: Thirty-nine rows: hours 0 holds one; with the moving record two, 5% of the 40 rows
#: (an atom, and its column paired with the label, by a hair).
CASE = Case(
    SCHEMA, SPEC, BUDGET, spread_rows(lambda rng: int(rng.integers(3, 13)), (0, 3, "1")), PAIRS
)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_pairs_with_the_label_are_paid_for_and_the_rest_is_post_processing(pair) -> None:
    assert CASE.violations(pair) == []


#: Values 1..98 (not single cells of the fine partition: no atoms) and an atom at 0.
WIDE = Schema(
    (
        NumericColumn("hours", 0, 99, integer=True),
        NumericColumn("z", 0, 99, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)


def wide_case(at_zero: int, pairs: list) -> Case:
    """380 rows spread over 1..98 (seeded generator 4) and ``at_zero`` rows at hours 0."""
    rng = np.random.default_rng(4)
    spread = [
        (int(rng.integers(1, 99)), int(rng.integers(1, 99)), str(rng.integers(0, 2)))
        for _ in range(380)
    ]
    return Case(WIDE, SPEC, BUDGET, spread + [(0, z, "1") for z in range(at_zero)], pairs)


#: The atom's twentieth row moved away (an atom, or not); the label of one of 31 rows
#: at an atom flipped, and one dropped.
WIDE_CASES = [
    wide_case(19, [((0, 5, "1"), (50, 5, "1"), "error")]),
    wide_case(30, [((0, 5, "1"), (0, 5, "0"), "error"), ((0, 5, "1"), (150, 5, "1"), "drop")]),
]


@pytest.mark.parametrize(
    ("case", "pair"), [(case, pair) for case in WIDE_CASES for pair in case.pairs]
)
def test_the_pairs_of_a_resolved_atom_are_paid_for_and_the_rest_is_post_processing(
    case, pair
) -> None:
    assert case.violations(pair) == []


def test_a_resolved_atom_is_paired_with_the_label() -> None:
    """The release runs on the wide tables (the audits above have power)."""
    case = WIDE_CASES[1]
    here, _ = case.tables(*case.pairs[0][:2])
    result = fit_engine(
        FrameSource(here, WIDE), WIDE, BUDGET, SPEC,
        noise=SeededNoise(17), rng=np.random.default_rng(5),
    )  # fmt: skip
    assert [e.label for e in result.ledger.events].count(RULE) == 1


def test_the_audit_bound_stays_below_the_claim() -> None:
    """The release of hours x y on the hardest pair: the event ``noisy count at
    (hours 0, y 1) >= 2`` (threshold between the neighbours' counts)."""
    d = Discretiser(SCHEMA, bins=4, fine_cells=16)

    def counts(frame: pd.DataFrame) -> np.ndarray:
        codes = d.codes(encode(frame, SCHEMA))
        flat = codes[:, 0] * 2 + codes[:, 2]
        return np.bincount(flat, minlength=8).astype(float)

    at = 1  # hours bin 0, y = 1
    shift, audit = pair_audit(counts, CASE.tables(*PAIRS[0][:2]), at, RULE, (21, 22))
    assert shift <= math.sqrt(2)
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]  # the audit has power
