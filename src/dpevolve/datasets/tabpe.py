"""The Tab-PE integer-coded copy of person-activity: reader and registry entry."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpevolve.datasets._base import DATA_ENV, shipped_schema
from dpevolve.datasets._spec import Spec, read_source_file, table_variants


def _read_tabpe(path: Path, split: str) -> pd.DataFrame:
    return read_source_file(path)


_TABPE_DESC = (
    "Tab-PE 'person-activity' benchmark (toan-vt/cloud-data-store): the UCI Localization "
    "Data for Person Activity, all five persons, every column integer-coded (V1 person, V2 "
    "tag, V3-V7 rank codes of time, date, x, y, z), label Class (1-11). Splits 'test' and "
    "'val' (24,729 rows each); the private 'train' split is not publicly retrievable."
)


_TABPE_TRAIN_MISSING = (
    "tabpe_person_activity: the 'train' split (person-activity_train.csv, 115,402 rows, the "
    "private data of the Tab-PE example) is not retrievable: no public copy could be "
    "fetched (see tabpe/person-activity/README.md of the shared data); use split 'test' or "
    "'val', or place the file at tabpe/person-activity/person-activity_train.csv under "
    f"${DATA_ENV}"
)


SPECS: tuple[Spec, ...] = (
    Spec(
        name="tabpe_person_activity",
        description=_TABPE_DESC,
        default_split="test",
        splits={
            split: table_variants(f"tabpe/person-activity/person-activity_{split}", ".csv")
            for split in ("test", "val", "train")
        },
        schema=lambda: shipped_schema("tabpe_person_activity.yaml"),
        reader=_read_tabpe,
        unavailable={"train": _TABPE_TRAIN_MISSING},
    ),
)
