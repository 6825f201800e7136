"""Structural zeros (:mod:`dpevolve.engine.zeros`) in whole coupled runs.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must end in the same ledger, model and
rows: which cells the last fit holds empty is post-processing of the releases and of
the model fitted to them. The table: 380 rows spread over hours 1..98 and the atom at
0 holding 60 rows labelled 1 and 3 labelled 0; the moving record, at the atom, flips
its label, so the cell (hours 0, y 0) holds 3 rows in D and 4 in D'. At rho 0.5 its
releases combine to a noise scale of 3.1: the cell is held on both sides (its releases
stand at 1.9), and a fit told which cells to hold by their exact counts would hold it
in D (3 rows) and not in D' (4): caught (``tests/privacy/test_mutants.py``).
"""

from __future__ import annotations

import numpy as np

from dpevolve.data.sources import FrameSource
from dpevolve.engine import fit_engine, loop
from dpevolve.engine.zeros import zero_measurements
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import Case
from .test_atom_rules_exact import SPEC, WIDE

BUDGET = Budget(rho=0.5)


def _rows() -> list[tuple[int, int, str]]:
    rng = np.random.default_rng(4)
    spread = [
        (int(rng.integers(1, 99)), int(rng.integers(1, 99)), str(rng.integers(0, 2)))
        for _ in range(380)
    ]
    return spread + [(0, z, "1") for z in range(60)] + [(0, z, "0") for z in range(3)]


CASE = Case(WIDE, SPEC, BUDGET, _rows(), [((0, 5, "1"), (0, 5, "0"), "error")])


def test_the_cells_held_empty_are_post_processing() -> None:
    assert CASE.violations() == []


def test_the_run_holds_the_cell(monkeypatch) -> None:
    """The held path runs on the audited table (the audit above has power): with the
    coupled runs' noise, one cell is held, (hours 0, y 0)."""
    held = []

    def spied(discretiser, marginals, model, n):
        out = zero_measurements(discretiser, marginals, model, n)
        held.extend(out)
        return out

    monkeypatch.setattr(loop, "zero_measurements", spied)
    here, _ = CASE.tables(*CASE.pairs[0][:2])
    fit_engine(
        FrameSource(here, WIDE), WIDE, BUDGET, SPEC,
        noise=SeededNoise(17), rng=np.random.default_rng(5),
    )  # fmt: skip
    assert [(m.query.clique, m.query.groups) for m in held] == [
        (("hours", "y"), ((0, 1, 1, 1), (0, 1)))
    ]
