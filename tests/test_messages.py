"""Messages about a private table quote no cell unless the user asks for values.

Each table here hides one secret marker (a string or a number) in one bad cell; every
error, whatever path raised it, must name the column, the problem, a count and the
first row, and must not contain the marker unless ``show_values``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.io import read_table
from dpevolve.data.messages import reader_error, show_values
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.streaming import StreamedTable
from dpevolve.errors import InputError
from dpevolve.presets import get_method

SCHEMA = Schema(
    (
        NumericColumn("age", 17, 90, integer=True),
        CategoricalColumn("job", ("admin", "driver", "retired")),
        NumericColumn("hours", 0.0, 99.5),
    )
)

# (column, secret cell, its text): text in a numeric column, a number far outside the
# range, a non-integer in an integer column, an undeclared category.
secrets = st.one_of(
    st.tuples(
        st.sampled_from(["age", "hours", "job"]),
        st.text("ABCDEFGHJKLMNPQRSTUVWXYZ", min_size=8, max_size=12).map(lambda s: f"SSN-{s}"),
    ),
    st.tuples(st.sampled_from(["age", "hours"]), st.integers(1_000_003, 10**9)),
    st.tuples(
        st.just("age"),
        st.integers(17_000_001, 89_999_999).filter(lambda k: k % 1000 != 0).map(lambda k: k / 1e6),
    ),
)


def table_with(rows: int, seed: int, column: str, secret: Any, row: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(17, 91, rows),
            "job": rng.choice(["admin", "driver", "retired"], rows),
            "hours": rng.integers(0, 99, rows).astype(float),
        }
    ).astype(object)
    frame.loc[row, column] = secret
    return frame


def text_of(secret: Any) -> str:
    return str(secret)


def check_message(message: str, secret: Any, column: str, row: int, shown: bool) -> None:
    assert "\n" not in message
    assert f"column '{column}'" in message and f"first at row {row}" in message
    assert (text_of(secret) in message) == shown, message
    assert "np.int64" not in message and "np.float64" not in message


@settings(max_examples=60, deadline=None)
@given(
    st.integers(2, 40), st.integers(0, 2**16), secrets, st.data(), st.sampled_from([False, True])
)
def test_validation_errors_hide_cells(
    rows: int, seed: int, secret: tuple[str, Any], data: st.DataObject, shown: bool
) -> None:
    column, value = secret
    row = data.draw(st.integers(0, rows - 1))
    table = table_with(rows, seed, column, value, row)
    with pytest.raises(InputError) as info:
        SCHEMA.validate(table, what="private table", show_values=shown)
    check_message(str(info.value), value, column, row, shown)
    with show_values(shown), pytest.raises(InputError) as again:  # the context says the same
        SCHEMA.validate(table, what="private table")
    assert str(again.value) == str(info.value)


@settings(max_examples=20, deadline=None)
@given(
    st.integers(2, 40), st.integers(0, 2**16), secrets, st.data(), st.sampled_from([False, True])
)
def test_streamed_errors_hide_cells(
    rows: int, seed: int, secret: tuple[str, Any], data: st.DataObject, shown: bool
) -> None:
    column, value = secret
    row = data.draw(st.integers(0, rows - 1))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "private.csv"
        table_with(rows, seed, column, value, row).to_csv(path, index=False)
        with show_values(shown), pytest.raises(InputError) as info:
            StreamedTable(path, SCHEMA, batch_rows=7)
        check_message(str(info.value), value, column, row, shown)


def test_cell_values_read_as_plain_python(tmp_path: Path) -> None:
    frame = table_with(5, 0, "age", 1455435, 3)
    with pytest.raises(InputError, match=r"first at row 3: 1455435\)"):
        SCHEMA.validate(frame, show_values=True)
    frame = table_with(5, 0, "hours", np.nan, 2)
    with pytest.raises(InputError, match=r"missing \(NaN\) \(first at row 2\);"):
        SCHEMA.validate(frame)


def test_reader_errors_hide_rows_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "private.csv"
    path.write_text("age,job,hours\n20,admin,3\n40,driver,5,SSN-SECRET-ROW\n")
    with pytest.raises(InputError, match="Expected 3 columns, got 4") as info:
        StreamedTable(path, SCHEMA)
    assert "SSN-SECRET-ROW" not in str(info.value)
    with show_values(), pytest.raises(InputError, match="SSN-SECRET-ROW"):
        StreamedTable(path, SCHEMA)
    binary = tmp_path / "latin.csv"
    binary.write_bytes(b"age,job,hours\n20,adm\xefn,3\n")
    with pytest.raises(InputError, match="is not UTF-8 text") as info:
        read_table(binary)
    assert "0xef" not in str(info.value) and "latin.csv" in str(info.value)
    # the redaction of a codec's text keeps its shape and says "a byte" once
    codec = UnicodeDecodeError("utf-8", b"adm\xefn", 3, 4, "invalid continuation byte")
    assert "a a byte" not in reader_error(codec) and "0xef" not in reader_error(codec)
    quoted = ValueError("could not convert string to float: 'SSN-999'")
    assert "SSN-999" not in reader_error(quoted) and "SSN-999" in reader_error(quoted, True)


def test_drop_leaves_no_cell_in_the_ledger(small_schema, small_table) -> None:
    table = small_table.astype(object)
    table.loc[11, "job"] = "SSN-LEDGER-MARKER"
    table.loc[12, "age"] = 1455435
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        method=get_method("tabpe", population=16, rounds=1),
        on_invalid="drop",
        random_state=0,
    ).fit(table)
    text = model.ledger_.to_json()
    assert "SSN-LEDGER-MARKER" not in text and "1455435" not in text


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    schema = tmp_path / "schema.yaml"
    schema.write_text(SCHEMA.to_yaml())
    table = tmp_path / "private.csv"
    table_with(10, 1, "job", "SSN-CLI-MARKER", 6).to_csv(table, index=False)
    return schema, table


@pytest.mark.parametrize("shown", [False, True])
def test_cli_shows_values_only_when_asked(files, capsys, shown: bool) -> None:
    schema, table = files
    flag = ["--show-values"] if shown else []
    assert main(["schema", "check", str(table), "-s", str(schema), *flag]) == 2
    err = capsys.readouterr().err
    assert "first at line 8" in err and ("SSN-CLI-MARKER" in err) == shown


def test_cli_internal_errors_hide_their_text(files, capsys, monkeypatch) -> None:
    schema, table = files

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("cell SSN-INTERNAL-MARKER broke the reader")

    monkeypatch.setattr("dpevolve.cli.schema.read_table", broken)
    assert main(["schema", "check", str(table), "-s", str(schema)]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError" in err and "SSN-INTERNAL-MARKER" not in err
    assert main(["schema", "check", str(table), "-s", str(schema), "--show-values"]) == 1
    assert "SSN-INTERNAL-MARKER" in capsys.readouterr().err


def test_duplicate_header_is_bad_input(files, tmp_path: Path, capsys) -> None:
    schema, _ = files
    table = tmp_path / "dup.csv"
    table.write_text("age,job,hours,age\n20,admin,3,21\n")
    argv = ["synth", str(table), "-s", str(schema), "-o", str(tmp_path / "o.csv"), "-e", "1"]
    assert main([*argv, "--stream", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "dpevolve: error: private table has column 'age' twice (duplicate header)"
    frame = pd.DataFrame([[20, "admin", 3.0, 21]], columns=["age", "job", "hours", "age"])
    with pytest.raises(InputError, match="'age' twice"):
        SCHEMA.validate(frame)
