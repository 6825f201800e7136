"""The engine counts through its backend, and every backend gives the same integers."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.backends.local import LocalBackend
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atoms import CandidateCounts
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import MarginalCounts, count_marginals
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise


def _table(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "spend": np.where(rng.random(n) < 0.3, np.nan, rng.random(n) * 100),
            "job": rng.choice(["a", "b", "c", None], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )


class Spy(LocalBackend):
    """The local backend, remembering what it was asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[MarginalCounts] = []

    def count(self, private, query):  # type: ignore[no-untyped-def]
        self.asked.append(query)
        return super().count(private, query)


def test_the_stacked_vector_splits_into_shaped_counts(nulls_schema) -> None:
    rng = np.random.default_rng(0)
    source = FrameSource(_table(rng, 300), nulls_schema)
    disc = Discretiser(nulls_schema, bins=5, fine_cells=16)
    cliques = [("age", "y"), ("job",), ("spend", "job", "y")]
    query = MarginalCounts(disc, [*cliques, ("job",)], ["spend"], rows=7)
    assert query.cliques == cliques  # the repeat is counted once
    stacked = LocalBackend().count(source.batches(), query)
    assert stacked.dtype == np.int64 and stacked.size == query.size
    assert stacked.sum() == 4 * 300  # every record in every clique and the fine histogram
    exact, fine = query.split(stacked)
    codes = disc.codes(source.batches())
    for clique in cliques:
        direct = np.zeros(disc.domain.shape(clique))
        np.add.at(direct, tuple(codes[:, [disc.domain.index(a) for a in clique]].T), 1)
        assert exact[clique].dtype == np.float64
        assert np.array_equal(exact[clique], direct)
    assert np.array_equal(
        fine["spend"],
        np.bincount(disc.fine_codes(source.batches(), "spend"), minlength=disc.fine["spend"].size),
    )


def test_the_engine_counts_through_the_given_backend(nulls_schema) -> None:
    table = _table(np.random.default_rng(1), 800)
    args = (nulls_schema, Budget(epsilon=1.0, delta=1e-5), EngineSpec(bins=4, rounds=3))
    spy = Spy()
    with_spy = fit_engine(
        FrameSource(table, nulls_schema), *args, noise=SeededNoise(3),
        rng=np.random.default_rng(0), backend=spy,
    )  # fmt: skip
    # the atom release's candidate counts, then the marginal counts
    assert spy.asked and all(isinstance(q, MarginalCounts | CandidateCounts) for q in spy.asked)
    assert any(isinstance(q, MarginalCounts) for q in spy.asked)
    marginal = [q for q in spy.asked if isinstance(q, MarginalCounts)]
    first = next(q for q in marginal if q.cliques)  # after the fine histograms' pass
    assert ("age",) in first.cliques and ("age", "y") in first.cliques  # the first pass
    plain = fit_engine(
        FrameSource(table, nulls_schema), *args, noise=SeededNoise(3),
        rng=np.random.default_rng(0),
    )  # fmt: skip
    assert [h["clique"] for h in with_spy.history] == [h["clique"] for h in plain.history]
    for a, b in zip(with_spy.measurements, plain.measurements, strict=True):
        assert np.array_equal(a.noisy, b.noisy)


# ----------------------------------------------------------------- Dask, in process
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def dask_client():
    # Threads in this process: starts in about a second. The process cluster of
    # tests/test_dask_backend.py checks that the query pickles to real workers.
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None,
        silence_logs=40,
    )  # fmt: skip
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


CLIQUES = [c for k in (1, 2, 3) for c in itertools.combinations(("age", "spend", "job", "y"), k)]


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 400),
    partitions=st.integers(1, 6),
    rows=st.integers(1, 97),
    picked=st.lists(st.sampled_from(CLIQUES), min_size=1, max_size=6),
    bins=st.integers(2, 9),
)
def test_dask_counts_are_the_local_counts_bit_for_bit(
    dask_client, nulls_schema, seed, n, partitions, rows, picked, bins
) -> None:
    from dpevolve.backends.dask import DaskBackend

    source = FrameSource(_table(np.random.default_rng(seed), n), nulls_schema)
    disc = Discretiser(nulls_schema, bins=bins, fine_cells=3 * bins)
    fine = ["age", "spend"]
    backend = DaskBackend(dask_client, partitions=partitions)
    try:
        got, got_fine = count_marginals(source, disc, picked, fine, rows, backend=backend)
    finally:
        backend.release()
    want, want_fine = count_marginals(source, disc, picked, fine, rows)
    assert list(got) == list(want) and list(got_fine) == fine
    for clique, counts in want.items():
        assert got[clique].dtype == counts.dtype and got[clique].shape == counts.shape
        assert got[clique].tobytes() == counts.tobytes()
        assert counts.sum() == n
    for name in fine:
        assert got_fine[name].tobytes() == want_fine[name].tobytes()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), rows=st.integers(1, 64),
       picked=st.lists(st.sampled_from(CLIQUES), max_size=6), bins=st.integers(2, 9))  # fmt: skip
def test_kept_cell_codes_count_as_the_records(nulls_schema, seed, n, rows, picked, bins) -> None:
    """Counting the kept codes (what a Dask worker does after the first pass) gives the
    integers counting the records gives, for any cliques, slice size and table."""
    records = FrameSource(_table(np.random.default_rng(seed), n), nulls_schema).batches()
    disc = Discretiser(nulls_schema, bins=bins, fine_cells=3 * bins)
    query = MarginalCounts(disc, picked, ["spend", "age"], rows=rows)
    codes = query.cell_codes(records)
    assert codes.shape == (n, 4 + 2) and codes.dtype == np.uint8 and codes.flags.f_contiguous
    kept = query.on_codes().counts(codes)
    assert kept.dtype == np.int64
    assert kept.tobytes() == LocalBackend().count(records, query).tobytes()


def test_dask_keeps_the_codes_per_discretiser(dask_client, nulls_schema) -> None:
    """The workers encode a table's cells once per discretiser; every later pass with it
    only counts, and a new discretiser encodes anew (its codes differ)."""
    from dpevolve.backends.dask import DaskBackend

    table = _table(np.random.default_rng(5), 500)
    source = FrameSource(table, nulls_schema)
    backend = DaskBackend(dask_client, partitions=3)
    coarse, fine = Discretiser(nulls_schema, bins=3), Discretiser(nulls_schema, bins=7)
    try:
        seen = []
        for disc, cliques in ((coarse, CLIQUES[:3]), (coarse, CLIQUES[3:9]), (fine, CLIQUES)):
            query = MarginalCounts(disc, cliques, ["age"], rows=37)
            got = backend.count(source.batches(), query)
            assert got.tobytes() == LocalBackend().count(source.batches(), query).tobytes()
            held = backend._cached
            assert held is not None and held.cells is not None and held.cells[0] is disc
            seen.append(held.cells[1])
        assert seen[0] is seen[1] and seen[2] is not seen[1]
        assert sum(len(group) for group in seen[2].values()) == 3  # one per partition
    finally:
        backend.release()
