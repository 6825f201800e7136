"""The command line as a new user meets it: help, version, messages, repair options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpevolve
from dpevolve.cli import main
from dpevolve.errors import InputError
from dpevolve.extras import require

FAST = ["--population", "30", "--rounds", "2"]
COMMANDS = [
    ["synth"],
    ["pubmix"],
    ["evaluate"],
    ["demo"],
    ["schema", "infer"],
    ["schema", "check"],
    ["policy", "show"],
    ["policy", "audit"],
    ["datasets", "list"],
    ["datasets", "fetch"],
    ["datasets", "schema"],
    ["datasets", "export"],
]


@pytest.fixture
def files(tmp_path: Path, small_schema, small_table):
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    private = tmp_path / "private.csv"
    small_table.to_csv(private, index=False)
    return tmp_path, schema, private


def run(argv: list, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_bare_command_prints_help_and_exits_0(capsys) -> None:
    code, out, err = run([], capsys)
    assert code == 0 and "Usage: dpevolve" in out and "synth" in out and err == ""
    code, out, _ = run(["schema"], capsys)
    assert code == 0 and "infer" in out and "check" in out


def test_version(capsys) -> None:
    code, out, _ = run(["--version"], capsys)
    assert code == 0 and out.strip() == f"dpevolve {dpevolve.__version__}"
    assert dpevolve.__version__ and dpevolve.__version__[0].isdigit()


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command, capsys) -> None:
    code, out, _ = run([*command, "-h"], capsys)
    assert code == 0
    assert f"Usage: dpevolve {' '.join(command)}" in out
    assert "Example" in out
    assert "<bool>" not in out  # flags read as flags
    if command == ["synth"]:
        assert "--force " in out and "--epsilon" in out and "Privacy budget" in out
        assert "tabpe | hybrid | bfsoft" in out and "<error|drop|clip>" in out and "--rows" in out


def test_usage_error_names_the_command_help(capsys) -> None:
    code, _, err = run(["synth", "x.csv"], capsys)
    assert code == 2 and err.startswith("dpevolve: error: ") and "dpevolve synth -h" in err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--vote", "soft"], "vote soft needs a temperature (--temperature TAU"),
        (["--temperature", "auto"], "temperature 'auto' needs public data (--public)"),
        (["--vote", "hard", "--temperature", "0.1"], "a temperature is for vote soft"),
        (["--temperature", "abc"], "--temperature must be a number"),
    ],
)
def test_vote_messages_speak_in_flags(files, capsys, extra, needle) -> None:
    folder, schema, private = files
    argv = ["synth", private, "-s", schema, "-e", "1", "-o", folder / "o.csv", *extra]
    code, _, err = run(argv, capsys)
    assert code == 2 and needle in err and "temperature=" not in err


def test_rows_share_report_and_automatic_choices(files, capsys) -> None:
    folder, schema, private = files
    out, share = folder / "s.csv", folder / "public.html"
    argv = ["synth", private, "-s", schema, "-e", "1", "-o", out, "--rows", 77, *FAST]
    code, _, err = run([*argv, "--share-report", share, "--temperature", "0.05"], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) == 77
    # every automatic choice is said, with its reason
    assert "backend: " in err and "--backend auto" in err
    assert "delta: " in err and "1/(n ln n)" in err
    assert "vote: soft (--temperature 0.05 given without --vote)" in err
    page = share.read_text()
    ledger = json.loads((folder / "s.ledger.json").read_text())
    assert str(ledger["seed"]) not in page  # the public-safe report withholds the seed
    assert "TSTR" not in page


def test_on_invalid_in_every_reading_command(files, small_table, capsys) -> None:
    folder, schema, private = files
    bad = small_table.copy()
    bad.loc[5, "age"] = 300
    bad_path = folder / "bad.csv"
    bad.to_csv(bad_path, index=False)
    synthetic = folder / "syn.csv"
    code, _, err = run(
        ["synth", private, "-s", schema, "-e", "1", "-o", synthetic, "-q", *FAST], capsys
    )
    assert code == 0, err
    evaluate = ["evaluate", bad_path, synthetic, "-s", schema]
    code, _, err = run(evaluate, capsys)
    assert code == 2 and "--on-invalid" in err
    code, out, err = run([*evaluate, "--on-invalid", "drop"], capsys)
    assert code == 0 and "kept 399 of 400 rows" in err and "TSTR" in out
    code, _, err = run([*evaluate, "--on-invalid", "clip"], capsys)
    assert code == 0 and "1 clipped" in err
    code, _, err = run(["synth", bad_path, "-s", schema, "-e", "1", "-o", folder / "b.csv",
                        "--on-invalid", "drop", *FAST], capsys)  # fmt: skip
    assert code == 0 and "kept 399 of 400 rows" in err


def test_schema_check_lists_every_problem(files, small_table, capsys) -> None:
    folder, schema, _ = files
    bad = small_table.astype({"hours": float}).copy()
    bad.loc[1, "age"] = 300
    bad.loc[2, "job"] = "astronaut"
    bad.loc[3, "hours"] = np.nan
    path = folder / "bad.csv"
    bad.to_csv(path, index=False)
    code, _, err = run(["schema", "check", path, "-s", schema], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 4 and "3 problem(s)" in lines[-1]
    for name in ("age", "job", "hours"):
        assert sum(f"column '{name}'" in line for line in lines) == 1
    code, out, _ = run(["schema", "check", folder / "private.csv", "-s", schema], capsys)
    assert code == 0 and "400 rows fit" in out


def test_schema_infer_writes_a_checked_nullable_schema(tmp_path: Path, capsys) -> None:
    public = tmp_path / "public.csv"
    pd.DataFrame(
        {"x": np.linspace(1, 99, 80), "c": ["a", "?", "b", "a"] * 20, "y": ["0", "1"] * 40}
    ).to_csv(public, index=False)
    out = tmp_path / "s.yaml"
    code, _, err = run(
        ["schema", "infer", public, "-o", out, "--label", "y", "--na-value", "?"], capsys
    )
    assert code == 0, err
    text = out.read_text()
    assert "# widened: public data spans [1, 99]" in text and "nullable: true" in text
    code, _, err = run(["schema", "check", public, "-s", out], capsys)
    assert code == 0, err


def test_missing_extra_names_the_pip_command() -> None:
    with pytest.raises(InputError, match=r"pip install 'dpevolve\[parquet\]'"):
        require("pyarrow.not_a_module_anywhere", "reading .parquet tables")
    assert require("json", "x").__name__ == "json"
