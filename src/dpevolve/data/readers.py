"""CSV and Parquet files read with pyarrow in record batches of a bounded size.

:class:`ArrowBatches` yields a file's rows as Arrow tables of exactly ``batch_rows``
rows (the last one fewer), after checking the file's header against the schema. A
CSV's cells are read as texts, the empty one included, exactly as
:func:`~dpevolve.data.io.read_table` reads the whole file: validation then reads each
cell on its own (:mod:`dpevolve.data.cells`), so a streamed file and the same file read
whole give the same value for every cell.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dpevolve.data.io import corrupt_gzip, csv_separator, table_suffix, unreadable_error
from dpevolve.data.messages import reader_error
from dpevolve.data.validation import check_columns
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pyarrow as pa

    from dpevolve.data.schema import Schema


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


class ArrowBatches:
    """A CSV (``.csv``, ``.csv.gz``) or Parquet file as Arrow tables of ``batch_rows``.

    Parameters
    ----------
    path
        The file (its suffix picks the reader); for Parquet also a folder named
        ``*.parquet`` holding the table's files (:func:`parquet_files`).
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

    def tables(self) -> Iterator[pa.Table]:
        """One read of the file, as tables of ``batch_rows`` rows (the last fewer).

        Raises
        ------
        InputError
            An unreadable file, or a header that does not match the schema.
        """
        return rebatch(self._arrow_batches(), self.batch_rows)

    def frame(self, table: pa.Table) -> pd.DataFrame:
        """One table as pandas, its cells as :func:`~dpevolve.data.io.read_table` reads
        them (a CSV's as texts)."""
        return table.to_pandas()

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

        for path in parquet_files(self.path, self.what):
            with pq.ParquetFile(path) as source:
                # pandas stores a non-default index as extra columns: not part of the table.
                names = [n for n in source.schema_arrow.names if not n.startswith("__index_level_")]
                check_columns(names, self.schema, self.what)
                yield from source.iter_batches(
                    batch_size=self.batch_rows, columns=self.schema.names
                )

    def _csv_batches(self) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {c.name: pa.string() for c in self.schema.columns}
        # Blocks of about one batch keep the reader's buffers proportional to batch_rows.
        block = int(min(max(self.batch_rows * 128, 1 << 20), 64 << 20))
        separator = csv_separator(self.path, self.what)
        try:
            reader = pcsv.open_csv(
                self.path,
                read_options=pcsv.ReadOptions(block_size=block),
                # A quoted cell may hold a line break, as pandas reads it.
                parse_options=pcsv.ParseOptions(delimiter=separator, newlines_in_values=True),
                # Every cell as its text, the empty one too: as read_table reads it.
                convert_options=pcsv.ConvertOptions(
                    column_types=types,
                    null_values=[],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):
                raise InputError(f"{self.what} {self.path} is empty") from None
            self._header()  # a header the schema does not match: say that first
            raise
        try:
            names = reader.schema.names
        except UnicodeDecodeError as exc:  # a header that is not UTF-8 text
            reader.close()
            raise unreadable_error(self.path, self.what, exc) from None
        check_columns(names, self.schema, self.what)
        with reader:
            yield from reader

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


def parquet_files(path: Path, what: str = "private table") -> list[Path]:
    """The files of a Parquet table: ``path`` itself, or a folder's ``*.parquet`` files
    in name order (a dataset written in parts, as Spark and Dask write one)."""
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.glob("*.parquet") if p.is_file())
    if not files:
        raise InputError(f"{what} folder {path} holds no .parquet file")
    return files


__all__ = ["ArrowBatches", "parquet_files", "rebatch"]
