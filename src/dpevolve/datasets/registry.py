"""The data set registry and its API: :func:`names`, :func:`schema`, :func:`load`, ...

Each data set family is one module of this package (``adult``, ``bank``,
``person_activity``, ``nist``, ``suite``, ``tabpe``, ``synthetic``) that declares its
:class:`~dpevolve.datasets._spec.Spec` entries in ``SPECS``; the registry finds every
such module itself, so adding a data set is its schema and one new module.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

import dpevolve.datasets._fetch as _fetch
from dpevolve.data.schema import Schema
from dpevolve.datasets._base import DATA_ENV, Dataset, cache_dir, data_dirs, finish, shipped_schema
from dpevolve.datasets._spec import Spec
from dpevolve.errors import InputError


def _families() -> tuple[ModuleType, ...]:
    """Every module of this package that declares ``SPECS``, in name order (the
    package's search path: a family is found wherever the package is laid out)."""
    found = []
    here = list(sys.modules[__name__.rpartition(".")[0]].__path__)
    for info in sorted(pkgutil.iter_modules(here), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "registry":
            continue
        module = importlib.import_module(f"{__package__}.{info.name}")
        if hasattr(module, "SPECS"):
            found.append(module)
    return tuple(found)


_FAMILIES = _families()
_REGISTRY: dict[str, Spec] = {spec.name: spec for family in _FAMILIES for spec in family.SPECS}
# preset names that may be used as data set names
_ALIASES: dict[str, tuple[str, str]] = {
    alias: target
    for family in _FAMILIES
    for alias, target in getattr(family, "ALIASES", {}).items()
}


def _key(name: str) -> str:
    return name.strip().lower().replace("-", "_")


def _resolve(name: str) -> tuple[Spec, str | None]:
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


def _split_of(spec: Spec, split: str | None) -> str:
    if split is None:
        return spec.default_split
    for known in spec.splits:
        if known.lower() == str(split).lower():
            return known
    raise InputError(
        f"data set '{spec.name}' has no split '{split}' (splits: {', '.join(spec.splits)})"
    )


def _schema_of(spec: Spec, columns: Sequence[str] | str | None) -> Schema:
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


def _locate(spec: Spec, split: str) -> Path:
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
        Family by family in module-name order: ``adult``, ``bank``, the three
        ``nist_*`` excerpts, ``person_activity``, the twelve suite tables of
        :mod:`dpevolve.datasets.suite`, ``xor1`` .. ``xor7`` and ``demo``,
        ``tabpe_person_activity``.
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
    if dest is None and not force:
        present = _present(spec)
        if present is not None:
            return present  # $DPEVOLVE_DATA (or the cache) holds every split: no download
    root = Path(dest).expanduser() if dest is not None else cache_dir()
    try:
        return _fetch.fetch_items(spec.name, _fetch.SOURCES[spec.name], root, force)
    except InputError as exc:
        if "could not download" not in str(exc):
            raise
        raise InputError(f"{exc}. Offline: {offline_hint(spec)}") from None


def _present(spec: Spec) -> list[Path] | None:
    """One file per split found in the data folders, or ``None`` if a split lacks one."""
    found: list[Path] = []
    for split, candidates in spec.splits.items():
        if not candidates or split in spec.unavailable:
            continue  # built from other splits, or not published
        try:
            found.append(_locate(spec, split))
        except InputError:
            return None
    return found


def offline_hint(spec: Spec) -> str:
    """Where to put a data set's files by hand, and the variable that points at them."""
    places = [f"${DATA_ENV}/{item.path}" for item in _fetch.SOURCES[spec.name]]
    return (
        f"copy the files to a folder and set {DATA_ENV} to it: {', '.join(places)} "
        "(a gzipped copy, with .gz added to its name, does too)"
    )


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
