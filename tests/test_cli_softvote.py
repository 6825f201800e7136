"""Soft votes from a run file (``--method RUN.yaml``) and ``vote auto`` as the default of a
Private Evolution method with a policy and public data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from dpevolve import Synthesizer
from dpevolve.cli import ledger_path, main
from dpevolve.pe.specs import GaussianSpec, VoteSpec
from dpevolve.presets import from_settings, get_method

FAST = ["--population", "30", "--rounds", "2", "--preset", "bfsoft", "--rho", "1e-3"]


@pytest.fixture
def files(tmp_path: Path, small_schema, small_table):
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    private, public = tmp_path / "private.csv", tmp_path / "public.csv"
    small_table.iloc[200:].to_csv(private, index=False)
    small_table.iloc[:200].to_csv(public, index=False)
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"attributes": {"age": {"threshold": 5}}}))
    return tmp_path, schema, private, public, policy


def _synth(files, *extra: str) -> list[str]:
    folder, schema, private, _, _ = files
    return [str(a) for a in ("synth", private, "-s", schema, "-o", folder / "out.csv", *FAST)] + [
        *extra
    ]


def _with_vote(files, vote: dict, *extra: str) -> list[str]:
    """``synth`` with bfsoft (30 records, 2 rounds) and ``vote`` from a run file."""
    folder, schema, private, _, _ = files
    run_file = folder / "run.yaml"
    words = {"method": {"name": "bfsoft", "population": 30, "rounds": 2}, "vote": vote}
    run_file.write_text(yaml.safe_dump(words))
    argv = ("synth", private, "-s", schema, "-o", folder / "out.csv", "--method", run_file)
    return [str(a) for a in (*argv, "--rho", "1e-3", *extra)]


def _ledger(files) -> dict:
    return json.loads(ledger_path(files[0] / "out.csv").read_text())


def test_policy_and_public_default_to_vote_auto_with_one_reason_line(files, capsys) -> None:
    _, _, _, public, policy = files
    code = main(_synth(files, "--policy", str(policy), "--public", str(public), "--seed", "1"))
    err = capsys.readouterr().err
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.startswith("vote auto:")]
    assert len(lines) == 1 and "chose" in lines[0] and "no private budget spent" in lines[0]
    ledger = _ledger(files)
    choice = ledger["vote_choice"]
    assert choice["private_budget_spent"] == 0.0
    assert choice["reason"] == lines[0]
    # the run used the chosen arm: its vote, sharpening and debiasing
    vote = ledger["vote"]
    assert vote["name"] == choice["chosen"]["vote"]
    assert vote["sharpen"] == choice["chosen"]["sharpen"]
    assert vote["debias"] == choice["chosen"]["debias"]


def test_quiet_says_nothing_and_hard_without_public(files, capsys) -> None:
    _, _, _, public, policy = files
    assert main(_synth(files, "--policy", str(policy), "--public", str(public), "--quiet")) == 0
    assert capsys.readouterr().err == ""
    assert main(_synth(files, "--policy", str(policy), "--quiet", "--force")) == 0
    ledger = _ledger(files)
    vote = ledger["vote"]
    assert vote["name"] == "hard"  # no public data: no pilot, the preset's vote


def test_sharpen_and_debias_reach_the_ledger(files, capsys) -> None:
    _, _, _, _, policy = files
    vote = {"kind": "soft", "temperature": 0.05, "sharpen": 10, "debias": 2}
    code = main(_with_vote(files, vote, "--policy", str(policy), "--quiet"))
    assert code == 0, capsys.readouterr().err
    ledger = _ledger(files)
    vote = ledger["vote"]
    assert vote == {"name": "soft", "temperature": 0.05, "sharpen": 10.0, "debias": 2}


@pytest.mark.parametrize(
    ("vote", "extra", "needle"),
    [
        ({"sharpen": 10}, [], "vote soft needs a temperature"),
        ({"debias": 3, "kind": "hard"}, [], "soft vote"),
        ({"sharpen": 0.5, "kind": "soft", "temperature": 0.05}, [], "sharpen"),
        ({"kind": "auto"}, [], "--public"),
        ({"kind": "auto", "temperature": 0.03}, ["--public", "PUBLIC"], "temperature"),
        ({"kind": "auto", "debias": 2}, ["--public", "PUBLIC"], "debias"),
        ({"kind": "soft", "temperature": 0.05, "sharpen": 10}, [], "policy"),
    ],
)
def test_bad_soft_options_fail_in_one_line(files, capsys, vote, extra, needle) -> None:
    folder, _, _, public, _ = files
    extra = [str(public) if a == "PUBLIC" else a for a in extra]
    assert main(_with_vote(files, vote, *extra, "--quiet")) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1, err
    assert not (folder / "out.csv").exists()


def test_default_vote_rule(small_schema, small_table) -> None:
    def vote(public: bool = False, policy: bool = False, **settings) -> str | None:
        return from_settings("bfsoft", settings).resolved(public=public, policy=policy).vote.kind

    assert vote(policy=True, public=True) == "auto"
    assert vote(policy=True) == "hard"
    assert vote(public=True) == "hard"  # no policy: no soft vote has the smaller sensitivity
    assert vote(policy=True, public=True, mechanism="pubmix") == "hard"
    exact = GaussianSpec(calibration="exact")
    assert vote(policy=True, public=True, mechanism=exact) == "hard"
    soft = VoteSpec(temperature=0.03)
    assert vote(policy=True, public=True, vote=soft) == "soft"  # chosen by hand
    # The default method casts no vote at all.
    assert not hasattr(Synthesizer(small_schema, public=small_table).resolved_method(), "vote")


def test_default_auto_under_a_non_gower_distance_does_not_sharpen(
    small_schema, small_table
) -> None:
    policy = {"attributes": {"age": {"threshold": 5}}}
    from dpevolve.pe.policy.blowfish import Policy

    model = Synthesizer(
        small_schema,
        rho=1e-3,
        method=get_method("tabpe", population=20, rounds=1),
        policy=Policy.from_dict(policy, small_schema),
        public=small_table.iloc[:200],
        random_state=0,
    ).fit(small_table.iloc[200:])
    ledger = model.ledger_.to_dict()
    assert "vote_choice" in ledger  # the default was auto
    assert ledger["vote"]["sharpen"] == 1.0
    assert all(" sharpen=" not in label for label in ledger["vote_choice"]["errors"])
