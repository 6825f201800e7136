"""The end bins' inward decoding (:mod:`dpevolve.engine.tails`) in whole coupled runs.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must end in the same decoding: which
end bins decode inward, and as which bin, is post-processing of the model and the
released fine histograms. The table is built so that a slip shows: a column whose
bins over the declared range stay (its values spread over it, no bin crowded; [0, 79]
in 8 bins is cut next to the multiples of 10), the moving record alone in the top bin on
``D`` and two rows in the bin below it (no gap).
The budget is large (rho 32): every release of the column combined gives the top bin a
noise scale of 0.3 (the 2-way with the label is the sharpest), its one row stands above
two of them, and :func:`~dpevolve.engine.tails.inward` leaves it; the 1-way's own scale
(1.05) is what :func:`~dpevolve.engine.tails.beyond_span` folds under, so only the span
decides. The rows end at 61 so that on ``D'`` the span (up to 62, plus a tenth of its
width) stops short of the top bin's lower edge (70.5): a span read from the private
maximum keeps the top bin on ``D`` and folds it inward on ``D'``. (At a smaller budget
``inward`` folds the lone row's bin on both sides, and the span goes unseen.)
"""

from __future__ import annotations

import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.privacy import Budget

from .exact import Case

SCHEMA = Schema(
    (
        NumericColumn("w", 0, 79, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=8, fine_cells=64, rounds=1, pe_share=0.0)
BUDGET = Budget(rho=32.0)


#: (record of D, record of D', on_invalid of D'): the lone top row moved into the data,
#: and replaced by a row the schema refuses, dropped.
PAIRS = [((79, "1"), (20, "1"), "error"), ((79, "1"), (99, "1"), "drop")]
#: Sixty-two rows, one at each of 0..61: six bins of ten, two rows in the seventh.
CASE = Case(SCHEMA, SPEC, BUDGET, [(w, str(w % 2)) for w in range(62)], PAIRS)


@pytest.mark.parametrize("pair", PAIRS)
def test_the_inward_decoding_is_post_processing(pair) -> None:
    assert CASE.violations(pair) == []


#: A known value (20, declared) shown or not by the fine histogram: its count is 2 on
#: ``D`` and 1 on ``D'``, about either side of the 2 noise scales (sigma 0.79) at which
#: :func:`~dpevolve.engine.tails.shown_values` names it, so a column's shown values read
#: from the exact counts differ between the runs, where the released ones (2.15 on both)
#: do not.
SHOWN_SCHEMA = Schema(
    (
        NumericColumn("w", 0, 79, integer=True, atoms=(20.0,)),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SHOWN_PAIRS = [((20, "1"), (50, "1"), "error")]
SHOWN_CASE = Case(SHOWN_SCHEMA, SPEC, BUDGET, [(w, str(w % 2)) for w in range(62)], SHOWN_PAIRS)


def test_the_shown_values_are_post_processing() -> None:
    assert SHOWN_CASE.violations() == []


#: The same table at a small budget (rho 0.25): only the first bin and the sixth stand
#: out, the bins between them and the one past them held by what the decoding weights
#: show beside them (:func:`~dpevolve.engine.cells.weighed_beside`). The lone top row
#: puts one row in the last bin on ``D`` and none on ``D'``: bins beside the held ones
#: read from the exact fine counts differ between the runs, where the weights (the
#: released histogram, smoothed) do not.
BESIDE_CASE = Case(SCHEMA, SPEC, Budget(rho=0.25), [(w, str(w % 2)) for w in range(62)], PAIRS)


def test_the_bins_held_beside_are_post_processing() -> None:
    assert BESIDE_CASE.violations() == []


#: The end bin's reach (:func:`~dpevolve.engine.reach.end_reach`): rows at 0..44, two at
#: 52 and 55, three in the bin next to the top one ([60.66, 69.12): 63, 66 and the moving
#: record's 64 on ``D``) and one in it (75), whose fine cell stands under the decoding
#: floor while the bin's count, every release combined, stands out: its rows reach out
#: from 69.12 at the density of the bin next to it. Moved into the body on ``D'``, the
#: moving record takes a third of that bin's rows: a density read from the exact counts
#: puts the reach's foot elsewhere on each side, where the released (coupled) counts
#: do not.
REACH_PAIRS = [((64, "1"), (20, "1"), "error")]
REACH_CASE = Case(
    SCHEMA,
    SPEC,
    BUDGET,
    [(w, str(w % 2)) for w in range(45)] + [(52, "0"), (55, "1"), (63, "0"), (66, "1"), (75, "0")],
    REACH_PAIRS,
)


def test_the_end_bins_reach_is_post_processing() -> None:
    assert REACH_CASE.violations() == []
