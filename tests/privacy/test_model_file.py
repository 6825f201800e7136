"""A saved model holds the schema, public parameters, released values and the shareable
ledger: never the noise seed, never validation counts or notes, never an exact count.

The last is checked exactly: the files of two neighbouring tables, the second run
handed the first one's noise (:mod:`tests.privacy.exact`), must hold the same values,
and no array in them may hold a vector the private data gave before any noise.
"""

from __future__ import annotations

import itertools
import pickle
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.data.sources import FrameSource
from dpevolve.engine.measure import count_marginals
from dpevolve.model_io import RELEASED, WITHHELD_PARAMS
from dpevolve.presets import get_method
from dpevolve.privacy import SHAREABLE_KEYS, SharedLedger

from . import test_atoms_exact, test_engine_exact
from .exact import Case, coupled_fit, first_difference

#: The coupled cases: the engine's tables (bins placed from the fine histograms) and
#: the atom release's (a value at an atom by a hair).
CASES = {
    "engine": Case(
        test_engine_exact.SCHEMA, test_engine_exact.SPEC, test_engine_exact.BUDGET,
        test_engine_exact.base(), test_engine_exact.PAIRS,
    ),
    "atoms": test_atoms_exact.CASE,
}  # fmt: skip

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
        return get_method(preset, engine={"max_rounds": 4, "pe_rounds": 1})
    return get_method(preset, population=24, rounds=2)


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
            method=_small(preset),
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
        method=get_method("tabpe", population=16, rounds=1),
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


# ------------------------------------------------- every array against the exact counts
def arrays_in(obj: Any, seen: set[int] | None = None) -> Iterator[np.ndarray]:
    """Every numeric array the object holds: arrays, frames' columns, lists of numbers,
    members of mappings, sequences and objects, however deep."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, str | bytes | type):
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in "biuf" and obj.size > 1:
            yield obj.astype(np.float64).ravel()
        return
    if isinstance(obj, pd.DataFrame):
        for column in obj.columns:
            yield from arrays_in(pd.to_numeric(obj[column], errors="coerce").to_numpy(), seen)
        return
    if isinstance(obj, Mapping):
        members: Iterable[Any] = obj.values()
    elif isinstance(obj, list | tuple | set | frozenset):
        members = obj
        if obj and all(isinstance(v, int | float) and not isinstance(v, bool) for v in obj):
            yield np.asarray(list(obj), dtype=np.float64)
    elif hasattr(obj, "__dict__"):
        members = vars(obj).values()
    else:
        return
    for member in members:
        yield from arrays_in(member, seen)


def _holds(array: np.ndarray, exact: np.ndarray) -> bool:
    """Whether ``exact`` (or its proportions) lies in ``array`` as a contiguous run."""
    if exact.size < 2 or array.size < exact.size:
        return False
    windows = np.lib.stride_tricks.sliding_window_view(array, exact.size)
    total = exact.sum()
    shapes = [exact] + ([exact / total] if total > 0 else [])
    return any(bool(np.all(windows == e, axis=1).any()) for e in shapes)


def model_file_violations(case: str = "engine") -> list[str]:
    """Neighbouring tables through the adaptive preset and ``save``, coupled (the run on
    ``D'`` replays ``D``'s noise: :mod:`tests.privacy.exact`): the two model files hold
    the same values, and no array in them holds an exact private vector, meaning
    anything a release or a selection handed the noise source (atom candidates, fine
    histograms, marginals, votes, scores) or any exact 1-, 2- or 3-way marginal.
    ``case``: whose tables (:data:`CASES`), the first pair."""
    chosen = CASES[case]
    schema, budget = chosen.schema, chosen.budget
    here, there, on_invalid = chosen.pairs[0]
    d, n = chosen.tables(here, there)
    method = get_method("adaptive", engine=chosen.spec.to_dict())
    payloads = []

    def fit(table: pd.DataFrame, mode: str, noise: Any) -> Any:
        with mock.patch("dpevolve.synthesizer.make_noise", lambda seed: noise):
            model = Synthesizer(
                schema, rho=budget.rho, method=method, random_state=2, on_invalid=mode
            ).fit(table)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "model.pkl"
            model.save(path)
            payloads.append(pickle.loads(path.read_bytes()))
        return model

    _, _, recorded, replay, out = coupled_fit(fit, d, n, on_invalid)
    if replay is None:
        return out
    where = first_difference(payloads[0], payloads[1], "file")
    if where is not None:
        out.append(f"the model files of neighbours differ: {where}")
    generator = payloads[0]["released"]["generator_"]
    disc = generator.discretiser
    cliques = [c for k in (1, 2, 3) for c in itertools.combinations(schema.names, k)]
    counted, fine = count_marginals(
        FrameSource(d, schema), disc, cliques, [c.name for c in disc.numeric]
    )
    private = [c.values.ravel() for c in recorded.calls]
    private += [v.ravel() for v in counted.values()] + list(fine.values())
    arrays = list(arrays_in(payloads[0]))
    if len(arrays) < 10:
        out.append(f"only {len(arrays)} arrays found in the file: the walk missed them")
    for array in arrays:
        for k, exact in enumerate(private):
            if _holds(array, exact):
                out.append(f"an array of {array.size} values in the file holds exact vector {k}")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_model_file_holds_released_values_only(case) -> None:
    assert model_file_violations(case) == []


def test_a_seeded_run_with_atoms_keeps_the_seed_out(tmp_path: Path) -> None:
    """The atom release draws from the one noise source: with ``noise_seed`` the found
    atoms are in the ledger (post-processing) and the seed is nowhere in the ledger,
    its shareable copy or the model file."""
    here, there, _ = test_atoms_exact.PAIRS[0]
    table, _ = test_atoms_exact.CASE.tables(here, there)
    method = get_method("adaptive", engine=test_atoms_exact.SPEC.to_dict())
    model = Synthesizer(
        test_atoms_exact.SCHEMA, rho=test_atoms_exact.BUDGET.rho, method=method,
        random_state=2, noise_seed=K,
    ).fit(table)  # fmt: skip
    full = model.ledger_.to_dict()
    assert full["noise"] == "seeded"
    assert full["engine"]["released_atoms"]  # atoms were found: the release counted
    assert any(e["mechanism"] == "atoms:tax" for e in full["events"])
    path = tmp_path / "model.pkl"
    model.save(path)
    model.ledger_.write(tmp_path / "ledger.json")
    model.ledger_.write(tmp_path / "shared.json", shareable=True)
    for written in ("model.pkl", "ledger.json", "shared.json"):
        data = (tmp_path / written).read_bytes()
        for spelling in spellings(K):
            assert spelling not in data, (written, spelling)
