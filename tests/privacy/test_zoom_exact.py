"""The zoom (:mod:`dpevolve.engine.zoom`) in whole coupled runs and on adversarial
neighbours.

A column declared on ``[0, 1000]`` whose forty values lie in ``[10, 31]``: its first
fine histogram (12 cells of 83.3) shows them in one cell, so it zooms, a second
histogram on 16 cells over ``[0, 250]`` released and charged. Exact (no sampling): runs
on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must pay for every call, the zoom
release included (its count vectors within ``sqrt(2)``, at the ledger's sigma), and end
in the same ledger, spans, bins, decoding and rows: the span is post-processing of the
first release. The moving record crosses a cell of the first histogram (it widens the
private range), or moves between two zoomed cells. Empirical: the zoom release alone on
the second pair, a Clopper-Pearson lower bound on epsilon never above its claim.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.zoom import ZOOMED
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import engine_violations, neighbour_tables, threshold_audit

SCHEMA = Schema(
    (
        NumericColumn("size", 0.0, 1000.0),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=4, fine_cells=16, rounds=2, pe_share=0.0, zoom_share=0.2)
BUDGET = Budget(rho=80.0)
#: The first zoom's span: the first histogram's cell [0, 83.3), widened, out to the
#: boundaries of the cells it meets.
SPAN = (0.0, 250.0, 16)


def base() -> list[tuple[float, int, str]]:
    """Thirty-nine rows in ``[10, 31]``."""
    rng = np.random.default_rng(6)
    return [
        (round(float(rng.uniform(10.0, 31.0)), 3), int(rng.integers(0, 16)), str(k % 2))
        for k in range(39)
    ]


#: (record of D, record of D', on_invalid of D'): a row far out (another cell of the
#: first histogram: the private range doubles) moved into the data; a row moved between
#: two zoomed cells; a row the schema refuses dropped.
PAIRS = [
    ((150.0, 5, "1"), (20.0, 5, "1"), "error"),
    ((12.0, 5, "1"), (29.0, 5, "0"), "error"),
    ((12.0, 5, "1"), (2000.0, 5, "1"), "drop"),
]


def tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    return neighbour_tables(SCHEMA, base(), here, there)


def test_the_column_zooms_and_the_release_is_in_the_ledger() -> None:
    """The case has power: the run zooms, and the zoom is charged and recorded."""
    from dpevolve.engine import fit_engine

    here, _ = tables(*PAIRS[1][:2])
    source = FrameSource(here, SCHEMA)
    result = fit_engine(
        source, SCHEMA, BUDGET, SPEC, noise=SeededNoise(3), rng=np.random.default_rng(0)
    )
    assert result.discretiser.zoom["size"][0] == SPAN
    labels = [e.label for e in result.ledger.events]
    assert labels.count(ZOOMED + "size") >= 1
    assert ZOOMED + "z" not in labels  # a grid column never zooms
    assert any(m.event.label == ZOOMED + "size" for m in result.measurements)


@pytest.mark.parametrize(("here", "there", "on_invalid"), PAIRS)
def test_the_zoom_is_paid_for_and_the_rest_is_post_processing(here, there, on_invalid) -> None:
    assert engine_violations(SCHEMA, *tables(here, there), on_invalid, SPEC, BUDGET) == []


def test_the_audit_bound_stays_below_the_claim() -> None:
    """The zoom release on the pair that moves a row from 12 to 29: the event ``noisy
    count of the zoomed cell holding 12 >= 2`` (over the rows of D' there, plus one)."""
    refined = Discretiser(SCHEMA, SPEC.bins, SPEC.fine_cells, zoom={"size": [SPAN]})
    here, there = tables(*PAIRS[1][:2])
    counts = []
    for table in (here, there):
        records = encode(table, SCHEMA)
        codes = refined.fine_codes(records, "size")
        counts.append(np.bincount(codes, minlength=refined.fine["size"].size))
    assert np.linalg.norm(counts[0] - counts[1]) == pytest.approx(math.sqrt(2))
    cells = refined.fine["size"]
    at = int(np.flatnonzero((cells.lo <= 12.0) & (cells.hi > 12.0) & (cells.hi > cells.lo))[0])
    # a cell holding one row less on D': shift both so the threshold 2 lies between
    shift = 2 - int(counts[1][at])
    shifted = (counts[0] + shift, counts[1] + shift)
    audit = threshold_audit(shifted, at, ZOOMED + "size", (31, 32))
    assert audit.bound <= audit.claim
    assert audit.hits[0] != audit.hits[1]  # the audit has power
