"""How one cell becomes a value: from its own content and the schema alone.

Every reader hands validation its cells as they are stored: a CSV (read whole, gzipped
or in ``--stream`` batches) as texts, a Parquet file or a DataFrame given to the Python
API with the types its columns hold. This module is the one place that turns each cell
into the value it stands for (docs/privacy.md, "One cell, one value"). A cell's value
depends on that cell and the schema, never on the other cells of its column, so one
private row cannot change how any other row reads. (A reader that guessed a column's
type from all its cells would: one ``1.5`` would turn every ``1`` of an integer-coded
column into ``1.0``.)

**Missing.** A cell is missing when it is empty (``None``, NaN, NaT, ``pd.NA``, or the
empty text), or when the schema's ``na_values`` list its text, or, for a token that is
a number, its number (the token ``99`` marks ``99`` and ``99.0`` alike). No other text
means missing: ``NA`` or ``null`` in a numeric column is not a number until the schema
lists it.

**Numeric columns.** A number (a cell of any integer or float type) is itself. A text
is the number it writes in plain decimal notation (``12``, ``-0.5``, ``1e3``, ``inf``;
blanks around it allowed; ASCII digits only); any other text, and a boolean or a
datetime, is not a number.

**Date and datetime columns.** A datetime is itself. A text is read with the column's
format (digits alone too: ``20200131`` under ``%Y%m%d``). A number is already a count of
units since 1970-01-01: what validation hands on, so a validated table validates again
to itself.

**Categorical columns.** A cell's text (a text as it is; an integer in decimal digits; a
float in its shortest form, whole ones as integers; a boolean as ``True`` or ``False``)
reads as the declared value whose text it equals; else, when the cell is a number or a
text written as one, as the declared number equal to it (``1``, ``1.0`` and ``01`` all
read as a declared ``1``, while a declared text ``'01'`` matches ``01`` only); else, for
the texts ``true`` and ``false`` (also ``True``, ``TRUE``...), as a declared boolean. A
cell matching none is undeclared (``(other)`` under ``other: true``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.data.columns import CategoricalColumn, NumericColumn
from dpevolve.data.types import UNITS, DateColumn, to_units

#: A text that writes a number (see the module): ASCII decimal notation or infinity.
NUMBER = re.compile(
    r"\s*[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity)\s*",
    re.IGNORECASE | re.ASCII,
)

#: A number written with a comma (``12,5``; ``12,500``): not a number here.
COMMA_NUMBER = re.compile(r"\s*[+-]?[0-9]+(?:,[0-9]+)+\s*", re.ASCII)

#: Texts that often mean "missing", and do here only when the schema lists them ("N":
#: the US Census Bureau's "not applicable", as in the ACS microdata).
MISSING_WORDS = frozenset(
    "NA N/A n/a na N NaN nan null NULL Null None none - ? #N/A <NA> . missing NaT".split()
)

# pandas' spellings of booleans (``read_csv``'s defaults).
_BOOLEANS = {"True": True, "TRUE": True, "true": True, "False": False, "FALSE": False}
_BOOLEANS["false"] = False


@dataclass(frozen=True)
class Cells:
    """One column's cells, each read on its own (see the module).

    Attributes
    ----------
    missing
        The cell is missing.
    texts
        Each cell's text (``""`` where missing); ``None`` when not asked for.
    is_text
        The cell was stored as text (a CSV cell always is).
    numbers
        Each cell's number: a stored number, or the number a text writes; NaN otherwise.
    seconds
        A stored datetime as seconds since 1970-01-01 (UTC); NaN otherwise.
    """

    missing: np.ndarray
    texts: np.ndarray | None
    is_text: np.ndarray
    numbers: np.ndarray
    seconds: np.ndarray


def read_cells(values: pd.Series, na_values: Sequence[str] = (), texts: bool = True) -> Cells:
    """Each cell of one column, read from itself alone (``texts``: also its text)."""
    n = len(values)
    nan = np.full(n, np.nan)
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype):
        missing = values.isna().to_numpy(dtype=bool)
        words = np.where(values.fillna(False).to_numpy(dtype=bool), "True", "False")
        words = np.where(missing, "", words).astype(object)
        cells = Cells(missing, words, np.zeros(n, bool), nan, nan.copy())
    elif pd.api.types.is_numeric_dtype(dtype):
        numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
        missing = np.isnan(numbers)
        text = _number_texts(values, missing) if texts else None
        cells = Cells(missing, text, np.zeros(n, bool), numbers, nan)
    elif pd.api.types.is_datetime64_any_dtype(dtype):
        stamps = pd.DatetimeIndex(values)
        missing = np.asarray(stamps.isna())
        seconds = to_units(stamps, "datetime")
        text = np.array(
            ["" if m else str(t) for m, t in zip(missing, stamps, strict=True)], dtype=object
        )
        cells = Cells(missing, text, np.zeros(n, bool), nan, seconds)
    else:
        cells = _object_cells(values.to_numpy(dtype=object))
    return _with_tokens(cells, na_values)


def read_numbers(
    values: pd.Series, column: NumericColumn, na_values: Sequence[str] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """``(numbers, missing)``: each cell's number on the column's scale (dates as units
    since 1970-01-01), NaN where it is missing or not a number."""
    cells = read_cells(values, na_values, texts=False)
    if not isinstance(column, DateColumn):
        numbers = np.where(cells.missing, np.nan, cells.numbers)
        return numbers, cells.missing
    units = np.where(cells.is_text, np.nan, cells.numbers)  # stored numbers are units
    stamped = ~np.isnan(cells.seconds)
    units[stamped] = np.floor(cells.seconds[stamped] / UNITS[column.kind])
    parse = cells.is_text & ~cells.missing
    if parse.any():
        assert cells.texts is not None
        codes, uniques = pd.factorize(cells.texts[parse])
        texts = pd.Series(uniques, dtype=object)
        # pandas reads "now" and "today" as the clock's time: not a date written here.
        texts[texts.str.strip().str.lower().isin(["now", "today"])] = ""
        stamps = pd.to_datetime(texts, format=column.pattern, errors="coerce")
        units[parse] = to_units(pd.DatetimeIndex(stamps), column.kind)[codes]
    units[cells.missing] = np.nan
    return units, cells.missing


def read_keys(
    values: pd.Series, column: CategoricalColumn, na_values: Sequence[str] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, missing)``: each cell's declared key (:attr:`CategoricalColumn.keys`), or
    its own text where it matches no declared value (``""`` where missing)."""
    cells = read_cells(values, na_values)
    assert cells.texts is not None
    keys = cells.texts.copy()
    found = _isin(keys, np.array(column.keys, dtype=object)) & ~cells.missing
    numbers = {
        float(v): str(v)
        for v in reversed(column.declared)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    }
    if numbers:
        match = ~found & ~cells.missing & _isin(cells.numbers, list(numbers))
        keys[match] = [numbers[x] for x in cells.numbers[match]]
        found |= match
    flags = {v: str(v) for v in column.declared if isinstance(v, bool)}
    if flags:
        word = ~found & ~cells.missing & _isin(keys, list(_BOOLEANS))
        spelled = [_BOOLEANS[t] for t in keys[word]]
        keys[word] = [flags.get(b, t) for b, t in zip(spelled, keys[word], strict=True)]
    return keys, cells.missing


def odd_texts(values: pd.Series, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of the text cells ``mask`` marks, those that write a number with a comma
    (:data:`COMMA_NUMBER`) and those that are a common missing word
    (:data:`MISSING_WORDS`): what a message about cells that are not numbers names."""
    comma = np.zeros(len(values), dtype=bool)
    word = np.zeros(len(values), dtype=bool)
    for i in np.flatnonzero(mask):
        cell = values.iloc[i]
        if isinstance(cell, str):
            comma[i] = COMMA_NUMBER.fullmatch(cell) is not None
            word[i] = cell.strip() in MISSING_WORDS
    return comma, word


def _object_cells(values: np.ndarray) -> Cells:
    """Cells of any Python objects: texts, numbers, booleans, datetimes, missing."""
    n = len(values)
    missing = np.asarray(pd.isna(values), dtype=bool)
    if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):
        is_text = ~missing  # texts only (a CSV's cells): no cell-by-cell type check
    else:
        is_text = np.array([isinstance(v, str) for v in values], dtype=bool)
    texts = np.empty(n, dtype=object)
    texts[is_text] = values[is_text]
    numbers = np.full(n, np.nan)
    seconds = np.full(n, np.nan)
    for i in np.flatnonzero(~is_text & ~missing):  # a mixed column only: one cell at a time
        texts[i], numbers[i], seconds[i] = _object_cell(values[i])
    texts[missing] = ""
    missing |= is_text & (texts == "")
    if is_text.any():
        numbers[is_text] = text_numbers(texts[is_text])
    return Cells(missing, texts, is_text & ~missing, numbers, seconds)


def _object_cell(value: Any) -> tuple[str, float, float]:
    """A stored non-text cell's ``(text, number, seconds)``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)), np.nan, np.nan
    if isinstance(value, (int, np.integer)):
        return str(int(value)), float(value), np.nan
    if isinstance(value, (float, np.floating)):
        return _float_text(float(value)), float(value), np.nan
    stamp = pd.Timestamp(value) if isinstance(value, (pd.Timestamp, np.datetime64)) else None
    if stamp is None and hasattr(value, "isoformat") and hasattr(value, "year"):
        stamp = pd.Timestamp(value)  # datetime.date and datetime.datetime
    if stamp is not None:
        seconds = to_units(pd.DatetimeIndex([stamp]), "datetime")[0]
        return str(stamp), np.nan, float(seconds)
    return str(value), np.nan, np.nan


def text_numbers(texts: np.ndarray) -> np.ndarray:
    """The number each text writes (:data:`NUMBER`), NaN for any other text."""
    codes, uniques = pd.factorize(np.asarray(texts, dtype=object))
    written = np.array([NUMBER.fullmatch(t) is not None for t in uniques], dtype=bool)
    found = np.full(len(uniques), np.nan)
    if written.any():
        found[written] = np.asarray(uniques[written], dtype=object).astype(np.float64)
    return found[codes] if len(codes) else np.empty(0)


def _isin(cells: np.ndarray, values: Any) -> np.ndarray:
    """Which cells equal one of ``values`` (a hash lookup per cell)."""
    found = pd.Series(cells, dtype=cells.dtype, copy=False).isin(list(values))
    return found.to_numpy(dtype=bool)


def _float_text(value: float) -> str:
    """A float's shortest text, a whole one as an integer (``1.0`` -> ``1``)."""
    if math.isfinite(value) and value.is_integer():
        return str(int(value))
    return repr(value)


def _number_texts(values: pd.Series, missing: np.ndarray) -> np.ndarray:
    """Texts of a numeric column's cells (``""`` where missing)."""
    texts = np.full(len(values), "", dtype=object)
    present = ~missing
    if pd.api.types.is_integer_dtype(values.dtype):
        whole = values[present].astype("int64").to_numpy()  # exact, beyond 2**53 too
        texts[present] = whole.astype(str).astype(object)
    else:
        codes, uniques = pd.factorize(values.to_numpy(dtype=np.float64, na_value=np.nan)[present])
        texts[present] = np.array([_float_text(float(v)) for v in uniques], dtype=object)[codes]
    return texts


def _with_tokens(cells: Cells, na_values: Sequence[str]) -> Cells:
    """``cells`` with the schema's missing tokens marked missing (see the module)."""
    if not na_values:
        return cells
    tokens = np.array(list(na_values), dtype=object)
    numbers = text_numbers(tokens)
    numbers = numbers[~np.isnan(numbers)]
    missing = cells.missing.copy()
    if cells.texts is not None:
        missing |= _isin(cells.texts, tokens) & (cells.is_text | np.isnan(cells.numbers))
    if len(numbers):
        missing |= _isin(cells.numbers, numbers)
    if not (missing != cells.missing).any():
        return cells
    texts = None if cells.texts is None else np.where(missing, "", cells.texts)
    numbers_out = np.where(missing, np.nan, cells.numbers)
    return Cells(missing, texts, cells.is_text & ~missing, numbers_out, cells.seconds)


__all__ = [
    "COMMA_NUMBER",
    "MISSING_WORDS",
    "NUMBER",
    "Cells",
    "odd_texts",
    "read_cells",
    "read_keys",
    "read_numbers",
    "text_numbers",
]
