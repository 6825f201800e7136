"""Reading tables and writing outputs safely.

Tables are ``.csv`` (optionally ``.gz``) or ``.parquet``. A CSV's separator is read
from its header line alone (column names, as public as the schema): a comma, or a
semicolon, tab or ``|`` when the header holds one of them and no comma
(:func:`csv_separator`). A header that holds two of them as often is refused rather
than guessed. Cells are read as texts, never typed by the column they sit in
(:func:`read_table`). Outputs are written atomically (a temporary file in the same folder, then
a rename) and never replace an existing file unless ``force`` is set.
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import tempfile
import warnings
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpevolve.data.messages import reader_error
from dpevolve.errors import InputError
from dpevolve.extras import require
from dpevolve.pause import counted, reached

if TYPE_CHECKING:  # imported where a table is read: `dpevolve -h` needs no pandas
    import pandas as pd

DEFAULT_BATCH_ROWS = 250_000
"""Rows per batch when a table is read in batches (``--stream``)."""

TABLE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq")


def table_suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in TABLE_SUFFIXES:
        if name.endswith(suffix):
            return suffix
    raise InputError(f"{path}: unsupported table format (use .csv, .csv.gz or .parquet)")


#: Separators a CSV header may show; the comma is the default.
SEPARATORS = (",", ";", "\t", "|")
_SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "'|'"}
# The most of a file read to find its header line (a header longer than this is refused).
_HEADER_BYTES = 1 << 20


def csv_separator(path: Path, what: str = "table") -> str:
    """The separator of the CSV at ``path``, read from its header line (see the module).

    Raises
    ------
    InputError
        The file cannot be opened (a corrupt gzip file included), or its header holds two
        separators equally often.
    """
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            head = handle.readline(_HEADER_BYTES)
    except (OSError, EOFError, zlib.error) as exc:
        raise unreadable_error(path, what, exc) from None
    header = head.decode("utf-8", errors="replace")
    # Separators inside quoted names do not count.
    unquoted = "".join(part for i, part in enumerate(header.split('"')) if i % 2 == 0)
    counts = {sep: unquoted.count(sep) for sep in SEPARATORS}
    best = max(counts.values())
    if best == 0:
        return ","  # one column
    tied = [sep for sep in SEPARATORS if counts[sep] == best]
    if len(tied) > 1:
        names = " and ".join(_SEPARATOR_NAMES[sep] for sep in tied)
        raise InputError(
            f"{what} {path}: its header line holds {names} separators as often; cannot "
            "tell which separates the columns (write it with commas)"
        )
    return tied[0]


def _check_header(path: Path, separator: str, what: str) -> None:
    """Refuse a header naming a column twice: pandas would rename the second ('x.1')."""
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8-sig", errors="replace", newline="") as handle:
        names = next(csv.reader(handle, delimiter=separator), [])
    twice = [name for i, name in enumerate(names) if name in names[:i]]
    if twice:
        raise InputError(f"{what} {path} has column '{twice[0]}' twice (duplicate header)")


def corrupt_gzip(path: Path, what: str) -> InputError:
    """The one-line error for a ``.gz`` file that does not decompress."""
    return InputError(f"{what} {path} is not a readable gzip file (corrupt or truncated)")


def unreadable_error(path: Path, what: str, exc: BaseException) -> InputError:
    """The one-line error for a file that cannot be read (a corrupt gzip file, text that
    is not UTF-8, a reader's own message with any quoted data cut out)."""
    if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)) or "gzip" in str(exc).lower():
        return corrupt_gzip(path, what)
    if isinstance(exc, UnicodeDecodeError):
        return InputError(f"{what} {path} is not UTF-8 text (save it as a UTF-8 CSV)")
    return InputError(f"{what} {path} could not be read: {reader_error(exc)}")


def read_table(path: str | Path, what: str = "table") -> pd.DataFrame:
    """Read a CSV or Parquet table with a one-line error for every failure.

    A CSV's cells come back as their texts (an empty cell as ``""``), a Parquet file's
    as the types its columns store; validation reads each cell on its own
    (:mod:`dpevolve.data.cells`), never by a type guessed from the whole column.

    The error quotes no cell of the table unless values may be shown
    (:func:`dpevolve.data.messages.show_values`).
    """
    import pandas as pd

    path = Path(path)
    suffix = table_suffix(path)
    if not path.is_file():
        raise InputError(f"{what} file not found: {path}")
    parquet = suffix in (".parquet", ".pq")
    separator = "," if parquet else csv_separator(path, what)
    if not parquet:
        _check_header(path, separator, what)
    try:
        if parquet:
            require("pyarrow", "reading .parquet tables")
            return pd.read_parquet(path)
        with warnings.catch_warnings():
            # pandas would take a row with one field too many as an index: refuse it.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            # Every cell as its text: each is read on its own later (data/cells.py).
            return pd.read_csv(
                path, sep=separator, index_col=False, dtype=str, keep_default_na=False,
                na_filter=False,
            )  # fmt: skip
    except pd.errors.ParserWarning:
        raise InputError(
            f"{what} {path}: a row has more fields than the header names columns"
        ) from None
    except pd.errors.EmptyDataError:
        raise InputError(f"{what} {path} is empty") from None
    except (
        pd.errors.ParserError,
        UnicodeDecodeError,
        OSError,
        ValueError,
        EOFError,
        zlib.error,
    ) as exc:
        raise unreadable_error(path, what, exc) from None


def check_writable(path: str | Path, force: bool, inputs: Sequence[str | Path | None] = ()) -> Path:
    """Refuse to replace an existing output unless ``force``, or ever to replace one of
    ``inputs`` (``--force`` included: an input is never overwritten); the folder must
    exist."""
    path = Path(path)
    for source in inputs:
        if source is not None and _same_file(path, Path(source)):
            raise InputError(f"output {path} is the input {source}: write to another file")
    if path.is_dir():
        raise InputError(f"output {path} is a folder: give a file name")
    if path.exists() and not force:
        raise InputError(f"{path} already exists (use --force to overwrite)")
    if not path.parent.exists():
        raise InputError(f"output folder does not exist: {path.parent}")
    return path


def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)
    return a.resolve() == b.resolve()


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call ``write(tmp)`` then rename ``tmp`` onto ``path`` (no partial file on failure,
    an interrupt included: the temporary file is removed on the way out)."""
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:  # from the first step on: an interrupt anywhere after mkstemp removes tmp
        os.close(fd)
        tmp = Path(tmp_name)
        write(tmp)
        reached(counted("write"))
        # mkstemp makes the file 0600; give the output the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)


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
