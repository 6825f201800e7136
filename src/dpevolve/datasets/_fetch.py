"""Downloading the public data files from their original sources, with checksums.

Every file has the sha256 documented in the data READMEs. A download whose checksum does
not match is deleted and raises :class:`InputError`. Files land in the user cache
(:func:`dpevolve.datasets.cache_dir`) in the same layout as the project's shared data
folder, so :func:`dpevolve.datasets.load` finds them there.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from dpevolve.errors import InputError

_CHUNK = 1 << 20
_TIMEOUT_S = 120


@dataclass(frozen=True)
class Remote:
    """One place a file can be downloaded from.

    Attributes
    ----------
    url
        ``https://`` (or ``file://``) address.
    member
        When set, ``url`` is a zip archive and the file is its member with this base name
        (searched recursively through nested zip archives).
    """

    url: str
    member: str | None = None


@dataclass(frozen=True)
class Item:
    """A file to fetch: where it goes, its documented sha256, and where to get it."""

    path: str
    sha256: str
    remotes: tuple[Remote, ...]


_UCI = "https://archive.ics.uci.edu"
_SDNIST_COMMIT = "f048b1c2ca3815239982ac181ec8cd01840fc351"
_SDNIST_MEDIA = f"https://media.githubusercontent.com/media/usnistgov/SDNist/{_SDNIST_COMMIT}"
_SDNIST_RAW = f"https://raw.githubusercontent.com/usnistgov/SDNist/{_SDNIST_COMMIT}"
_LDPA_RAW = (
    "https://raw.githubusercontent.com/Ruhallah93/Spatio-Temporal-Classifier/"
    "bc9c92bf13ad686597d02eae6776f6319aaf798c/datasets/ConfLongDemo_JSI"
)
_TABPE_RAW = "https://raw.githubusercontent.com/toan-vt/cloud-data-store"
_TABPE_OLD = f"{_TABPE_RAW}/925e23f6339d53cdfe1ba0f9e211aaf6b6785281/tabular"
_TABPE_NEW = f"{_TABPE_RAW}/main/tabular/real/person-activity"


def _adult(name: str, sha: str) -> Item:
    return Item(
        f"adult/{name}",
        sha,
        (
            Remote(f"{_UCI}/ml/machine-learning-databases/adult/{name}"),
            Remote(f"{_UCI}/static/public/2/adult.zip", member=name),
        ),
    )


def _bank(name: str, sha: str) -> Item:
    return Item(
        f"bank_marketing/{name}",
        sha,
        (
            Remote(f"{_UCI}/ml/machine-learning-databases/00222/bank.zip", member=name),
            Remote(f"{_UCI}/static/public/222/bank+marketing.zip", member=name),
        ),
    )


def _nist(folder: str, name: str, sha: str) -> Item:
    return Item(
        f"nist_diverse_communities/{name}",
        sha,
        (
            Remote(f"{_SDNIST_MEDIA}/BenchmarkData/ACSDataExcerpts/{folder}/{name}"),
            Remote(
                "https://media.githubusercontent.com/media/usnistgov/SDNist/main/"
                f"BenchmarkData/ACSDataExcerpts/{folder}/{name}"
            ),
        ),
    )


_NIST_DICTIONARY = Item(
    "nist_diverse_communities/data_dictionary.json",
    "16a170c50b89ea15b41826ca439ac971345f1a545e17278e2bdfa891fe7b56e8",
    (Remote(f"{_SDNIST_RAW}/BenchmarkData/ACSDataExcerpts/data_dictionary.json"),),
)


def _tabpe(name: str, sha: str) -> Item:
    return Item(
        f"tabpe/person-activity/{name}",
        sha,
        (Remote(f"{_TABPE_OLD}/{name}"), Remote(f"{_TABPE_NEW}/{name}")),
    )


# sha256 values are the ones documented in the data READMEs (decompressed content).
SOURCES: dict[str, tuple[Item, ...]] = {
    "adult": (
        _adult("adult.data", "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d"),
        _adult("adult.test", "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05"),
        _adult("adult.names", "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a"),
    ),
    "bank": (
        _bank("bank-full.csv", "d1513ec63b385506f7cfce9f2c5caa9fe99e7ba4e8c3fa264b3aaf0f849ed32d"),
        _bank("bank.csv", "dc8d576e9bda0f41ee891251bd84bab9a39ce576cba715aac08adc2374a01fde"),
        _bank("bank-names.txt", "3899a77082573ed676a7dfce3765a5307915c7f11b1fe2f6f55fd3c5467c12f7"),
    ),
    "person_activity": (
        Item(
            "localization_person_activity/A.csv",
            "859b1a09c452c3bdfe533642438af0f2ac45e7d616aa6b7172d8e4bcc75f6343",
            (Remote(f"{_LDPA_RAW}/A.csv"),),
        ),
        Item(
            "localization_person_activity/B.csv",
            "f4ebb20b39912887afcd2c86dba064bd4b6587f532f223d59eeed72ee2112da5",
            (Remote(f"{_LDPA_RAW}/B.csv"),),
        ),
    ),
    "nist_ma2019": (
        _nist(
            "massachusetts",
            "ma2019.csv",
            "4f1e49c938674f6f623a86f6abef75c6c466012cc9296df21c3d678fb08ad0b0",
        ),
        _NIST_DICTIONARY,
    ),
    "nist_tx2019": (
        _nist(
            "texas",
            "tx2019.csv",
            "33b17bc20ea97c7b1752e1d42cd90dbd1b368700c88ea4273b0b95466e9a579f",
        ),
        _NIST_DICTIONARY,
    ),
    "nist_national2019": (
        _nist(
            "national",
            "national2019.csv",
            "b49ba83e18472b6b76438bb511a01668bdbe2c1ace54521614a32edcc748f79a",
        ),
        _NIST_DICTIONARY,
    ),
    "tabpe_person_activity": (
        _tabpe(
            "person-activity_test.csv",
            "ce04b049bb9aa794aadc6679201c0f0ecc0a0e463fe75e4b0cd30c45533ab29a",
        ),
        _tabpe(
            "person-activity_val.csv",
            "d1db678c22dcddd6ef423046bd86174944bf29cf0a328d7cc8a9426e0847a5e8",
        ),
    ),
}


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _open(url: str) -> io.BufferedIOBase:
    request = urllib.request.Request(url, headers={"User-Agent": "dpevolve-datasets"})
    return urllib.request.urlopen(request, timeout=_TIMEOUT_S)


def _zip_member(archive: zipfile.ZipFile, member: str) -> bytes | None:
    """The bytes of the first member named ``member``, looking into nested zips."""
    names = archive.namelist()
    for name in names:
        if name.rsplit("/", 1)[-1] == member and not name.endswith("/"):
            return archive.read(name)
    for name in names:
        if name.lower().endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(archive.read(name))) as inner:
                found = _zip_member(inner, member)
            if found is not None:
                return found
    return None


def _download(remote: Remote, target: Path, expected: str) -> None:
    """Download ``remote`` to ``target`` and check its sha256.

    Raises
    ------
    InputError
        On a checksum mismatch (the file is deleted first).
    OSError, urllib.error.URLError, KeyError
        When the remote cannot be read (the caller tries the next one).
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    tmp = Path(tmp_name)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            if remote.member is None:
                with _open(remote.url) as response:
                    for block in iter(lambda: response.read(_CHUNK), b""):
                        digest.update(block)
                        out.write(block)
            else:
                with tempfile.TemporaryFile() as archive_file:
                    with _open(remote.url) as response:
                        for block in iter(lambda: response.read(_CHUNK), b""):
                            archive_file.write(block)
                    archive_file.seek(0)
                    with zipfile.ZipFile(archive_file) as archive:
                        found = _zip_member(archive, remote.member)
                    if found is None:
                        raise KeyError(f"{remote.member} not in {remote.url}")
                    digest.update(found)
                    out.write(found)
        got = digest.hexdigest()
        if got != expected:
            tmp.unlink(missing_ok=True)
            target.unlink(missing_ok=True)
            raise InputError(
                f"checksum mismatch for {target.name} from {remote.url}: sha256 {got}, "
                f"documented {expected}; the file was deleted"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def fetch_items(name: str, items: tuple[Item, ...], dest: Path, force: bool) -> list[Path]:
    """Fetch ``items`` of data set ``name`` into ``dest``; returns the file paths."""
    paths: list[Path] = []
    created = _absent_folders(dest, items)
    try:
        for item in items:
            target = dest / item.path
            if target.is_file() and not force and sha256_of(target) == item.sha256:
                paths.append(target)
                continue
            failures: list[str] = []
            for remote in item.remotes:
                try:
                    _download(remote, target, item.sha256)
                except InputError:
                    raise
                except (OSError, urllib.error.URLError, KeyError, zipfile.BadZipFile) as exc:
                    reason = getattr(exc, "reason", None) or exc
                    failures.append(f"{remote.url} ({reason})")
                    continue
                break
            else:
                raise InputError(
                    f"could not download {item.path} for {name}: tried " + "; ".join(failures)
                )
            paths.append(target)
    except BaseException:
        _remove_empty(created)  # a failed fetch leaves no empty cache folder behind
        raise
    return paths


def _absent_folders(dest: Path, items: tuple[Item, ...]) -> list[Path]:
    """Folders a fetch into ``dest`` would create, deepest first."""
    absent: set[Path] = set()
    for item in items:
        folder = (dest / item.path).parent
        while not folder.exists():
            absent.add(folder)
            if folder.parent == folder:
                break
            folder = folder.parent
    return sorted(absent, key=lambda p: len(p.parts), reverse=True)


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:
        try:
            folder.rmdir()  # only when empty: a file fetched before the failure stays
        except OSError:
            pass
