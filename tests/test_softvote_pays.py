"""Sharpened distances, release debiasing and ``vote="auto"`` (BF-Soft that pays)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.debias import SoftDebias, candidate_kernel, richardson_lucy
from dpevolve.pe.distance import make_distance
from dpevolve.pe.pilot.choice import choose_vote, default_arms
from dpevolve.pe.pilot.run import PilotResult, VoteArm
from dpevolve.pe.policy.blowfish import Policy
from dpevolve.pe.policy.sharpen import sharpen_unprotected
from dpevolve.pe.specs import VoteSpec
from dpevolve.pe.votes import SoftVote
from dpevolve.presets import get_method
from dpevolve.privacy import Budget, calibrate_gaussian

TINY = Schema(
    (
        NumericColumn("a", 0, 4, integer=True),
        NumericColumn("b", 0, 3, integer=True),
        CategoricalColumn("c", ("x", "y", "z")),
    )
)


def _records(rows: list[tuple[int, int, int]]) -> Records:
    arr = np.asarray(rows, dtype=np.float64)
    numeric = np.stack([arr[:, 0] / 4.0, arr[:, 1] / 3.0], axis=1)
    return Records(numeric, arr[:, 2:3].astype(np.int32))


DOMAIN = list(itertools.product(range(5), range(4), range(3)))


# ------------------------------------------------------------------ sharpening
@settings(max_examples=25, deadline=None)
@given(factor=st.floats(1.0, 1e4), theta=st.floats(0.5, 6.0))
def test_sharpening_keeps_the_reach(factor: float, theta: float) -> None:
    policy = Policy.from_dict({"attributes": {"a": {"threshold": theta}}}, TINY)
    plain = make_distance("gower", TINY)
    sharp = sharpen_unprotected(plain, policy, factor)
    assert policy.reach(sharp) == pytest.approx(policy.reach(plain), rel=1e-12)
    # unprotected attributes are scaled, the protected one is not
    assert sharp.numeric_weights[0] == plain.numeric_weights[0]
    assert sharp.numeric_weights[1] == pytest.approx(factor * plain.numeric_weights[1])
    assert sharp.tables[0].max() == pytest.approx(factor * plain.tables[0].max())
    assert plain.numeric_weights[1] == pytest.approx(1 / 3)  # the original is untouched


@pytest.mark.parametrize("tau", [0.02, 0.06, 0.1])
@pytest.mark.parametrize("factor", [1.0, 10.0, 30.0, 1000.0])
def test_sharpened_soft_bound_holds_by_brute_force(tau: float, factor: float) -> None:
    """Every record, every protected neighbour, a random candidate set: ||p - p'||_2 is
    within sqrt(2) tanh(r / (2 tau)) on the sharpened distance."""
    policy = Policy.from_dict({"attributes": {"a": {"threshold": 2}}}, TINY)
    sharp = sharpen_unprotected(make_distance("gower", TINY), policy, factor)
    vote = SoftVote(tau)
    bound = vote.l2_sensitivity(policy.reach(sharp))
    rng = np.random.default_rng(int(factor * 10 + tau * 100))
    candidates = _records([DOMAIN[i] for i in rng.choice(len(DOMAIN), 12, replace=False)])
    records = _records(DOMAIN)
    votes = vote.row_votes(sharp.pairwise(records, candidates))
    worst = 0.0
    for i, (a, b, c) in enumerate(DOMAIN):
        for j, (a2, b2, c2) in enumerate(DOMAIN):
            if (b, c) == (b2, c2) and 0 < abs(a - a2) <= 2:
                worst = max(worst, float(np.linalg.norm(votes[i] - votes[j])))
    assert 0.0 < worst <= bound + 1e-12


def test_sharpening_refuses_what_it_cannot_keep() -> None:
    policy = Policy.from_dict({"attributes": {"a": {"threshold": 2}}}, TINY)
    with pytest.raises(InputError, match="gower"):
        sharpen_unprotected(make_distance("tabpe", TINY), policy, 10.0)
    with pytest.raises(InputError, match=">= 1"):
        sharpen_unprotected(make_distance("gower", TINY), policy, 0.5)
    with pytest.raises(InputError, match="participation"):
        sharpen_unprotected(make_distance("gower", TINY), Policy.standard(), 10.0)


# ------------------------------------------------------------------- debiasing
def test_richardson_lucy_undoes_a_known_blur() -> None:
    rng = np.random.default_rng(0)
    distance = make_distance("gower", TINY)
    candidates = _records([DOMAIN[i] for i in rng.choice(len(DOMAIN), 10, replace=False)])
    kernel, _, counts = candidate_kernel(candidates, distance, 0.05)
    assert np.allclose(kernel.sum(axis=1), 1.0)
    truth = rng.integers(1, 50, size=len(counts)).astype(float)
    blurred = kernel.T @ truth
    start_error = np.abs(blurred - truth).sum()
    estimate = richardson_lucy(blurred, kernel, 2000)
    assert np.abs(estimate - truth).sum() < 0.05 * start_error
    assert estimate.sum() == pytest.approx(truth.sum())


@settings(max_examples=30, deadline=None)
@given(
    noisy=st.lists(st.floats(-50, 200), min_size=6, max_size=6),
    iterations=st.integers(1, 8),
)
def test_debias_is_nonnegative_and_keeps_the_positive_total(noisy, iterations) -> None:
    # candidates 0 and 3 are the same record: they must get the same estimate
    candidates = _records([(0, 0, 0), (1, 2, 1), (4, 3, 2), (0, 0, 0), (2, 1, 0), (3, 3, 1)])
    debias = SoftDebias(make_distance("gower", TINY), 0.05, iterations)
    values = np.asarray(noisy)
    out = debias(values, candidates)
    assert out.shape == values.shape
    assert (out >= 0).all()
    merged = values.copy()
    merged[0] = merged[3] = (values[0] + values[3]) / 2  # only their total is identifiable
    positive = np.maximum(np.bincount([0, 1, 2, 0, 3, 4], weights=values), 0).sum()
    assert out.sum() == pytest.approx(positive, rel=1e-9, abs=1e-9)
    assert out[0] == pytest.approx(out[3])


def test_debias_arguments_are_checked() -> None:
    with pytest.raises(InputError):
        SoftDebias(make_distance("gower", TINY), 0.05, 0)


# ----------------------------------------------------------------- vote choice
def test_vote_arms_and_the_reason_line() -> None:
    with pytest.raises(InputError):
        VoteArm("soft")
    with pytest.raises(InputError):
        VoteArm("hard", 0.03)
    hard, soft = VoteArm("hard"), VoteArm("soft", 0.03, sharpen=10.0)
    choice = PilotResult({hard: 0.3, soft: 0.2}, noise_scale=0.5, seeds=(0,))
    assert choice.chosen == soft
    line = choice.reason()
    assert "\n" not in line and "soft tau=0.03 sharpen=10" in line and "hard 0.3000" in line
    assert choice.to_dict()["private_budget_spent"] == 0.0
    policy = Policy.from_dict({"attributes": {"a": {"threshold": 2}}}, TINY)
    assert {a.sharpen for a in default_arms(policy) if a.vote == "soft"} == {10.0, 30.0}
    assert {a.sharpen for a in default_arms(Policy.standard())} == {1.0}
    # sharpening needs the Gower distance: under another one the soft arms stay plain
    assert {a.sharpen for a in default_arms(policy, "tabpe")} == {1.0}
    gower = make_distance("gower", TINY)
    assert {a.sharpen for a in default_arms(policy, gower)} == {1.0, 10.0, 30.0}
    assert [a.debias for a in default_arms(policy) if a.debias] == [20]


@settings(max_examples=50, deadline=None)
@given(
    hard=st.lists(st.floats(0.05, 0.5), min_size=3, max_size=3),
    soft=st.lists(st.floats(0.05, 0.5), min_size=3, max_size=3),
)
def test_a_soft_arm_must_beat_hard_on_every_pilot_seed(hard, soft) -> None:
    h, s = VoteArm("hard"), VoteArm("soft", 0.06, sharpen=30.0, debias=20)
    choice = PilotResult(
        {h: float(np.mean(hard)), s: float(np.mean(soft))},
        noise_scale=0.5,
        seeds=(0, 1, 2),
        per_seed={h.label: hard, s.label: soft},
    )
    wins_everywhere = all(a < b for a, b in zip(soft, hard, strict=True))
    assert choice.chosen == (s if wins_everywhere else h)
    # hard is kept only where the mean alone would have chosen the soft arm
    assert choice.tie_to_hard == (choice.best == s and not wins_everywhere)
    line = choice.reason()
    assert "\n" not in line and line.startswith(f"vote auto: chose {choice.chosen.label} ")
    if choice.tie_to_hard:
        assert "did not beat hard on every pilot seed" in line


def test_vote_auto_end_to_end(small_schema, small_table, capsys) -> None:
    public, private = small_table.iloc[:200], small_table.iloc[200:]
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 5}}}, small_schema)
    options = {
        "policy": policy,
        "method": get_method("bfsoft", population=30, rounds=2),
    }
    choice = choose_vote(
        small_schema,
        public,
        len(private),
        calibrate_gaussian(2, Budget(rho=1e-3, delta=1e-5)),
        seeds=(0,),
        fit=Synthesizer.pilot_fit(small_schema, **options),
        rounds=2,
        policy=policy,
    )
    assert len(choice.errors) == len(default_arms(policy))
    assert choice.errors[choice.chosen] == min(choice.errors.values())

    auto = {**options, "method": get_method("bfsoft", population=30, rounds=2, vote="auto")}
    model = Synthesizer(small_schema, rho=1e-3, public=public, random_state=0, **auto).fit(private)
    line = capsys.readouterr().err.strip().splitlines()
    assert len(line) == 1 and line[0].startswith("vote auto: chose ")
    ledger = model.ledger_.to_dict()
    assert ledger["vote_choice"]["private_budget_spent"] == 0.0
    assert [e["mechanism"] for e in ledger["events"]].count("public_pilot") == 1
    # the choice is free: the guarantee is that of the two Gaussian rounds alone
    assert sum(e.get("rho", 0.0) for e in ledger["events"]) == pytest.approx(1e-3)
    chosen = ledger["vote_choice"]["chosen"]
    assert ledger["vote"]["name"] == chosen["vote"]
    assert ledger["vote"]["sharpen"] == chosen["sharpen"]
    if chosen["vote"] == "soft":
        assert ledger["l2_sensitivity"] == pytest.approx(
            math.sqrt(2) * math.tanh(ledger["reach"] / (2 * chosen["temperature"]))
        )


def test_sharpen_and_debias_in_a_fit(small_schema, small_table) -> None:
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 5}}}, small_schema)
    common = {
        "rho": 1e-3,
        "policy": policy,
    }
    plain = Synthesizer(
        small_schema, method=get_method("bfsoft", population=30, rounds=2, vote=VoteSpec(
            kind="soft", temperature=0.05)), random_state=1, **common
    )  # fmt: skip
    sharp = Synthesizer(
        small_schema,
        method=get_method("bfsoft", population=30, rounds=2, vote=VoteSpec(
            kind="soft", temperature=0.05, sharpen=10.0, debias=3)),
        random_state=1,
        **common,
    )  # fmt: skip
    a, b = plain.fit(small_table).ledger_.to_dict(), sharp.fit(small_table).ledger_.to_dict()
    # same reach and noise: sharpening is free, debiasing is post-processing
    assert a["reach"] == pytest.approx(b["reach"]) and a["sigma"] == pytest.approx(b["sigma"])
    assert b["vote"]["sharpen"] == 10.0 and b["vote"]["debias"] == 3
    assert len(sharp.synthetic_) == 30
    with pytest.raises(InputError, match="policy"):
        Synthesizer(
            small_schema,
            rho=1e-3,
            method=get_method(
                "bfsoft",
                population=30,
                rounds=2,
                vote=VoteSpec(kind="soft", temperature=0.05, sharpen=10.0),
            ),
        ).fit(small_table)
