"""DuckDB as a counting engine and a private source (docs/scale.md): the same counts,
records, output and ledger as the local backend and the Python reader."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")

from dpevolve import Synthesizer  # noqa: E402
from dpevolve.backends.duckdb import DuckDBBackend  # noqa: E402
from dpevolve.backends.local import LocalBackend  # noqa: E402
from dpevolve.data.sources import FrameSource  # noqa: E402
from dpevolve.engine.discretise import Discretiser  # noqa: E402
from dpevolve.engine.measure import MarginalCounts  # noqa: E402


def test_grouped_counts_are_the_local_counts(small_schema, small_table) -> None:
    """Every clique (any order, repeated column sets, more sets than one query holds) and
    every fine histogram: the same integers as the local backend."""
    import dpevolve.backends.duckdb as duck

    source = FrameSource(small_table, small_schema)
    discretiser = Discretiser(small_schema)
    names = small_schema.names
    cliques = [(a,) for a in names] + [(a, b) for a in names for b in names if a != b]
    cliques.append(tuple(names[:3]))
    fine = [c.name for c in discretiser.numeric]
    query = MarginalCounts(discretiser, cliques, fine)
    backend = DuckDBBackend()
    expected = LocalBackend().count(source.batches(), query)
    assert np.array_equal(backend.count(source.batches(), query), expected)
    duck.SETS_PER_QUERY, old = 3, duck.SETS_PER_QUERY
    try:
        assert np.array_equal(backend.count(source.batches(), query), expected)
    finally:
        duck.SETS_PER_QUERY = old
    backend.close()


def test_engine_through_duckdb_is_the_local_engine(small_schema, small_table) -> None:
    """A seeded fit counted in DuckDB gives the local fit's rows and ledger."""

    def fit(backend):
        model = Synthesizer(
            small_schema, epsilon=1.0, random_state=3, noise_seed=4, backend=backend
        )
        return model.fit(small_table)

    local, duck = fit("local"), fit(DuckDBBackend())
    pd.testing.assert_frame_equal(duck.sample(300), local.sample(300))
    a, b = local.ledger_.to_dict(), duck.ledger_.to_dict()
    a["config"].pop("backend"), b["config"].pop("backend")
    assert json.dumps(a, default=str) == json.dumps(b, default=str)
