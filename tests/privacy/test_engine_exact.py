"""Whole engine runs on neighbouring tables, coupled: every release paid for, and
everything else a function of the released values.

The run on ``D`` records its noise; the run on ``D'`` is handed the same noisy outputs
(:mod:`tests.privacy.exact`). Every call is then checked against the ledger event that
pays for it (the fine histograms, the 1-ways, each round's selection and marginal, the
PE stage's votes), and the two runs must end in the same shareable ledger, bins,
decoding weights, model and rows: a bin edge or a decoding weight computed from an
exact count, a release recorded as free, a draw at another scale than the ledger's all
show on one pair or another. The tables are built so that they do: the numeric
columns crowd a fraction of a loose declared range (the bins move), and the moving
record decides whether the cell at the edge of the crowd clears the bins' threshold.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import EngineSpec
from dpevolve.privacy import Budget

from .exact import engine_violations

SCHEMA = Schema(
    (
        NumericColumn("x", 0, 63, integer=True),
        NumericColumn("z", 0, 31, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=4, fine_cells=64, rounds=3, pe_rounds=1)
BUDGET = Budget(rho=80.0)


def base() -> list[tuple[int, int, str]]:
    """A crowd in x 20..27 and z 8..12; x = 20 holds just enough rows to count."""
    rng = np.random.default_rng(3)
    crowd = [(x, int(rng.integers(8, 13)), str(rng.integers(0, 2))) for x in range(21, 28)]
    return [row for row in crowd for _ in range(6)] + [(20, 10, "0")] * 2


#: (record of D, record of D', on_invalid of D'): the edge cell emptied towards the far
#: end of the range, a boundary value, the label flipped, an invalid record dropped,
#: one out of range clipped.
PAIRS = [
    ((20, 10, "0"), (63, 31, "1"), "error"),
    ((0, 0, "1"), (24, 10, "0"), "error"),
    ((20, 10, "0"), (20, 10, "1"), "error"),
    ((20, 10, "0"), (99, 10, "0"), "drop"),
    ((20, 10, "0"), (99, 10, "0"), "clip"),
]


def tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    rows = base()
    cols = list(SCHEMA.names)
    return pd.DataFrame([*rows, here], columns=cols), pd.DataFrame([*rows, there], columns=cols)


def engine_audit(pairs=PAIRS) -> list[str]:
    """:func:`~tests.privacy.exact.engine_violations` of every pair, each named."""
    out = []
    for here, there, on_invalid in pairs:
        found = engine_violations(SCHEMA, *tables(here, there), on_invalid, SPEC, BUDGET)
        out += [f"{here} -> {there} ({on_invalid}): {v}" for v in found]
    return out


def test_every_release_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert engine_audit() == []
