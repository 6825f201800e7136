"""A faint column decoded missing (:func:`dpevolve.engine.counts.faint`) in whole
coupled runs.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must decode alike: whether a nullable
column's present rows stand out of the noise is read from its missing cell's released
count, post-processing. The table is built so that a slip shows: 41 rows, a column
present in 4 shared rows and in the moving record on ``D`` (missing on ``D'``), the
rest missing. At rho 2 the missing cell's count across the releases has noise scale
1.12, so the bar of 4 scales (4.48) lies between the exact present rows of ``D`` (5)
and of ``D'`` (4): read from the exact count, the column keeps its values on ``D``
and decodes missing on ``D'``; read from the released count, it decodes alike on
both. The values lie under the noise on both (no bin stands out).
"""

from __future__ import annotations

import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.privacy import Budget

from .exact import Case

SCHEMA = Schema(
    (
        NumericColumn("w", 0, 15, integer=True, nullable=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=8, fine_cells=16, rounds=1, pe_share=0.0)
BUDGET = Budget(rho=2.0)

#: (record of D, record of D', on_invalid of D'): the moving record's value made missing.
PAIRS = [((3, "1"), (None, "1"), "error")]
#: Four present rows (2 to 5) and 36 missing ones.
PRESENT = [(2, "0"), (3, "1"), (4, "0"), (5, "1")]
CASE = Case(SCHEMA, SPEC, BUDGET, PRESENT + [(None, str(i % 2)) for i in range(36)], PAIRS)


@pytest.mark.parametrize("pair", PAIRS)
def test_a_faint_column_is_read_from_released_counts(pair) -> None:
    assert CASE.violations(pair) == []
