"""The command line: exit codes, one-line errors, no partial or overwritten outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.cli import ledger_path, main

# The command line's default path: the default method (the adaptive engine). PE's own
# flags are checked where they are about PE (test_cli_softvote.py, test_cli_experience.py).
FAST = ["--quiet"]


@pytest.fixture
def files(tmp_path: Path, small_schema, small_table):
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    private = tmp_path / "private.csv"
    small_table.to_csv(private, index=False)
    return tmp_path, schema, private


def synth_args(private: Path, schema: Path, out: Path, *extra: str) -> list:
    """A fast ``dpevolve synth`` at epsilon 1, delta 1e-5."""
    return [
        "synth",
        private,
        "--schema",
        schema,
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "-o",
        out,
        *FAST,
        *extra,
    ]


def run(argv: list[str], capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_synth_writes_table_and_ledger(files, capsys) -> None:
    folder, schema, private = files
    out = folder / "synthetic.csv"
    code, err = run(
        synth_args(private, schema, out, "--seed", "3"),
        capsys,
    )
    assert code == 0, err
    ledger = json.loads((folder / "synthetic.ledger.json").read_text())
    assert {"epsilon", "delta", "events"} <= set(ledger)
    # the default method ran: the engine's releases, within the budget
    assert "engine" in ledger and ledger["events"] and ledger["epsilon"] <= 1 + 1e-9
    assert {event["mechanism"] for event in ledger["events"]} >= {"marginal"}
    assert len(pd.read_csv(out)) == len(pd.read_csv(private))  # default: as many rows as n
    # the same seed alone gives fresh noise, hence another table ...
    fresh = folder / "fresh.csv"
    assert run(synth_args(private, schema, fresh, "--seed", "3"), capsys)[0] == 0
    assert not pd.read_csv(fresh).equals(pd.read_csv(out))
    # ... and with a noise seed the same bytes, a warning, and no trace of it in the ledger
    seeded = [folder / "seeded.csv", folder / "seeded2.csv"]
    for path in seeded:
        code, err = run(
            synth_args(private, schema, path, "--seed", "3", "--noise-seed", "424242"), capsys
        )
        assert code == 0 and "anyone who holds the noise seed" in err
    assert seeded[0].read_bytes() == seeded[1].read_bytes()
    ledger_text = ledger_path(seeded[0]).read_text()
    assert "424242" not in ledger_text and json.loads(ledger_text)["noise"] == "seeded"


def test_existing_output_is_never_overwritten_without_force(files, capsys) -> None:
    folder, schema, private = files
    out = folder / "synthetic.csv"
    out.write_text("keep me")
    args = synth_args(private, schema, out)
    code, err = run(args, capsys)
    assert code == 2 and "--force" in err
    assert out.read_text() == "keep me"
    assert not ledger_path(out).exists()
    code, err = run([*args, "--force"], capsys)
    assert code == 0, err
    assert out.read_text() != "keep me"


def _bad_tables(table: pd.DataFrame) -> list[pd.DataFrame]:
    nan = table.astype({"hours": float}).copy()
    nan.loc[3, "hours"] = np.nan
    outside = table.copy()
    outside.loc[1, "age"] = 300
    unknown = table.copy()
    unknown.loc[2, "job"] = "astronaut"
    return [nan, outside, unknown, table.assign(extra=1), table.drop(columns="job"), table.iloc[:0]]


def test_malformed_tables_exit_2_with_one_line_and_no_output(files, small_table, capsys) -> None:
    folder, schema, _ = files
    for i, bad in enumerate(_bad_tables(small_table)):
        private = folder / f"bad{i}.csv"
        bad.to_csv(private, index=False)
        out = folder / f"out{i}.csv"
        code, err = run(
            synth_args(private, schema, out),
            capsys,
        )
        assert code == 2, err
        assert err.startswith("dpevolve: error: ") and err.count("\n") == 1, err
        assert not out.exists() and not ledger_path(out).exists()
        assert not list(folder.glob(".*tmp"))


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--epsilon", "0", "--delta", "1e-5"], "epsilon"),
        (["--epsilon", "-2", "--delta", "1e-5"], "epsilon"),
        (["--epsilon", "1", "--delta", "1.5"], "delta"),
        ([], "budget"),
        (["--epsilon", "1", "--delta", "1e-5", "--method", "nope"], "unknown method 'nope'"),
        (["--epsilon", "1", "--population", "30"], "adaptive method takes no population"),
        (["--epsilon", "1", "--method", "missing.yaml"], "missing.yaml"),
        (["--epsilon", "nan", "--delta", "1e-5"], "epsilon"),
        (["--epsilon", "1", "--delta", "1e-5", "--on-invalid", "fix"], "on-invalid"),
        (["--epsilon", "1", "-p", "tabpe", "--population", "0"], "population"),
    ],
)
def test_bad_arguments(files, capsys, extra, needle) -> None:
    folder, schema, private = files
    out = folder / "o.csv"
    code, err = run(["synth", private, "--schema", schema, "-o", out, "--quiet", *extra], capsys)
    assert code == 2, err
    assert needle in err and err.count("\n") == 1, err
    assert not out.exists()


def test_missing_files_and_formats(files, capsys) -> None:
    folder, schema, private = files
    base = ["--epsilon", "1", "--delta", "1e-5", *FAST]
    cases = [
        (
            ["synth", folder / "nope.csv", "--schema", schema, "-o", folder / "a.csv", *base],
            "not found",
        ),
        (
            ["synth", private, "--schema", folder / "nope.yaml", "-o", folder / "a.csv", *base],
            "not found",
        ),
        (["synth", private, "--schema", schema, "-o", folder / "a.xlsx", *base], "format"),
        (["synth", private, "--schema", schema, "-o", folder / "no" / "a.csv", *base], "folder"),
    ]
    for argv, needle in cases:
        code, err = run(argv, capsys)
        assert code == 2 and needle in err, err


schema_values = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.lists(st.integers()),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.dictionaries(
        st.sampled_from(["type", "lo", "hi", "values", "weight", "hierarchy", "integer"]),
        schema_values,
        max_size=4,
    )
)
def test_fuzzed_schemas_give_one_line_errors(files, capsys, decl) -> None:
    folder, _, private = files
    bad = folder / "fuzz.yaml"
    bad.write_text(yaml.safe_dump({"columns": {"age": decl}}))
    out = folder / "fuzz_out.csv"
    code, err = run(
        ["synth", private, "--schema", bad, "--epsilon", "1", "--delta", "1e-5", "-o", out, *FAST],
        capsys,
    )
    assert code == 2, err
    assert err.startswith("dpevolve: error: ") and err.count("\n") == 1, err
    assert not out.exists()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=200))
def test_garbage_private_files(files, capsys, blob) -> None:
    folder, schema, _ = files
    private = folder / "garbage.csv"
    private.write_bytes(blob)
    out = folder / "g_out.csv"
    code, err = run(
        synth_args(private, schema, out),
        capsys,
    )
    assert code == 2, err
    assert err.count("\n") == 1
    assert not out.exists()


def test_schema_infer_and_evaluate(files, small_table, capsys) -> None:
    folder, schema, private = files
    inferred = folder / "inferred.yaml"
    code, err = run(["schema", "infer", private, "-o", inferred, "--label", "income"], capsys)
    assert code == 0, err
    assert "columns" in yaml.safe_load(inferred.read_text())
    code, err = run(["schema", "infer", private, "-o", inferred], capsys)
    assert code == 2 and "--force" in err
    report = folder / "eval.json"
    code, err = run(
        ["evaluate", private, private, "--schema", schema, "--label", "income", "-o", report],
        capsys,
    )
    assert code == 0, err
    result = json.loads(report.read_text())
    assert result["marginals"]["1"]["mean"] == 0.0


def test_usage_errors_exit_2(capsys) -> None:
    assert main(["synth"]) == 2
    assert main(["no-such-command"]) == 2


def test_console_script_exit_codes(files, tmp_path: Path) -> None:
    folder, schema, private = files
    exe = Path(sys.executable).with_name("dpevolve")
    proc = subprocess.run(
        [
            str(exe),
            "synth",
            str(private),
            "--schema",
            str(schema),
            "--epsilon",
            "-1",
            "-o",
            str(folder / "x.csv"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("dpevolve: error:")


def test_policy_show_reproduces_the_spec_table(tmp_path: Path, capsys) -> None:
    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    schema = Schema(
        (
            NumericColumn("age", 17, 90, integer=True),
            CategoricalColumn("workclass", ("Private", "Self-emp", "Gov")),
            CategoricalColumn("sex", ("Male", "Female")),
            NumericColumn("hours-per-week", 1, 99, integer=True),
            CategoricalColumn("income", ("<=50K", ">50K")),
        ),
        label="income",
    )
    schema_file = tmp_path / "adult5.yaml"
    schema_file.write_text(schema.to_yaml())
    expected = {
        "age": (0.019178, [0.5644, 0.3092, 0.1585]),
        "hours": (0.016327, [0.4962, 0.2656, 0.1352]),
        "both": (0.019178, [0.5644, 0.3092, 0.1585]),
        "income": (0.2, [1.0000, 0.9975, 0.9311]),
    }
    policies = {
        "age": {"age": {"threshold": 7}},
        "hours": {"hours-per-week": {"threshold": 8}},
        "both": {"age": {"threshold": 7}, "hours-per-week": {"threshold": 8}},
        "income": {
            "age": {"threshold": 7},
            "hours-per-week": {"threshold": 8},
            "income": "complete",
        },
    }
    for name, attributes in policies.items():
        policy_file = tmp_path / f"{name}.yaml"
        policy_file.write_text(yaml.safe_dump({"attributes": attributes}))
        code = main(
            [
                "policy",
                "show",
                str(policy_file),
                "--schema",
                str(schema_file),
                "--temperature",
                "0.015",
                "--temperature",
                "0.03",
                "--temperature",
                "0.06",
                "--json",
            ]
        )
        out = capsys.readouterr().out
        assert code == 0
        summary = json.loads(out)
        reach, qs = expected[name]
        assert summary["reach"] == pytest.approx(reach, abs=5e-7)
        assert [round(t["q"], 4) for t in summary["temperatures"]] == qs
        assert set(summary) >= {"reach", "attributes", "temperatures"}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"attributes": {"salary": {"threshold": 3}}}))
    code, err = run(["policy", "show", bad, "--schema", schema_file], capsys)
    assert code == 2 and "salary" in err


def test_stream_gives_the_same_table_as_reading_whole(files, capsys) -> None:
    folder, schema, private = files
    outs = []
    for flag in ([], ["--stream", "--batch-rows", "77"]):
        out = folder / f"s{len(flag)}.csv"
        code, err = run(
            synth_args(
                private,
                schema,
                out,
                "--seed",
                "5",
                "--noise-seed",
                "5",
                "--backend",
                "local",
                *flag,
            ),
            capsys,
        )
        assert code == 0, err
        outs.append(pd.read_csv(out))
    pd.testing.assert_frame_equal(outs[0], outs[1])


def test_the_cli_reads_no_ledger_to_learn_what_it_configured(files, capsys, monkeypatch) -> None:
    # What the command says and writes comes from its own settings and the fitted model;
    # from the ledger it only writes, and reads the composed spend for its closing line.
    from dpevolve.privacy import Ledger

    reads: list[tuple[str, str]] = []
    plain = Ledger.__getattribute__

    def spy(self, name: str):
        caller = sys._getframe(1).f_code.co_filename
        if "/dpevolve/cli/" in caller.replace("\\", "/"):
            reads.append((Path(caller).name, name))
        return plain(self, name)

    monkeypatch.setattr(Ledger, "__getattribute__", spy)
    folder, schema, private = files
    argv = synth_args(private, schema, folder / "o.csv", "--engine-options", "{max_rounds: 2}")
    assert run(argv, capsys)[0] == 0
    assert reads, "the spy sees the command's use of the ledger"
    assert {name for _, name in reads} <= {"add_metadata", "write", "result"}, reads


def test_shareable_ledger_withholds_the_seed(files, capsys) -> None:
    folder, schema, private = files
    out, shared = folder / "o.csv", folder / "shared.json"
    code, err = run(
        [*synth_args(private, schema, out, "--seed", "9"), "--share-ledger", shared], capsys
    )
    assert code == 0, err
    full = json.loads(ledger_path(out).read_text())
    public = json.loads(shared.read_text())
    assert full["seed"] == 9 and "seed" not in public
    assert public["epsilon"] == full["epsilon"] and public["events"] == full["events"]
    assert {"seed", "notes", "validation"} <= set(public["withheld"])


def test_policy_audit_exact_within_bounds(tmp_path: Path, capsys) -> None:
    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    schema = Schema(
        (NumericColumn("age", 0, 20, integer=True), CategoricalColumn("sex", ("F", "M")))
    )
    (tmp_path / "s.yaml").write_text(schema.to_yaml())
    (tmp_path / "p.yaml").write_text(yaml.safe_dump({"attributes": {"age": {"threshold": 2}}}))
    pd.DataFrame({"age": [1, 5, 9, 15], "sex": ["F", "M", "F", "M"]}).to_csv(
        tmp_path / "pop.csv", index=False
    )
    code = main(
        [
            "policy",
            "audit",
            str(tmp_path / "p.yaml"),
            "-s",
            str(tmp_path / "s.yaml"),
            "--population",
            str(tmp_path / "pop.csv"),
            "-t",
            "0.05",
            "--json",
        ]
    )
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    for row in result["audit"]:
        assert row["value"] <= row["bound"] + 1e-12
        assert row["edges_checked"] > 0
