"""One row never changes how another reads (docs/privacy.md, "One cell, one value").

A table over every column kind (integer-coded, leading-zero and float-valued
categoricals, ``%Y%m%d`` and day-first dates, nullable and integer numbers, ``other:
true`` categoricals) has one row replaced by arbitrary cells (texts, numbers, empty).
On every reader (CSV, CSV.gz, Parquet, the ``--stream`` batches of each, a DataFrame
given to the Python API) and under error, drop, clip and ``other``, the validity and
the value of every other row are the same on both tables; and a file read whole and
streamed gives the same value for every cell. A reader that typed a column from all its
cells fails this: one ``1.5`` turned every ``1`` of an integer-coded column into ``1.0``.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import Records, encode
from dpevolve.data.io import read_table
from dpevolve.data.readers import ArrowBatches
from dpevolve.data.schema import Schema
from dpevolve.data.streaming import StreamedTable
from dpevolve.errors import InputError

SCHEMA = Schema.from_dict(
    {
        "na_values": ["?"],
        "columns": {
            "code": {"type": "categorical", "values": [1, 2, 3]},
            "zero": {"type": "categorical", "values": ["01", "02", "03"]},
            "flt": {"type": "categorical", "values": [1.0, 2.5]},
            "day": {"type": "date", "lo": "20000101", "hi": "20301231", "format": "%Y%m%d"},
            "dmy": {"type": "date", "lo": "01/01/2000", "hi": "31/12/2030", "format": "%d/%m/%Y"},
            "amount": {"type": "numeric", "lo": 0, "hi": 100, "nullable": True},
            "count": {"type": "numeric", "lo": 0, "hi": 50, "integer": True},
            "kind": {"type": "categorical", "values": [1, 2, 3], "other": True},
            "word": {"type": "categorical", "values": ["a", "b"], "other": True, "nullable": True},
        },
    }
)

# Cells as a data owner's table holds them (a few invalid ones among them).
BASE = {
    "code": st.sampled_from([1, 2, 3, 3, 4]),
    "zero": st.sampled_from(["01", "02", "03", "4"]),
    "flt": st.sampled_from([1.0, 2.5, 2.5, 3.0]),
    "day": st.sampled_from(["20000101", "20150615", "20301231", "20310101"]),
    "dmy": st.sampled_from(["01/01/2000", "15/06/2015", "31/12/2030"]),
    "amount": st.one_of(st.integers(0, 100), st.floats(-5, 105, width=32), st.none()),
    "count": st.integers(-2, 52),
    "kind": st.sampled_from([1, 2, 3, 3, 7]),
    "word": st.sampled_from(["a", "b", "c", None, "?"]),
}
# Anything at all in the replaced row: text, a number, nothing.
_TEXT = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
ANY_CELL = st.one_of(
    st.text(_TEXT, max_size=6),
    st.sampled_from(["1.5", "1e400", "1.0", "01", "7.5", "x", "", " 2 ", "nan", "NA", "?"]),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)


def _text(cell: Any) -> str:
    """How a CSV writer writes a cell."""
    if cell is None:
        return ""
    if isinstance(cell, float):
        return repr(cell)
    return str(cell)


def _write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(SCHEMA.names)
    writer.writerows([[_text(row[name]) for name in SCHEMA.names] for row in rows])
    data = buffer.getvalue().encode("utf-8")
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The rows as a DataFrame whose column types pandas guesses from all their cells."""
    return pd.DataFrame({name: [row[name] for row in rows] for name in SCHEMA.names})


# How the Parquet files store each column: numbers as float64, the rest as text. A cell
# a column cannot store (text in a float column) is written empty.
_STORED_AS_NUMBERS = ("code", "flt", "amount", "count", "kind")


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """As a writer with fixed column types stores them (one row's change stays in it)."""
    columns: dict[str, pd.Series] = {}
    for name in SCHEMA.names:
        cells = [row[name] for row in rows]
        if name in _STORED_AS_NUMBERS:
            numbers = [
                float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                for v in cells
            ]
            columns[name] = pd.Series(numbers, dtype="float64")
        else:
            texts = [None if v is None else _text(v) for v in cells]
            columns[name] = pd.Series(texts, dtype=object)
    pd.DataFrame(columns).to_parquet(path, index=False)


def _streamed(path: Path) -> pd.DataFrame:
    reader = ArrowBatches(path, SCHEMA, batch_rows=3, what="table")
    frames = [reader.frame(table) for table in reader.tables()]
    return pd.concat(frames, ignore_index=True)


def _readers(tmp: Path) -> dict[str, Callable[[list[dict[str, Any]]], pd.DataFrame]]:
    def file_reader(suffix: str, stream: bool) -> Callable[[list[dict[str, Any]]], pd.DataFrame]:
        def read(rows: list[dict[str, Any]]) -> pd.DataFrame:
            path = tmp / f"t{len(list(tmp.iterdir()))}{suffix}"
            (_write_parquet if suffix == ".parquet" else _write_csv)(rows, path)
            return _streamed(path) if stream else read_table(path)

        return read

    out = {"dataframe": _frame}
    for suffix in (".csv", ".csv.gz", ".parquet"):
        out[suffix] = file_reader(suffix, False)
        out[f"{suffix} --stream"] = file_reader(suffix, True)
    return out


def _rows_read(raw: pd.DataFrame, clip: bool) -> tuple[np.ndarray, pd.DataFrame, Records]:
    """Each row's validity, its value in every column, and the encoded valid rows."""
    checked, problems, _ = SCHEMA.check(raw, clip=clip)
    bad = np.zeros(len(raw), dtype=bool)
    for problem in problems:
        bad |= problem.mask
    return ~bad, checked, encode(checked.loc[~bad].reset_index(drop=True), SCHEMA)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


def _same_records(a: Records, b: Records) -> bool:
    return np.array_equal(a.numeric, b.numeric, equal_nan=True) and np.array_equal(a.codes, b.codes)


@st.composite
def neighbours(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    n = draw(st.integers(2, 7))
    rows = [{name: draw(cells) for name, cells in BASE.items()} for _ in range(n)]
    i = draw(st.integers(0, n - 1))
    other = list(rows)
    other[i] = {name: draw(ANY_CELL) for name in SCHEMA.names}
    return rows, other, i


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables=neighbours())
def test_one_row_never_changes_another(tmp_path: Path, tables) -> None:
    rows, other, i = tables
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    for name, read in _readers(folder).items():
        raw_a, raw_b = read(rows), read(other)
        for clip in (False, True):  # error and drop judge validity alike; clip repairs
            valid_a, checked_a, enc_a = _rows_read(raw_a, clip)
            valid_b, checked_b, enc_b = _rows_read(raw_b, clip)
            where = f"{name}, clip={clip}"
            for j in (j for j in range(len(rows)) if j != i):
                assert valid_a[j] == valid_b[j], f"{where}: row {j}'s validity moved"
                for column in SCHEMA.names:
                    a, b = checked_a[column].iloc[j], checked_b[column].iloc[j]
                    assert _same(a, b), f"{where}: row {j} column {column}: {a!r} vs {b!r}"
                if valid_a[j]:
                    k_a, k_b = int(valid_a[:j].sum()), int(valid_b[:j].sum())
                    assert _same_records(enc_a.take([k_a]), enc_b.take([k_b])), where


@settings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tables=neighbours())
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_file_read_whole_and_streamed_agree_cell_for_cell(
    tmp_path: Path, suffix: str, tables
) -> None:
    _, rows, _ = tables
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / f"t{suffix}"
    (_write_parquet if suffix == ".parquet" else _write_csv)(rows, path)
    whole, streamed = read_table(path), _streamed(path)
    for clip in (False, True):
        valid_w, checked_w, _ = _rows_read(whole, clip)
        valid_s, checked_s, _ = _rows_read(streamed, clip)
        assert np.array_equal(valid_w, valid_s)
        for column in SCHEMA.names:
            for a, b in zip(checked_w[column], checked_s[column], strict=True):
                assert _same(a, b), f"{column}: {a!r} read whole, {b!r} streamed"
    for mode in ("error", "drop", "clip"):
        try:
            clean, report = SCHEMA.validate(whole, on_invalid=mode)
        except InputError as exc:
            with pytest.raises(InputError) as info:
                StreamedTable(path, SCHEMA, batch_rows=3, on_invalid=mode)
            assert str(info.value) == str(exc).replace("table column", "private table column")
            continue
        table = StreamedTable(path, SCHEMA, batch_rows=3, on_invalid=mode)
        assert table.report.to_dict() == report.to_dict()
        streamed_records = [r for r in table.batches()]
        if len(clean):
            assert _same_records(Records.concat(streamed_records), encode(clean, SCHEMA))
