"""Invalid private rows: never rounded, never dropped from n, covered by the noise.

Neighbouring tables here differ in one row only: a valid row replaced by an invalid one.
Everything public (the shareable ledger, n, delta, sigma, PubMix's beta) must be the
same for both, and the noise must cover the histogram change the replacement causes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.backends import LocalBackend
from dpevolve.cli import main
from dpevolve.data.encoding import Layout, decode, encode
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.errors import InputError
from dpevolve.pe.distance import make_distance
from dpevolve.pe.invalid_rows import (
    EMPTY_VOTE_L2,
    calibrate,
    fill_empty_votes,
    stand_in_record,
)
from dpevolve.pe.policy.blowfish import Policy
from dpevolve.pe.specs import GaussianSpec, PubMixSpec, VoteSpec
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote
from dpevolve.presets import get_method

FAST: dict[str, Any] = {
    "epsilon": 1.0,
    "random_state": 3,
    "method": get_method("tabpe", population=32, rounds=2),
}


def neighbour(table: pd.DataFrame, row: int = 0, **cells: Any) -> pd.DataFrame:
    """``table`` with one row's cells replaced (an invalid value makes it invalid)."""
    out = table.astype(object).copy()
    for column, value in cells.items():
        out.loc[row, column] = value
    return out


def public_view(ledger: dict[str, Any]) -> dict[str, Any]:
    """The shareable ledger without what each round's DP output decides."""
    out = dict(ledger)
    noisy = {"kept_candidates", "support", "pool", "fit_loss", "fit_iterations"}
    out["events"] = [{k: v for k, v in e.items() if k not in noisy} for e in out["events"]]
    return out


# ----------------------------------------------------------- 3: integers are not rounded
def test_a_non_integer_in_an_integer_column_is_invalid(small_schema, small_table) -> None:
    table = neighbour(small_table, 4, age=30.5)
    with pytest.raises(InputError, match="'age': 1 of 400 rows are not whole numbers"):
        small_schema.validate(table)
    for mode in ("drop", "clip"):  # no repair rounds it: the row casts an empty vote
        frame, report = small_schema.validate(table, on_invalid=mode)
        assert len(frame) == 399 and report.rows_in == 400 and report.dropped == {"age": 1}
        assert not np.isin(30.5, frame["age"].to_numpy())


def test_clip_puts_integer_columns_on_whole_numbers() -> None:
    schema = Schema((NumericColumn("x", 0.5, 9.5, integer=True),))
    frame, report = schema.validate(pd.DataFrame({"x": [-4.0, 3.0, 12.25]}), on_invalid="clip")
    assert frame["x"].tolist() == [1.0, 3.0, 9.0] and report.clipped == {"x": 2}
    with pytest.raises(InputError, match="whole number"):
        NumericColumn("y", 0.2, 0.8, integer=True)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(-50, 150, allow_nan=False), min_size=2, max_size=2),
    st.floats(0.5, 30),
)
def test_repairs_never_widen_a_protected_pair(pair: list[float], theta: float) -> None:
    """What reaches the votes is a contraction of the raw table: a pair within a
    threshold stays within it (clip), or a row is left out (non-integers)."""
    schema = Schema((NumericColumn("x", 0, 100, integer=True),))
    frame, _ = schema.validate(pd.DataFrame({"x": pair}), on_invalid="clip")
    raw = np.array(pair)
    kept = np.clip(raw, 0, 100)
    kept = kept[kept == np.round(kept)]  # what survives: whole numbers after clipping
    assert frame["x"].tolist() == kept.tolist()  # never rounded
    if len(frame) == 2 and abs(pair[0] - pair[1]) <= theta:
        assert abs(frame["x"][0] - frame["x"][1]) <= theta


def test_the_reviewed_pair_cannot_reach_the_votes(small_schema, small_table) -> None:
    """30.5 / 37.5 under threshold 7 used to become 30 / 38 (8 apart)."""
    for value in (30.5, 37.5):
        frame, _ = small_schema.validate(neighbour(small_table, 0, age=value), on_invalid="clip")
        assert len(frame) == 399  # an empty vote, not a rounded 30 or 38


def test_cli_exits_2_on_a_non_integer(tmp_path: Path, small_schema, small_table, capsys) -> None:
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    table = tmp_path / "t.csv"
    neighbour(small_table, 9, age=41.5).to_csv(table, index=False)
    assert main(["schema", "check", str(table), "-s", str(schema)]) == 2
    err = capsys.readouterr().err
    assert "not whole numbers" in err and "line 11" in err and "41.5" not in err


# --------------------------------------------------------------- 4: n is the public count
def test_public_row_count_counts_invalid_rows(small_schema, small_table) -> None:
    source = FrameSource(neighbour(small_table, 0, job="pilot"), small_schema, on_invalid="drop")
    assert len(source.batches()) == 399
    assert source.n == 400


@pytest.mark.parametrize("invalid", [{"age": 200}, {"job": "pilot"}, {"hours": np.nan}])
def test_neighbours_share_every_public_quantity(small_schema, small_table, invalid) -> None:
    """One valid row replaced by an invalid one: same n, delta, sigma and ledger."""
    models = [
        Synthesizer(small_schema, on_invalid="drop", **FAST).fit(table)
        for table in (small_table, neighbour(small_table, 0, **invalid))
    ]
    ledgers = [m.ledger_.shareable_dict() for m in models]
    assert ledgers[0]["private_rows"] == ledgers[1]["private_rows"] == 400
    assert [m.n_private_ for m in models] == [400, 400]
    assert public_view(ledgers[0]) == public_view(ledgers[1])
    # The private counts differ, and stay in the full ledger only.
    full = [m.ledger_.to_dict()["validation"]["rows_out"] for m in models]
    assert full == [400, 399] and "validation" not in ledgers[0]


def test_neighbours_share_the_pubmix_ledger(small_schema, small_table) -> None:
    public = small_table.sample(150, random_state=1).reset_index(drop=True)
    settings = {
        **FAST,
        "public": public,
    }
    settings["noise_seed"] = 5  # same noise on both neighbours: only the data differs
    # One round: a later round votes over a population bred from released parents, and
    # a parent drawn from the moved record's slot differs between neighbours even then.
    settings["method"] = get_method(
        "tabpe", population=32, rounds=1, mechanism=PubMixSpec(accounting="basic")
    )
    models = [
        Synthesizer(small_schema, on_invalid="drop", **settings).fit(table)
        for table in (small_table, neighbour(small_table, 5, age=-1))
    ]
    ledgers = [m.ledger_.shareable_dict() for m in models]
    assert ledgers[0] == ledgers[1]  # n, delta, beta, floors: all public
    assert ledgers[0]["private_rows"] == 400


def test_cli_share_ledgers_of_neighbours_match(
    tmp_path: Path, small_schema, small_table, capsys
) -> None:
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    shared = []
    for k, table in enumerate((small_table, neighbour(small_table, 7, income="maybe"))):
        private = tmp_path / f"private{k}.csv"
        table.to_csv(private, index=False)
        argv = ["synth", private, "-s", schema, "-o", tmp_path / f"out{k}.csv", "-e", "1"]
        argv += ["-p", "tabpe", "--population", "32", "--rounds", "2", "--seed", "3"]
        argv += ["--on-invalid", "drop"]
        argv += ["--share-ledger", tmp_path / f"share{k}.json", "-q", "--stream"]
        assert main([str(a) for a in argv]) == 0
        shared.append(json.loads((tmp_path / f"share{k}.json").read_text()))
    assert public_view(shared[0]) == public_view(shared[1])


def test_soft_votes_with_drop_are_calibrated_for_the_empty_vote(small_schema, small_table) -> None:
    """The reviewed case: a valid row turned invalid changes a soft histogram by
    ``||vote(x)||_2``, more than the policy's bound; the noise must cover it."""
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, small_schema)
    distance = make_distance("gower", small_schema)
    vote = SoftVote(0.05)
    bound = vote.l2_sensitivity(policy.reach(distance))
    population = Variation(Layout.of(small_schema)).random(32, np.random.default_rng(0))
    records = encode(small_table, small_schema)
    full = LocalBackend().vote(records, population, distance, vote)
    dropped = LocalBackend().vote(records.take(slice(1, None)), population, distance, vote)
    change = float(np.linalg.norm(full - dropped))
    assert change > bound  # the policy bound alone would not cover this replacement
    settings = {
        **FAST,
        "method": get_method(
            "tabpe", distance="gower", vote=VoteSpec(kind="soft", temperature=0.05)
        ),
        "policy": policy,
    }
    with pytest.warns(UserWarning, match="empty vote"):
        model = Synthesizer(small_schema, on_invalid="drop", **settings).fit(small_table)
    ledger = model.ledger_.to_dict()
    assert ledger["l2_sensitivity"] == EMPTY_VOTE_L2 >= change
    assert ledger["invalid_rows"]["vote_bound"] == pytest.approx(bound)
    # the bound plus the noise grid's rounding slack (at most 1e-6 here)
    assert all(abs(e["sensitivity"] - EMPTY_VOTE_L2) < 1e-6 for e in ledger["events"])
    strict = Synthesizer(small_schema, on_invalid="error", **settings).fit(small_table)
    assert strict.ledger_.to_dict()["l2_sensitivity"] == pytest.approx(bound)


@given(st.sampled_from(["error", "drop", "clip"]), st.floats(0.0, 3.0))
def test_calibration_covers_both_kinds_of_replacement(mode: str, bound: float) -> None:
    calibration = calibrate(mode, bound)
    assert calibration.sensitivity >= bound
    if mode != "error":
        assert calibration.sensitivity >= EMPTY_VOTE_L2
    assert calibration.raised == (calibration.warning() is not None)
    assert calibrate(mode, 2**0.5).sensitivity == 2**0.5  # hard votes pay nothing


def test_exact_calibration_covers_the_empty_vote(small_schema, small_table) -> None:
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 2}}}, small_schema)
    settings = {
        **FAST,
        "rho": 1e-2,
        "epsilon": None,
        "policy": policy,
        "method": get_method(
            "tabpe", population=32, rounds=2, mechanism=GaussianSpec(calibration="exact")
        ),
    }
    exact = Synthesizer(small_schema, on_invalid="clip", **settings).fit(small_table)
    assert all(e["sensitivity"] >= EMPTY_VOTE_L2 for e in exact.ledger_.to_dict()["events"])


# --------------------------------------------------------- PubMix: a fixed stand-in record
def test_stand_in_is_a_fixed_domain_record(small_schema) -> None:
    row = decode(stand_in_record(Layout.of(small_schema)), small_schema)
    assert row.iloc[0].tolist() == [17, "admin", 1, "<=50K"]


def test_missing_votes_go_to_the_stand_in_candidate(small_schema, small_table) -> None:
    distance = make_distance("gower", small_schema)
    population = Variation(Layout.of(small_schema)).random(20, np.random.default_rng(1))
    records = encode(small_table, small_schema)
    votes = LocalBackend().vote(records.take(slice(0, 390)), population, distance, HardVote())
    filled = fill_empty_votes(votes, 400, population, distance)
    stand_in = LocalBackend().vote(
        stand_in_record(distance.layout), population, distance, HardVote()
    )
    assert filled.sum() == 400
    np.testing.assert_array_equal(filled - votes, 10 * stand_in)
    with pytest.raises(AssertionError):
        fill_empty_votes(votes, 389, population, distance)
