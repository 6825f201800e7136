"""Reading tables and writing outputs safely.

Tables are ``.csv`` (optionally ``.gz``) or ``.parquet``. Outputs are written
atomically (a temporary file in the same folder, then a rename) and never replace an
existing file unless ``force`` is set.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpevolve.data.messages import reader_error
from dpevolve.errors import InputError
from dpevolve.extras import require

if TYPE_CHECKING:  # imported where a table is read: `dpevolve -h` needs no pandas
    import pandas as pd

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")


def table_suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in TABLE_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise InputError(f"{path}: unsupported table format (use .csv, .csv.gz or .parquet)")


def read_table(path: str | Path, what: str = "table") -> pd.DataFrame:
    """Read a CSV or Parquet table with a one-line error for every failure.

    The error quotes no cell of the table unless values may be shown
    (:func:`dpevolve.data.messages.show_values`).
    """
    import pandas as pd

    path = Path(path)
    suffix = table_suffix(path)
    if not path.is_file():
        raise InputError(f"{what} file not found: {path}")
    try:
        if suffix in (".parquet", ".pq"):
            require("pyarrow", "reading .parquet tables")
            return pd.read_parquet(path)
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} {path} is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, OSError, ValueError) as exc:
        raise InputError(f"{what} {path} could not be read: {reader_error(exc)}") from None


def iter_table(path: str | Path, batch_rows: int = 500_000) -> Iterator[pd.DataFrame]:
    """Stream a CSV or Parquet table in row batches (memory bounded by ``batch_rows``)."""
    import pandas as pd

    path = Path(path)
    suffix = table_suffix(path)
    if not path.is_file():
        raise InputError(f"table file not found: {path}")
    if suffix in (".parquet", ".pq"):
        pq = require("pyarrow.parquet", "reading .parquet tables")
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
            yield batch.to_pandas()
    else:
        yield from pd.read_csv(path, chunksize=batch_rows)


def check_writable(path: str | Path, force: bool) -> Path:
    """Refuse to replace an existing output unless ``force``; the folder must exist."""
    path = Path(path)
    if path.exists() and not force:
        raise InputError(f"{path} already exists (use --force to overwrite)")
    if not path.parent.exists():
        raise InputError(f"output folder does not exist: {path.parent}")
    return path


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` then rename ``tmp`` onto ``path`` (no partial file on failure)."""
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        write(tmp)
        # mkstemp makes the file 0600; give the output the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_table(frame: pd.DataFrame, path: str | Path) -> None:
    """Atomically write a table as CSV or Parquet, by the path's suffix."""
    path = Path(path)
    suffix = table_suffix(path)
    if suffix in (".parquet", ".pq"):
        require("pyarrow", "writing .parquet tables")
        atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        gzip = suffix == ".csv.gz"
        atomic_write(
            path, lambda tmp: frame.to_csv(tmp, index=False, compression="gzip" if gzip else None)
        )


def write_json(obj: Any, path: str | Path) -> None:
    """Atomically write JSON (indented, keys in insertion order)."""
    atomic_write(Path(path), lambda tmp: tmp.write_text(json.dumps(obj, indent=2, default=str)))


def read_yaml(path: str | os.PathLike[str], what: str) -> Any:
    """The YAML document at ``path``; a missing file or bad YAML is one line naming
    ``what`` (``"schema file"``, ``"policy file"``) and, for YAML, the line."""
    import yaml

    path = Path(path)
    if not path.exists():
        raise InputError(f"{what} not found: {path}")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InputError(f"{what} {path} is not valid YAML{where}") from None
