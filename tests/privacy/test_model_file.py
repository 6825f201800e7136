"""A saved model holds the schema, public parameters, released values and the shareable
ledger: never the noise seed, never validation counts or notes."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.model_io import RELEASED, WITHHELD_PARAMS
from dpevolve.presets import get_preset
from dpevolve.privacy import SHAREABLE_KEYS, SharedLedger

K = 0x5EED_C0FFEE_42  # a noise seed whose every spelling is distinctive


def spellings(k: int) -> list[bytes]:
    """Every way the file could carry ``k``: text (decimal, hex) and raw integers."""
    out = [str(k).encode(), f"{k:x}".encode(), f"{k:X}".encode(), hex(k).encode()]
    for size in (8, 16):
        out += [k.to_bytes(size, "little"), k.to_bytes(size, "big")]
    return out


def _small(preset: str):
    """A quick run of ``preset`` (the engine with its PE stage: one vote round)."""
    if preset == "adaptive":
        return get_preset(preset).with_engine({"max_rounds": 4, "pe_rounds": 1})
    return get_preset(preset, population=24, rounds=2)


@pytest.mark.parametrize("preset", ["adaptive", "tabpe", "hybrid"])
def test_a_model_saved_after_noise_seed_holds_no_trace_of_it(
    preset, small_schema, small_table, tmp_path: Path
) -> None:
    table = small_table.astype(object)
    table.loc[3, "age"] = 500  # one invalid row: validation counts exist to leak
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Synthesizer(
            small_schema,
            epsilon=1.0,
            preset=_small(preset),
            random_state=1,
            noise_seed=K,
            on_invalid="drop",
        ).fit(table)
    full = model.ledger_.to_dict()
    assert full["validation"]["rows_out"] == 399 and full["noise"] == "seeded"
    model.ledger_.note("a private note")
    before = model.sample(5)
    path = tmp_path / "model.pkl"
    model.save(path)
    data = path.read_bytes()
    for spelling in spellings(K):
        assert spelling not in data, spelling
    for private in (b"rows_out", b"dropped_by_column", b"a private note", b"validation"):
        assert private not in data
    payload = pickle.loads(data)
    assert set(payload) == {"format", "class", "params", "released", "ledger", "sample_state"}
    assert set(payload["released"]) <= set(RELEASED)
    assert not set(payload["params"]) & set(WITHHELD_PARAMS)
    assert set(payload["ledger"]) <= SHAREABLE_KEYS
    assert payload["ledger"] == {
        k: v for k, v in model.ledger_.shareable_dict().items() if k != "withheld"
    }
    loaded = Synthesizer.load(path)
    assert loaded.noise_seed is None
    assert isinstance(loaded.ledger_, SharedLedger)
    assert loaded.ledger_.result().epsilon == model.ledger_.result().epsilon
    assert "validation" not in loaded.ledger_.to_dict()
    # Loading still samples, and from where the saved model had got to.
    pd.testing.assert_frame_equal(loaded.sample(7), model.sample(7))
    assert len(before) == 5
    pd.testing.assert_frame_equal(loaded.synthetic_, model.synthetic_)


def test_a_loaded_model_saves_again(small_schema, small_table, tmp_path: Path) -> None:
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        preset=get_preset("tabpe", population=16, rounds=1),
        random_state=0,
    ).fit(small_table)
    model.save(tmp_path / "a.pkl")
    again = Synthesizer.load(tmp_path / "a.pkl")
    again.save(tmp_path / "b.pkl")
    twice = Synthesizer.load(tmp_path / "b.pkl")
    assert twice.ledger_.to_dict() == again.ledger_.to_dict()
    shared = tmp_path / "shared.json"
    twice.ledger_.write(shared, shareable=True)
    assert '"epsilon"' in shared.read_text()
