"""Messages about private tables that quote no private cell unless asked to.

Errors and warnings about a private table name the column, the problem, how many rows
have it and the first such row. A cell's value is shown only when the user asks for it
(``--show-values`` on the command line; ``show_values=True`` or the :func:`show_values`
context in Python): messages end up in terminals, logs and bug reports, which are not
where private values belong.

Readers' own error texts (pandas, pyarrow, codecs) can quote a cell or a whole row;
:func:`reader_error` cuts those parts out.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

_SHOW_VALUES: ContextVar[bool] = ContextVar("dpevolve_show_values", default=False)
_FILE_LINES: ContextVar[bool] = ContextVar("dpevolve_file_lines", default=False)

#: What replaces a quoted value in a reader's message.
HIDDEN = "<value hidden: use --show-values>"

# Parts of readers' messages that quote data, most specific first. Each keeps the
# shape of the problem (what, where) and drops the text of the cell or row.
_REDACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    # pyarrow: "CSV parse error: Expected 3 columns, got 4: a,b,c,d" (the row follows)
    (re.compile(r"(Expected \d+ columns?, got \d+)\s*:.*$", re.S), r"\1"),
    # pyarrow: "... CSV conversion error to double: invalid value 'abc'"
    (re.compile(r"(invalid value)\s.*$", re.S), r"\1 (" + HIDDEN + ")"),
    # codecs: "'utf-8' codec can't decode byte 0xe9 in position 5"
    (re.compile(r"bytes? 0x[0-9a-fA-F]+(?:\s*0x[0-9a-fA-F]+)*"), "a byte"),
    (re.compile(r"(?<!a )bytes? in position"), "a byte in position"),
    # anything quoted: a cell, a row fragment ('abc', "abc", b'abc')
    (re.compile(r"b?'[^']*'|b?\"[^\"]*\""), HIDDEN),
)


def values_shown(show: bool | None = None) -> bool:
    """Whether messages may quote cells: ``show`` if given, else the current context."""
    return _SHOW_VALUES.get() if show is None else bool(show)


@contextmanager
def show_values(enabled: bool = True) -> Iterator[None]:
    """Let messages raised inside the block quote private cells (or forbid it).

    Examples
    --------
    >>> from dpevolve.data.messages import show_values
    >>> with show_values():  # doctest: +SKIP
    ...     model.fit(table)  # errors now quote the first bad cell
    """
    token = _SHOW_VALUES.set(bool(enabled))
    try:
        yield
    finally:
        _SHOW_VALUES.reset(token)


def plain_cell(value: Any) -> Any:
    """A cell as a plain Python value (``np.int64(3)`` -> ``3``, ``2.0`` -> ``2``)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


@contextmanager
def rows_as_file_lines(enabled: bool = True) -> Iterator[None]:
    """Inside the block, name a table's rows by their line in its file (the header is
    line 1, so row 0 is line 2: a spreadsheet's row numbers), as the command line does."""
    token = _FILE_LINES.set(bool(enabled))
    try:
        yield
    finally:
        _FILE_LINES.reset(token)


def first_at(row: int, example: Any, show: bool | None = None) -> str:
    """``(first at row 9)`` (0-based, a frame's position), ``(first at line 11)`` inside
    :func:`rows_as_file_lines`; with ``: 'x'`` when values may be shown."""
    where = f"line {row + 2}" if _FILE_LINES.get() else f"row {row}"
    if values_shown(show):
        return f"(first at {where}: {plain_cell(example)!r})"
    return f"(first at {where})"


def reader_error(exc: BaseException, show: bool | None = None) -> str:
    """The first line of a reader's error, with any quoted data cut out.

    Parameters
    ----------
    exc
        What pandas, pyarrow or a codec raised while reading a table.
    show
        Keep the text as it is (``--show-values``); ``None`` asks the context.

    Returns
    -------
    str
        One line naming the problem and where, never a cell's text unless ``show``.
    """
    text = str(exc).strip()
    line = text.splitlines()[0].strip() if text else ""
    if not line:
        return type(exc).__name__
    if values_shown(show):
        return line
    for pattern, replacement in _REDACTIONS:
        line = pattern.sub(replacement, line)
    return line


def internal_error(exc: BaseException, show: bool | None = None) -> str:
    """An unexpected exception for the command line: its type, and its text only when
    values may be shown (an internal error's text can quote any cell it met)."""
    if values_shown(show):
        return f"{type(exc).__name__}: {exc}"
    return (
        f"{type(exc).__name__} (its message is hidden because it may quote private "
        "cells; rerun with --show-values to see it)"
    )


__all__ = [
    "HIDDEN",
    "first_at",
    "internal_error",
    "plain_cell",
    "reader_error",
    "show_values",
    "values_shown",
]
