"""Testing only: hold a run at a named point so a test can send it a signal there.

tests/test_interrupt.py starts ``dpevolve synth`` with ``DPEVOLVE_TEST_PAUSE`` set to
one point, waits for the run to say it got there, and interrupts it:

- ``release:N``: a ledger has just recorded its Nth release (``release:0``: a ledger
  was opened and holds none yet);
- ``write:N``: the Nth atomic write of the process has filled its temporary file,
  before the rename (``synth``: 1 the table, 2 its ledger, 3 the shareable ledger).

The run says ``dpevolve: test pause at POINT`` on stderr, then sleeps (at most
:data:`WAIT_S` seconds, then goes on). It pauses once per process. Unset (always,
outside these tests) it does nothing; set, it only delays: it changes no value, no
noise and no accounting.
"""

from __future__ import annotations

import os
import sys
import time

VARIABLE = "DPEVOLVE_TEST_PAUSE"
WAIT_S = 120.0

_paused: list[str] = []  # the point already paused at (once per process)
_passed: dict[str, int] = {}  # how often each counted point was passed


def counted(name: str) -> str:
    """``NAME:N`` for the Nth time this process passes the point ``name``."""
    _passed[name] = _passed.get(name, 0) + 1
    return f"{name}:{_passed[name]}"


def reached(point: str) -> None:
    """Pause here if ``DPEVOLVE_TEST_PAUSE`` names ``point`` (see the module)."""
    if os.environ.get(VARIABLE) != point or _paused:
        return
    _paused.append(point)
    print(f"dpevolve: test pause at {point}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.05)


__all__ = ["VARIABLE", "WAIT_S", "counted", "reached"]
