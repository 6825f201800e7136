"""Shared fixtures: small schemas and tables built in code (no data files needed)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import settings

from dpevolve.data.schema import CategoricalColumn, Hierarchy, NumericColumn, Schema

# The suite is deterministic: every run explores the same examples, so a failure
# reproduces and `make test` is green or red for a reason. HYPOTHESIS_PROFILE=explore
# draws new examples (a developer hunting for counterexamples).
settings.register_profile("fixed", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def _data_folder() -> None:
    if not os.environ.get("DPEVOLVE_DATA") and SHARED_DATA.is_dir():
        os.environ["DPEVOLVE_DATA"] = str(SHARED_DATA)


@pytest.fixture(autouse=True)
def _signals_kept() -> Iterator[None]:
    """Every test leaves Ctrl-C and SIGTERM as it found them: dpevolve code run in-process
    (the CLI's main, the interrupt's settling, progress output) must never leave a
    library user's Ctrl-C ignored, or a handler of its own, behind. (A worker may
    start with SIGINT ignored: a shell without job control starts a background job
    so, and its children inherit it; see test_interrupt.py.)"""
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield
    now = {s: signal.getsignal(s) for s in kept}
    assert now == kept, f"signal handlers changed by the test: {kept} -> {now}"


@pytest.fixture(scope="session")
def small_schema() -> Schema:
    job_tree = {"white": ["admin", "manager"], "blue": ["builder", "driver"], "none": ["retired"]}
    return Schema(
        (
            NumericColumn("age", 17, 90, integer=True),
            CategoricalColumn(
                "job",
                ("admin", "manager", "builder", "driver", "retired"),
                Hierarchy.from_nested(
                    "job", job_tree, ["admin", "manager", "builder", "driver", "retired"]
                ),
            ),
            NumericColumn("hours", 1, 99, integer=True),
            CategoricalColumn("income", ("<=50K", ">50K")),
        ),
        label="income",
    )


@pytest.fixture
def small_table(small_schema: Schema) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 400
    age = rng.integers(17, 91, n)
    job = rng.choice(["admin", "manager", "builder", "driver", "retired"], n)
    hours = np.where(job == "retired", rng.integers(1, 10, n), rng.integers(30, 60, n))
    income = np.where((age > 40) & (hours > 40), ">50K", "<=50K")
    return pd.DataFrame({"age": age, "job": job, "hours": hours, "income": income})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests listed in ``tests/slow.py`` slow (``make test`` leaves them out)."""
    from slow import SLOW_TESTS

    for item in items:
        if item.nodeid.startswith(SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
