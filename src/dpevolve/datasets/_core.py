"""The data set registry, the file readers and :func:`load`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpevolve.data.schema import Schema
from dpevolve.datasets import _fetch
from dpevolve.datasets._base import (
    DATA_ENV,
    Dataset,
    cache_dir,
    data_dirs,
    finish,
    shipped_schema,
)
from dpevolve.datasets.synthetic import demo_schema, make_demo, make_xor, xor_schema
from dpevolve.errors import InputError

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

BANK5: tuple[str, ...] = ("age", "job", "marital", "education", "y")
"""Columns of the ``bank5`` study preset (schema ``bank5.yaml``, weight 1/5 each)."""

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

PERSON_ACTIVITY_TAGS: Mapping[str, str] = {
    "010-000-024-033": "ANKLE_LEFT",
    "010-000-030-096": "ANKLE_RIGHT",
    "020-000-033-111": "CHEST",
    "020-000-032-221": "BELT",
}
"""Tag identificators of the Localization Data for Person Activity and where they sit."""


# ----------------------------------------------------------------------- registry
@dataclass(frozen=True)
class _Preset:
    columns: tuple[str, ...]
    schema_file: str | None = None  # its own schema (weights, hierarchy), else a select


@dataclass(frozen=True)
class _Spec:
    name: str
    description: str
    default_split: str
    # split -> candidate paths relative to a data folder (the first is the primary one)
    splits: Mapping[str, tuple[str, ...]]
    schema: Callable[[], Schema]
    reader: Callable[[Path, str], pd.DataFrame] | None = None
    generator: Callable[[str], Dataset] | None = None
    presets: Mapping[str, _Preset] = field(default_factory=dict)
    drop_missing: bool = False
    unavailable: Mapping[str, str] = field(default_factory=dict)


def _variants(stem: str, *suffixes: str) -> tuple[str, ...]:
    return tuple(stem + s for s in suffixes)


def _table_variants(stem: str, primary: str) -> tuple[str, ...]:
    """``stem`` + ``primary`` first, then the other table formats we accept."""
    others = [s for s in (".csv.gz", ".csv", ".parquet") if s != primary]
    return _variants(stem, primary, *others)


# ------------------------------------------------------------------------ readers
def _read_table(path: Path, **csv_kwargs: object) -> pd.DataFrame:
    """Read a CSV (optionally gzipped) or Parquet file with a one-line error."""
    try:
        if path.name.lower().endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        return pd.read_csv(path, **csv_kwargs)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError,
            ValueError) as exc:  # fmt: skip
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"could not read {path}: {first}") from None


def _is_parquet(path: Path) -> bool:
    return path.name.lower().endswith((".parquet", ".pq"))


def _read_adult(path: Path, split: str) -> pd.DataFrame:
    if _is_parquet(path):
        frame = _read_table(path)
    else:
        # no header; ", " separated; adult.test starts with "|1x3 Cross validator"
        frame = _read_table(
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


def _read_bank(path: Path, split: str) -> pd.DataFrame:
    return _read_table(path, sep=";", keep_default_na=False)


def _read_person_activity(path: Path, split: str) -> pd.DataFrame:
    if _is_parquet(path):
        frame = _read_table(path)
    else:
        frame = _read_table(path, index_col=0, keep_default_na=False)
    return frame.rename(columns={"Sequence Name": "sequence", "Tag identificator": "tag"})


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
    if _is_parquet(path):
        frame = _read_table(path)
    else:
        # read every cell as text: "N" stays "N" in categorical columns
        frame = _read_table(path, dtype=str, keep_default_na=False)
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


def _read_tabpe(path: Path, split: str) -> pd.DataFrame:
    return _read_table(path)


# ---------------------------------------------------------------------- the table
_ADULT_DESC = (
    "UCI Adult (Census Income; 1994 CPS extract by Barry Becker): train 32,561 rows "
    "(adult.data), test 16,281 rows (adult.test), 15 columns, label income. Cleaning: the "
    "test split's junk first line is skipped and its label periods stripped; '?' marks a "
    "missing value (workclass, occupation, native-country), and rows with a missing value "
    "in the selected columns are dropped."
)
_BANK_DESC = (
    "UCI Bank Marketing (Moro et al. 2011): direct-marketing calls of a Portuguese bank; "
    "split 'full' = bank-full.csv (45,211 rows), 'small' = bank.csv (4,521-row sample); "
    "17 columns, label y (term deposit subscribed). No missing cells ('unknown' is a "
    "category)."
)
_PERSON_DESC = (
    "UCI Localization Data for Person Activity (Kaluza et al. 2010), persons A (27,473 rows) "
    "and B (30,150 rows) only: one row per tag reading, columns tag, x, y, z and the label "
    "activity (11 values); the sequence, timestamp and date columns are dropped. Split 'AB' "
    "is A followed by B."
)
_NIST_DESC = (
    "NIST Diverse Communities Data Excerpts, ACS 2019 ({what}): {rows} person records, 24 "
    "columns (SDNist / CRC target data). Nulls ('N') are the category 'N' in categorical "
    "columns and a sentinel below the documented minimum in PINCP (-10000) and POVPIP (-1). "
    "No label."
)
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

_NIST_FILES = {
    "nist_ma2019": ("ma2019", "Massachusetts, 5 PUMAs", "7,634"),
    "nist_tx2019": ("tx2019", "Texas, 6 PUMAs", "9,276"),
    "nist_national2019": ("national2019", "20 PUMAs across the US", "27,253"),
}

XOR_TRAIN_ROWS = 12000
XOR_TEST_ROWS = 3000
DEMO_TRAIN_ROWS = 30_000
DEMO_TEST_ROWS = 2000


def _xor_generator(k: int) -> Callable[[str], Dataset]:
    def generate(split: str) -> Dataset:
        if split == "train":
            return make_xor(k, XOR_TRAIN_ROWS, seed=0)
        return make_xor(k, XOR_TEST_ROWS, seed=1)

    return generate


def _demo_generator(split: str) -> Dataset:
    if split == "train":
        return make_demo(DEMO_TRAIN_ROWS, seed=0)
    return make_demo(DEMO_TEST_ROWS, seed=1)


def _xor_schema(k: int) -> Callable[[], Schema]:
    return lambda: xor_schema(k)


def _build_registry() -> dict[str, _Spec]:
    specs: list[_Spec] = [
        _Spec(
            name="adult",
            description=_ADULT_DESC,
            default_split="train",
            splits={
                "train": _variants("adult/adult.data", ".gz", "", ".parquet"),
                "test": _variants("adult/adult.test", ".gz", "", ".parquet"),
            },
            schema=lambda: shipped_schema("adult.yaml"),
            reader=_read_adult,
            presets={
                "adult-tabpe": _Preset(ADULT_TABPE),
                "adult5": _Preset(ADULT5, "adult5.yaml"),
            },
            drop_missing=True,
        ),
        _Spec(
            name="bank",
            description=_BANK_DESC,
            default_split="full",
            splits={
                "full": _table_variants("bank_marketing/bank-full", ".csv.gz"),
                "small": _table_variants("bank_marketing/bank", ".csv"),
            },
            schema=lambda: shipped_schema("bank.yaml"),
            reader=_read_bank,
            presets={"bank5": _Preset(BANK5, "bank5.yaml")},
        ),
        _Spec(
            name="person_activity",
            description=_PERSON_DESC,
            default_split="A",
            splits={
                "A": _table_variants("localization_person_activity/A", ".csv.gz"),
                "B": _table_variants("localization_person_activity/B", ".csv.gz"),
                "AB": (),
            },
            schema=lambda: shipped_schema("person_activity.yaml"),
            reader=_read_person_activity,
        ),
    ]
    for name, (stem, what, rows) in _NIST_FILES.items():
        specs.append(
            _Spec(
                name=name,
                description=_NIST_DESC.format(what=what, rows=rows),
                default_split="all",
                splits={"all": _table_variants(f"nist_diverse_communities/{stem}", ".csv.gz")},
                schema=lambda: shipped_schema("nist2019.yaml"),
                reader=_read_nist,
                presets={
                    "nist_subset": _Preset(NIST_SUBSET),
                    "nist_subset7": _Preset(NIST_SUBSET7),
                },
            )
        )
    specs.append(
        _Spec(
            name="tabpe_person_activity",
            description=_TABPE_DESC,
            default_split="test",
            splits={
                split: _table_variants(f"tabpe/person-activity/person-activity_{split}", ".csv")
                for split in ("test", "val", "train")
            },
            schema=lambda: shipped_schema("tabpe_person_activity.yaml"),
            reader=_read_tabpe,
            unavailable={"train": _TABPE_TRAIN_MISSING},
        )
    )
    for k in range(1, 8):
        specs.append(
            _Spec(
                name=f"xor{k}",
                description=(
                    f"XOR stress test (Tab-PE) with {k} feature(s) uniform on [-10, 10], label "
                    "target = parity of the number of positive features; generated: split "
                    f"'train' = make_xor({k}, {XOR_TRAIN_ROWS}, seed=0), 'test' = "
                    f"make_xor({k}, {XOR_TEST_ROWS}, seed=1)."
                ),
                default_split="train",
                splits={"train": (), "test": ()},
                schema=_xor_schema(k),
                generator=_xor_generator(k),
            )
        )
    specs.append(
        _Spec(
            name="demo",
            description=(
                "Census-like demo table generated in code (no files needed): split 'train' "
                f"= make_demo({DEMO_TRAIN_ROWS}, seed=0), 'test' = make_demo({DEMO_TEST_ROWS}, "
                "seed=1)."
            ),
            default_split="train",
            splits={"train": (), "test": ()},
            schema=demo_schema,
            generator=_demo_generator,
        )
    )
    return {spec.name: spec for spec in specs}


_REGISTRY = _build_registry()

# preset names that may be used as data set names
_ALIASES: dict[str, tuple[str, str]] = {
    "adult-tabpe": ("adult", "adult-tabpe"),
    "adult5": ("adult", "adult5"),
    "bank5": ("bank", "bank5"),
}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _resolve(name: str) -> tuple[_Spec, str | None]:
    """The spec of ``name`` and the preset it implies (for aliases such as ``adult5``)."""
    if not isinstance(name, str):
        raise InputError(f"data set name must be a string, got {type(name).__name__}")
    key = _key(name)
    for spec_name, spec in _REGISTRY.items():
        if _key(spec_name) == key:
            return spec, None
    for alias, (spec_name, preset) in _ALIASES.items():
        if _key(alias) == key:
            return _REGISTRY[spec_name], preset
    known = ", ".join([*_REGISTRY, *_ALIASES])
    raise InputError(f"unknown data set '{name}' (known: {known})")


def _split_of(spec: _Spec, split: str | None) -> str:
    if split is None:
        return spec.default_split
    for known in spec.splits:
        if known.lower() == str(split).lower():
            return known
    raise InputError(
        f"data set '{spec.name}' has no split '{split}' (splits: {', '.join(spec.splits)})"
    )


def _schema_of(spec: _Spec, columns: Sequence[str] | str | None) -> Schema:
    full = spec.schema()
    if columns is None:
        return full
    if isinstance(columns, str):
        preset = next((p for n, p in spec.presets.items() if _key(n) == _key(columns)), None)
        if preset is None:
            known = ", ".join(spec.presets) or "none"
            raise InputError(
                f"data set '{spec.name}' has no column preset '{columns}' (presets: {known}); "
                "pass a list of column names to select columns"
            )
        if preset.schema_file is not None:
            return shipped_schema(preset.schema_file)
        return full.select(list(preset.columns))
    names = list(columns)
    if not names:
        raise InputError(f"columns= selects no columns of '{spec.name}'")
    bad = [c for c in names if not isinstance(c, str)]
    if bad:
        raise InputError(f"column names must be strings, got {bad[0]!r}")
    return full.select(names)


def _locate(spec: _Spec, split: str) -> Path:
    candidates = spec.splits[split]
    roots = data_dirs()
    for root in roots:
        for relative in candidates:
            path = root / relative
            if path.is_file():
                return path
    if split in spec.unavailable:
        raise InputError(spec.unavailable[split])
    looked = ", ".join(str(r) for r in roots)
    hint = f"set {DATA_ENV} to a folder with {candidates[0]}"
    if spec.name in _fetch.SOURCES:
        hint += f", or run `dpevolve datasets fetch {spec.name}`"
    raise InputError(
        f"data set '{spec.name}': file {candidates[0]} not found (looked in {looked}); {hint}"
    )


# ----------------------------------------------------------------------- public API
def names() -> list[str]:
    """Names of all registered data sets (see :func:`presets` for column presets).

    Returns
    -------
    list of str
        ``adult``, ``bank``, ``person_activity``, the three ``nist_*`` excerpts,
        ``tabpe_person_activity``, ``xor1`` .. ``xor7`` and ``demo``.
    """
    return list(_REGISTRY)


def presets(name: str) -> dict[str, list[str]]:
    """Named column presets of a data set.

    Parameters
    ----------
    name
        A data set name (or an alias such as ``adult5``).

    Returns
    -------
    dict
        Preset name -> its columns, in order. Pass the preset name as ``columns=`` to
        :func:`load` or :func:`schema`.
    """
    spec, _ = _resolve(name)
    return {preset: list(p.columns) for preset, p in spec.presets.items()}


def splits(name: str) -> list[str]:
    """The splits of a data set; the first is the default."""
    spec, _ = _resolve(name)
    return [spec.default_split, *[s for s in spec.splits if s != spec.default_split]]


def schema(name: str, columns: Sequence[str] | str | None = None) -> Schema:
    """The declared schema of a data set (no data is read).

    Parameters
    ----------
    name
        A data set name, or an alias of a preset (``adult5``, ``adult-tabpe``, ``bank5``).
    columns
        ``None`` for all columns, a preset name, or a list of column names.

    Returns
    -------
    Schema
        Domains from the data's documentation, never from its records.
    """
    spec, implied = _resolve(name)
    return _schema_of(spec, implied if columns is None else columns)


def load(
    name: str,
    split: str | None = None,
    columns: Sequence[str] | str | None = None,
) -> Dataset:
    """Load a data set, cleaned and checked against its declared schema.

    Data files are looked up in ``$DPEVOLVE_DATA`` (a folder laid out like the project's
    shared data: ``adult/adult.data.gz``, ``bank_marketing/bank-full.csv.gz``, ...), then
    in the user cache that :func:`fetch` fills. Plain, gzipped and Parquet variants of a
    file are accepted (``adult.data``, ``bank-full.csv``, ``ma2019.parquet``, ...).

    Parameters
    ----------
    name
        One of :func:`names`, or a preset alias (``adult5``, ``adult-tabpe``, ``bank5``).
    split
        A split of the data set (see :func:`splits`); ``None`` gives the default.
    columns
        ``None`` for all columns, a preset name (e.g. ``"nist_subset"``), or a list of
        column names (their order is kept).

    Returns
    -------
    Dataset
        The frame holds exactly the schema's columns and validates against the schema
        with ``on_invalid="error"``. For Adult, rows with a missing value in the selected
        columns are dropped.

    Raises
    ------
    InputError
        Unknown name, split or column; a missing file (the message names the file and how
        to get it); data outside the declared domains.
    """
    spec, implied = _resolve(name)
    split_name = _split_of(spec, split)
    sch = _schema_of(spec, implied if columns is None else columns)
    what = f"dataset {spec.name} ({split_name})"
    source: Path | None = None
    if spec.generator is not None:
        generated = spec.generator(split_name)
        frame = finish(generated.frame[sch.names], sch, what)
    elif spec.name == "person_activity" and split_name == "AB":
        parts = [load("person_activity", s, sch.names) for s in ("A", "B")]
        frame = pd.concat([p.frame for p in parts], ignore_index=True)
        source = parts[0].source.parent if parts[0].source is not None else None
    else:
        assert spec.reader is not None
        source = _locate(spec, split_name)
        raw = spec.reader(source, split_name)
        missing = [c for c in sch.names if c not in raw.columns]
        if missing:
            raise InputError(f"{source} lacks column '{missing[0]}' of data set '{spec.name}'")
        frame = raw[sch.names]
        if spec.drop_missing:
            frame = frame.dropna()
        frame = finish(frame, sch, f"dataset {spec.name} ({source})")
    return Dataset(
        name=spec.name,
        frame=frame,
        schema=sch,
        label=sch.label,
        description=spec.description,
        source=source,
        split=split_name,
    )


def fetch(name: str, dest: str | Path | None = None, force: bool = False) -> list[Path]:
    """Download a data set's files from their original public sources.

    Adult and Bank Marketing come from the UCI archive, the NIST excerpts from
    usnistgov/SDNist (Git LFS media), the person-activity files from the GitHub
    repositories named in the data READMEs. Every file is checked against the sha256
    documented in the READMEs; files already present with the right checksum are kept.

    Parameters
    ----------
    name
        A data set name or preset alias. Generated data sets (``xor*``, ``demo``) need no
        files and return an empty list.
    dest
        Folder to fill (laid out like the shared data folder); default :func:`cache_dir`.
    force
        Download again even when a verified file is present.

    Returns
    -------
    list of Path
        The files, verified.

    Raises
    ------
    InputError
        No source could be reached, or a download's checksum does not match (that file
        is deleted).
    """
    spec, _ = _resolve(name)
    if spec.generator is not None:
        return []
    root = Path(dest).expanduser() if dest is not None else cache_dir()
    return _fetch.fetch_items(spec.name, _fetch.SOURCES[spec.name], root, force)


def person_activity_holdout(
    seed: int = 0,
    test_fraction: float = 0.2,
    columns: Sequence[str] | None = None,
) -> tuple[Dataset, Dataset]:
    """Person A's rows split into train and test, stratified by activity.

    For the PubMix study: private = A-train, public = ``load("person_activity", "B")``,
    evaluation = A-test.

    Parameters
    ----------
    seed
        Seed of the split (the same seed gives the same split).
    test_fraction
        Share of each activity's rows that goes to the test part, in (0, 1).
    columns
        Columns to keep (default all of ``person_activity``); the split is stratified by
        ``activity`` whether or not it is kept.

    Returns
    -------
    (Dataset, Dataset)
        Train and test, splits ``"A-train"`` and ``"A-test"``, rows in file order.
    """
    if not (isinstance(test_fraction, (int, float)) and 0.0 < test_fraction < 1.0):
        raise InputError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    full = load("person_activity", split="A")
    sch = _schema_of(_REGISTRY["person_activity"], columns)
    activity = full.frame["activity"].to_numpy()
    rng = np.random.default_rng(seed)
    test = np.zeros(len(activity), dtype=bool)
    for value in sorted(set(activity.tolist())):
        rows = np.flatnonzero(activity == value)
        take = math.floor(test_fraction * len(rows) + 0.5)
        test[rng.permutation(rows)[:take]] = True
    parts = []
    for mask, split in ((~test, "A-train"), (test, "A-test")):
        frame = full.frame.loc[mask, sch.names].reset_index(drop=True)
        parts.append(
            Dataset(
                name="person_activity",
                frame=frame,
                schema=sch,
                label=sch.label,
                description=(
                    f"{full.description} Person A, {split[2:]} part of a "
                    f"{1 - test_fraction:g}/{test_fraction:g} split stratified by activity "
                    f"(seed={seed})."
                ),
                source=full.source,
                split=split,
            )
        )
    return parts[0], parts[1]


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
