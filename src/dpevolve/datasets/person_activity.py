"""UCI Localization Data for Person Activity (persons A and B): reader and registry entry.

The split ``AB`` has no file: :func:`dpevolve.datasets.load` concatenates A and B, and
:func:`dpevolve.datasets.person_activity_holdout` splits A for the PubMix study.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from dpevolve.datasets._base import shipped_schema
from dpevolve.datasets._spec import Spec, is_parquet, read_source_file, table_variants

PERSON_ACTIVITY_TAGS: Mapping[str, str] = {
    "010-000-024-033": "ANKLE_LEFT",
    "010-000-030-096": "ANKLE_RIGHT",
    "020-000-033-111": "CHEST",
    "020-000-032-221": "BELT",
}
"""Tag identificators of the Localization Data for Person Activity and where they sit."""


def _read_person_activity(path: Path, split: str) -> pd.DataFrame:
    if is_parquet(path):
        frame = read_source_file(path)
    else:
        frame = read_source_file(path, index_col=0, keep_default_na=False)
    return frame.rename(columns={"Sequence Name": "sequence", "Tag identificator": "tag"})


_PERSON_DESC = (
    "UCI Localization Data for Person Activity (Kaluza et al. 2010), persons A (27,473 rows) "
    "and B (30,150 rows) only: one row per tag reading, columns tag, x, y, z and the label "
    "activity (11 values); the sequence, timestamp and date columns are dropped. Split 'AB' "
    "is A followed by B."
)


SPECS: tuple[Spec, ...] = (
    Spec(
        name="person_activity",
        description=_PERSON_DESC,
        default_split="A",
        splits={
            "A": table_variants("localization_person_activity/A", ".csv.gz"),
            "B": table_variants("localization_person_activity/B", ".csv.gz"),
            "AB": (),
        },
        schema=lambda: shipped_schema("person_activity.yaml"),
        reader=_read_person_activity,
    ),
)
