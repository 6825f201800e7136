"""The benchmark suite's tables as the harness uses them: public, private and test rows
and the schema ``dpevolve schema infer`` proposes from the public rows.

The twelve package-served tables are registry data sets
(:mod:`dpevolve.datasets.suite`, splits ``public`` / ``private`` / ``test``). The four
the project had are cut the same way here (:func:`dpevolve.datasets.suite.split_rows`,
40/40/20 by the suite's seed) from all their rows, and their schema is inferred from
their public part, not read from the shipped YAML:

=====================  ==============================================================
``adult``              Adult-9 (``adult-tabpe`` columns), UCI train and test together
``bank``               Bank Marketing, all 17 columns of bank-full
``person_activity``    Person Activity, persons A and B together (split ``AB``)
``xor3``               XOR-3, its train and test rows together
=====================  ==============================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import pandas as pd

from dpevolve import datasets
from dpevolve.data.schema import Schema
from dpevolve.datasets.suite import SUITE, inferred_schema, refused_rows, split_rows

OWN: dict[str, tuple[str, tuple[str, ...], str | None]] = {
    "adult": ("adult", ("train", "test"), "adult-tabpe"),
    "bank": ("bank", ("full",), None),
    "person_activity": ("person_activity", ("AB",), None),
    "xor3": ("xor3", ("train", "test"), None),
}
"""The project's own tables: registry name, the splits joined, the column preset."""


@dataclass(frozen=True)
class Parts:
    """One suite table: its three parts, inferred schema and label."""

    key: str
    public: pd.DataFrame
    private: pd.DataFrame
    test: pd.DataFrame
    schema: Schema
    label: str
    refused: dict[str, int]  # rows of each part the inferred schema refused


def _own(key: str) -> Parts:
    name, splits, columns = OWN[key]
    loaded = [datasets.load(name, split=s, columns=columns) for s in splits]
    label = loaded[0].label
    assert label is not None
    frame = pd.concat([d.frame for d in loaded], ignore_index=True)
    parts = split_rows(frame)
    schema = inferred_schema(parts["public"], label)
    clean, refused = {}, {}
    for split, rows in parts.items():
        clean[split], _ = schema.validate(rows, on_invalid="drop", what=f"{key} ({split})")
        refused[split] = len(rows) - len(clean[split])
    return Parts(key, clean["public"], clean["private"], clean["test"], schema, label, refused)


@cache
def load(key: str) -> Parts:
    """The suite table ``key`` (one of :data:`dpevolve.datasets.suite.SUITE`)."""
    if key not in SUITE:
        raise KeyError(f"unknown suite table {key!r} (known: {', '.join(SUITE)})")
    if key in OWN:
        return _own(key)
    parts = {s: datasets.load(key, split=s) for s in ("public", "private", "test")}
    label = parts["private"].label
    assert label is not None
    return Parts(
        key,
        parts["public"].frame,
        parts["private"].frame,
        parts["test"].frame,
        parts["private"].schema,
        label,
        refused_rows(key),
    )
