"""CSV and Parquet files read with pyarrow in record batches of a bounded size.

:class:`ArrowBatches` yields a file's rows as Arrow tables of exactly ``batch_rows``
rows (the last one fewer), after checking the file's header against the schema. CSV
columns are read with types forced from the schema (categorical as text, numeric as
float64) because a streaming reader that guessed types from the first block would fail
on a later one; a numeric column found to hold text raises :class:`TextNumeric`, and the
caller reads the file again with that column as text so validation can count the
non-numbers exactly as pandas would. Missing cells are pandas' own markers, so a
streamed CSV has the same missing cells as the file read whole with pandas.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dpevolve.data.columns import CategoricalColumn, NumericColumn
from dpevolve.data.io import corrupt_gzip, csv_separator, table_suffix, unreadable_error
from dpevolve.data.messages import reader_error
from dpevolve.data.validation import check_columns
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from dpevolve.data.schema import Schema

# pandas' default missing-value markers (``pandas.read_csv``), so a streamed CSV has the
# same missing cells as the same file read whole with pandas.
_NA_VALUES = [
    "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
    "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null",
]  # fmt: skip

_CSV_CONVERSION = re.compile(r"In CSV column #(\d+): .*CSV conversion error")


class TextNumeric(Exception):
    """A numeric CSV column holds text: re-read it as text and let validation judge it."""

    def __init__(self, column: str) -> None:
        super().__init__(column)
        self.column = column


def rebatch(batches: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Re-cut record batches of any size into tables of exactly ``rows`` (the last less)."""
    import pyarrow as pa

    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows)
            rest = table.slice(rows)
            pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending)


def canonical_keys(frame: pd.DataFrame, schema: Schema) -> pd.DataFrame:
    """Read CSV category text the way pandas' type inference would have.

    pandas reads a column of numbers as numbers, so ``1.0`` (how pandas writes an integer
    column with gaps) matches the declared value ``1``; a text reader sees ``"1.0"``.
    Only cells outside the declared set are looked at, so clean tables pay nothing.
    """
    for column in schema.columns:
        if not isinstance(column, CategoricalColumn):
            continue
        values = frame[column.name]
        outside = values.notna() & ~values.isin(column.keys)
        if not outside.any():
            continue
        number = pd.to_numeric(values[outside], errors="coerce")
        number = number[np.isfinite(number.to_numpy(dtype=np.float64))]
        if len(number) == 0:
            continue
        as_key = [str(int(v)) if float(v).is_integer() else str(float(v)) for v in number]
        declared = set(column.keys)
        fixed = pd.Series(as_key, index=number.index, dtype=object)
        fixed = fixed[fixed.isin(declared)]
        if len(fixed):
            values = values.astype(object)
            values.loc[fixed.index] = fixed
            frame[column.name] = values
    return frame


class ArrowBatches:
    """A CSV (``.csv``, ``.csv.gz``) or Parquet file as Arrow tables of ``batch_rows``.

    Parameters
    ----------
    path
        The file (its suffix picks the reader).
    schema
        The declared domains: the header must match them; CSV column types follow them.
    batch_rows
        Rows per table.
    what
        How error messages name the table.
    show_values
        Let a reader's error quote a cell; ``None`` follows
        :func:`dpevolve.data.messages.show_values` (off by default).

    Attributes
    ----------
    format : str
        ``"csv"`` or ``"parquet"``.
    text_columns : set of str
        Numeric CSV columns to read as text (found to hold text on an earlier read).
    """

    def __init__(
        self,
        path: Path,
        schema: Schema,
        batch_rows: int,
        what: str,
        show_values: bool | None = None,
    ) -> None:
        self.path = path
        self.schema = schema
        self.batch_rows = batch_rows
        self.what = what
        self.show_values = show_values
        self.format = "parquet" if table_suffix(path) in (".parquet", ".pq") else "csv"
        self.text_columns: set[str] = set()

    def tables(self) -> Iterator[pa.Table]:
        """One read of the file, as tables of ``batch_rows`` rows (the last fewer).

        Raises
        ------
        TextNumeric
            A numeric CSV column holds text (add it to :attr:`text_columns`, read again).
        InputError
            An unreadable file, or a header that does not match the schema.
        """
        return rebatch(self._arrow_batches(), self.batch_rows)

    def frame(self, table: pa.Table) -> pd.DataFrame:
        """One table as pandas, its cells as :func:`pandas.read_csv` would have read them."""
        frame = table.to_pandas()
        if self.format == "csv":
            frame = canonical_keys(frame, self.schema)
        return frame

    def _arrow_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        try:
            if self.format == "parquet":
                yield from self._parquet_batches()
            else:
                yield from self._csv_batches()
        except (EOFError, zlib.error) as exc:
            raise unreadable_error(self.path, self.what, exc) from None
        except (pa.ArrowException, OSError) as exc:
            text = str(exc).lower()
            if self.path.name.lower().endswith(".gz") and any(
                word in text for word in ("gzip", "zlib", "compress")
            ):
                raise corrupt_gzip(self.path, self.what) from None
            message = reader_error(exc, self.show_values)
            raise InputError(f"{self.what} {self.path} could not be read: {message}") from None

    def _parquet_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.path) as source:
            # pandas stores a non-default index as extra columns: not part of the table.
            names = [n for n in source.schema_arrow.names if not n.startswith("__index_level_")]
            check_columns(names, self.schema, self.what)
            yield from source.iter_batches(batch_size=self.batch_rows, columns=self.schema.names)

    def _csv_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {
            c.name: pa.float64()
            if isinstance(c, NumericColumn) and c.name not in self.text_columns
            else pa.string()
            for c in self.schema.columns
        }
        # Blocks of about one batch keep the reader's buffers proportional to batch_rows.
        block = int(min(max(self.batch_rows * 128, 1 << 20), 64 << 20))
        separator = csv_separator(self.path, self.what)
        try:
            reader = pcsv.open_csv(
                self.path,
                read_options=pcsv.ReadOptions(block_size=block),
                parse_options=pcsv.ParseOptions(delimiter=separator),
                convert_options=pcsv.ConvertOptions(
                    column_types=types,
                    null_values=_NA_VALUES,
                    strings_can_be_null=True,
                    quoted_strings_can_be_null=True,
                ),
            )
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):
                raise InputError(f"{self.what} {self.path} is empty") from None
            self._raise_text_numeric(exc, self._header())
            raise
        names = reader.schema.names
        check_columns(names, self.schema, self.what)
        try:
            with reader:
                yield from reader
        except pa.ArrowInvalid as exc:
            self._raise_text_numeric(exc, names)
            raise

    def _header(self) -> list[str]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {c.name: pa.string() for c in self.schema.columns}
        probe = pcsv.open_csv(
            self.path,
            read_options=pcsv.ReadOptions(block_size=1 << 20),
            parse_options=pcsv.ParseOptions(delimiter=csv_separator(self.path, self.what)),
            convert_options=pcsv.ConvertOptions(column_types=types),
        )
        with probe:
            names = list(probe.schema.names)
        check_columns(names, self.schema, self.what)
        return names

    def _raise_text_numeric(self, exc: Exception, names: Sequence[str]) -> None:
        match = _CSV_CONVERSION.search(str(exc))
        if match is None:
            return
        index = int(match.group(1))
        if index < len(names) and names[index] not in self.text_columns:
            raise TextNumeric(names[index]) from None


__all__ = ["ArrowBatches", "TextNumeric", "canonical_keys", "rebatch"]
