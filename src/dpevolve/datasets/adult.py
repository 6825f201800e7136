"""UCI Adult (Census Income): columns, presets, the reader and the registry entry."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from dpevolve.datasets._base import shipped_schema
from dpevolve.datasets._spec import ColumnSelection, Spec, is_parquet, read_source_file, variants

# ------------------------------------------------------------------ public constants
ADULT_COLUMNS: tuple[str, ...] = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip
"""UCI Adult's 15 columns, in file order (the files have no header row)."""


ADULT_TABPE: tuple[str, ...] = (
    "age", "workclass", "education", "marital-status", "occupation", "race", "sex",
    "hours-per-week", "income",
)  # fmt: skip
"""Columns of the ``adult-tabpe`` preset (used by the benchmarks)."""


ADULT5: tuple[str, ...] = ("age", "workclass", "sex", "hours-per-week", "income")
"""Columns of the ``adult5`` study preset (schema ``adult5.yaml``, weight 1/5 each)."""


WORKCLASS_BLOCKS: Mapping[str, tuple[str, ...]] = {
    "private": ("Private",),
    "self-employed": ("Self-emp-not-inc", "Self-emp-inc"),
    "government": ("Federal-gov", "Local-gov", "State-gov"),
    "not-paid": ("Without-pay", "Never-worked"),
}
"""Documented grouping of Adult's ``workclass`` into blocks, for partition policies."""


def _read_adult(path: Path, split: str) -> pd.DataFrame:
    if is_parquet(path):
        frame = read_source_file(path)
    else:
        # no header; ", " separated; adult.test starts with "|1x3 Cross validator"
        frame = read_source_file(
            path, header=None, names=list(ADULT_COLUMNS), skipinitialspace=True,
            na_values=["?"], keep_default_na=False, comment="|",
        )  # fmt: skip
    for name in shipped_schema("adult.yaml").names:
        if name in frame.columns and not pd.api.types.is_numeric_dtype(frame[name]):
            values = frame[name].astype("string").str.strip()
            frame[name] = values.mask(values == "?").astype(object)
    if "income" in frame.columns:
        frame["income"] = frame["income"].astype("string").str.rstrip(".").astype(object)
    return frame


# ---------------------------------------------------------------------- the table
_ADULT_DESC = (
    "UCI Adult (Census Income; 1994 CPS extract by Barry Becker): train 32,561 rows "
    "(adult.data), test 16,281 rows (adult.test), 15 columns, label income. Cleaning: the "
    "test split's junk first line is skipped and its label periods stripped; '?' marks a "
    "missing value (workclass, occupation, native-country), and rows with a missing value "
    "in the selected columns are dropped."
)


SPECS: tuple[Spec, ...] = (
    Spec(
        name="adult",
        description=_ADULT_DESC,
        default_split="train",
        splits={
            "train": variants("adult/adult.data", ".gz", "", ".parquet"),
            "test": variants("adult/adult.test", ".gz", "", ".parquet"),
        },
        schema=lambda: shipped_schema("adult.yaml"),
        reader=_read_adult,
        presets={
            "adult-tabpe": ColumnSelection(ADULT_TABPE),
            "adult5": ColumnSelection(ADULT5, "adult5.yaml"),
        },
        drop_missing=True,
    ),
)


# preset names that may be used as data set names
ALIASES: Mapping[str, tuple[str, str]] = {
    "adult-tabpe": ("adult", "adult-tabpe"),
    "adult5": ("adult", "adult5"),
}
