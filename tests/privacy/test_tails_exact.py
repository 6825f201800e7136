"""The end bins' inward decoding (:mod:`dpevolve.engine.tails`) in whole coupled runs.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must end in the same decoding: which
end bins decode inward, and as which bin, is post-processing of the model and the
released fine histograms. The table is built so that a slip shows: a column whose
equal-width bins stay (its values spread over the declared range, no bin crowded),
with an empty bin below its top one, and the moving record alone in that top bin on
``D``: a span read from the private maximum would keep the top bin on ``D`` and fold
it inward on ``D'``.
"""

from __future__ import annotations

import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.privacy import Budget

from .exact import Case

SCHEMA = Schema(
    (
        NumericColumn("w", 0, 63, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=8, fine_cells=64, rounds=1, pe_share=0.0)
BUDGET = Budget(rho=4.0)


#: (record of D, record of D', on_invalid of D'): the lone top row moved into the data,
#: and replaced by a row the schema refuses, dropped.
PAIRS = [((63, "1"), (20, "1"), "error"), ((63, "1"), (99, "1"), "drop")]
#: Forty-eight rows, one at each of 0..47: six bins of eight, the seventh empty.
CASE = Case(SCHEMA, SPEC, BUDGET, [(w, str(w % 2)) for w in range(48)], PAIRS)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_inward_decoding_is_post_processing(pair) -> None:
    assert CASE.violations(pair) == []
