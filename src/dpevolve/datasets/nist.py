"""NIST Diverse Communities Data Excerpts (ACS 2019): columns, nulls, reader, registry entries."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dpevolve.datasets._base import shipped_schema
from dpevolve.datasets._spec import (
    ColumnSelection,
    Spec,
    is_parquet,
    read_source_file,
    table_variants,
)
from dpevolve.errors import InputError

NIST_SUBSET: tuple[str, ...] = ("SEX", "MSP", "RAC1P", "EDU", "HOUSING_TYPE", "OWN_RENT")
"""The six categorical NIST columns of the PubMix study (2*7*9*13*3*3 = 14,742 cells)."""


NIST_SUBSET7: tuple[str, ...] = (
    "SEX", "MSP", "HISP", "RAC1P", "EDU", "HOUSING_TYPE", "OWN_RENT",
)  # fmt: skip
"""``NIST_SUBSET`` plus ``HISP`` (73,710 cells)."""


NIST_NUMERIC: tuple[str, ...] = ("AGEP", "DENSITY", "PINCP", "POVPIP", "PWGTP", "WGTP")
"""The NIST columns declared numeric in ``nist2019.yaml``; all others are categorical."""


NIST_NUMERIC_NULLS: Mapping[str, int] = {"PINCP": -10000, "POVPIP": -1}
"""Sentinels that stand for NIST's null ``N`` in numeric columns (below the documented
minimum: PINCP -9000, POVPIP 0). :func:`nist_restore_nulls` maps them back."""


_NIST_DOCUMENTED_MIN: Mapping[str, float] = {"PINCP": -9000.0, "POVPIP": 0.0}


def _category_keys(values: pd.Series) -> pd.Series:
    """NIST categorical cells as strings, nulls as ``"N"`` (``1.0`` reads as ``"1"``)."""
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        out = [
            "N" if v != v else (str(int(v)) if float(v).is_integer() else str(v))
            for v in values.tolist()
        ]
        return pd.Series(out, index=values.index, dtype=object)
    return values.astype(object).where(values.notna(), "N").astype(str).astype(object)


def _read_nist(path: Path, split: str) -> pd.DataFrame:
    if is_parquet(path):
        frame = read_source_file(path)
    else:
        # read every cell as text: "N" stays "N" in categorical columns
        frame = read_source_file(path, dtype=str, keep_default_na=False)
    for name in frame.columns:
        values = frame[name]
        if name in NIST_NUMERIC:
            text = values.astype(object)
            null = values.isna().to_numpy() | (text == "N").to_numpy()
            numeric = pd.to_numeric(text.mask(null), errors="coerce")
            bad = numeric.isna().to_numpy() & ~null
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise InputError(
                    f"{path} column '{name}': {int(bad.sum())} cells are not numbers "
                    f"(first at row {first}: {values.iloc[first]!r})"
                )
            if name in NIST_NUMERIC_NULLS:
                numeric = numeric.mask(null, float(NIST_NUMERIC_NULLS[name]))
            frame[name] = numeric
        else:
            frame[name] = _category_keys(values)
    return frame


_NIST_DESC = (
    "NIST Diverse Communities Data Excerpts, ACS 2019 ({what}): {rows} person records, 24 "
    "columns (SDNist / CRC target data). Nulls ('N') are the category 'N' in categorical "
    "columns and a sentinel below the documented minimum in PINCP (-10000) and POVPIP (-1). "
    "No label."
)


_NIST_FILES = {
    "nist_ma2019": ("ma2019", "Massachusetts, 5 PUMAs", "7,634"),
    "nist_tx2019": ("tx2019", "Texas, 6 PUMAs", "9,276"),
    "nist_national2019": ("national2019", "20 PUMAs across the US", "27,253"),
}


def nist_restore_nulls(frame: pd.DataFrame) -> pd.DataFrame:
    """Turn the numeric null sentinels of the NIST excerpts back into ``"N"``.

    A PINCP below -9000 or a POVPIP below 0 (the documented minima; the sentinels are
    -10000 and -1) becomes the string ``"N"``, as in NIST's files. Use it on synthetic
    NIST tables before writing them in NIST's format.

    Parameters
    ----------
    frame
        A table with any of the NIST columns.

    Returns
    -------
    pandas.DataFrame
        A copy; PINCP and POVPIP become object columns when they hold a null.
    """
    out = frame.copy()
    for name, minimum in _NIST_DOCUMENTED_MIN.items():
        if name not in out.columns:
            continue
        values = pd.to_numeric(out[name], errors="coerce")
        null = (values < minimum).to_numpy()
        if null.any():
            column = out[name].astype(object)
            column[null] = "N"
            out[name] = column
    return out


SPECS: tuple[Spec, ...] = tuple(
    Spec(
        name=name,
        description=_NIST_DESC.format(what=what, rows=rows),
        default_split="all",
        splits={"all": table_variants(f"nist_diverse_communities/{stem}", ".csv.gz")},
        schema=lambda: shipped_schema("nist2019.yaml"),
        reader=_read_nist,
        presets={
            "nist_subset": ColumnSelection(NIST_SUBSET),
            "nist_subset7": ColumnSelection(NIST_SUBSET7),
        },
    )
    for name, (stem, what, rows) in _NIST_FILES.items()
)
