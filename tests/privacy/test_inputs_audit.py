"""Audit of the paths around the release: invalid-row repairs, the seed, streaming, Dask.

These paths add no noise of their own, so a leak shows as something *deterministic*
that differs between neighbours (a ledger field, a histogram beyond the sensitivity,
an output fixed by the seed). A deterministic difference is a pair of point masses:
its hockey-stick divergence is 1 at every epsilon, above any claimed delta.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpevolve.presets import get_method
from dpevolve.privacy import default_delta
from dpevolve.privacy.audit import hockey_stick

from .conftest import DELTA, fit_spied

FAST = {
    "epsilon": 1.0,
    "method": get_method("bfsoft", population=24, rounds=2),
}


def _base(n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(17, 91, n), "sex": rng.choice(["Male", "Female"], n)})


def _replace_last(table: pd.DataFrame, row: dict) -> pd.DataFrame:
    out = table.copy()
    out.loc[len(out) - 1] = [row["age"], row["sex"]]
    return out


def _shareable(model) -> str:
    return json.dumps(model.ledger_.shareable_dict(), sort_keys=True, default=str)


def _claims(model) -> str:
    """What a ledger claims, without per-round released facts (kept counts differ between
    neighbours through the noise, legitimately)."""
    ledger = model.ledger_.shareable_dict()
    keep = {k: v for k, v in ledger.items() if k != "events"}
    keep["events"] = [event.to_dict() for event in model.ledger_.events]
    return json.dumps(keep, sort_keys=True, default=str)


def _point_mass_divergence(a: str, b: str) -> float:
    """Hockey-stick at the claimed epsilon of two deterministic outputs: 0 or 1."""
    return hockey_stick({a: 1.0}, {b: 1.0}, 0.0)


@pytest.mark.parametrize("n", [30, 12_000], ids=["small", "delta-below-1e-5"])
def test_drop_keeps_the_shareable_ledger_independent_of_the_data(age_sex, n) -> None:
    """Finding 4 (fixed): under on_invalid='drop' a replacement by an invalid row stays a
    replacement (the row votes empty), n is the public row count, and the default delta
    min(1e-5, 1/(n ln n)) follows it: the neighbours' claims are identical, and the
    histogram moves within what the round charged (noise calibrated for max(S, 1))."""
    table = _base(n)
    invalid = _replace_last(table, {"age": 250, "sex": "Male"})  # out of range: dropped
    settings = {**FAST, "delta": None, "on_invalid": "drop", "random_state": 0}
    model, spy = fit_spied(age_sex, table, **settings)
    other, spy2 = fit_spied(age_sex, invalid, **settings)
    claimed_delta = model.ledger_.to_dict()["delta"]
    assert claimed_delta == default_delta(n)
    for fitted in (model, other):
        assert fitted.ledger_.to_dict()["private_rows"] == n
    found = _point_mass_divergence(_claims(model), _claims(other))
    assert found <= claimed_delta, (
        f"shareable ledgers differ deterministically (delta 1 > {claimed_delta:.2g}): "
        f"private_rows {model.n_private_} vs {other.n_private_}"
    )
    event = model.ledger_.events[0]
    shift = float(np.linalg.norm(spy.histograms[0] - spy2.histograms[0]))
    assert 0 < shift <= event.sensitivity + 1e-9


@pytest.mark.parametrize("bad", [{"age": 250, "sex": "Male"}, {"age": -3, "sex": "Female"}])
def test_clip_is_a_replacement_and_the_ledger_does_not_move(age_sex, bad) -> None:
    """Clipping maps an out-of-range row to a boundary row: the neighbour stays a
    replace-one neighbour, the histogram moves within the sensitivity, and the
    shareable ledger (claim, n, sigma) is identical."""
    table = _base()
    model, spy = fit_spied(age_sex, table, on_invalid="clip", random_state=0, **FAST)
    other, spy2 = fit_spied(
        age_sex, _replace_last(table, bad), on_invalid="clip", random_state=0, **FAST
    )
    assert _point_mass_divergence(_claims(model), _claims(other)) == 0.0
    event = model.ledger_.events[0]
    assert np.linalg.norm(spy.histograms[0] - spy2.histograms[0]) <= event.sensitivity + 1e-9


def test_the_seed_does_not_replay_the_noise(age_sex) -> None:
    """Finding 2 (fixed). An attacker holding the full ledger (its ``seed``) reruns the
    public algorithm. Were fits with that seed deterministic, the output given the seed
    would be a point mass and a neighbour whose seeded output differs would be told
    apart with certainty (delta 1 at every epsilon). The noise is secure by default:
    fits with the ledger's seed do not repeat, and a research ``noise_seed`` never
    enters the ledger (which says only that the noise was seeded)."""
    table = _base(6)
    settings = {**FAST, "random_state": 1234}
    outputs = [fit_spied(age_sex, table, **settings)[0] for _ in range(3)]
    ledger = outputs[0].ledger_.to_dict()
    assert ledger["seed"] == 1234 and ledger["noise"] == "secure"
    reference = outputs[0].synthetic_
    assert not all(model.synthetic_.equals(reference) for model in outputs[1:]), (
        "fits with the ledger's seed repeat: the noise is replayable"
    )
    seeded, _ = fit_spied(age_sex, table, noise_seed=987_654_321, **settings)
    full = seeded.ledger_.to_json()
    assert json.loads(full)["noise"] == "seeded"
    assert "987654321" not in full and "noise_seed" not in full


def _write(table: pd.DataFrame, path: Path) -> Path:
    table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    "moved",
    [{"age": 90, "sex": "Female"}, {"age": 17, "sex": "Male"}],
    ids=["upper-boundary", "lower-boundary"],
)
def test_streaming_histograms_within_the_sensitivity(age_sex, tmp_path, moved) -> None:
    """fit_file in batches of 7 rows: every round's histogram equals the in-memory fit's,
    the moved boundary record shifts it within the ledger's sensitivity, and the
    shareable ledgers of the two neighbours are identical."""
    from dpevolve import Synthesizer

    from .conftest import SpyBackend

    table = _base(29)
    neighbour = _replace_last(table, moved)
    runs = []
    for frame, name in ((table, "d.csv"), (neighbour, "d2.csv")):
        spy = SpyBackend()
        model = Synthesizer(age_sex, backend=spy, delta=DELTA, random_state=3, **FAST)
        model.fit_file(_write(frame, tmp_path / name), batch_rows=7)
        runs.append((model, spy))
    (model, spy), (other, spy2) = runs
    _, memory_spy = fit_spied(age_sex, table, random_state=3, **FAST)
    assert np.allclose(spy.histograms[0], memory_spy.histograms[0])
    assert _claims(model) == _claims(other)
    shift = np.linalg.norm(spy.histograms[0] - spy2.histograms[0])
    assert shift <= model.ledger_.events[0].sensitivity + 1e-9


def test_dask_backend_histograms_within_the_sensitivity(age_sex) -> None:
    """The Dask backend (one in-process worker) on a record alone in its bin vs the far
    boundary: histograms equal the local backend's and move within the sensitivity."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from dpevolve.backends import LocalBackend
    from dpevolve.backends.dask import DaskBackend

    table = _base(21)
    neighbour = _replace_last(table, {"age": 17, "sex": "Female"})
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:  # fmt: skip
        model, spy = fit_spied(
            age_sex, table, DaskBackend(client, partitions=3), random_state=4, **FAST
        )
        _, spy2 = fit_spied(
            age_sex, neighbour, DaskBackend(client, partitions=3), random_state=4, **FAST
        )
    _, local = fit_spied(age_sex, table, LocalBackend(), random_state=4, **FAST)
    assert np.allclose(spy.histograms[0], local.histograms[0])
    shift = np.linalg.norm(spy.histograms[0] - spy2.histograms[0])
    assert shift <= model.ledger_.events[0].sensitivity + 1e-9


@pytest.mark.parametrize("noise", ["gaussian", "pubmix"])
def test_every_command_defaults_to_the_same_delta(age_sex, tmp_path, noise) -> None:
    """The default delta is min(1e-5, 1/(n ln n)) on every command: `dpevolve pubmix`
    once used 1/(n ln n) alone (1.3e-4 at n = 1000, thirteen times the 1e-5 cap)."""
    from dpevolve.cli import main

    n = 1000
    schema = tmp_path / "schema.yaml"
    schema.write_text(age_sex.to_yaml())
    private, public = tmp_path / "private.csv", tmp_path / "public.csv"
    _base(n).to_csv(private, index=False)
    _base(50).to_csv(public, index=False)
    out = tmp_path / "out.csv"
    argv = [
        "pubmix", str(private), "-s", str(schema), "-o", str(out), "-m", "5",
        "--epsilon", "1", "--public", str(public), "--gamma", "0.2", "--noise", noise, "-q",
    ]  # fmt: skip
    assert main(argv) == 0
    ledger = json.loads((tmp_path / "out.ledger.json").read_text())
    assert ledger["delta"] == default_delta(n) == 1e-5
