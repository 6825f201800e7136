"""Writing a table block by block, atomically: memory bounded by one block.

:func:`write_blocks` takes the blocks a synthesizer draws one at a time
(:meth:`~dpevolve.synthesizer.Synthesizer.sample_blocks`) and writes each as it comes:
a CSV (``.csv`` or ``.csv.gz``) is appended to, a Parquet file gets one row group per
block (pyarrow's ``ParquetWriter``). Everything goes to a temporary file beside the
output, renamed onto it only once the last block is written
(:func:`~dpevolve.data.io.atomic_write`): a failure, or an interrupt, leaves no partial
output. A CSV written this way holds the same bytes as the whole table written at once;
a Parquet file holds the same table (its row groups follow the blocks). See
docs/scale.md.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpevolve.data.io import atomic_write, table_suffix
from dpevolve.extras import require

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["write_blocks"]


def write_blocks(blocks: Iterable[pd.DataFrame], path: str | Path) -> int:
    """Write the concatenation of ``blocks`` to ``path`` (CSV or Parquet by its suffix),
    atomically, holding one block at a time; returns the rows written.

    Every block must have the same columns in the same order (the first block's). A
    Parquet column's type is the first block's: later blocks are cast to it.
    """
    path = Path(path)
    suffix = table_suffix(path)
    written = [0]

    def write(tmp: Path) -> None:
        if suffix in (".parquet", ".pq"):
            written[0] = _parquet(blocks, tmp)
        else:
            written[0] = _csv(blocks, tmp, compress=suffix == ".csv.gz")

    atomic_write(path, write)
    return written[0]


def _csv(blocks: Iterable[pd.DataFrame], tmp: Path, compress: bool) -> int:
    rows = 0
    opener: Any = gzip.open if compress else open
    # newline="": pandas writes its own line ends, as frame.to_csv(path) does.
    with opener(tmp, "wt", encoding="utf-8", newline="") as handle:
        columns: list[str] | None = None
        header = True
        for block in blocks:
            if columns is None:
                columns = list(block.columns)
            elif list(block.columns) != columns:
                raise ValueError("write_blocks: every block must have the first's columns")
            block.to_csv(handle, index=False, header=header)
            header = False
            rows += len(block)
    return rows


def _parquet(blocks: Iterable[pd.DataFrame], tmp: Path) -> int:
    require("pyarrow", "writing .parquet tables")
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 0
    writer: pq.ParquetWriter | None = None
    schema: pa.Schema | None = None
    try:
        for block in blocks:
            if schema is None:
                table = pa.Table.from_pandas(block, preserve_index=False)
                schema = table.schema
                writer = pq.ParquetWriter(tmp, schema)
            else:
                table = pa.Table.from_pandas(block, schema=schema, preserve_index=False)
            assert writer is not None
            if table.num_rows:
                writer.write_table(table)
            rows += table.num_rows
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError("write_blocks: no block to write")
    return rows
