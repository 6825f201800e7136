"""The command line as a new user meets it: help, version, messages, repair options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

import dpevolve
from dpevolve.cli import main
from dpevolve.errors import InputError
from dpevolve.extras import require

# The default method (the adaptive engine), in a few rounds.
FAST = ["--engine-options", "{max_rounds: 4}"]
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
    ("words", "needle"),
    [
        ({"method": "tabpe", "vote": {"kind": "soft"}}, "vote soft needs a temperature"),
        ({"method": "tabpe", "vote": {"temperature": "auto"}},
         "temperature 'auto' needs public data (--public)"),
        ({"method": "tabpe", "vote": {"kind": "hard", "temperature": 0.1}},
         "a temperature is for vote soft"),
        ({"method": "tabpe", "vote": {"kind": "soft", "temperature": "abc"}},
         "temperature must be a number"),
        # The default method casts no vote: it refuses one by name, never switches.
        ({"vote": {"kind": "soft", "temperature": 0.1}}, "the adaptive method takes no vote"),
        ({"method": "tabpe", "engine": {"bins": 8}}, "runs Private Evolution"),
        ({"method": "tabpe", "votes": "hard"}, "unknown settings ['votes']"),
    ],
)  # fmt: skip
def test_run_file_messages_name_the_setting(files, capsys, words, needle) -> None:
    folder, schema, private = files
    run_file = folder / "run.yaml"
    run_file.write_text(yaml.safe_dump(words))
    argv = ["synth", private, "-s", schema, "-e", "1", "-o", folder / "o.csv"]
    code, _, err = run([*argv, "--method", run_file], capsys)
    assert code == 2 and needle in err and err.count("\n") == 1, err
    assert not (folder / "o.csv").exists()


def test_rows_share_report_and_automatic_choices(files, capsys) -> None:
    folder, schema, private = files
    out, share = folder / "s.csv", folder / "public.html"
    argv = ["synth", private, "-s", schema, "-e", "1", "-o", out, "--rows", 77, *FAST]
    code, _, err = run([*argv, "--share-report", share], capsys)
    assert code == 0, err
    assert len(pd.read_csv(out)) == 77
    # every automatic choice is said, with its reason
    assert "backend: " in err and "--backend auto" in err
    assert "delta: " in err and "1/(n ln n)" in err
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


# ------------------------------------------------------------ a steward's own table
def _steward_files(folder: Path, small_table: pd.DataFrame) -> dict[str, Path]:
    """A steward's own table with an integer id and a text reference, split three ways."""
    rng = np.random.default_rng(3)
    table = small_table.assign(
        id=rng.permutation(np.arange(100_000, 100_000 + len(small_table))),
        ref=[f"R{k:05d}" for k in rng.permutation(len(small_table))],
    )[["id", "age", "job", "hours", "ref", "income"]]
    paths = {k: folder / f"{k}.csv" for k in ("public", "private", "test")}
    table.iloc[:150].to_csv(paths["public"], index=False)
    table.iloc[150:330].to_csv(paths["private"], index=False)
    table.iloc[330:].to_csv(paths["test"], index=False)
    paths["schema"] = folder / "schema.yaml"
    return paths


def test_a_stewards_run_end_to_end(tmp_path: Path, small_table, capsys) -> None:
    p = _steward_files(tmp_path, small_table)
    code, _, err = run(["schema", "infer", p["public"], "--label", "income", "-o", p["schema"]],
                       capsys)  # fmt: skip
    assert code == 0 and "and 2 identifiers" in err, err
    code, out, _ = run(["schema", "check", p["private"], "-s", p["schema"]], capsys)
    assert code == 0 and "column 'id': an identifier, not modelled" in out
    out_csv, report, share = tmp_path / "s.csv", tmp_path / "r.html", tmp_path / "p.html"
    argv = ["synth", p["private"], "-s", p["schema"], "--public", p["public"], "-e", "1",
            "-o", out_csv, "--rows", 60, "--seed", 5, "--report", report, "--test", p["test"],
            "--share-report", share]  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    closing = err.strip().splitlines()[-1]
    for path in (out_csv, tmp_path / "s.ledger.json", report, share):
        assert str(path) in closing
    synthetic = pd.read_csv(out_csv)
    assert list(synthetic.columns) == list(pd.read_csv(p["private"]).columns)
    assert synthetic["id"].min() == 1_000_000 and synthetic["ref"].str.startswith("syn-").all()
    ledger = json.loads((tmp_path / "s.ledger.json").read_text())
    assert "fine:id" not in json.dumps(ledger["events"]) and ledger["rows_written"] == 60
    assert "held-out real rows" in report.read_text()  # --test reached the owner's report
    assert "identifier, not modelled" in share.read_text()
    # The same run again from its ledger: rows, seed and settings, and a warning.
    again = tmp_path / "again.csv"
    code, _, err = run(["synth", p["private"], "-s", p["schema"], "--public", p["public"],
                        "-o", again, "--config", tmp_path / "s.ledger.json"], capsys)  # fmt: skip
    assert code == 0, err
    assert "repeats that ledger's run (60 rows" in err and "spent again" in err
    second = json.loads((tmp_path / "again.ledger.json").read_text())
    assert second["seed"] == ledger["seed"] and second["config"] == ledger["config"]
    assert len(pd.read_csv(again)) == 60


def test_a_tiny_table_gets_a_warning_with_the_figure(files, small_table, capsys) -> None:
    folder, schema, _ = files
    tiny = folder / "tiny.csv"
    small_table.iloc[:20].to_csv(tiny, index=False)
    argv = ["synth", tiny, "-s", schema, "-e", "1", "-o", folder / "t.csv", "--noise-seed", 1]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert "the private table has 20 rows" in err and "below about 132 rows" in err
    big = ["synth", folder / "private.csv", "-s", schema, "-e", "1", "-o", folder / "b.csv"]
    code, _, err = run([*big, "--noise-seed", 1], capsys)
    assert code == 0 and "mostly noise" not in err


def test_rows_are_named_by_their_line_in_the_file(files, small_table, capsys) -> None:
    folder, schema, _ = files
    bad = small_table.copy()
    bad.loc[9, "age"] = 300  # the 10th data row: line 11 of the file, as a spreadsheet shows
    path = folder / "bad.csv"
    bad.to_csv(path, index=False)
    code, _, err = run(["synth", path, "-s", schema, "-e", "1", "-o", folder / "x.csv"], capsys)
    assert code == 2 and "(first at line 11)" in err
    code, _, err = run(["schema", "check", path, "-s", schema], capsys)
    assert code == 2 and "(first at line 11)" in err


def test_python_dash_m_dpevolve_runs() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "dpevolve", "--version"], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == f"dpevolve {dpevolve.__version__}"


def test_careless_steward_inputs_give_one_clean_line(tmp_path: Path, small_table, capsys) -> None:
    p = _steward_files(tmp_path, small_table)
    code, _, err = run(["schema", "infer", p["public"], "--label", "income", "-o", p["schema"]],
                       capsys)  # fmt: skip
    assert code == 0, err
    declared = p["schema"].read_text()
    spec = yaml.safe_load(declared)

    def variant(name: str, column: str, decl: dict) -> Path:
        path = tmp_path / name
        path.write_text(yaml.safe_dump({**spec, "columns": {**spec["columns"], column: decl}}))
        return path

    narrow = variant("narrow.yaml", "id", {"type": "id", "integer": True, "lo": 0, "hi": 99999})
    loose = variant("loose.yaml", "id", {"type": "id", "integer": True})
    label_id = variant("label-id.yaml", "income", {"type": "id"})
    prefixed = tmp_path / "prefixed.csv"
    pd.read_csv(p["private"]).assign(ref="syn-SECRET").to_csv(prefixed, index=False)
    not_json = tmp_path / "broken.ledger.json"
    not_json.write_text("{ nope")
    out = tmp_path / "o.csv"
    synth = ["synth", p["private"], "-s", p["schema"], "-e", "1"]
    cases: list[list[object]] = [
        [*synth, "-o", "."],
        [*synth, "-o", tmp_path],
        [*synth, "-o", out, "--test", p["test"]],  # --test without --report
        [*synth, "-o", out, "--report", tmp_path / "r.html", "--test", tmp_path / "nope.csv"],
        ["synth", p["private"], "-s", narrow, "-e", "1", "-o", out],
        ["synth", p["private"], "-s", loose, "-e", "1", "-o", out],
        ["synth", p["private"], "-s", label_id, "-e", "1", "-o", out],
        ["synth", prefixed, "-s", p["schema"], "-e", "1", "-o", out],
        ["synth", p["private"], "-s", p["schema"], "-o", out, "--config", not_json],
        ["synth", p["private"], "-s", p["schema"], "-o", out, "--config", not_json, "-e", "1"],
        ["evaluate", p["private"], p["private"], "-s", p["schema"], "-o", tmp_path],
        ["schema", "infer", p["public"], "-o", "."],
        ["schema", "check", prefixed, "-s", p["schema"]],
        ["schema", "check", p["private"], "-s", narrow],
    ]
    for argv in cases:
        code, _, err = run(argv, capsys)
        assert code == 2, (argv, err)
        last = err.strip().splitlines()[-1]
        assert last.startswith("dpevolve: error: ") and "Traceback" not in err, (argv, err)
        assert len([line for line in err.splitlines() if line.startswith("dpevolve")]) == 1
        assert "SECRET" not in err and "internal error" not in err
    assert not out.exists() and not (tmp_path / "o.ledger.json").exists()
    assert p["schema"].read_text() == declared
