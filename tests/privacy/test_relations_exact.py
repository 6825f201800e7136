"""The relations phase (:mod:`dpevolve.engine.relations`) under the coupled audit.

Whole engine runs on the neighbouring tables of ``test_engine_exact`` with the phase
made to run (two quantile groups of four bins: coarser than the fine pair): every
relation pick and coarse release is paid for by its ledger event, and its grouping is
a function of the released values alone. A mutant that cuts the groups at the exact
1-way counts instead of the released ones is caught (``test_mutants.py``), and so is one
whose closing picks (three numbers: the triangle the joining picks leave open) draw
without charging or recording their draws.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineResult, EngineSpec, fit_engine, loop, tree
from dpevolve.engine.measure import release
from dpevolve.engine.relations import relation_queries
from dpevolve.privacy import Budget
from dpevolve.privacy.events import ExponentialEvent
from dpevolve.privacy.noise import SeededNoise

from .exact import engine_violations
from .test_engine_exact import BUDGET, PAIRS, SCHEMA, SPEC, tables

RELATIONS = dataclasses.replace(SPEC, relation_groups=2)


def relations_audit(pairs=PAIRS) -> list[str]:
    out = []
    for here, there, on_invalid in pairs:
        found = engine_violations(SCHEMA, *tables(here, there), on_invalid, RELATIONS, BUDGET)
        out += [f"{here} -> {there} ({on_invalid}): {v}" for v in found]
    return out


def test_the_phase_runs_on_the_audited_tables() -> None:
    frame, _ = tables(*PAIRS[0][:2])
    result = fit_engine(
        FrameSource(frame, SCHEMA), SCHEMA, BUDGET, RELATIONS,
        noise=SeededNoise(1), rng=np.random.default_rng(5),
    )  # fmt: skip
    picked = [h for h in result.history if h.get("stage") == "relations"]
    assert len(picked) == 1 and picked[0]["clique"] == ("x", "z")
    events = result.ledger.to_dict()["events"]
    assert [e["kind"] for e in events if e.get("round") == picked[0]["round"]] == [
        "exponential",
        "gaussian",
    ]


def test_every_relation_release_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert relations_audit() == []


def exact_groups(mp: pytest.MonkeyPatch) -> None:
    """The mutant (``test_mutants.py``, caught by :func:`cut_audit`): groups cut at the
    exact 1-way counts (never released)."""
    exact: dict[tuple[str, ...], np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        if len(clique) == 1:
            exact[tuple(clique)] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    def leaked(domain, numeric, masses, bins, groups):
        return relation_queries(domain, numeric, {a: exact[(a,)] for a in numeric}, bins, groups)

    mp.setattr(loop, "release", spied)
    mp.setattr(loop, "relation_queries", leaked)


#: Two numbers on a declared range the bins keep (equal-width, 4 bins of 2): the moving
#: record takes x's median bin edge across the middle of its mass, so groups cut at the
#: exact counts differ between the neighbours (released counts, replayed, do not).
CUT = Schema(
    (
        NumericColumn("x", 0.0, 8.0),
        NumericColumn("z", 0.0, 8.0),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
CUT_SPEC = dataclasses.replace(RELATIONS, adaptive_bins="off", pe_share=0.0)


def cut_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """The neighbours: the moving record at x = 0.5 or 7.5 (see :data:`CUT`)."""
    rows = [(v + 0.5, v + 0.5, str(i % 2)) for i, v in enumerate([0, 1, 2, 3, 4, 5, 6, 7] * 3)]
    here = pd.DataFrame([*rows, (0.5, 0.5, "0")], columns=list(CUT.names))
    there = pd.DataFrame([*rows, (7.5, 0.5, "0")], columns=list(CUT.names))
    return here, there


def cut_audit(spec: EngineSpec = CUT_SPEC, budget: Budget = BUDGET) -> list[str]:
    """The coupled runs on the cut tables under ``spec`` (the relations phase's by
    default; the tree's and the label pairs' audits reuse the tables)."""
    return engine_violations(CUT, *cut_tables(), "error", spec, budget)


def cut_fit(spec: EngineSpec, budget: Budget = BUDGET, seed: int = 1) -> EngineResult:
    """One seeded run on the first of the cut tables."""
    here, _ = cut_tables()
    return fit_engine(
        FrameSource(here, CUT), CUT, budget, spec,
        noise=SeededNoise(seed), rng=np.random.default_rng(5),
    )  # fmt: skip


def test_the_cut_tables_pass_unmutated() -> None:
    assert cut_audit() == []


#: Three numbers, so that the phase closes a triangle after joining them (relation
#: width 2): the closing draw scores every pair against the model refitted to the
#: joining picks' releases.
TRIANGLE = Schema(
    (
        NumericColumn("x", 0, 63, integer=True),
        NumericColumn("z", 0, 31, integer=True),
        NumericColumn("w", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)

#: (record of D, record of D'): a row moved from the crowd to the far corner, and the
#: label flipped.
TRIANGLE_PAIRS = [((20, 10, 4, "0"), (63, 31, 15, "1")), ((20, 10, 4, "0"), (20, 10, 4, "1"))]


def triangle_tables(here, there) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(4)
    rows = []
    for x in range(20, 28):
        z = int(rng.integers(8, 13))
        rows += [(x, z, min(15, z // 2 + int(rng.integers(0, 3))), str(x % 2))] * 5
    cols = list(TRIANGLE.names)
    return pd.DataFrame([*rows, here], columns=cols), pd.DataFrame([*rows, there], columns=cols)


def triangle_audit(pairs=TRIANGLE_PAIRS) -> list[str]:
    out = []
    for here, there in pairs:
        found = engine_violations(
            TRIANGLE, *triangle_tables(here, there), "error", RELATIONS, BUDGET
        )
        out += [f"{here} -> {there}: {v}" for v in found]
    return out


def test_the_triangle_is_closed_on_the_audited_tables() -> None:
    frame, _ = triangle_tables(*TRIANGLE_PAIRS[0])
    result = fit_engine(
        FrameSource(frame, TRIANGLE), TRIANGLE, BUDGET, RELATIONS,
        noise=SeededNoise(1), rng=np.random.default_rng(5),
    )  # fmt: skip
    picked = [h["clique"] for h in result.history if h.get("stage") == "relations"]
    assert len(picked) == 3  # two joining the numbers, one closing the triangle


def test_every_closing_pick_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert triangle_audit() == []


def unrecorded_closing(mp: pytest.MonkeyPatch) -> None:
    """The mutant (``test_mutants.py``, caught by :func:`triangle_audit`): the closing
    picks' draws neither charged nor recorded (their releases are)."""
    original = tree.closing

    def closing(run, model, picks, chosen, round_, facts):
        charge, record = run.spend.charge, run.ledger.record

        def skip_charge(event):
            return None if isinstance(event, ExponentialEvent) else charge(event)

        def skip_record(event, **given):
            return None if isinstance(event, ExponentialEvent) else record(event, **given)

        mp.setattr(run.spend, "charge", skip_charge)
        mp.setattr(run.ledger, "record", skip_record)
        try:
            return original(run, model, picks, chosen, round_, facts)
        finally:
            mp.setattr(run.spend, "charge", charge)
            mp.setattr(run.ledger, "record", record)

    mp.setattr(tree, "closing", closing)
