"""Outputs pinned before a move: a refactor that moves code changes no output.

With fixed seeds (``random_state``, ``noise_seed``) and the numpy reference backend,
every preset's synthetic table, a fresh sample and its ledger are fingerprinted
(sha256). Write the fingerprints on the commit *before* a moving refactor::

    DPEVOLVE_WRITE_PINS=1 python -m pytest -q tests/test_pins.py

then every moving commit must reproduce them bit for bit. Without a pin file the test
skips and says so (the fingerprints depend on the commit's numerics, so they are
written for a move, not kept across tuning changes). The tables are the package's
public demo data, never private records.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpevolve import Synthesizer, datasets
from dpevolve.pe.specs import VoteSpec
from dpevolve.presets import get_method

PINS = Path(__file__).resolve().parent / "pins" / "outputs.json"
WRITE = os.environ.get("DPEVOLVE_WRITE_PINS") == "1"
# Ledger keys that name the software, not what it computed.
UNPINNED = frozenset({"dpevolve_version"})
# Significant digits of a ledger float that are pinned: an optimiser's loss differs in its
# last bits between machines (BLAS, SIMD), while a changed computation moves far more.
DIGITS = 9

# A Blowfish policy on the demo schema (YAML, so the pins import no algorithm's module).
POLICY = "attributes:\n  age: {threshold: 5}\n  hours-per-week: {threshold: 4}\n"
# ``public: True`` stands for public rows of the demo table (disjoint from the private).
CASES: dict[str, dict[str, Any]] = {
    "default": {},
    "adaptive": {"method": "adaptive"},
    "adaptive-public": {
        "method": get_method("adaptive", engine={"public_prior": "tree"}),
        "public": True,
    },
    "tabpe": {"method": "tabpe"},
    "tabpe-soft": {"method": get_method("tabpe", vote=VoteSpec(kind="soft", temperature=0.05))},
    "tabpe-marginals": {"method": get_method("tabpe", marginals=0.5)},
    "pubmix": {"method": get_method("bfsoft", mechanism="pubmix"), "public": True},
    "bfsoft": {"method": "bfsoft"},
    "bfsoft-policy": {
        "method": get_method("bfsoft", vote=VoteSpec(kind="soft", temperature=0.05)),
        "policy": POLICY,
    },
    "bfsoft-pilot": {"method": get_method("bfsoft", vote="auto"), "policy": POLICY, "public": True},
    "hybrid": {"method": "hybrid"},
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(item) for item in value]
    return value


def _table_sha(frame: pd.DataFrame) -> str:
    return _sha(frame.to_csv(index=False).encode())


def fingerprint(settings: dict[str, Any]) -> dict[str, str]:
    """sha256 of the fitted table, of a fresh sample and of the ledger (version apart)."""
    demo = datasets.load("demo")
    settings = dict(settings)
    if settings.get("public"):
        settings["public"] = demo.frame.iloc[400:800].reset_index(drop=True)
    with tempfile.TemporaryDirectory() as folder:
        if "policy" in settings:
            path = Path(folder) / "policy.yaml"
            path.write_text(settings["policy"], encoding="utf-8")
            settings["policy"] = path
        model = Synthesizer(
            demo.schema, epsilon=1.0, delta=1e-5, random_state=0, noise_seed=1, backend="local",
            **settings,
        )  # fmt: skip
        model.fit(demo.frame.iloc[:400])
    ledger = _rounded({k: v for k, v in model.ledger_.to_dict().items() if k not in UNPINNED})
    return {
        "synthetic": _table_sha(model.synthetic_),
        "sample": _table_sha(model.sample(200)),
        "ledger": _sha(json.dumps(ledger, sort_keys=True, default=str).encode()),
    }


@pytest.fixture(scope="module")
def pins() -> dict[str, dict[str, str]]:
    if WRITE:
        PINS.parent.mkdir(exist_ok=True)
        written = {name: fingerprint(settings) for name, settings in CASES.items()}
        PINS.write_text(json.dumps(written, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if not PINS.is_file():
        pytest.skip("no pinned outputs: write them with DPEVOLVE_WRITE_PINS=1 before a move")
    return dict(json.loads(PINS.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_match_their_pins(pins: dict[str, dict[str, str]], name: str) -> None:
    assert name in pins, f"no pin for {name}: write the pins again before the move"
    assert fingerprint(CASES[name]) == pins[name]


def test_a_fingerprint_is_reproducible_and_sees_the_seed() -> None:
    # The pins are only worth something if a run repeats itself and a change shows.
    same = fingerprint({"method": "bfsoft"})
    assert same == fingerprint({"method": "bfsoft"})
    soft_vote = VoteSpec(kind="soft", temperature=0.05)
    soft = fingerprint({"method": get_method("bfsoft", vote=soft_vote)})
    assert soft["synthetic"] != same["synthetic"]
