"""The report and evaluation through the command line: nothing fails after the budget
is spent, `dpevolve report` from the written files, careless inputs give one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpevolve.cli import main

SCHEMA = {
    "label": "income",
    "columns": {
        "age": {"type": "numeric", "lo": 17, "hi": 90, "integer": True},
        "hours": {"type": "numeric", "lo": 0, "hi": 100, "nullable": True},
        "joined": {"type": "date", "lo": "2000-01-01", "hi": "2020-12-31"},
        "job": {"type": "categorical", "values": ["admin", "builder", "driver", "retired"]},
        "income": {"type": "categorical", "values": ["<=50K", ">50K"]},
    },
}
SECRET = 987654.5  # a private cell that must never appear in a message


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    hours = rng.uniform(10, 60, n).round(1)
    hours[rng.random(n) < 0.1] = np.nan
    days = rng.integers(0, 7000, n)
    joined = (pd.Timestamp("2000-01-01") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d")
    job = rng.choice(["admin", "builder", "driver", "retired"], n)
    income = np.where((age > 40) & (np.nan_to_num(hours) > 35), ">50K", "<=50K")
    return pd.DataFrame(
        {"age": age, "hours": hours, "joined": joined, "job": job, "income": income}
    )


def _cli(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err


def _one_clean_line(err: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("dpevolve: error: ")
    assert "Traceback" not in err and str(SECRET) not in err


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One small synth run with --report and --share-report (nullable and date columns)."""
    folder = tmp_path_factory.mktemp("run")
    schema = folder / "schema.yaml"
    schema.write_text(yaml.safe_dump(SCHEMA))
    private, test = folder / "private.csv", folder / "test.csv"
    _table(300, 1).to_csv(private, index=False)
    _table(120, 2).to_csv(test, index=False)
    out = folder / "synthetic.csv"
    code = main(
        [str(a) for a in ["synth", private, "-s", schema, "-e", "1", "-o", out, "--seed", "0",
         "--engine-options", "{max_rounds: 4}", "--rows", "150", "-q",
         "--report", folder / "owner.html", "--share-report", folder / "public.html"]]
    )  # fmt: skip
    assert code == 0
    return {
        "folder": folder, "schema": schema, "private": private, "test": test,
        "synthetic": out, "ledger": folder / "synthetic.ledger.json",
    }  # fmt: skip


def test_synth_report_with_nullable_and_date_columns(run: dict[str, Path]) -> None:
    owner = (run["folder"] / "owner.html").read_text()
    public = (run["folder"] / "public.html").read_text()
    # The rows written (150), not the candidate population (40), are scored.
    assert "150" in owner and "synthetic rows" in owner
    assert 'id="dcr"' in owner and "Distance to the closest private record" in owner
    assert 'id="dcr"' not in public and "closest private" not in public
    assert "equal to a private record" not in public
    assert 'id="rows"' in public  # distinct / duplicated rows: from the released table
    # Dates are shown as dates, the schema says nullable, epsilon is rounded for humans.
    assert re.search(r"20[0-2]\d-\d\d-\d\d / 20[0-2]\d-\d\d-\d\d", owner)
    assert "<th>nullable</th>" in owner
    assert "0.9999999" not in owner and "0.9999999" not in public


def test_evaluate_accepts_a_date_column(run: dict[str, Path], capsys) -> None:
    code, err = _cli(
        ["evaluate", run["private"], run["synthetic"], "-s", run["schema"], "--test", run["test"]],
        capsys,
    )
    assert code == 0, err


def test_report_from_written_files(run: dict[str, Path], capsys) -> None:
    out = run["folder"] / "later.html"
    code, err = _cli(
        ["report", run["private"], run["synthetic"], "--ledger", run["ledger"],
         "--test", run["test"], "-o", out, "-q"], capsys,
    )  # fmt: skip
    assert code == 0, err
    page = out.read_text()
    assert "held-out real rows" in page and "trained on real" in page
    assert 'id="dcr"' in page
    shared = run["folder"] / "later-public.html"
    code, err = _cli(
        ["report", run["private"], run["synthetic"], "--ledger", run["ledger"], "--share",
         "-o", shared, "-q"], capsys,
    )  # fmt: skip
    assert code == 0, err
    assert 'id="dcr"' not in shared.read_text()


def test_report_without_test_says_it_is_optimistic(run: dict[str, Path], capsys) -> None:
    out = run["folder"] / "no-test.html"
    code, err = _cli(
        ["report", run["private"], run["synthetic"], "-l", run["ledger"], "-o", out, "-q"], capsys
    )
    assert code == 0, err
    assert "No held-out table was given" in out.read_text()


def _careless(run: dict[str, Path]) -> list[tuple[str, list[object]]]:
    f = run["folder"]
    (f / "not-json.json").write_text("{ nope")
    (f / "no-events.json").write_text(json.dumps({"epsilon": 1.0, "delta": 1e-5}))
    bad = pd.read_csv(run["synthetic"]).assign(hours=SECRET)
    bad.to_csv(f / "bad-synth.csv", index=False)
    _table(299, 3).to_csv(f / "other-private.csv", index=False)
    (f / "exists.html").write_text("keep")
    base = [run["private"], run["synthetic"], "--ledger", run["ledger"]]
    two = base[:2]
    return [
        ("missing ledger", ["report", *two, "-l", f / "nope.json", "-o", f / "x1.html"]),
        ("ledger not JSON", ["report", *two, "-l", f / "not-json.json", "-o", f / "x2.html"]),
        ("ledger lacks keys", ["report", *two, "-l", f / "no-events.json", "-o", f / "x3.html"]),
        ("bad synthetic", ["report", run["private"], f / "bad-synth.csv", "-l", run["ledger"],
                           "-o", f / "x4.html"]),
        ("another private", ["report", f / "other-private.csv", run["synthetic"], "-l",
                             run["ledger"], "-o", f / "x5.html"]),
        ("output is an input", ["report", *base, "-o", run["private"], "--force"]),
        ("output exists", ["report", *base, "-o", f / "exists.html"]),
        ("share with test", ["report", *base, "--share", "--test", run["test"],
                             "-o", f / "x6.html"]),
        ("missing synthetic", ["report", run["private"], f / "none.csv", "-l", run["ledger"],
                               "-o", f / "x7.html"]),
        ("evaluate -o input", ["evaluate", run["private"], run["synthetic"], "-s", run["schema"],
                               "-o", run["synthetic"], "--force"]),
        ("evaluate bad synthetic", ["evaluate", run["private"], f / "bad-synth.csv", "-s",
                                    run["schema"], "-o", f / "x8.json"]),
    ]  # fmt: skip


def test_careless_report_inputs_give_one_clean_line(run: dict[str, Path], capsys) -> None:
    before = {p: p.read_bytes() for p in run["folder"].iterdir() if p.is_file()}
    for name, argv in _careless(run):
        code, err = _cli(argv, capsys)
        assert code == 2, (name, err)
        _one_clean_line(err)
    for n in range(1, 9):  # no output was left behind
        assert not any(run["folder"].glob(f"x{n}.*")), n
    assert (run["folder"] / "exists.html").read_text() == "keep"
    for path, data in before.items():
        assert path.read_bytes() == data, path


def test_synth_never_overwrites_an_input_and_checks_rows_first(
    run: dict[str, Path], capsys, tmp_path: Path
) -> None:
    private = run["private"]
    data = private.read_bytes()
    code, err = _cli(
        ["synth", private, "-s", run["schema"], "-e", "1", "-o", private, "--force"], capsys
    )
    assert code == 2 and "never overwritten" in err
    _one_clean_line(err)
    assert private.read_bytes() == data
    out = tmp_path / "huge.csv"
    code, err = _cli(
        ["synth", private, "-s", run["schema"], "-e", "1", "-o", out, "--rows", 10**12], capsys
    )
    assert code == 2 and "--rows" in err
    _one_clean_line(err)
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing spent


def test_report_rehearsal_covers_every_column_type() -> None:
    from dpevolve.cli.preflight import rehearse_report
    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    columns = {
        **SCHEMA["columns"],
        "seen": {"type": "datetime", "lo": "2020-01-01 00:00:00", "hi": "2020-12-31 23:59:59"},
        "team": {"type": "categorical", "values": ["a", "b"], "nullable": True},
        "place": {
            "type": "categorical",
            "values": ["x", "y", "z"],
            "hierarchy": {"near": ["x", "y"], "far": ["z"]},
        },
    }
    schema = Schema.from_dict({"label": SCHEMA["label"], "columns": columns})
    # Every declared kind, each way a column can hold a missing cell, and a hierarchy.
    assert {c.to_dict()["type"] for c in schema.columns} == {
        "numeric",
        "date",
        "datetime",
        "categorical",
    }
    assert any(isinstance(c, NumericColumn) and c.nullable for c in schema.columns)
    categorical = [c for c in schema.columns if isinstance(c, CategoricalColumn)]
    assert any(c.nullable for c in categorical) and any(c.hierarchy for c in categorical)
    rehearse_report(schema)  # raises if the report cannot be made


def test_demo_checks_extras_before_making_its_folder(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dpevolve.cli.demo as demo
    from dpevolve.errors import InputError

    def missing(module: str, feature: str) -> None:
        raise InputError(f"{feature} needs {module}: pip install 'dpevolve[report]'")

    monkeypatch.setattr(demo, "require", missing)
    code, err = _cli(["demo", "-o", tmp_path / "out", "-q"], capsys)
    assert code == 2
    _one_clean_line(err)
    assert not (tmp_path / "out").exists()


def test_outputs_never_name_an_input_by_any_path(tmp_path: Path) -> None:
    from dpevolve.cli.preflight import check_paths
    from dpevolve.errors import InputError

    private = tmp_path / "private.csv"
    private.write_text("a\n1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "hard.csv").hardlink_to(private)
    (tmp_path / "soft.csv").symlink_to(private)
    for alias in (private, tmp_path / "sub" / ".." / "private.csv", tmp_path / "hard.csv",
                  tmp_path / "soft.csv"):  # fmt: skip
        with pytest.raises(InputError, match="never overwritten"):
            check_paths([private], [alias], force=True)
    with pytest.raises(InputError, match="named twice"):
        check_paths([private], [tmp_path / "o.csv", tmp_path / "sub" / ".." / "o.csv"], False)
    check_paths([private], [tmp_path / "o.csv", None], force=False)  # a fresh path is fine
    assert private.read_text() == "a\n1\n"


def test_row_bounds_come_from_the_schema(tmp_path: Path) -> None:
    from dpevolve.cli.preflight import check_rows, row_bytes
    from dpevolve.data.schema import Schema
    from dpevolve.errors import InputError

    schema = Schema.from_dict(SCHEMA)
    memory, text = row_bytes(schema)
    # date: 10 characters, "builder"/"retired": 7, "<=50K": 5, integers: 3 digits.
    assert memory == 8 * 6 * 5 and text > 10 + 7 + 5 + 3
    check_rows(1000, schema, tmp_path)
    with pytest.raises(InputError, match="at most"):
        check_rows(10**15, schema, tmp_path)


def test_report_of_a_streamed_table_reads_a_bounded_sample(
    run: dict[str, Path], capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dpevolve.cli.report as report_cli

    def whole_table(*_: object, **__: object) -> None:
        raise AssertionError("--stream must not read the private table whole")

    monkeypatch.setattr(report_cli, "REPORT_SAMPLE_ROWS", 100)
    monkeypatch.setattr(report_cli, "read_table", lambda path, what: (
        whole_table() if what == "private table" else pd.read_csv(path)
    ))  # fmt: skip
    out = run["folder"] / "streamed.html"
    code, err = _cli(
        ["report", run["private"], run["synthetic"], "-l", run["ledger"], "-o", out,
         "--stream", "-q"], capsys,
    )  # fmt: skip
    assert code == 0, err
    text = re.sub(r"\s+", " ", out.read_text(encoding="utf-8"))
    assert "uniform sample of 100 of its 300 rows" in text


def test_sample_frame_is_a_uniform_bounded_sample(tmp_path: Path) -> None:
    from dpevolve.data.io import read_table
    from dpevolve.data.schema import Schema
    from dpevolve.data.streaming import StreamedTable

    path = tmp_path / "t.csv"
    _table(500, 3).to_csv(path, index=False)
    table = read_table(path)  # the cells as texts, as the streamed sample holds them
    streamed = StreamedTable(path, Schema.from_dict(SCHEMA), batch_rows=37)
    sample = streamed.sample_frame(120, seed=4)
    assert len(sample) == 120 and list(sample.columns) == list(table.columns)
    # Rows of the file, distinct, in file order; every batch can contribute.
    positions = table.reset_index().merge(sample, on=list(table.columns))["index"]
    assert positions.is_unique and positions.is_monotonic_increasing and len(positions) == 120
    assert positions.max() > 400 and positions.min() < 100
    assert len(streamed.sample_frame(10_000)) == 500  # fewer rows than asked: all of them
    # Uniform: each row's inclusion rate over seeds is 120/500 (seeded twin, fixed seeds).
    hits = np.zeros(500)
    for seed in range(200):
        pos = table.reset_index().merge(streamed.sample_frame(120, seed=seed),
                                        on=list(table.columns))["index"]  # fmt: skip
        hits[pos.to_numpy()] += 1
    first, last = hits[:250].mean() / 200, hits[250:].mean() / 200
    assert abs(first - 0.24) < 0.02 and abs(last - 0.24) < 0.02


def test_synth_stream_report_reads_a_bounded_sample(
    run: dict[str, Path], capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dpevolve.cli.report as report_cli

    monkeypatch.setattr(report_cli, "REPORT_SAMPLE_ROWS", 50)
    monkeypatch.setattr(report_cli, "read_table", None)  # any whole read would fail
    f = run["folder"]
    code, err = _cli(
        ["synth", run["private"], "-s", run["schema"], "-e", "1", "-o", f / "streamed.csv",
         "--seed", "0", "--engine-options", "{max_rounds: 4}", "--stream", "--batch-rows",
         "64", "-q", "--report", f / "streamed-owner.html"], capsys,
    )  # fmt: skip
    assert code == 0, err
    text = re.sub(r"\s+", " ", (f / "streamed-owner.html").read_text(encoding="utf-8"))
    assert "uniform sample of 50 of its 300 rows" in text
