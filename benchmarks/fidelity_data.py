"""The fidelity benchmark's data sets: private training rows, held-out test rows and,
where the benchmark gives one, a public table.

==========================  ====================================================
key                         table
==========================  ====================================================
``adult``                   Adult-9 (``adult-tabpe`` columns), UCI train / test
``bank``                    Bank-5 (``bank5``), a fixed 80/20 split of bank-full
``person_activity``         Person Activity, persons A (80/20 stratified holdout)
``person_activity_public``  the same, with person B's rows as public data
``adult_public``            Adult-9 less 1,000 public rows: a random sample of the UCI
                            training rows (seed 0), so a small public sample
``adult_public_shift``      Adult-9 less 1,000 public rows drawn (seed 0) from the
                            training rows aged 40 or more: a small, shifted sample
``xor3``                    XOR-3 (12,000 / 3,000 rows), sign at the midpoint 0
``xor3_off``                XOR-3 with the sign at 2.5 (:func:`tables.make_xor_offset`)
``adult15``                 Adult with all 15 UCI columns, UCI train / test
``wide10`` .. ``wide100``   :func:`tables.make_wide`, d = 10 / 40 / 100, 20,000 train
                            rows (seed 0) and 5,000 test rows (seed 1), structure 0
==========================  ====================================================

Real data is read through :mod:`dpevolve.datasets` (``DPEVOLVE_DATA``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dpevolve import datasets
from dpevolve.data.schema import Schema

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tables

WIDE_TRAIN, WIDE_TEST = 20_000, 5_000
XOR_TRAIN, XOR_TEST = 12_000, 3_000


@dataclass(frozen=True)
class Split:
    """A benchmark table (titles: :data:`TITLES`): private ``train``, held-out ``test``,
    optional ``public``."""

    key: str
    train: pd.DataFrame
    test: pd.DataFrame
    schema: Schema
    label: str
    public: pd.DataFrame | None = None


def _registry(name: str, columns: str | None, key: str) -> Split:
    train = datasets.load(name, split="train", columns=columns)
    test = datasets.load(name, split="test", columns=columns)
    assert train.label is not None
    return Split(key, train.frame, test.frame, train.schema, train.label)


def _bank() -> Split:
    full = datasets.load("bank", columns="bank5")
    frame = full.frame.reset_index(drop=True)
    order = np.random.default_rng(0).permutation(len(frame))
    cut = int(0.8 * len(order))
    assert full.label is not None
    return Split(
        "bank",
        frame.iloc[order[:cut]].reset_index(drop=True),
        frame.iloc[order[cut:]].reset_index(drop=True),
        full.schema,
        full.label,
    )


def _person_activity(public: bool) -> Split:
    train, test = datasets.person_activity_holdout(seed=0)
    assert train.label is not None
    pub = datasets.load("person_activity", split="B").frame if public else None
    key = "person_activity_public" if public else "person_activity"
    return Split(key, train.frame, test.frame, train.schema, train.label, pub)


PUBLIC_ROWS = 1_000
"""Rows of the Adult public tables (taken out of the private rows)."""


def _adult_public(shifted: bool) -> Split:
    """Adult-9 with public rows taken out of the UCI training rows by a fixed rule (a
    seed-0 draw, from the rows aged 40 or more when ``shifted``); the rest is private.
    The rule reads no private value beyond choosing which rows are public."""
    base = _registry("adult", "adult-tabpe", "adult")
    frame = base.train.reset_index(drop=True)
    pool = np.flatnonzero(frame["age"].to_numpy() >= 40) if shifted else np.arange(len(frame))
    public = np.random.default_rng(0).choice(pool, size=PUBLIC_ROWS, replace=False)
    private = np.setdiff1d(np.arange(len(frame)), public)
    return Split(
        "adult_public_shift" if shifted else "adult_public",
        frame.iloc[private].reset_index(drop=True),
        base.test,
        base.schema,
        base.label,
        frame.iloc[np.sort(public)].reset_index(drop=True),
    )


def _xor_off() -> Split:
    schema = tables.xor_offset_schema(3)
    return Split(
        "xor3_off",
        tables.make_xor_offset(XOR_TRAIN, seed=0),
        tables.make_xor_offset(XOR_TEST, seed=1),
        schema,
        "target",
    )


def _wide(d: int) -> Split:
    train, schema, _ = tables.make_wide(d, WIDE_TRAIN, seed=0)
    test, _, _ = tables.make_wide(d, WIDE_TEST, seed=1)
    return Split(f"wide{d}", train, test, schema, tables.LABEL)


LOADERS: dict[str, Callable[[], Split]] = {
    "adult": lambda: _registry("adult", "adult-tabpe", "adult"),
    "bank": _bank,
    "person_activity": lambda: _person_activity(False),
    "person_activity_public": lambda: _person_activity(True),
    "adult_public": lambda: _adult_public(False),
    "adult_public_shift": lambda: _adult_public(True),
    "xor3": lambda: _registry("xor3", None, "xor3"),
    "xor3_off": _xor_off,
    "adult15": lambda: _registry("adult", None, "adult15"),
    "wide10": lambda: _wide(10),
    "wide40": lambda: _wide(40),
    "wide100": lambda: _wide(100),
}
"""Benchmark key -> loader, in the order of the report."""

WITH_PUBLIC = {"person_activity_public": "person_activity"}
"""Tables with public data -> the same private table without it."""

TITLES = {
    "adult": "Adult-9",
    "bank": "Bank-5",
    "person_activity": "Person Activity A",
    "person_activity_public": "Person Activity A (+ B public)",
    "adult_public": "Adult-9 less 1,000 public rows (+ them public)",
    "adult_public_shift": "Adult-9 less 1,000 public rows aged 40+ (+ them public)",
    "xor3": "XOR-3",
    "xor3_off": "XOR-3 off-midpoint",
    "adult15": "Adult-15",
    "wide10": "Synthetic d = 10",
    "wide40": "Synthetic d = 40",
    "wide100": "Synthetic d = 100",
}


def load(key: str) -> Split:
    """The benchmark table ``key`` (one of :data:`LOADERS`)."""
    if key not in LOADERS:
        raise KeyError(f"unknown benchmark data set {key!r} (known: {', '.join(LOADERS)})")
    return LOADERS[key]()
