"""Private tables larger than memory: validate and encode them batch by batch.

A :class:`StreamedTable` is a private table on disk (``.csv``, ``.csv.gz`` or
``.parquet``) read with pyarrow in batches of at most ``batch_rows`` rows. Every batch is
validated against the schema and encoded to :class:`~dpevolve.data.encoding.Records`, so the
memory a pass needs is bounded by the batch size, not by the table.

The first pass (run when the table is opened) reads the whole file once: it counts the
rows ``n`` (public under replace-one adjacency; invalid rows count too, they cast an
empty vote) and validates every batch, adding the invalid-row and clip counts of all
batches into one
:class:`~dpevolve.data.schema.ValidationReport`. :meth:`StreamedTable.batches` then returns
a fresh iterator over the encoded batches each call, so the method itself is the
zero-argument callable :meth:`dpevolve.pe.evolution.Evolution.run` reads once per round::

    from dpevolve import Synthesizer
    from dpevolve.data.streaming import fit_file

    model = fit_file(Synthesizer("schema.yaml", epsilon=1.0, random_state=0),
                     "private.parquet", batch_rows=250_000)
    model.sample()

Streaming gives what :meth:`Synthesizer.fit <dpevolve.synthesizer.Synthesizer.fit>` on
the table read by pandas gives: the same encoded records, the same validation report
and, in ``on_invalid="error"`` mode, the same error (column, count of bad rows, first
bad row counted over the whole file). Batches are validated by :mod:`dpevolve.data.batches`
and read by :mod:`dpevolve.data.readers`; the names this module exported before the split
are importable from here as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dpevolve.data.batches import (
    BatchTally,
    Tally,
    empty_records,
    encode_batch,
    encode_clean,
    validate_batch,
)
from dpevolve.data.encoding import Records
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.readers import ArrowBatches, parquet_files
from dpevolve.data.schema import Schema
from dpevolve.data.sources import OnePass
from dpevolve.data.validation import (
    OnInvalid,
    ValidationReport,
    check_columns,
    check_on_invalid,
)
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


class StreamedTable:
    """A private table on disk, validated and encoded in batches of ``batch_rows``.

    Opening the table reads it once: it counts the rows, validates every batch and
    raises the error :meth:`Schema.validate` would raise on the whole table.

    Parameters
    ----------
    path
        A ``.csv``, ``.csv.gz`` or ``.parquet`` file, or a folder named ``*.parquet``
        of Parquet files read in name order (a dataset written in parts).
    schema
        The declared domains (never inferred from the private table).
    batch_rows
        Rows per batch: the memory of a pass is a few batches (for Parquet, also
        about one row group of the file, which the reader decompresses at once).
    on_invalid
        ``error``, ``drop`` or ``clip``, as in :meth:`Schema.validate`.
    what
        How error messages name the table.
    show_values
        Let error messages quote a cell; ``None`` follows
        :func:`dpevolve.data.messages.show_values` (off by default).

    Attributes
    ----------
    n : int
        Rows in the file, valid or not: the public row count the run uses.
    rows : int
        Valid rows, the ones that vote (private: for integrity checks only).
    report : ValidationReport
        Invalid-row and clip counts over the whole table (private).

    Raises
    ------
    InputError
        Missing or unreadable file, a column the schema does not declare (or lacks), an
        empty table, or (``on_invalid="error"``) cells outside the schema, naming the
        column and how many rows.
    """

    def __init__(
        self,
        path: str | Path,
        schema: Schema,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        on_invalid: OnInvalid = "error",
        what: str = "private table",
        show_values: bool | None = None,
    ) -> None:
        if isinstance(batch_rows, bool) or not isinstance(batch_rows, (int, np.integer)):
            raise InputError(f"batch_rows must be a positive integer, got {batch_rows!r}")
        if batch_rows < 1:
            raise InputError(f"batch_rows must be a positive integer, got {batch_rows}")
        check_on_invalid(on_invalid)
        self.path = Path(path)
        self.schema = schema
        self.batch_rows = int(batch_rows)
        self.on_invalid: OnInvalid = on_invalid
        self.what = what
        self.show_values = show_values
        self._reader = ArrowBatches(self.path, schema, self.batch_rows, what, show_values)
        self.format = self._reader.format
        folder = self.format == "parquet" and self.path.is_dir()
        if not (self.path.is_file() or folder):
            raise InputError(f"{what} file not found: {self.path}")
        self._stamp = self._file_stamp()
        self.report = self._scan()
        self.rows = self.report.rows_out
        self.n = self.report.rows_in

    def __repr__(self) -> str:
        return (
            f"StreamedTable({str(self.path)!r}, n={self.n}, batch_rows={self.batch_rows}, "
            f"on_invalid={self.on_invalid!r})"
        )

    def __len__(self) -> int:
        return self.rows

    # ------------------------------------------------------------------ passes
    def batches(self) -> TableStream:
        """A fresh pass over the encoded valid rows, one :class:`Records` per batch.

        Nothing is read until the first batch is asked for. Pass the bound method
        (``table.batches``) where a zero-argument callable is wanted.

        Raises
        ------
        InputError
            The file changed since it was first read (its row count and validation
            report, which the run's budget and ledger use, would be stale).
        """
        return TableStream(self)

    def sample_frame(self, rows: int, seed: int = 0) -> pd.DataFrame:
        """A uniform sample of at most ``rows`` of the file's rows, in file order, as
        :func:`~dpevolve.data.io.read_table` reads them (not validated).

        One more pass; memory is ``rows`` plus one batch, never the table (what the
        owner's report of a ``--stream`` run reads). ``seed`` is post-processing: the
        sample is for the owner's eyes, never released.
        """
        import pandas as pd

        self._check_unchanged()
        rng = np.random.default_rng(seed)
        kept: pd.DataFrame | None = None
        keys = np.empty(0)
        start = 0
        for table in self._reader.tables():
            frame = self._reader.frame(table)
            frame.index = pd.RangeIndex(start, start + len(frame))
            start += len(frame)
            # The rows with the ``rows`` smallest uniform keys: a uniform sample.
            frame_keys = rng.random(len(frame))
            kept = frame if kept is None else pd.concat([kept, frame])
            keys = np.concatenate([keys, frame_keys])
            if len(keys) > rows:
                best = np.sort(np.argpartition(keys, rows - 1)[:rows])
                kept, keys = kept.iloc[best], keys[best]
        if start != self.n:
            raise InputError(
                f"{self.what} {self.path} changed while being read: {start} rows now, "
                f"{self.n} on the first pass"
            )
        if kept is None:
            return pd.DataFrame(columns=self.schema.names)
        return kept.reset_index(drop=True)

    def _records(self) -> Iterator[Records]:
        self._check_unchanged()
        rows = 0
        for records, _ in self._encoded():
            if len(records):
                rows += len(records)
                yield records
        if rows != self.rows:
            raise InputError(
                f"{self.what} {self.path} changed while being read: {rows} valid rows now, "
                f"{self.rows} on the first pass"
            )

    def _scan(self) -> ValidationReport:
        tally = Tally(self.schema, self.on_invalid, self.what, self.show_values)
        for _, batch in self._encoded():
            tally.add(batch)
        return tally.report()

    def _encoded(self) -> Iterator[tuple[Records, BatchTally]]:
        for table in self._reader.tables():
            records = encode_clean(table, self.schema)
            if records is not None:
                yield records, BatchTally(len(records), len(records))
                continue
            frame = self._reader.frame(table)
            yield encode_batch(frame, self.schema, self.on_invalid, self.what)

    # -------------------------------------------------------------- integrity
    def _file_stamp(self) -> tuple[tuple[str, int, int], ...]:
        # A folder of Parquet files: every file's name, size and time.
        files = parquet_files(self.path, self.what) if self.format == "parquet" else [self.path]
        return tuple((f.name, *_size_and_time(f)) for f in files)

    def _check_unchanged(self) -> None:
        try:
            stamp = self._file_stamp()
        except OSError:
            raise InputError(f"{self.what} file disappeared: {self.path}") from None
        if stamp != self._stamp:
            raise InputError(
                f"{self.what} {self.path} changed since it was first read; "
                "its row count and validation report are stale (start the run again)"
            )


def _size_and_time(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns


class TableStream(OnePass):
    """One pass over a :class:`StreamedTable`; the file is opened on the first ``next``."""

    def __init__(self, table: StreamedTable) -> None:
        super().__init__(table, table._records)


# ------------------------------------------------------------------------------ fitting
class FitsFiles(Protocol):
    """A model with ``fit_file`` (the :class:`~dpevolve.synthesizer.Synthesizer`; a
    protocol, so this module imports nothing that imports it)."""

    def fit_file(self, path: str | Path, batch_rows: int = ...) -> Any: ...


def fit_file(model: FitsFiles, path: str | Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Any:
    """Deprecated: use :meth:`Synthesizer.fit_file <dpevolve.synthesizer.Synthesizer.fit_file>`."""
    return model.fit_file(path, batch_rows)


__all__ = [
    "DEFAULT_BATCH_ROWS",
    "BatchTally",
    "StreamedTable",
    "TableStream",
    "Tally",
    "check_columns",
    "empty_records",
    "encode_batch",
    "encode_clean",
    "fit_file",
    "validate_batch",
]
