"""An interrupted run accounts for what it spent (docs/privacy.md, "An interrupted run").

The command line is tested with real signals sent to a real ``dpevolve`` process. To
interrupt it at a known point, ``DPEVOLVE_TEST_PAUSE`` (:mod:`dpevolve.pause`, testing
only: it delays, nothing else) holds the run right after a given release, or inside one of
its writes, and says so on stderr; the test then sends SIGINT or SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from dpevolve.data.io import atomic_write
from dpevolve.pause import VARIABLE
from dpevolve.privacy import Ledger
from dpevolve.privacy.audit import cks_epsilon
from dpevolve.privacy.interrupt import Interrupted, Terminated, terminate_as_interrupt
from dpevolve.synthesizer import Synthesizer

STATUS = {"SIGINT": 130, "SIGTERM": 143}
WATCHDOG_S = 300.0


@pytest.fixture
def files(tmp_path: Path, small_schema, small_table) -> tuple[Path, Path, Path]:
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    private = tmp_path / "private.csv"
    small_table.to_csv(private, index=False)
    return tmp_path, schema, private


def _default_interrupt() -> None:
    """In the child: Ctrl-C at its default, as in a user's shell. A process inherits an
    ignored SIGINT, and Python then installs no KeyboardInterrupt for it: a shell
    without job control starts a background job (``pytest ... &`` in a script) with
    SIGINT and SIGQUIT ignored (POSIX), and pytest, its workers and their children
    inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interrupted(argv: list[Any], pause: str, sig: str) -> tuple[int, str]:
    """Run ``dpevolve ARGV`` held at ``pause``; once it says it is there, send ``sig``.
    The exit status and the whole of stderr."""
    env = {**os.environ, VARIABLE: pause}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpevolve.cli", *map(str, argv)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_interrupt,
    )
    watchdog = threading.Timer(WATCHDOG_S, proc.kill)
    watchdog.start()
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if f"test pause at {pause}" in line:
                proc.send_signal(getattr(signal, sig))
                break
        seen.append(proc.stderr.read())
        return proc.wait(), "".join(seen)
    finally:
        watchdog.cancel()


def synth(private: Path, schema: Path, out: Path, *extra: Any) -> list[Any]:
    """The default (adaptive) engine at epsilon 1: a few seconds on the small table."""
    return ["synth", private, "-s", schema, "-e", "1", "-d", "1e-5", "-o", out, *extra]


def recomputed(ledger: dict[str, Any]) -> float:
    """The ledger's epsilon from its own events' parameters, without its accountant: each
    Gaussian release costs ``S^2 / (2 sigma^2)`` and each selection ``eps^2 / 8`` in zCDP
    (docs/privacy.md), converted at the ledger's delta."""
    rho = 0.0
    for event in ledger["events"]:
        if event["kind"] == "gaussian":
            rho += event["sensitivity"] ** 2 / (2.0 * event["sigma"] ** 2)
        else:
            assert event["kind"] == "exponential", event
            rho += event["epsilon"] ** 2 / 8.0
    return cks_epsilon(rho, ledger["delta"])


def only_outputs(folder: Path, *names: str) -> None:
    """The folder holds the inputs and exactly ``names``: no table, no temporary file."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["private.csv", "schema.yaml", *names]
    )


def one_line(err: str) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("dpevolve: interrupted")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("sig", "after", "share"), [("SIGINT", 3, True), ("SIGTERM", 2, False)])
def test_interrupted_after_releases_leaves_their_ledger(files, sig, after, share) -> None:
    folder, schema, private = files
    out = folder / "synthetic.csv"
    extra = ["--share-ledger", folder / "shared.json"] if share else []
    status, err = interrupted(synth(private, schema, out, *extra), f"release:{after}", sig)
    assert status == STATUS[sig], err
    only_outputs(folder, "synthetic.ledger.json", *(["shared.json"] if share else []))
    ledger = json.loads((folder / "synthetic.ledger.json").read_text())
    # exactly the releases made before the signal, each charged, and nothing more
    assert len(ledger["events"]) == after
    assert ledger["epsilon"] == pytest.approx(recomputed(ledger), rel=1e-6)
    assert ledger["events"][-1]["running_epsilon"] == pytest.approx(ledger["epsilon"])
    assert 0 < ledger["epsilon"] < 1
    if share:
        shared = json.loads((folder / "shared.json").read_text())
        assert shared["events"] == ledger["events"] and shared["epsilon"] == ledger["epsilon"]
        assert "validation" in shared["withheld"] and "seed" not in shared
    line = one_line(err)
    assert f"interrupted after {after} releases: epsilon {ledger['epsilon']:.4g} of 1 spent" in line
    assert "synthetic.ledger.json" in line


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_interrupted_before_any_release_spends_nothing(files, sig) -> None:
    folder, schema, private = files
    status, err = interrupted(synth(private, schema, folder / "out.csv"), "release:0", sig)
    assert status == STATUS[sig], err
    only_outputs(folder)  # no table, no ledger
    assert "before any release: nothing was spent, no ledger written" in one_line(err)


@pytest.mark.parametrize("write", [1, 3])
def test_interrupted_while_writing(files, write) -> None:
    """After the fit every release is made: the whole ledger is written, the table is
    removed (half written: its temporary file; or already written, when the shareable
    ledger is) and the run still fails."""
    folder, schema, private = files
    argv = synth(private, schema, folder / "out.csv", "--share-ledger", folder / "shared.json")
    status, err = interrupted(argv, f"write:{write}", "SIGINT")
    assert status == 130, err
    only_outputs(folder, "out.ledger.json", "shared.json")
    ledger = json.loads((folder / "out.ledger.json").read_text())
    assert ledger["epsilon"] == pytest.approx(1.0, rel=1e-6)  # the whole budget was spent
    assert ledger["epsilon"] == pytest.approx(recomputed(ledger), rel=1e-6)
    assert json.loads((folder / "shared.json").read_text())["events"] == ledger["events"]
    line = one_line(err)
    assert f"interrupted after all {len(ledger['events'])} releases: epsilon 1 of 1" in line


def test_pubmix_interrupted_leaves_its_ledger(files) -> None:
    folder, schema, private = files
    argv = ["pubmix", private, "-s", schema, "-m", "50", "--noise", "gaussian", "--rho", "0.5"]
    status, err = interrupted([*argv, "-o", folder / "s.csv"], "release:1", "SIGTERM")
    assert status == 143, err
    only_outputs(folder, "s.ledger.json")
    ledger = json.loads((folder / "s.ledger.json").read_text())
    assert len(ledger["events"]) == 1 and ledger["epsilon"] > 0
    assert "interrupted after 1 release: epsilon" in one_line(err)


# --------------------------------------------------------------------- the Python API
def _stop_after(monkeypatch, releases: int, stop: Any) -> None:
    """Make the ``releases``-th record of any ledger call ``stop()`` once it is in."""
    record = Ledger.record

    def record_then_stop(self: Ledger, *args: Any, **kwargs: Any) -> None:
        record(self, *args, **kwargs)
        if len(self.events) == releases:
            stop()

    monkeypatch.setattr(Ledger, "record", record_then_stop)


def _keyboard() -> None:
    raise KeyboardInterrupt


def _own_handler(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("handler", [signal.default_int_handler, _own_handler])
def test_the_command_run_in_process_leaves_ctrl_c_as_it_found_it(
    monkeypatch, files, handler
) -> None:
    """``dpevolve.cli.main`` interrupted in-process (the settling holds both signals off)
    hands back the caller's Ctrl-C and SIGTERM handlers: a library user's Ctrl-C still
    works afterwards."""
    from dpevolve.cli import main

    folder, schema, private = files
    before = signal.signal(signal.SIGINT, handler)
    try:
        kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        _stop_after(monkeypatch, 2, _keyboard)
        status = main([str(a) for a in synth(private, schema, folder / "synthetic.csv")])
        after = {s: signal.getsignal(s) for s in kept}
    finally:
        signal.signal(signal.SIGINT, before)
    assert status == STATUS["SIGINT"]
    only_outputs(folder, "synthetic.ledger.json")
    assert after == kept


def test_fit_interrupted_carries_the_ledger_of_its_releases(
    monkeypatch, small_schema, small_table
) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=0)
    _stop_after(monkeypatch, 3, _keyboard)
    with pytest.raises(Interrupted) as caught:
        model.fit(small_table)
    stop = caught.value
    assert isinstance(stop, KeyboardInterrupt) and stop.signum == signal.SIGINT
    assert stop.ledger is not None and len(stop.ledger.events) == stop.releases == 3
    assert 0 < stop.ledger.spent() < 1
    assert "interrupted after 3 releases" in str(stop)
    # not fitted, but the spend counts: fitting again warns that it spends again
    assert not hasattr(model, "synthetic_") and model.fits_ == 1
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="spent again"):
        model.fit(small_table)


def test_sigterm_takes_the_same_path(monkeypatch, small_schema, small_table) -> None:
    """A real SIGTERM to this process, under terminate_as_interrupt."""
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=0)
    _stop_after(monkeypatch, 2, lambda: os.kill(os.getpid(), signal.SIGTERM))
    with terminate_as_interrupt(), pytest.raises(Interrupted) as caught:
        model.fit(small_table)
    assert isinstance(caught.value.__cause__, Terminated)
    assert caught.value.signum == signal.SIGTERM and caught.value.releases == 2
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


def test_fit_interrupted_before_its_ledger_spent_nothing(monkeypatch, small_schema) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5)
    monkeypatch.setattr("dpevolve.synthesizer.make_noise", lambda seed: _keyboard())
    table = pd.DataFrame({"age": [30], "job": ["admin"], "hours": [40], "income": [">50K"]})
    with pytest.raises(Interrupted) as caught:
        model.fit(table)
    assert caught.value.ledger is None and caught.value.releases == 0
    assert "nothing was spent" in str(caught.value)
    assert not hasattr(model, "fits_")


def test_an_interrupted_atomic_write_leaves_no_file(tmp_path: Path) -> None:
    target = tmp_path / "table.csv"

    def half(tmp: Path) -> None:
        tmp.write_text("a,b\n1,")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, half)
    assert list(tmp_path.iterdir()) == []
