"""Tests of dpevolve.datasets.

Loader tests read the project's shared data folder (``$DPEVOLVE_DATA`` if set, else
``<repo>/../shared/data``) and skip when it is absent. Row counts and value counts are
the ones the data READMEs document. The key check is that every loaded frame validates
against its shipped schema with ``on_invalid="error"``: the declared domains (taken from
the documentation) cover the real data.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpevolve import datasets
from dpevolve.cli import main
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.datasets import _fetch, suite
from dpevolve.errors import InputError

SCHEMA_DIR = Path(datasets.__file__).parent / "schemas"
_DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def _shared_data() -> Path:
    env = os.environ.get("DPEVOLVE_DATA", "").strip()
    return Path(env) if env else _DEFAULT_DATA


@pytest.fixture
def no_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty data folder and an empty cache."""
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("DPEVOLVE_DATA", str(empty))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return empty


@pytest.fixture
def data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The shared data folder as DPEVOLVE_DATA (skip when it is not there)."""
    root = _shared_data()
    if not root.is_dir():
        pytest.skip(f"shared data folder {root} not found (set DPEVOLVE_DATA)")
    monkeypatch.setenv("DPEVOLVE_DATA", str(root))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root


def _need(root: Path, relative: str) -> Path:
    path = root / relative
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


def _check_valid(ds: datasets.Dataset, schema_file: str | None = None) -> None:
    """The frame validates with on_invalid='error' against the schema (and the YAML)."""
    schemas = [ds.schema]
    if schema_file is not None:
        shipped = Schema.load(SCHEMA_DIR / schema_file)
        schemas.append(shipped.select(ds.schema.names))
    for schema in schemas:
        clean, report = schema.validate(ds.frame, on_invalid="error")
        assert len(clean) == len(ds.frame)
        assert not report.changed
    assert list(ds.frame.columns) == ds.schema.names
    assert ds.label == ds.schema.label


# ------------------------------------------------------------------ schemas (no data)
def test_shipped_schemas_parse() -> None:
    files = sorted(p.name for p in SCHEMA_DIR.glob("*.yaml"))
    assert files == [
        "adult.yaml", "adult5.yaml", "bank.yaml", "bank5.yaml", "demo.yaml",
        "nist2019.yaml", "person_activity.yaml", "tabpe_person_activity.yaml",
    ]  # fmt: skip
    for name in files:
        Schema.load(SCHEMA_DIR / name)  # raises on a bad file


def test_bank_yes_no_are_strings() -> None:
    # YAML 1.1 reads a bare yes/no as a boolean; the shipped files must quote them.
    raw = yaml.safe_load((SCHEMA_DIR / "bank.yaml").read_text())
    for name, decl in raw["columns"].items():
        for value in decl.get("values", []):
            assert not isinstance(value, bool), (name, value)


def test_adult_schema_domains() -> None:
    sch = datasets.schema("adult")
    assert sch.names == list(datasets.ADULT_COLUMNS)
    assert sch.label == "income"
    age, hours = sch["age"], sch["hours-per-week"]
    assert isinstance(age, NumericColumn) and (age.lo, age.hi) == (17, 90)
    assert isinstance(hours, NumericColumn) and (hours.lo, hours.hi) == (1, 99)
    native = sch["native-country"]
    assert isinstance(native, CategoricalColumn) and len(native.values) == 41
    assert datasets.schema("adult", "adult-tabpe").names == list(datasets.ADULT_TABPE)


def test_adult5_study_schema() -> None:
    sch = datasets.schema("adult5")
    assert sch.names == ["age", "workclass", "sex", "hours-per-week", "income"]
    assert sch.weights.tolist() == [0.2] * 5
    assert sch.label == "income"
    # math.md section 3: reach of age theta=7 is 7/365, hours theta=8 is 8/490
    assert 0.2 * 7 / sch["age"].range == pytest.approx(7 / 365)  # type: ignore[union-attr]
    assert 0.2 * 8 / sch["hours-per-week"].range == pytest.approx(8 / 490)  # type: ignore[union-attr]
    workclass = sch["workclass"]
    assert isinstance(workclass, CategoricalColumn) and workclass.hierarchy is None
    blocks = [v for block in datasets.WORKCLASS_BLOCKS.values() for v in block]
    assert sorted(blocks) == sorted(workclass.keys)


def test_bank5_job_hierarchy() -> None:
    sch = datasets.schema("bank5")
    assert sch.weights.tolist() == [0.2] * 5
    job = sch["job"]
    assert isinstance(job, CategoricalColumn)
    d = job.distance_matrix()
    keys = list(job.keys)

    def dist(a: str, b: str) -> float:
        return float(d[keys.index(a), keys.index(b)])

    assert dist("admin.", "management") == 0.5
    assert dist("retired", "student") == 0.5
    assert dist("blue-collar", "services") == 0.5
    assert dist("admin.", "blue-collar") == 1.0
    assert dist("unknown", "retired") == 1.0
    assert dist("technician", "technician") == 0.0


def test_nist_schema_from_dictionary() -> None:
    sch = datasets.schema("nist_ma2019")
    assert len(sch) == 24 and sch.label is None
    puma = sch["PUMA"]
    assert isinstance(puma, CategoricalColumn) and len(puma.values) == 31
    agep = sch["AGEP"]
    assert isinstance(agep, NumericColumn) and (agep.lo, agep.hi) == (0, 99)
    assert datasets.schema("nist_tx2019", "nist_subset").names == list(datasets.NIST_SUBSET)
    cells = np.prod([len(sch[c].values) for c in datasets.NIST_SUBSET])  # type: ignore[union-attr]
    assert cells == 14742  # math.md section 5: d for the six categorical columns


def test_registry_and_errors() -> None:
    for name in ("adult", "bank", "person_activity", "nist_ma2019", "nist_tx2019",
                 "nist_national2019", "tabpe_person_activity", "xor3", "demo"):  # fmt: skip
        assert name in datasets.names()
    assert set(datasets.presets("adult")) == {"adult-tabpe", "adult5"}
    assert datasets.presets("nist_national2019")["nist_subset"] == list(datasets.NIST_SUBSET)
    assert datasets.splits("adult") == ["train", "test"]
    with pytest.raises(InputError, match="unknown data set 'nope'"):
        datasets.load("nope")
    with pytest.raises(InputError, match="no split 'dev'"):
        datasets.load("demo", split="dev")
    with pytest.raises(InputError, match="no column preset"):
        datasets.schema("adult", "bank5")
    with pytest.raises(InputError, match="unknown column 'height'"):
        datasets.load("demo", columns=["age", "height"])


# ------------------------------------------------------------------- generated data
def test_xor_labels_are_parity() -> None:
    for k in (1, 3, 5):
        ds = datasets.make_xor(k, 2000, seed=4)
        features = ds.frame[[f"num_feat_{i}" for i in range(k)]].to_numpy()
        assert features.min() >= -10 and features.max() <= 10
        parity = (features > 0).sum(axis=1) % 2
        assert (ds.frame["target"].astype(int).to_numpy() == parity).all()
        assert 0.4 < parity.mean() < 0.6
        _check_valid(ds)


def test_xor3_registered(no_data: Path) -> None:
    train = datasets.load("xor3")
    again = datasets.make_xor(3, 12000, seed=0)
    pd.testing.assert_frame_equal(train.frame, again.frame)
    test = datasets.load("xor3", split="test")
    assert len(test) == 3000
    assert not np.isin(test.frame["num_feat_0"], train.frame["num_feat_0"]).any()
    assert datasets.load("xor3", columns=["num_feat_2"]).label is None


def test_demo_deterministic_and_structured(no_data: Path) -> None:
    a = datasets.make_demo(3000, seed=7)
    b = datasets.make_demo(3000, seed=7)
    c = datasets.make_demo(3000, seed=8)
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert not a.frame.equals(c.frame)
    _check_valid(a, "demo.yaml")
    pd.testing.assert_frame_equal(datasets.load("demo").frame, datasets.make_demo().frame)
    f = datasets.make_demo(20000, seed=1).frame
    rich = f["income"] == ">50K"
    assert 0.15 < rich.mean() < 0.35
    by_edu = rich.groupby(f["education"]).mean()
    assert by_edu["graduate"] > by_edu["bachelors"] > by_edu["high-school"]
    hours = f["hours-per-week"].groupby(f["employment"]).mean()
    assert hours["self-employed"] > hours["employee"] > hours["retired"]
    assert f.loc[f["employment"] == "retired", "age"].mean() > 60


# ------------------------------------------------------------------- missing files
def test_missing_file_error_names_file(no_data: Path) -> None:
    with pytest.raises(InputError) as err:
        datasets.load("adult")
    message = str(err.value)
    assert "adult/adult.data.gz" in message
    assert "DPEVOLVE_DATA" in message and "dpevolve datasets fetch adult" in message
    assert "\n" not in message
    with pytest.raises(InputError, match=re.escape("nist_diverse_communities/tx2019.csv.gz")):
        datasets.load("nist_tx2019", columns="nist_subset")


def test_tabpe_train_not_retrievable(no_data: Path) -> None:
    with pytest.raises(InputError, match="not retrievable"):
        datasets.load("tabpe_person_activity", split="train")


# -------------------------------------------------------------------------- fetch
def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_TINY_ADULT = (
    b"39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
    b"White, Male, 2174, 0, 40, United-States, <=50K\n"
    b"50, ?, 83311, Bachelors, 13, Married-civ-spouse, ?, Husband, White, Male, 0, 0, 13, "
    b"United-States, >50K\n"
)


def test_fetch_verifies_and_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_data: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "adult.data").write_bytes(_TINY_ADULT)
    item = _fetch.Item(
        "adult/adult.data", _sha(_TINY_ADULT), (_fetch.Remote((served / "adult.data").as_uri()),)
    )
    monkeypatch.setitem(_fetch.SOURCES, "adult", (item,))
    paths = datasets.fetch("adult")
    assert paths == [datasets.cache_dir() / "adult" / "adult.data"]
    assert paths[0].read_bytes() == _TINY_ADULT
    ds = datasets.load("adult")  # found in the cache, plain (not gzipped)
    assert len(ds) == 1 and ds.source == paths[0]
    assert len(datasets.load("adult", columns=["age", "sex", "income"])) == 2
    assert datasets.fetch("demo") == []


def test_fetch_checksum_mismatch_deletes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_data: Path
) -> None:
    served = tmp_path / "served"
    served.mkdir()
    (served / "adult.data").write_bytes(_TINY_ADULT)
    item = _fetch.Item(
        "adult/adult.data", "0" * 64, (_fetch.Remote((served / "adult.data").as_uri()),)
    )
    monkeypatch.setitem(_fetch.SOURCES, "adult", (item,))
    dest = tmp_path / "dest"
    with pytest.raises(InputError, match=re.escape("checksum mismatch for adult.data")):
        datasets.fetch("adult", dest=dest)
    assert not dest.exists()  # no file, and no empty folder left behind


def test_fetch_zip_member_and_unreachable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_data: Path
) -> None:
    inner = tmp_path / "bank.zip"
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("bank-names.txt", b"names\n")
    outer = tmp_path / "bank+marketing.zip"
    with zipfile.ZipFile(outer, "w") as archive:
        archive.write(inner, "bank.zip")
    item = _fetch.Item(
        "bank_marketing/bank-names.txt",
        _sha(b"names\n"),
        (
            _fetch.Remote((tmp_path / "absent.zip").as_uri(), member="bank-names.txt"),
            _fetch.Remote(outer.as_uri(), member="bank-names.txt"),
        ),
    )
    monkeypatch.setitem(_fetch.SOURCES, "bank", (item,))
    (path,) = datasets.fetch("bank", dest=tmp_path / "dest")
    assert path.read_bytes() == b"names\n"
    gone = _fetch.Item("x/y.csv", "0" * 64, (_fetch.Remote((tmp_path / "no.csv").as_uri()),))
    monkeypatch.setitem(_fetch.SOURCES, "bank", (gone,))
    with pytest.raises(InputError, match=re.escape("could not download x/y.csv")):
        datasets.fetch("bank", dest=tmp_path / "dest2")


def test_every_file_backed_dataset_has_https_sources() -> None:
    # every documented file of a file-backed data set has a source
    # generated tables and the package-served suite tables have no files
    served = {"demo", *(table.name for table in suite.TABLES)}
    file_backed = [n for n in datasets.names() if not n.startswith("xor") and n not in served]
    assert sorted(_fetch.SOURCES) == sorted(file_backed)
    for items in _fetch.SOURCES.values():
        for item in items:
            assert re.fullmatch(r"[0-9a-f]{64}", item.sha256) and item.remotes
            assert all(r.url.startswith("https://") for r in item.remotes)


def _readme_for(root: Path, relative: str) -> Path | None:
    """The README nearest a data file: in its folder, else the nearest one above it."""
    folder = (root / relative).parent
    while folder != root.parent:
        if (folder / "README.md").is_file():
            return folder / "README.md"
        folder = folder.parent
    return None


def readme_checksum(readme: str, name: str) -> str | None:
    """The sha256 a README gives for file ``name``: in the table row whose first cell is
    the file, or, in prose, on the line that names it or the next one."""
    lines = readme.splitlines()
    for i, line in enumerate(lines):
        row = line.startswith(f"| `{name}` |")
        if row or (not line.startswith("|") and f"`{name}`" in line):
            for candidate in lines[i : i + 1 if row else i + 2]:
                found = re.search(r"`([0-9a-f]{64})`", candidate)
                if found:
                    return found.group(1)
    return None


def test_the_checksum_reader_reads_tables_and_prose() -> None:
    sha, other = "a" * 64, "b" * 64
    table = f"| `x.csv` | data | 3 | `{sha}` |\n| `y.csv` | gzip of `x.csv` | 4 | `{other}` |"
    assert readme_checksum(table, "x.csv") == sha
    assert readme_checksum(table, "y.csv") == other
    assert readme_checksum(f"The file `z.csv` has sha256\n`{sha}` and md5", "z.csv") == sha
    assert readme_checksum(table, "w.csv") is None


def test_fetch_sources_match_readme_checksums(data: Path) -> None:
    # The sha256 a download is checked against is the one the data README documents.
    checked = 0
    for items in _fetch.SOURCES.values():
        for item in items:
            readme = _readme_for(data, item.path)
            if readme is None:
                pytest.skip(f"no README above {item.path} in {data}")
            name = Path(item.path).name
            documented = readme_checksum(readme.read_text(encoding="utf-8"), name)
            where = readme.relative_to(data)
            assert documented is not None, f"{where} gives no sha256 for {name}"
            assert documented == item.sha256, f"{item.path}: {where} says {documented}"
            checked += 1
    assert checked == sum(len(items) for items in _fetch.SOURCES.values())


# ------------------------------------------------------------------ loaders on data
def _adult_raw(path: Path) -> list[list[str]]:
    with gzip.open(path, "rt") as handle:
        return [
            [field.strip() for field in line.rstrip("\n").split(",")]
            for line in handle
            if line.strip() and not line.startswith("|")
        ]


@pytest.mark.parametrize("split, file, total", [("train", "adult.data.gz", 32561),
                                                 ("test", "adult.test.gz", 16281)])  # fmt: skip
def test_adult_rows(data: Path, split: str, file: str, total: int) -> None:
    rows = _adult_raw(_need(data, f"adult/{file}"))
    assert len(rows) == total
    for preset in (None, "adult5", "adult-tabpe"):
        ds = datasets.load("adult", split=split, columns=preset)
        index = [datasets.ADULT_COLUMNS.index(c) for c in ds.schema.names]
        kept = sum(all(row[i] != "?" for i in index) for row in rows)
        assert len(ds) == kept
        assert set(ds.frame["income"]) == {"<=50K", ">50K"}
        _check_valid(ds, "adult.yaml" if preset != "adult5" else "adult5.yaml")
    # adult.names: 30162 / 15060 rows once instances with unknown values are removed
    assert len(datasets.load("adult", split=split)) == {"train": 30162, "test": 15060}[split]


def test_adult_labels_match_readme(data: Path) -> None:
    _need(data, "adult/adult.test.gz")
    counts = datasets.load("adult", "test", columns=["age", "income"]).frame["income"]
    assert counts.value_counts().to_dict() == {"<=50K": 12435, ">50K": 3846}


def test_bank(data: Path) -> None:
    _need(data, "bank_marketing/bank-full.csv.gz")
    full = datasets.load("bank")
    assert len(full) == 45211 and full.label == "y"
    assert full.frame["y"].value_counts().to_dict() == {"no": 39922, "yes": 5289}
    _check_valid(full, "bank.yaml")
    five = datasets.load("bank5")
    assert len(five) == 45211
    _check_valid(five, "bank5.yaml")
    _need(data, "bank_marketing/bank.csv")
    small = datasets.load("bank", split="small")
    assert len(small) == 4521
    assert small.frame["y"].value_counts().to_dict() == {"no": 4000, "yes": 521}
    _check_valid(small, "bank.yaml")


def test_bank_parquet_variant(data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    csv = _need(data, "bank_marketing/bank.csv")
    other = tmp_path / "pq"
    (other / "bank_marketing").mkdir(parents=True)
    pd.read_csv(csv, sep=";").to_parquet(other / "bank_marketing" / "bank.parquet")
    from_csv = datasets.load("bank", split="small")
    monkeypatch.setenv("DPEVOLVE_DATA", str(other))
    from_parquet = datasets.load("bank", split="small")
    assert from_parquet.source == other / "bank_marketing" / "bank.parquet"
    pd.testing.assert_frame_equal(from_csv.frame, from_parquet.frame)


@pytest.mark.parametrize(
    "name, rows, nulls",
    [("nist_ma2019", 7634, 1120), ("nist_tx2019", 9276, 1682), ("nist_national2019", 27253, 4247)],
)
def test_nist(data: Path, name: str, rows: int, nulls: int) -> None:
    stem = name.removeprefix("nist_")
    _need(data, f"nist_diverse_communities/{stem}.csv.gz")
    ds = datasets.load(name)
    assert len(ds) == rows
    _check_valid(ds, "nist2019.yaml")
    frame = ds.frame
    # README null counts: MSP and PINCP are N for the same (under-15) people
    assert (frame["MSP"] == "N").sum() == nulls
    assert (frame["PINCP"] == datasets.NIST_NUMERIC_NULLS["PINCP"]).sum() == nulls
    restored = datasets.nist_restore_nulls(frame)
    assert (restored["PINCP"] == "N").sum() == nulls
    subset = datasets.load(name, columns="nist_subset")
    assert len(subset) == rows and subset.schema.names == list(datasets.NIST_SUBSET)
    _check_valid(subset, "nist2019.yaml")


def test_nist_parquet_with_nan_nulls(
    data: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a Parquet re-export read the README's way (na_values="N") loads to the same frame
    csv = _need(data, "nist_diverse_communities/ma2019.csv.gz")
    other = tmp_path / "pq" / "nist_diverse_communities"
    other.mkdir(parents=True)
    pd.read_csv(csv, na_values="N").to_parquet(other / "ma2019.parquet")
    from_csv = datasets.load("nist_ma2019")
    monkeypatch.setenv("DPEVOLVE_DATA", str(other.parent))
    from_parquet = datasets.load("nist_ma2019")
    assert from_parquet.source == other / "ma2019.parquet"
    pd.testing.assert_frame_equal(from_csv.frame, from_parquet.frame)


def test_nist_ma_pumas(data: Path) -> None:
    _need(data, "nist_diverse_communities/ma2019.csv.gz")
    counts = datasets.load("nist_ma2019", columns=["PUMA"]).frame["PUMA"].value_counts()
    assert counts.to_dict() == {
        "25-00703": 2254, "25-00503": 1508, "25-01300": 1347, "25-02800": 1304, "25-01000": 1221,
    }  # fmt: skip


def test_person_activity(data: Path) -> None:
    _need(data, "localization_person_activity/A.csv.gz")
    _need(data, "localization_person_activity/B.csv.gz")
    a = datasets.load("person_activity", split="A")
    b = datasets.load("person_activity", split="B")
    assert (len(a), len(b)) == (27473, 30150)
    assert a.schema.names == ["tag", "x", "y", "z", "activity"]
    _check_valid(a, "person_activity.yaml")
    _check_valid(b, "person_activity.yaml")
    both = datasets.load("person_activity", split="AB")
    assert len(both) == 57623
    activity = both.frame["activity"].value_counts()
    assert activity["lying"] == 20703 and activity["standing up from sitting"] == 432
    assert both.frame["tag"].value_counts()["020-000-032-221"] == 15557


def test_person_activity_holdout(data: Path) -> None:
    _need(data, "localization_person_activity/A.csv.gz")
    train, test = datasets.person_activity_holdout(seed=3)
    again_train, again_test = datasets.person_activity_holdout(seed=3)
    pd.testing.assert_frame_equal(train.frame, again_train.frame)
    pd.testing.assert_frame_equal(test.frame, again_test.frame)
    assert len(train) + len(test) == 27473
    assert abs(len(test) - 0.2 * 27473) <= 11  # rounding per activity
    full = datasets.load("person_activity", "A").frame
    counts = full["activity"].value_counts()
    test_counts = test.frame["activity"].value_counts()
    for activity, count in counts.items():
        assert abs(test_counts.get(activity, 0) - 0.2 * count) <= 0.5
    merged = pd.concat([train.frame, test.frame]).sort_values(["x", "y", "z", "tag"])
    expected = full.sort_values(["x", "y", "z", "tag"])
    np.testing.assert_array_equal(merged.to_numpy(), expected.to_numpy())
    other, _ = datasets.person_activity_holdout(seed=4)
    assert not other.frame.equals(train.frame)
    _check_valid(train, "person_activity.yaml")
    xyz, _ = datasets.person_activity_holdout(seed=3, columns=["x", "y", "z"])
    assert xyz.label is None and len(xyz) == len(train)


def test_tabpe_person_activity(data: Path) -> None:
    _need(data, "tabpe/person-activity/person-activity_test.csv")
    test = datasets.load("tabpe_person_activity")
    assert test.split == "test" and len(test) == 24729
    _check_valid(test, "tabpe_person_activity.yaml")
    assert test.frame["V1"].value_counts().to_dict() == {
        "5": 6612, "4": 4719, "3": 4671, "2": 4570, "1": 4157,
    }  # fmt: skip
    _need(data, "tabpe/person-activity/person-activity_val.csv")
    val = datasets.load("tabpe_person_activity", split="val")
    assert len(val) == 24729
    _check_valid(val, "tabpe_person_activity.yaml")
    with pytest.raises(InputError, match="not retrievable"):
        datasets.load("tabpe_person_activity", split="train")


def test_fetch_offline_names_the_data_folder_and_leaves_no_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_data: Path, capsys
) -> None:
    gone = _fetch.Item("adult/adult.data", "0" * 64, (_fetch.Remote((tmp_path / "x").as_uri()),))
    monkeypatch.setitem(_fetch.SOURCES, "adult", (gone,))
    assert main(["datasets", "fetch", "adult"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "could not download adult/adult.data" in err
    assert "set DPEVOLVE_DATA to it: $DPEVOLVE_DATA/adult/adult.data" in err
    assert not (tmp_path / "cache").exists()  # no empty cache folder left behind


def test_fetch_downloads_nothing_when_the_data_folder_holds_the_data(
    monkeypatch: pytest.MonkeyPatch, no_data: Path, capsys
) -> None:
    for name in ("adult.data", "adult.test"):
        (no_data / "adult").mkdir(exist_ok=True)
        (no_data / "adult" / name).write_bytes(_TINY_ADULT)

    def refuse(*args: object) -> None:
        raise AssertionError("fetch tried to download")

    monkeypatch.setattr(_fetch, "_download", refuse)
    assert main(["datasets", "fetch", "adult"]) == 0
    out = capsys.readouterr().out
    assert "found via $DPEVOLVE_DATA; not downloaded" in out and "adult.test" in out
    with pytest.raises(AssertionError, match="tried to download"):
        datasets.fetch("adult", force=True)  # --force downloads again
