"""The engine's PE stage (engine/refine.py): its budget, its event, its rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.nearest import nearest
from dpevolve.engine.plan import Plan
from dpevolve.engine.refine import (
    VOTE_LABEL,
    Correction,
    Refinement,
    cell_ratio,
    column_cells,
    rake,
    resample,
)
from dpevolve.engine.spec import RECORDS_PER_CANDIDATE
from dpevolve.errors import InputError
from dpevolve.pe.distance import make_distance
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.pe.votes import HardVote
from dpevolve.privacy import Budget, GaussianEvent, zcdp_budget
from dpevolve.privacy.audit import cks_epsilon
from dpevolve.privacy.noise import SeededNoise
from dpevolve.reporting.sections import engine_summary

SCHEMA = Schema(
    (
        NumericColumn("x", 0.0, 1.0),
        CategoricalColumn("c", ("a", "b")),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)


def _table(n: int, seed: int) -> pd.DataFrame:
    """``y`` is ``c`` xor ``x > 0.5``: structure the 1-ways alone do not carry."""
    rng = np.random.default_rng(seed)
    x = rng.random(n)
    c = rng.choice(["a", "b"], n)
    y = np.where((x > 0.5) ^ (c == "b"), "yes", "no")
    return pd.DataFrame({"x": x, "c": c, "y": y})


def _fit(spec: EngineSpec, budget: Budget, standin, n: int = 300, seed: int = 0):
    return fit_engine(
        FrameSource(_table(n, seed), SCHEMA),
        SCHEMA,
        budget,
        spec,
        noise=SeededNoise(seed),
        rng=np.random.default_rng(seed),
        **standin,
    )


# ``pe_min_numeric: 0``: the stage runs on this table of one numeric column in three;
# 30 candidates: the 300 rows of :func:`_fit` hold 10 records for each.
BASE = {
    "bins": 4,
    "fine_cells": 8,
    "rounds": 2,
    "pe_candidates": 30,
    "pe_pool": 3,
    "pe_min_numeric": 0.0,
}


@settings(max_examples=6, deadline=None)
@given(
    share=st.floats(0.05, 0.6),  # past 0.64 the 1-ways' most share leaves no rounds
    rounds=st.integers(1, 3),
    budget=st.sampled_from([Budget(epsilon=1.0, delta=1e-5), Budget(rho=0.3)]),
)
def test_the_stage_spends_its_share_and_the_run_never_exceeds_the_budget(
    share, rounds, budget
) -> None:
    from tests.engine.conftest import joint_factory, joint_size

    spec = EngineSpec(pe_share=share, pe_rounds=rounds, **BASE)
    result = _fit(spec, budget, {"estimator": joint_factory, "model_size": joint_size})
    ledger = result.ledger.to_dict()
    votes = [e for e in ledger["events"] if e.get("stage") == VOTE_LABEL]
    assert len(votes) == rounds
    plan = Plan.of(budget, spec, 3, 1)
    assert sum(e["rho"] for e in votes) == pytest.approx(plan.pe, rel=1e-9)
    assert plan.pe == pytest.approx(share * plan.total)
    total = sum(e.rho for e in result.events)
    assert total <= zcdp_budget(budget)
    assert total == pytest.approx(zcdp_budget(budget), rel=1e-8)
    if budget.epsilon is not None:
        assert ledger["epsilon"] <= 1.0
        assert ledger["epsilon"] == pytest.approx(cks_epsilon(total, 1e-5), rel=1e-6)
    # the votes come after every marginal round
    rounds_of = [e["round"] for e in votes]
    assert min(rounds_of) > len(result.history)


def test_the_vote_event_is_pes_gaussian_release_at_the_hard_votes_sensitivity(standin) -> None:
    spec = EngineSpec(pe_share=0.3, pe_rounds=2, **BASE)
    result = _fit(spec, Budget(rho=0.2), standin)
    entries = [
        (e, d)
        for e, d in zip(result.events, result.ledger.to_dict()["events"], strict=True)
        if d.get("stage") == VOTE_LABEL
    ]
    assert len(entries) == 2
    for event, entry in entries:
        assert isinstance(event, GaussianEvent) and event.discrete
        assert event.sensitivity == HardVote().l2_sensitivity(1.0) == math.sqrt(2.0)
        same = GaussianRelease(event.sigma, math.sqrt(2.0), noise=SeededNoise(0)).event()
        assert event == same  # the audited PE release, not a new mechanism
        assert event.rho == pytest.approx(0.3 * Plan.of(Budget(rho=0.2), spec, 3, 1).total / 2)
        assert entry["population"] == BASE["pe_candidates"]
        assert "noisy" not in entry and "ratio" not in entry
    summary = engine_summary(result.ledger.to_dict()["events"])
    assert "reweighted by 2 rounds of PE's nearest-candidate votes" in summary


def test_no_share_no_stage(standin) -> None:
    result = _fit(EngineSpec(**BASE, pe_share=0.0), Budget(rho=0.2), standin)
    assert result.refinement is None
    assert not any(d.get("stage") == VOTE_LABEL for d in result.ledger.to_dict()["events"])
    with pytest.raises(InputError, match="pe_share"):
        EngineSpec(pe_share=0.95)
    with pytest.raises(InputError, match="pe_rounds"):
        EngineSpec(pe_rounds=0)


def test_the_stage_learns_structure_the_model_misses(standin) -> None:
    """With 1-ways only, the model is a product; the votes bring back the xor."""
    spec = EngineSpec(bins=2, fine_cells=8, rounds=1, max_order=2, coarse_groups=(),
                      pe_share=0.5, pe_candidates=60, pe_pool=6,
                      pe_min_numeric=0.0)  # fmt: skip
    table = _table(2000, 1)

    def agreement(frame: pd.DataFrame) -> float:
        truth = (frame["x"] > 0.5) ^ (frame["c"] == "b")
        return float(((frame["y"] == "yes") == truth).mean())

    scores = []
    for share in (0.0, 0.5):
        result = fit_engine(
            FrameSource(table, SCHEMA), SCHEMA, Budget(rho=2.0),
            EngineSpec(**{**spec.to_dict(), "pe_share": share}),
            noise=SeededNoise(1), rng=np.random.default_rng(1), **standin,
        )  # fmt: skip
        scores.append(agreement(result.sample(4000, np.random.default_rng(2))))
    assert scores[1] > scores[0] + 0.1


def test_rows_are_fresh_model_draws_reweighted() -> None:
    rng = np.random.default_rng(0)
    base_rows = _table(5000, 3)

    def base(count: int, gen: np.random.Generator) -> pd.DataFrame:
        return base_rows.sample(count, replace=True, random_state=gen).reset_index(drop=True)

    candidates = encode(pd.DataFrame({"x": [0.1, 0.9], "c": ["a", "a"], "y": ["no", "no"]}), SCHEMA)
    up = Refinement(SCHEMA, (Correction(candidates, np.array([4.0, 1.0])),), pool=4)
    out = resample(base, up, 3000, rng)
    assert len(out) == 3000 and list(out.columns) == ["x", "c", "y"]
    plain = base(3000, np.random.default_rng(1))
    # the low-x cell weighs 4x: its share of rows rises from ~1/2 towards 4/5
    assert (out["x"] < 0.5).mean() > (plain["x"] < 0.5).mean() + 0.15
    # no candidate copied: the output rows are the base's draws
    assert not np.isin(out["x"].to_numpy(), [0.1, 0.9]).any()
    assert resample(base, Refinement(SCHEMA, (), 4), 10, rng).shape == (10, 3)


def test_nearest_matches_the_votes_distance_where_no_tie() -> None:
    rng = np.random.default_rng(4)
    rows = encode(_table(500, 5), SCHEMA)
    cands = encode(_table(30, 6), SCHEMA)
    distance = make_distance("tabpe", SCHEMA)
    exact = distance.pairwise(rows, cands)
    ordered = np.sort(exact, axis=1)
    clear = ordered[:, 1] - ordered[:, 0] > 1e-9
    assert (nearest(rows, cands, distance)[clear] == np.argmin(exact, axis=1)[clear]).all()
    nullable = Schema((NumericColumn("x", 0.0, 1.0, nullable=True), *SCHEMA.columns[1:]))
    with_nan = Records(np.where(rng.random((500, 1)) < 0.1, np.nan, rows.numeric), rows.codes)
    other = make_distance("tabpe", nullable)
    assert (
        nearest(with_nan, cands, other) == np.argmin(other.pairwise(with_nan, cands), axis=1)
    ).all()


def test_the_refined_model_samples_with_the_synthesizer_facade(standin) -> None:
    result = _fit(EngineSpec(pe_share=0.2, **BASE), Budget(rho=0.2), standin)
    model = result.released()
    assert model.refinement is result.refinement
    out = model.sample(None, np.random.default_rng(0))
    assert len(out) == 300 and out.notna().all().all()


def test_the_ratio_shrinks_residuals_the_noise_explains() -> None:
    rng = np.random.default_rng(7)
    expected = np.full(2000, 30.0)
    sigma = 10.0
    null = expected + rng.normal(0.0, np.sqrt(sigma**2 + expected))
    flat = cell_ratio(null, expected, sigma)
    assert np.abs(flat - 1.0).max() < 0.2  # the votes cannot fault the model: ratio ~ 1
    shifted = expected * np.where(np.arange(2000) % 2 == 0, 3.0, 0.2)
    strong = cell_ratio(shifted + rng.normal(0.0, sigma, 2000), expected, sigma)
    assert np.median(strong[::2]) > 2.0 and np.median(strong[1::2]) < 0.5
    assert (strong > 0).all() and (cell_ratio(np.zeros(3), np.zeros(3), 1.0) == 1.0).all()


def test_systematic_resampling_keeps_each_draws_share_within_one_row() -> None:
    rows = 400
    pool = 4
    base_rows = _table(rows * pool, 8)

    def base(count: int, gen: np.random.Generator) -> pd.DataFrame:
        assert count == rows * pool
        return base_rows.copy()

    weights = np.where(base_rows["x"] < 0.5, 3.0, 1.0)
    cands = encode(pd.DataFrame({"x": [0.25, 0.75], "c": ["a", "a"], "y": ["no", "no"]}), SCHEMA)
    cells = nearest(encode(base_rows, SCHEMA), cands, make_distance("tabpe", SCHEMA))
    ratio = np.array([3.0, 1.0])
    assert (ratio[cells] == weights).all()
    refinement = Refinement(SCHEMA, (Correction(cands, ratio),), pool=pool)
    out = resample(base, refinement, rows, np.random.default_rng(0))
    want = rows * weights / weights.sum()
    kept = out.merge(base_rows.reset_index(), on=["x", "c", "y"])["index"].value_counts()
    copies = np.zeros(len(base_rows))
    copies[kept.index.to_numpy()] = kept.to_numpy()
    assert (np.abs(copies - want) < 1.0 + 1e-9).all()
    low = want[base_rows["x"] < 0.5].sum()
    assert abs((out["x"] < 0.5).sum() - low) <= 1.0


def test_raking_gives_back_the_draws_one_way_shares() -> None:
    rng = np.random.default_rng(9)
    rows = encode(_table(3000, 10), SCHEMA)
    weights = rng.random(3000) ** 3
    for order in (1, 2):
        raked = rake(rows, weights, order, sweeps=30)
        for cell in column_cells(rows):
            share = np.bincount(cell) / len(cell)
            assert np.allclose(np.bincount(cell, weights=raked), share, atol=1e-3)
    assert raked.sum() == pytest.approx(1.0)


def test_the_stage_runs_on_tables_up_to_its_width() -> None:
    spec = EngineSpec()
    budget = Budget(epsilon=1.0, delta=1e-5)
    columns = spec.pe_max_columns
    narrow = Plan.of(budget, spec, columns, columns)
    wide = Plan.of(budget, spec, columns + 1, columns + 1)
    assert narrow.pe == pytest.approx(spec.pe_share * narrow.total) and narrow.pe > 0
    assert wide.pe == 0.0
    after = wide.rounds + wide.tree + wide.relations
    assert after == pytest.approx(narrow.rounds + narrow.tree + narrow.relations + narrow.pe)
    with pytest.raises(InputError, match="pe_max_columns"):
        EngineSpec(pe_max_columns=0)


@given(
    columns=st.integers(1, 16),
    numeric=st.integers(0, 16),
    share=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]),
)
def test_the_stage_runs_where_enough_columns_are_numeric(
    columns: int, numeric: int, share: float
) -> None:
    numeric = min(numeric, columns)
    spec = EngineSpec(pe_min_numeric=share)
    plan = Plan.of(Budget(epsilon=1.0, delta=1e-5), spec, columns, numeric)
    assert (plan.pe > 0) == (numeric >= share * columns)
    parts = plan.pe + plan.relations + plan.tree + plan.rounds + plan.fine + plan.oneway
    assert parts == pytest.approx(plan.total)


@given(
    rows=st.integers(0, 40_000),
    candidates=st.integers(1, 2_000),
    given_rows=st.booleans(),
)
def test_the_stage_runs_where_each_candidate_has_its_records(
    rows: int, candidates: int, given_rows: bool
) -> None:
    """The stage runs only where the table holds RECORDS_PER_CANDIDATE private records
    for each candidate (``n`` public); its share then goes to the rounds."""
    spec = EngineSpec(pe_candidates=candidates)
    budget = Budget(epsilon=1.0, delta=1e-5)
    plan = Plan.of(budget, spec, 5, 3, rows=rows if given_rows else None)
    runs = not given_rows or rows >= RECORDS_PER_CANDIDATE * candidates
    assert (plan.pe > 0) == runs == spec.runs_pe(5, 3, rows if given_rows else None)
    without = Plan.of(budget, EngineSpec(pe_share=0.0), 5, 3, rows=rows if given_rows else None)
    assert plan.rounds + plan.tree + plan.relations + plan.pe == pytest.approx(
        without.rounds + without.tree + without.relations
    )


def test_the_default_stage_skips_small_tables() -> None:
    """Person Activity (21,980 private rows) keeps the stage; black_politicians (2,237)
    and the suite's XOR-3 (6,000), whose votes cost more than they gave, do not."""
    spec = EngineSpec()
    assert spec.runs_pe(5, 3, 21_980)
    assert not spec.runs_pe(14, 8, 2_237)
    assert not spec.runs_pe(4, 3, 6_000)
    assert spec.runs_pe(4, 3, 10_000) and not spec.runs_pe(4, 3, 9_999)


def test_the_default_stage_skips_mostly_categorical_tables() -> None:
    spec = EngineSpec()
    assert not spec.runs_pe(9, 2)  # Adult-9: two numeric columns of nine
    assert spec.runs_pe(5, 3)  # Person Activity: x, y, z of five
    assert not EngineSpec(pe_share=0.0).runs_pe(5, 5)
    for bad in (-0.1, 1.5, "half"):
        with pytest.raises(InputError, match="pe_min_numeric"):
            EngineSpec(pe_min_numeric=bad)


def test_many_rows_are_drawn_in_parts(monkeypatch) -> None:
    """The engine model draws a refined sample in blocks of SAMPLE_ROWS: the pool of
    ``pool * rows`` draws held at once stays bounded whatever the rows asked for."""
    import dpevolve.engine.model as model_module

    monkeypatch.setattr(model_module, "SAMPLE_ROWS", 100)
    asked: list[int] = []
    base_rows = _table(2000, 11)

    class Drawn(model_module.EngineModel):
        def draw(self, count: int, rng: np.random.Generator) -> pd.DataFrame:
            asked.append(count)
            return base_rows.sample(count, replace=True, random_state=rng).reset_index(drop=True)

    cands = encode(pd.DataFrame({"x": [0.2], "c": ["a"], "y": ["no"]}), SCHEMA)
    refinement = Refinement(SCHEMA, (Correction(cands, np.array([1.0])),), pool=3)
    model = Drawn(discretiser=None, fine={}, model=None, rows=0, refinement=refinement)  # type: ignore[arg-type]
    out = model.sample(250, np.random.default_rng(0))
    assert len(out) == 250 and asked == [300, 300, 150]
