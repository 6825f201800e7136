"""The README's first hour on UCI Adult, through the command line (skips without the data)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from dpevolve import datasets
from dpevolve.cli import main
from dpevolve.errors import InputError

REPO = Path(__file__).resolve().parents[1]
POLICY = REPO / "docs" / "examples" / "adult5-policy.yaml"
SOFT = REPO / "docs" / "examples" / "bfsoft-soft.yaml"  # the README's run file
FAST = ["--engine-options", "{max_rounds: 4}", "--quiet"]


def _adult_available() -> bool:
    try:
        datasets.load("adult", split="test", columns="adult5")
    except InputError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _adult_available(), reason="UCI Adult files not found")


def cli(*argv: object) -> None:
    code = main([str(a) for a in argv])
    assert code == 0, f"dpevolve {' '.join(map(str, argv))} exited {code}"


def test_readme_flow_on_adult(tmp_path: Path, capsys) -> None:
    adult, test, schema = tmp_path / "adult.csv", tmp_path / "test.csv", tmp_path / "a5.yaml"
    cli("datasets", "export", "adult", "--columns", "adult5", "-o", adult)
    cli("datasets", "export", "adult", "--columns", "adult5", "--split", "test", "-o", test)
    cli("datasets", "schema", "adult5", "-o", schema)
    synthetic, public_report = tmp_path / "synthetic.csv", tmp_path / "report-public.html"
    share_ledger = tmp_path / "public.ledger.json"
    cli("synth", adult, "-s", schema, "-e", 1, "-o", synthetic, "--rows", 500,
        "--share-report", public_report, "--share-ledger", share_ledger, *FAST)  # fmt: skip
    assert len(pd.read_csv(synthetic)) == 500
    assert "seed" not in json.loads(share_ledger.read_text())
    assert public_report.stat().st_size > 0
    capsys.readouterr()
    cli("evaluate", adult, synthetic, "-s", schema, "--test", test)
    out = capsys.readouterr().out
    assert "TSTR" in out and "held-out real rows" in out and "real table itself" not in out
    cli("policy", "show", POLICY, "-s", schema)
    assert "r = 0.0191781" in capsys.readouterr().out  # age within 7 years: 0.2 * 7 / 73
    cli("synth", adult, "-s", schema, "--policy", POLICY, "--method", SOFT, "--rho", 1e-3,
        "-o", tmp_path / "policy.csv", "--population", 40, "--rounds", 2, "-q")  # fmt: skip
    ledger = json.loads((tmp_path / "policy.ledger.json").read_text())
    assert ledger["vote"] == {"name": "soft", "temperature": 0.03, "sharpen": 1.0, "debias": 0}
    assert abs(ledger["reach"] - 0.2 * 7 / 73) < 1e-12


def test_a_schema_inferred_from_one_half_reads_the_other(tmp_path: Path) -> None:
    # The first report: fnlwgt of the private half lay outside the inferred range.
    whole = datasets.load("adult").frame.sample(frac=1.0, random_state=0)
    half = len(whole) // 2
    public, private = tmp_path / "public.csv", tmp_path / "private.csv"
    whole.iloc[:half].to_csv(public, index=False)
    whole.iloc[half:].to_csv(private, index=False)
    schema = tmp_path / "schema.yaml"
    cli("schema", "infer", public, "--label", "income", "-o", schema)
    from dpevolve.data.infer import problems_of
    from dpevolve.data.schema import Schema

    problems = problems_of(Schema.load(schema), whole.iloc[half:])
    # numeric ranges now fit; only categories never seen in the public half may not
    assert not [p for p in problems if "range" in p], problems
    cli("synth", private, "-s", schema, "-e", 1, "-o", tmp_path / "s.csv",
        "--on-invalid", "drop", *FAST)  # fmt: skip
