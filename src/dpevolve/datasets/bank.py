"""UCI Bank Marketing: the ``bank5`` preset, the reader and the registry entry."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from dpevolve.datasets._base import shipped_schema
from dpevolve.datasets._spec import ColumnSelection, Spec, read_source_file, table_variants

BANK5: tuple[str, ...] = ("age", "job", "marital", "education", "y")
"""Columns of the ``bank5`` study preset (schema ``bank5.yaml``, weight 1/5 each)."""


def _read_bank(path: Path, split: str) -> pd.DataFrame:
    return read_source_file(path, sep=";", keep_default_na=False)


_BANK_DESC = (
    "UCI Bank Marketing (Moro et al. 2011): direct-marketing calls of a Portuguese bank; "
    "split 'full' = bank-full.csv (45,211 rows), 'small' = bank.csv (4,521-row sample); "
    "17 columns, label y (term deposit subscribed). No missing cells ('unknown' is a "
    "category)."
)


SPECS: tuple[Spec, ...] = (
    Spec(
        name="bank",
        description=_BANK_DESC,
        default_split="full",
        splits={
            "full": table_variants("bank_marketing/bank-full", ".csv.gz"),
            "small": table_variants("bank_marketing/bank", ".csv"),
        },
        schema=lambda: shipped_schema("bank.yaml"),
        reader=_read_bank,
        presets={"bank5": ColumnSelection(BANK5, "bank5.yaml")},
    ),
)


# preset names that may be used as data set names
ALIASES: Mapping[str, tuple[str, str]] = {"bank5": ("bank", "bank5")}
