"""The guarantee's defaults cannot be loosened unnoticed.

* The default delta is ``min(1e-5, 1/(n ln n))`` at every ``n`` (a default of ``1/n``
  agrees with it only below ``n`` of about 11,000), in the rule itself and in every
  ledger that uses it (``synth``, ``pubmix``, ``pubmix --rho``).
* A ledger's epsilon is composed from the events it recorded, never copied from the
  budget that was asked for.
* A budget outside what the calibration can honour is a one-line input error (exit 2).
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.validation import ValidationReport
from dpevolve.errors import InputError
from dpevolve.pe.pubmix.discrete import sample_discrete
from dpevolve.presets import get_method
from dpevolve.privacy import Budget, GaussianEvent, Ledger, default_delta
from dpevolve.privacy.audit import independent_epsilon
from dpevolve.privacy.budget import MAX_EPSILON, MAX_RHO, MIN_EPSILON, MIN_RHO

SCHEMA = Schema((NumericColumn("age", 17, 90, integer=True), CategoricalColumn("sex", ("F", "M"))))
DETERMINISTIC = settings(derandomize=True, deadline=None)


def rule(n: int) -> float:
    """``min(1e-5, 1/(n ln n))``, computed here independently (n ln n exactly in floats
    as far as they go)."""
    return 1e-5 if n < 3 else min(1e-5, 1.0 / (n * math.log(n)))


# ------------------------------------------------------------------ default delta
@DETERMINISTIC
@given(st.integers(1, 10**15))
@example(10_999)
@example(11_000)
@example(12_000)
@example(10**5)
@example(10**6)
@example(10**9)
def test_default_delta_is_min_of_1e5_and_one_over_n_ln_n(n: int) -> None:
    assert default_delta(n) == pytest.approx(rule(n), rel=1e-12)
    assert default_delta(n) <= 1e-5
    if n >= 3:
        assert default_delta(n) <= 1.0 / (n * math.log(n)) * (1 + 1e-12)
    if n > 11_000:
        assert default_delta(n) < 1.0 / n  # where 1/n would already be the looser one


class WideSource:
    """``rows`` public rows of which only a few are valid (the rest count as invalid):
    a cheap table with a large public ``n``."""

    def __init__(self, frame: pd.DataFrame, rows: int) -> None:
        self._records = encode(frame, SCHEMA)
        self._rows = rows

    @property
    def n(self) -> int:
        return self._rows

    @property
    def report(self) -> ValidationReport | None:
        valid = len(self._records)
        return ValidationReport("drop", self._rows, valid, {"age": self._rows - valid}, {})

    def batches(self) -> Records:
        return self._records


def small_frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(17, 91, 20), "sex": rng.choice(["F", "M"], 20)})


@settings(derandomize=True, deadline=None, max_examples=6)
@given(st.integers(20, 10**8))
@example(50_000)
@example(2_000_000)
def test_every_ledger_uses_the_default_delta(n: int) -> None:
    source = WideSource(small_frame(), n)
    public = small_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        synth = Synthesizer(
            SCHEMA,
            epsilon=1.0,
            method=get_method("tabpe", population=8, rounds=1),
            random_state=0,
            on_invalid="drop",
        ).fit_source(source)
    # (epsilon, delta) releases take delta from their caller (the CLI, tested below);
    # a rho release states its epsilon at the default delta of its n.
    pubmix = sample_discrete(source, public, SCHEMA, 5, Budget(rho=0.5), noise="gaussian")
    ledgers = [synth.ledger_.to_dict(), pubmix.ledger.to_dict()]
    for ledger in ledgers:
        assert ledger["private_rows"] == n
        assert ledger["delta"] == pytest.approx(rule(n), rel=1e-12)
        assert ledger["accounting"]["target_delta"] == ledger["delta"]


def run_cli(argv: list[object]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main([str(a) for a in argv])
    return code, err.getvalue()


@pytest.mark.parametrize("rows", [50, 12_000])
def test_pubmix_rho_without_delta_reports_at_the_default(tmp_path: Path, rows: int) -> None:
    import json

    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"age": rng.integers(17, 91, rows), "sex": rng.choice(["F", "M"], rows)})
    frame.to_csv(tmp_path / "p.csv", index=False)
    (tmp_path / "s.yaml").write_text(SCHEMA.to_yaml())
    argv = ["pubmix", tmp_path / "p.csv", "-s", tmp_path / "s.yaml", "-m", "5"]
    argv += ["--noise", "gaussian", "--rho", "0.5", "-o", tmp_path / "o.csv"]
    code, stderr = run_cli(argv)
    assert code == 0, stderr
    ledger = json.loads((tmp_path / "o.ledger.json").read_text())
    assert ledger["delta"] == pytest.approx(rule(rows), rel=1e-12)
    assert f"delta: {rule(rows):.3g} = min(1e-5, 1/(n ln n))" in stderr


# ------------------------------------------------- epsilon composed from the events
def test_the_ledger_epsilon_is_composed_from_its_events() -> None:
    """A ledger that says it was asked for epsilon 1 but recorded releases worth more
    reports what they are worth."""
    ledger = Ledger(1e-5, metadata={"budget": {"epsilon": 1.0, "delta": 1e-5, "rho": None}})
    for sigma in (1.0, 2.0, 0.7):
        ledger.record(GaussianEvent(sensitivity=1.0, sigma=sigma))
    composed = independent_epsilon(ledger.events, 1e-5)
    assert composed > 3
    assert ledger.result().epsilon == pytest.approx(composed, rel=1e-3)
    for view in (ledger.to_dict(), ledger.shareable_dict()):
        assert view["epsilon"] == pytest.approx(composed, rel=1e-3)
        assert view["events"][-1]["running_epsilon"] == pytest.approx(composed, rel=1e-3)


@pytest.mark.parametrize("preset", ["tabpe", "hybrid"])
def test_a_fitted_ledger_reports_every_release_it_records(preset: str) -> None:
    """End to end: the requested budget stays 1 while a further release is recorded."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Synthesizer(
            SCHEMA, epsilon=1.0, method=get_method(preset, population=8, rounds=2), random_state=0
        ).fit(small_frame())
    ledger = model.ledger_
    before = ledger.to_dict()
    assert before["budget"]["epsilon"] == 1.0
    assert before["epsilon"] <= 1.0 + 1e-9
    if all(isinstance(e, GaussianEvent) for e in ledger.events):
        assert before["epsilon"] == pytest.approx(
            independent_epsilon(ledger.events, ledger.delta), rel=1e-4
        )
    ledger.record(GaussianEvent(sensitivity=1.0, sigma=0.5, discrete=True))
    after = ledger.to_dict()
    assert after["budget"]["epsilon"] == 1.0
    assert after["epsilon"] > before["epsilon"] + 1.0
    assert after["epsilon"] == pytest.approx(
        independent_epsilon(ledger.events, ledger.delta), rel=1e-4
    )


# ----------------------------------------------------------------- extreme budgets
LIMITS = {"--epsilon": (MIN_EPSILON, MAX_EPSILON), "--rho": (MIN_RHO, MAX_RHO)}


@pytest.mark.parametrize("where", ["1e-300", "5e-324", "just below", "just above", "1e300"])
@pytest.mark.parametrize("flag", ["--epsilon", "--rho"])
@pytest.mark.parametrize("command", ["synth", "pubmix"])
def test_extreme_budgets_are_one_line_input_errors(
    tmp_path: Path, command: str, flag: str, where: str
) -> None:
    lo, hi = LIMITS[flag]
    value = {"just below": lo * (1 - 1e-9), "just above": hi * (1 + 1e-9)}.get(where)
    value = float(where) if value is None else value
    small_frame().to_csv(tmp_path / "p.csv", index=False)
    (tmp_path / "s.yaml").write_text(SCHEMA.to_yaml())
    argv: list[object] = [command, tmp_path / "p.csv", "-s", tmp_path / "s.yaml"]
    argv += ["-o", tmp_path / "o.csv", flag, repr(value), "-q"]
    if command == "pubmix":
        argv += ["-m", "5", "--noise", "gaussian" if flag == "--rho" else "linmix"]
    code, stderr = run_cli(argv)
    assert code == 2, stderr
    assert stderr.count("\n") == 1 and stderr.startswith("dpevolve: error:")
    assert "Traceback" not in stderr
    assert not (tmp_path / "o.csv").exists()


@given(st.floats(min_value=0, allow_nan=False, allow_infinity=False))
@DETERMINISTIC
def test_every_budget_is_accepted_or_refused_cleanly(value: float) -> None:
    for make in (lambda: Budget(epsilon=value, delta=1e-5), lambda: Budget(rho=value)):
        try:
            budget = make()
        except InputError as exc:
            assert "\n" not in str(exc)
            continue
        from dpevolve.privacy import calibrate_gaussian

        assert calibrate_gaussian(1, budget, discrete=True) > 0
