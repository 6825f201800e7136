"""Declared atoms' own bins (:func:`dpevolve.engine.bins.declared_atoms`) in whole
coupled runs.

Exact (no sampling): runs on neighbouring tables coupled by the same noisy outputs
(:func:`tests.privacy.exact.engine_violations`) must end in the same ledger, bins,
model and rows: an atom the schema declares (public) keeps a bin of its own whatever
the data hold. The table: a share in force, declared with the atoms 0 and 1, its 39
rows in [0.2, 0.8] (no atom release: only the declared atoms are single values); the
moving record sits at the atom 0 in D (one row, 2.5%: under the 5% the release would
call an atom) and at 0.5 in D'. A rule that kept only the declared atoms the private
table holds would give 0 a bin in D and none in D': caught
(``tests/privacy/test_mutants.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, bins, fit_engine, loop
from dpevolve.engine.discretise import atom_tolerance
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

from .exact import Case, spread_rows

SCHEMA = Schema(
    (
        NumericColumn("share", 0.0, 1.0, decimals=2, atoms=(0.0, 1.0)),
        NumericColumn("z", 0, 15, integer=True),
        CategoricalColumn("y", ("0", "1")),
    ),
    label="y",
)
SPEC = EngineSpec(bins=10, fine_cells=16, rounds=2, pe_share=0.0, atom_share=0.0)
BUDGET = Budget(rho=80.0)
ROWS = spread_rows(lambda rng: round(float(rng.uniform(0.2, 0.8)), 2), (0.4, 3, "1"))
CASE = Case(SCHEMA, SPEC, BUDGET, ROWS, [((0.0, 5, "1"), (0.5, 5, "1"), "error")])


def test_declared_atoms_bins_are_post_processing() -> None:
    assert CASE.violations() == []


def test_the_declared_atoms_have_bins_of_their_own() -> None:
    """The path runs on the audited table: neither atom is shown by the release (0
    holds one row in D, 1 none), and both get a bin ``[a, a]``."""
    here, _ = CASE.tables(*CASE.pairs[0][:2])
    result = fit_engine(
        FrameSource(here, SCHEMA), SCHEMA, BUDGET, SPEC,
        noise=SeededNoise(3), rng=np.random.default_rng(5),
    )  # fmt: skip
    edges = [float(e) for e in result.discretiser.edges("share")]
    half = atom_tolerance(SCHEMA.columns[0])
    assert edges[:2] == [0.0, half] and edges[-2:] == [1.0 - half, 1.0]


def exact_declared(mp: pytest.MonkeyPatch, exact: dict[int, np.ndarray]) -> None:
    """Mutant: a declared atom keeps its bin only where the private table holds it
    (its exact fine count, ``exact`` keyed by the released counts' ``id``)."""
    placed, declared = loop.released_edges, bins.declared_atoms

    def leaky(discretiser, released, n, mode="range", skip=(), known=None):
        held: dict[str, set[float]] = {}
        for name, measured in released.items():
            cells = discretiser.fine[name]
            counts = exact[id(measured.noisy)][: cells.atoms]
            held[name] = {float(v) for v, c in zip(cells.lo, counts, strict=False) if c > 0}

        def private(column, cells, counts, taken):
            chosen = declared(column, cells, counts, taken)
            return [v for v in chosen if v in held.get(column.name, set())]

        with pytest.MonkeyPatch.context() as inner:
            inner.setattr(bins, "declared_atoms", private)
            return placed(discretiser, released, n, mode, skip, known)

    mp.setattr(loop, "released_edges", leaky)
