"""Which date or datetime format a column of **public** texts is written in.

:func:`date_format` recognises, when every public cell has the same shape:

* year first: ``2020-01-31``, ``2020/01/31``, ``2020.01.31`` (always year, month, day);
* year last: ``31/01/2020``, ``01/31/2020``, ``31.01.2020``, ``31-01-2020``. Day or
  month first is read from the data: a first field above 12 somewhere means day first,
  a second field above 12 means month first. When no field is above 12 (``01/02/2020``
  is 1 February or 2 January) the column is ambiguous and inference stops with a clear
  message, unless the caller says ``dayfirst`` (``--dayfirst`` / ``--monthfirst``);
* month names: ``31 Jan 2020``, ``31-Jan-2020``, ``Jan 31 2020``, ``Jan 31, 2020``;
* any of these followed by a time ``HH:MM`` or ``HH:MM:SS`` (after a space or ``T``):
  a ``datetime`` column.

Two-digit years are not recognised (``01/02/03`` has no safe reading): such a column
stays categorical, to be declared by hand.
"""

from __future__ import annotations

import re

import pandas as pd

from dpevolve.errors import InputError

_TIME = r"(?P<time>[ T]\d{1,2}:\d{2}(?P<sec>:\d{2})?)?"
_YEAR_FIRST = re.compile(r"^\d{4}(?P<sep>[-/.])\d{1,2}(?P=sep)\d{1,2}" + _TIME + "$")
_YEAR_LAST = re.compile(r"^(?P<a>\d{1,2})(?P<sep>[-/.])(?P<b>\d{1,2})(?P=sep)\d{4}" + _TIME + "$")
_MONTH_NAME = {
    r"^\d{1,2} [A-Za-z]{3} \d{4}": "%d %b %Y",
    r"^\d{1,2}-[A-Za-z]{3}-\d{4}": "%d-%b-%Y",
    r"^[A-Za-z]{3} \d{1,2} \d{4}": "%b %d %Y",
    r"^[A-Za-z]{3} \d{1,2}, \d{4}": "%b %d, %Y",
}


def date_format(
    column: str, texts: pd.Series, dayfirst: bool | None = None
) -> tuple[str, str] | None:
    """``(kind, strptime format)`` when every text is a date in one format, else ``None``.

    Parameters
    ----------
    column
        The column's name, for the message on an ambiguous day/month order.
    texts
        The column's public cells (no missing ones), as strings.
    dayfirst
        How to read ``01/02/2020`` when the data do not tell (see the module).

    Raises
    ------
    InputError
        Year-last dates with no field above 12 and ``dayfirst`` not given.
    """
    if len(texts) == 0:
        return None
    first = str(texts.iloc[0])
    fmt = _shape(column, texts, first, dayfirst)
    if fmt is None:
        return None
    time = re.search(r"[ T]\d{1,2}:\d{2}(:\d{2})?$", first)
    kind = "date"
    if time is not None:
        kind = "datetime"
        fmt += time.group(0)[0] + ("%H:%M:%S" if time.group(1) else "%H:%M")
    parsed = pd.to_datetime(texts, format=fmt, errors="coerce")
    if parsed.isna().any():  # one shape, but not all real dates (month 13, Feb 30)
        return None
    return kind, fmt


def _shape(column: str, texts: pd.Series, first: str, dayfirst: bool | None) -> str | None:
    """The date part's format, when every text has the first text's shape."""
    match = _YEAR_FIRST.match(first)
    if match is not None:
        sep = match.group("sep")
        if not _all(texts, _YEAR_FIRST, sep, match):
            return None
        return f"%Y{sep}%m{sep}%d"
    match = _YEAR_LAST.match(first)
    if match is not None:
        sep = match.group("sep")
        if not _all(texts, _YEAR_LAST, sep, match):
            return None
        fields = texts.str.extract(_YEAR_LAST)
        day_first = (fields["a"].astype(int) > 12).any()
        month_first = (fields["b"].astype(int) > 12).any()
        if day_first and month_first:
            return None  # no one order reads every cell: not dates
        if not (day_first or month_first):
            if dayfirst is None:
                raise InputError(
                    f"column '{column}': its dates (like 01/02/2020) read as day/month "
                    "or month/day and no day or month is above 12; pass --dayfirst or "
                    "--monthfirst, or declare it (type: date, format: '%d/%m/%Y')"
                )
            day_first = dayfirst
        return f"%d{sep}%m{sep}%Y" if day_first else f"%m{sep}%d{sep}%Y"
    for pattern, fmt in _MONTH_NAME.items():
        if re.match(pattern + _TIME + "$", first):
            if texts.str.match(pattern + _TIME + "$").all():
                return fmt
            return None
    return None


def _all(texts: pd.Series, pattern: re.Pattern[str], sep: str, first: re.Match[str]) -> bool:
    """Every text has the pattern, the same separator and a time exactly when the first has."""
    found = texts.str.extract(pattern)
    if found["sep"].isna().any() or (found["sep"] != sep).any():
        return False
    has_time = first.group("time") is not None
    has_sec = first.group("sec") is not None
    return bool(
        (found["time"].notna() == has_time).all() and (found["sec"].notna() == has_sec).all()
    )


__all__ = ["date_format"]
