"""Streaming a private table from disk gives what reading it whole gives.

Every check compares a :class:`StreamedTable` read in small batches with the same file
read by pandas and validated in memory: encoded records, vote histograms, validation
reports, errors, row counts and a whole fit.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.backends import LocalBackend
from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.io import read_table
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.streaming import StreamedTable, fit_file
from dpevolve.errors import InputError
from dpevolve.pe.distance import make_distance
from dpevolve.pe.specs import VoteSpec
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote
from dpevolve.presets import get_method

FORMATS = ["csv", "csv.gz", "parquet"]


def write(frame: pd.DataFrame, folder: Path, fmt: str, name: str = "private") -> Path:
    path = folder / f"{name}.{fmt}"
    if fmt == "parquet":
        # Parquet columns have one type: a column mixing text and numbers becomes text.
        frame = frame.copy()
        for column in frame.columns:
            kinds = {type(v) for v in frame[column] if not pd.isna(v)}
            if len(kinds) > 1:
                frame[column] = [None if pd.isna(v) else str(v) for v in frame[column]]
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)  # pandas infers gzip from the suffix
    return path


def in_memory(path: Path, schema: Schema, on_invalid: str = "error"):
    """The reference: the whole file read by pandas, validated, encoded."""
    frame, report = schema.validate(read_table(path), on_invalid=on_invalid, what="private table")
    return encode(frame, schema), report


def streamed(path: Path, schema: Schema, batch_rows: int, on_invalid: str = "error"):
    table = StreamedTable(path, schema, batch_rows=batch_rows, on_invalid=on_invalid)
    return table, Records.concat(list(table.batches()))


@pytest.fixture
def dirty_table(small_table: pd.DataFrame) -> pd.DataFrame:
    """Bad cells of every kind, spread over several batches of 37 rows."""
    frame = small_table.astype({"age": float, "job": object, "hours": object})
    frame.loc[[5, 100], "age"] = [200.0, -3.0]
    frame.loc[300, "age"] = np.nan
    frame.loc[[7, 250], "job"] = ["pilot", None]
    frame.loc[[9, 399], "hours"] = ["lots", 150]
    return frame


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("batch_rows", [37, 400, 5000])
def test_records_equal_in_memory(tmp_path, small_schema, small_table, fmt, batch_rows):
    path = write(small_table, tmp_path, fmt)
    table, records = streamed(path, small_schema, batch_rows)
    expected, report = in_memory(path, small_schema)
    assert records.equals(expected)
    assert table.rows == len(table) == len(small_table)
    assert table.report == report
    assert all(len(b) <= batch_rows for b in table.batches())


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("distance", ["gower", "tabpe"])
def test_histogram_equals_in_memory(tmp_path, small_schema, small_table, fmt, distance):
    path = write(small_table, tmp_path, fmt)
    table = StreamedTable(path, small_schema, batch_rows=37)
    expected, _ = in_memory(path, small_schema)
    population = Variation(Layout.of(small_schema)).random(50, np.random.default_rng(1))
    metric = make_distance(distance, small_schema)
    backend = LocalBackend(chunk_cells=1000)
    hard = backend.vote(table.batches(), population, metric, HardVote())
    np.testing.assert_array_equal(hard, backend.vote(expected, population, metric, HardVote()))
    soft = SoftVote(0.05)
    np.testing.assert_allclose(
        backend.vote(table.batches(), population, metric, soft),
        backend.vote(expected, population, metric, soft),
        rtol=0,
        atol=1e-9,
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_drop_and_clip_match_in_memory(tmp_path, small_schema, dirty_table, fmt, mode):
    path = write(dirty_table, tmp_path, fmt)
    table, records = streamed(path, small_schema, 37, on_invalid=mode)
    expected, report = in_memory(path, small_schema, mode)
    assert table.report == report
    assert table.report.to_dict() == report.to_dict()
    assert list(table.report.dropped) == list(report.dropped)  # same (schema) order
    assert table.rows == report.rows_out == len(records)
    assert records.equals(expected)


def _head(message: str) -> str:
    """The error up to the example cell (pandas and pyarrow type a cell differently)."""
    return re.sub(r"first at row (\d+): .*", r"first at row \1", message)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "damage",
    [
        {"age": {5: 200.0, 100: -3.0}},  # outside the range, across batches
        {"age": {300: 200.0, 20: np.nan}},  # NaN outranks a range error earlier in the file
        {"hours": {390: "lots", 3: 150}},  # text in a numeric column, only in the last batch
        {"job": {250: "pilot"}, "hours": {399: 150}},  # first bad column in schema order
    ],
)
def test_error_matches_in_memory(tmp_path, small_schema, small_table, fmt, damage):
    frame = small_table.astype(object)
    for column, cells in damage.items():
        for row, value in cells.items():
            frame.loc[row, column] = value
    path = write(frame, tmp_path, fmt)
    with pytest.raises(InputError) as whole:
        in_memory(path, small_schema)
    with pytest.raises(InputError) as streaming:
        StreamedTable(path, small_schema, batch_rows=37)
    assert _head(str(streaming.value)) == _head(str(whole.value))
    assert "\n" not in str(streaming.value)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_fit_file_equals_fit(tmp_path, small_schema, small_table, fmt):
    path = write(small_table, tmp_path, fmt)
    settings = {
        "epsilon": 1.0,
        "random_state": 11,
        "noise_seed": 11,
        "method": get_method("tabpe", population=64, rounds=3),
    }
    whole = Synthesizer(small_schema, **settings).fit(read_table(path))
    streamed_model = fit_file(Synthesizer(small_schema, **settings), path, batch_rows=37)
    pd.testing.assert_frame_equal(streamed_model.synthetic_, whole.synthetic_)
    assert streamed_model.population_.equals(whole.population_)
    assert streamed_model.n_private_ == whole.n_private_ == len(small_table)
    assert streamed_model.ledger_.to_dict() == whole.ledger_.to_dict()
    assert streamed_model.history_ == whole.history_


def test_fit_file_drop_soft_vote(tmp_path, small_schema, dirty_table):
    path = write(dirty_table, tmp_path, "csv")
    settings = {
        "epsilon": 2.0,
        "random_state": 5,
        "noise_seed": 5,
        "method": get_method(
            "tabpe", population=32, rounds=2, vote=VoteSpec(kind="soft", temperature=0.1)
        ),
        "on_invalid": "drop",
    }
    whole = Synthesizer(small_schema, **settings).fit(read_table(path))
    streamed_model = fit_file(Synthesizer(small_schema, **settings), path, batch_rows=50)
    pd.testing.assert_frame_equal(streamed_model.synthetic_, whole.synthetic_)
    validation = streamed_model.ledger_.to_dict()["validation"]
    assert validation == whole.ledger_.to_dict()["validation"]
    assert validation["rows_out"] == 393


def test_batches_are_fresh_passes(tmp_path, small_schema, small_table):
    table = StreamedTable(write(small_table, tmp_path, "parquet"), small_schema, batch_rows=100)
    first, second = table.batches(), table.batches()
    assert first is not second
    assert [len(b) for b in first] == [100] * 4
    assert Records.concat(list(second)).equals(Records.concat(list(table.batches())))


def test_integer_label_written_with_gaps(tmp_path):
    """pandas writes an integer column with a gap as 1.0: still the declared value 1."""
    schema = Schema((NumericColumn("x", 0, 10), CategoricalColumn("y", (0, 1))), label="y")
    frame = pd.DataFrame({"x": np.arange(60) % 10, "y": [0.0, 1.0, np.nan] * 20})
    path = write(frame, tmp_path, "csv")
    assert "1.0" in path.read_text()
    table, records = streamed(path, schema, 7, on_invalid="drop")
    expected, report = in_memory(path, schema, "drop")
    assert table.report == report and report.rows_out == 40
    assert records.equals(expected)


def test_parquet_with_index_column(tmp_path, small_schema, small_table):
    path = tmp_path / "indexed.parquet"
    small_table.set_index(small_table.index + 1000).to_parquet(path)  # stores the index
    _, records = streamed(path, small_schema, 64)
    assert records.equals(in_memory(path, small_schema)[0])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d, t: d / "absent.csv", "file not found"),
        (lambda d, t: d / "table.json", "unsupported table format"),
        (lambda d, t: write(t.assign(extra=1), d, "csv"), "column 'extra' that the schema"),
        (lambda d, t: write(t.drop(columns="hours"), d, "parquet"), "lacks column 'hours'"),
        (lambda d, t: write(t.drop(columns="job"), d, "csv"), "lacks column 'job'"),
        (lambda d, t: write(t.iloc[:0], d, "csv"), "is empty (0 rows)"),
        (lambda d, t: write(t.iloc[:0], d, "parquet"), "is empty (0 rows)"),
    ],
)
def test_input_errors(tmp_path, small_schema, small_table, make, message):
    path = make(tmp_path, small_table)
    with pytest.raises(InputError, match=re.escape(message)):
        StreamedTable(path, small_schema, batch_rows=50)


def test_empty_and_unreadable_files(tmp_path, small_schema):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputError, match="is empty"):
        StreamedTable(empty, small_schema)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="could not be read"):
        StreamedTable(broken, small_schema)


def test_no_valid_rows_and_bad_arguments(tmp_path, small_schema, small_table):
    path = write(small_table.assign(job="pilot"), tmp_path, "csv")
    # No valid row is not an error (whether a run goes ahead must not hang on one row):
    # n stays the file's row count and every row casts an empty vote.
    table = StreamedTable(path, small_schema, batch_rows=50, on_invalid="drop")
    assert (table.n, table.rows, len(list(table.batches()))) == (len(small_table), 0, 0)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(InputError, match="batch_rows"):
            StreamedTable(path, small_schema, batch_rows=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="on_invalid"):
        StreamedTable(path, small_schema, on_invalid="ignore")  # type: ignore[arg-type]


def test_file_changed_between_rounds(tmp_path, small_schema, small_table):
    path = write(small_table, tmp_path, "csv")
    table = StreamedTable(path, small_schema, batch_rows=100)
    write(small_table.iloc[:300], tmp_path, "csv")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    with pytest.raises(InputError, match="changed since it was first read"):
        next(table.batches())


@pytest.mark.parametrize("batch_rows", [37, 5000])
def test_parquet_folder_streams_as_its_files_joined(
    tmp_path, small_schema, dirty_table, batch_rows
) -> None:
    """A folder named ``*.parquet`` of part files is the table its files make joined in
    name order: the same records and validation report, and a changed part is caught."""
    whole = write(dirty_table, tmp_path, "parquet", "whole")
    table = pd.read_parquet(whole)
    folder = tmp_path / "private.parquet"
    folder.mkdir()
    bounds = [0, 90, 91, 250, len(table)]  # uneven parts, one of a single row
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        table.iloc[a:b].to_parquet(folder / f"part-{k:02d}.parquet", index=False)
    parts = StreamedTable(folder, small_schema, batch_rows, on_invalid="drop")
    joined = StreamedTable(whole, small_schema, batch_rows, on_invalid="drop")
    assert parts.n == joined.n == len(dirty_table) and parts.report == joined.report
    assert Records.concat(list(parts.batches())).equals(Records.concat(list(joined.batches())))
    table.iloc[:5].to_parquet(folder / "part-09.parquet", index=False)
    with pytest.raises(InputError, match="changed since it was first read"):
        list(parts.batches())
    empty = tmp_path / "empty.parquet"
    empty.mkdir()
    with pytest.raises(InputError, match=r"holds no \.parquet file"):
        StreamedTable(empty, small_schema)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_number_at_no_declared_value_is_refused_as_in_memory(tmp_path, fmt):
    """A column of declared values (years married, coded): a clean file streams into
    the in-memory records; one cell between two values, in the last batch, stops the
    streamed read as it stops the whole one (the fast path from Arrow passes it by)."""
    years = (0.5, 2.5, 6.0, 9.0, 13.0)
    schema = Schema(
        (
            NumericColumn("years", 0, 26, decimals=1, values=years),
            CategoricalColumn("y", ("a", "b")),
        )
    )
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"years": rng.choice(years, 200), "y": rng.choice(["a", "b"], 200)})
    path = write(frame, tmp_path, fmt)
    expected, _ = in_memory(path, schema)
    _, records = streamed(path, schema, 37)
    np.testing.assert_array_equal(records.numeric, expected.numeric)
    frame.loc[190, "years"] = 3.3
    path = write(frame, tmp_path, fmt, name="bad")
    with pytest.raises(InputError) as whole:
        in_memory(path, schema)
    with pytest.raises(InputError) as streaming:
        StreamedTable(path, schema, batch_rows=37)
    assert _head(str(streaming.value)) == _head(str(whole.value))
    assert "not among the column's declared values" in str(streaming.value)
