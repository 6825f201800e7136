"""The experiments harness: runner (store, resume, provenance, parallel) and report."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from experiments import analysis  # noqa: E402
from experiments.runner import (  # noqa: E402
    Store,
    Study,
    Unavailable,
    config_key,
    run_study,
)

CALLS: list[tuple[int, int]] = []


@dataclass(frozen=True)
class FakeConfig:
    x: int
    seed: int


def fake_run(config: FakeConfig) -> dict[str, Any]:
    """A trivial run_one: records the call, returns a metric and a ledger."""
    CALLS.append((config.x, config.seed))
    return {
        "metrics": {"y": 10 * config.x + config.seed},
        "ledger": {"epsilon": 0.5, "delta": 1e-5, "rho": 0.01},
    }


def fake_configs(profile: str) -> list[FakeConfig]:
    return [FakeConfig(x, s) for x in (1, 2) for s in (0, 1)]


FAKE = Study("fake", "2 configs x 2 seeds", fake_configs, fake_run)


def flaky_run(config: FakeConfig) -> dict[str, Any]:
    if config.x == 1:
        raise Unavailable("optional package missing")
    if config.x == 2 and config.seed == 1:
        raise ValueError("boom")
    return fake_run(config)


def test_runner_writes_rows_and_resumes(tmp_path: Path) -> None:
    CALLS.clear()
    store = Store(tmp_path / "store.jsonl")
    # an "interrupted" first run: only 2 of the 4 configurations finish
    first = run_study(FAKE, store, workers=1, limit=2, log=None)
    assert (first.ran, first.ok) == (2, 2)
    assert len(store.rows()) == 2
    second = run_study(FAKE, store, workers=1, log=None)
    assert (second.total, second.skipped, second.ran) == (4, 2, 2)
    assert len(CALLS) == 4 and len(set(CALLS)) == 4  # nothing computed twice
    rows = store.rows()
    assert len(rows) == 4
    assert len({r["key"] for r in rows}) == 4
    for row in rows:
        assert row["status"] == "ok"
        assert row["commit"] and isinstance(row["commit"], str)
        assert row["seed"] == row["config"]["seed"]
        assert row["wall_s"] >= 0
        assert row["ledger"]["epsilon"] == 0.5
        assert row["metrics"]["y"] == 10 * row["config"]["x"] + row["seed"]
        assert row["dpevolve_version"]
    third = run_study(FAKE, store, workers=1, log=None)
    assert third.ran == 0 and len(CALLS) == 4


def test_runner_parallel_spawn(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.jsonl")
    summary = run_study(FAKE, store, workers=2, log=None)
    assert summary.ok == 4
    rows = store.rows()
    assert sorted(r["metrics"]["y"] for r in rows) == [10, 11, 20, 21]
    assert all(r["pid"] != os.getpid() for r in rows)  # ran in worker processes


def test_store_skips_torn_lines_and_retries_failures(tmp_path: Path) -> None:
    path = tmp_path / "store.jsonl"
    store = Store(path)
    flaky = Study("fake", "flaky", fake_configs, flaky_run)
    summary = run_study(flaky, store, workers=1, log=None)
    assert (summary.ok, summary.errors, summary.unavailable) == (1, 1, 2)
    with path.open("a") as handle:
        handle.write('{"key": "torn')  # a write cut short by a crash
    assert len(store.rows()) == 4
    statuses = {(r["config"]["x"], r["seed"]): r["status"] for r in store.rows()}
    assert statuses[(1, 0)] == "unavailable" and statuses[(2, 1)] == "error"
    assert "boom" in next(r["reason"] for r in store.rows() if r["status"] == "error")
    # only the ok row is skipped on resume
    CALLS.clear()
    again = run_study(FAKE, store, workers=1, log=None)
    assert again.skipped == 1 and again.ran == 3
    assert {k: r["status"] for k, r in store.latest().items()} == {
        config_key("fake", c): "ok" for c in fake_configs("quick")
    }


def test_config_key_includes_seed() -> None:
    assert config_key("s", FakeConfig(1, 0)) != config_key("s", FakeConfig(1, 1))
    assert config_key("s", FakeConfig(1, 0)) != config_key("t", FakeConfig(1, 0))
    assert config_key("s", FakeConfig(1, 0)) == config_key("s", FakeConfig(1, 0))


def test_analysis_helpers() -> None:
    assert analysis.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert analysis.crossover([1e-5, 1e-4, 1e-3], [-0.2, -0.1, 0.1]) == pytest.approx(10**-3.5)
    assert analysis.crossover([1e-5, 1e-4], [0.1, 0.2]) is None
    p = analysis.paired([1.0, 2.0, 3.0], [0.5, 1.5, 2.0])
    assert p.mean_diff == pytest.approx(-2 / 3)
    assert p.ci_low < p.mean_diff < p.ci_high
    lo, hi = analysis.wilson(190, 210)
    assert lo < 190 / 210 < hi


def _row(study: str, config_type: str, config: dict[str, Any], metrics: dict) -> dict:
    return {
        "key": config_key(study, config),
        "study": study,
        "config_type": config_type,
        "config": config,
        "seed": config.get("seed"),
        "status": "ok",
        "reason": None,
        "ledger": {"epsilon": 0.04, "delta": 1e-5},
        "metrics": metrics,
        "wall_s": 1.0,
        "commit": "abc123",
        "profile": "quick",
    }


def tiny_store(path: Path) -> Store:
    store = Store(path)
    for rho, hard, soft in ((1e-5, 0.45, 0.35), (1e-4, 0.30, 0.28), (1e-3, 0.2, 0.25)):
        for seed in (0, 1):
            for vote, tau, err in [("hard", None, hard)] + [
                ("soft", t, soft + 0.01 * i) for i, t in enumerate((0.015, 0.03, 0.06))
            ]:
                cfg = {
                    "dataset": "adult5",
                    "policy": "age",
                    "rho": rho,
                    "vote": vote,
                    "tau": tau,
                    "seed": seed,
                }
                metrics = {"mean_error": err + 0.01 * seed, "fit_s": 1.0}
                store.append(_row("bfsoft_budget", "FitConfig", cfg, metrics))
                store.append(_row("bfsoft_pilot", "FitConfig", cfg, metrics))
        pilot = {"dataset": "adult5", "policy": "age", "rho": rho, "seed": 0}
        store.append(
            _row(
                "bfsoft_pilot",
                "PilotConfig",
                pilot,
                {
                    "pilot_hard_error": hard,
                    "pilot_best_temperature": 0.015,
                    "pilot_soft_wins": soft < hard,
                    "pilot_s": 3.0,
                    "pilot_soft_error@0.015": soft,
                    "pilot_soft_error@0.03": soft + 0.01,
                    "pilot_soft_error@0.06": soft + 0.02,
                },
            )
        )
    for seed in (0, 1, 2):
        cfg = {
            "dataset": "adult5",
            "policy": "age",
            "rho": 1e-4,
            "vote": "hard",
            "tau": None,
            "seed": seed,
        }
        store.append(_row("bfsoft_policy", "FitConfig", cfg, {"mean_error": 0.3 + 0.01 * seed}))
        cfg = dict(cfg, vote="soft", tau=0.03)
        store.append(_row("bfsoft_policy", "FitConfig", cfg, {"mean_error": 0.2 + 0.02 * seed}))
    for eps in (1.0, 2.0, 4.0):
        cfg = {"method": "tabpe", "epsilon": eps, "seed": 0}
        store.append(_row("pubmix_tstr", "TSTRConfig", cfg, {"tstr_accuracy": 0.6 + eps / 100}))
    unavailable = _row(
        "pubmix_tstr", "TSTRConfig", {"method": "aim", "epsilon": 1.0, "seed": 0}, {}
    )
    unavailable.update(status="unavailable", reason="AIM: not ported")
    store.append(unavailable)
    return store


def test_report_renders_from_a_tiny_store(tmp_path: Path) -> None:
    from experiments.report import write_report

    store = tiny_store(tmp_path / "store.jsonl")
    out = write_report(store, tmp_path / "RESULTS.md", tmp_path / "figures")
    text = out.read_text()
    assert "## The error measure" in text and "Mean error" in text
    assert "## Published claims" in text
    assert "BF-Soft crossover budget" in text
    assert "Age-only policy" in text
    assert "Public pilot sign-forecast accuracy" in text
    assert "AIM: not ported" in text
    assert "Pending" in text  # studies without rows say so
    assert "failed" not in text, text
    for name in ("bfsoft_budget.png", "bfsoft_pilot.png", "bfsoft_policy.png", "pubmix_tstr.png"):
        assert (tmp_path / "figures" / name).stat().st_size > 0
    # the figures are linked relative to RESULTS.md
    assert "](figures/bfsoft_budget.png)" in text


def test_cli_list_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    assert main(["list"]) == 0
    listed = capsys.readouterr().out
    for name in ("bfsoft_budget", "bfsoft_pilot", "baselines", "pubmix_tstr"):
        assert name in listed
    store = tiny_store(tmp_path / "s.jsonl")
    assert main(["report", "--store", str(store.path), "-o", str(tmp_path / "R.md")]) == 0
    assert (tmp_path / "R.md").exists()
    assert (tmp_path / "figures" / "bfsoft_budget.png").exists()
    assert main(["run", "no-such-study"]) == 2


def test_store_rows_are_json_lines(tmp_path: Path) -> None:
    store = Store(tmp_path / "x.jsonl")
    store.append({"key": "k", "value": float("nan")})
    line = (tmp_path / "x.jsonl").read_text()
    assert line.endswith("\n") and line.count("\n") == 1
    assert json.loads(line)["value"] is None


def test_aim_port_on_a_tiny_table() -> None:
    """Our AIM port (experiments.mbi_baselines.aim) runs, spends at most rho, keeps domains."""
    extra = os.environ.get("EXPERIMENTS_EXTRA_PATH")
    for entry in (extra or "").split(os.pathsep):
        if entry and entry not in sys.path:
            sys.path.append(entry)  # after the venv, as the workers do
    import numpy as np
    import pandas as pd
    from experiments import mbi_baselines

    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    try:
        mbi_baselines.import_mbi()
    except Unavailable as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, size=400)
    frame = pd.DataFrame(
        {
            "a": np.array(["p", "q", "r"], dtype=object)[a],
            "b": np.array(["u", "v"], dtype=object)[(a > 0).astype(int)],
            "x": rng.uniform(0.0, 1.0, size=400),
        }
    )
    schema = Schema(
        (
            CategoricalColumn("a", ("p", "q", "r")),
            CategoricalColumn("b", ("u", "v")),
            NumericColumn("x", 0.0, 1.0),
        )
    )
    info: dict[str, Any] = {}
    synth = mbi_baselines.aim(
        frame, schema, 1.0, 0, rows=200, rounds=4, round_iters=50, final_iters=50, info=info
    )
    assert synth.shape == (200, 3) and list(synth.columns) == ["a", "b", "x"]
    assert set(synth["a"]) <= {"p", "q", "r"} and set(synth["b"]) <= {"u", "v"}
    assert synth["x"].between(0.0, 1.0).all()
    assert 1 <= info["aim_rounds"] and info["aim_rho_used"] <= 1.0 + 1e-12
    assert not info["aim_capped"]
