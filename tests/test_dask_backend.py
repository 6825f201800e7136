"""The Dask backend gives the local backend's histograms and fits, on a local cluster.

One two-process cluster serves the whole module (separate processes, so the private
partitions, distances and votes really are pickled to the workers).
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("dask.dataframe")

from distributed import Client, LocalCluster

from dpevolve import Synthesizer
from dpevolve.backends import LocalBackend
from dpevolve.backends.dask import DaskBackend, DaskPrivate, fit_parquet
from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.schema import Schema
from dpevolve.data.streaming import StreamedTable, fit_file
from dpevolve.errors import InputError
from dpevolve.pe.distance import make_distance
from dpevolve.pe.specs import VoteSpec
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote
from dpevolve.presets import get_method

SETTINGS = {
    "method": get_method("tabpe", population=48, rounds=3),
    "epsilon": 1.0,
    "random_state": 7,
    "noise_seed": 7,
}


@pytest.fixture(scope="module")
def client():
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit="1GiB",
        silence_logs=40,
    )
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def private(small_schema: Schema) -> Records:
    return Variation(Layout.of(small_schema)).random(3001, np.random.default_rng(3))


@pytest.fixture
def population(small_schema: Schema) -> Records:
    return Variation(Layout.of(small_schema)).random(97, np.random.default_rng(4))


class CountingBackend(DaskBackend):
    """Counts how often private data is shipped to the workers."""

    shipped = 0
    partitions_shipped = 0

    def persist(self, private):
        held = super().persist(private)
        type(self).shipped += 1
        type(self).partitions_shipped = len(held.parts)
        return held


@pytest.mark.parametrize("distance", ["gower", "tabpe"])
@pytest.mark.parametrize("partitions", [1, 5])
def test_histogram_equals_local(client, small_schema, private, population, distance, partitions):
    metric = make_distance(distance, small_schema)
    backend = DaskBackend(client, partitions=partitions)
    local = LocalBackend()
    hard = backend.vote(private, population, metric, HardVote())
    np.testing.assert_array_equal(hard, local.vote(private, population, metric, HardVote()))
    assert hard.sum() == len(private)
    soft = SoftVote(0.05)
    # Soft votes are quantised to a grid and summed exactly: equal whatever the partitions.
    np.testing.assert_array_equal(
        backend.vote(private, population, metric, soft),
        local.vote(private, population, metric, soft),
    )
    backend.release()


def test_private_data_shipped_once(client, small_schema, private, population):
    backend = CountingBackend(client)
    CountingBackend.shipped = 0
    metric = make_distance("gower", small_schema)
    first = backend.vote(private, population, metric, HardVote())
    held = backend._cached
    for _ in range(3):
        np.testing.assert_array_equal(backend.vote(private, population, metric, HardVote()), first)
    assert CountingBackend.shipped == 1 and backend._cached is held
    assert Records.concat(list(held)).equals(private)  # gathered back, partition order
    backend.release()
    assert backend._cached is None
    with pytest.raises(InputError, match="released"):
        backend.vote(held, population, metric, HardVote())


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {
            "method": get_method(
                "tabpe",
                population=48,
                rounds=3,
                distance="tabpe",
                vote=VoteSpec(kind="soft", temperature=0.1),
            ),
        },
    ],
)
def test_fit_equals_local(client, small_schema, small_table, extra):
    settings = {**SETTINGS, **extra}
    local = Synthesizer(small_schema, **settings, backend=LocalBackend()).fit(small_table)
    backend = CountingBackend(client, partitions=3)
    CountingBackend.shipped = 0
    dask = Synthesizer(small_schema, **settings, backend=backend).fit(small_table)
    assert CountingBackend.shipped == 1  # once for the run, not once per round
    assert backend._cached is None  # the fit's records are gone, so is the workers' copy
    pd.testing.assert_frame_equal(dask.synthetic_, local.synthetic_)
    assert dask.population_.equals(local.population_)
    dask_ledger, local_ledger = dask.ledger_.to_dict(), local.ledger_.to_dict()
    assert (dask_ledger.pop("backend"), local_ledger.pop("backend")) == (
        "CountingBackend",
        "LocalBackend",
    )
    assert (dask_ledger["config"].pop("backend"), local_ledger["config"].pop("backend")) == (
        "counting",
        "local",
    )
    assert dask_ledger == local_ledger


def test_streamed_fit_ships_once(client, tmp_path, small_schema, small_table):
    path = tmp_path / "private.csv"
    small_table.to_csv(path, index=False)
    local = Synthesizer(small_schema, **SETTINGS).fit(small_table)
    backend = CountingBackend(client)
    CountingBackend.shipped = 0
    dask = fit_file(Synthesizer(small_schema, **SETTINGS, backend=backend), path, batch_rows=64)
    assert CountingBackend.shipped == 1
    assert CountingBackend.partitions_shipped == 7  # one partition per batch
    assert backend._cached is None  # the table is gone, so is the workers' copy
    pd.testing.assert_frame_equal(dask.synthetic_, local.synthetic_)


def test_persist_stream_and_callable(client, tmp_path, small_schema, small_table, population):
    path = tmp_path / "private.parquet"
    small_table.to_parquet(path, index=False)
    table = StreamedTable(path, small_schema, batch_rows=150)
    backend = DaskBackend(client)
    held = backend.persist(table)
    assert isinstance(held, DaskPrivate) and held.rows == len(held) == 400
    assert held.report == table.report and held() is held
    metric = make_distance("gower", small_schema)
    expected = LocalBackend().vote(table.batches(), population, metric, HardVote())
    np.testing.assert_array_equal(backend.vote(held, population, metric, HardVote()), expected)
    again = backend.persist(table.batches)  # a callable returning a stream
    np.testing.assert_array_equal(backend.vote(again, population, metric, HardVote()), expected)
    held.release()
    again.release()


def test_unknown_stream_warns_and_still_votes(client, small_schema, private, population):
    metric = make_distance("gower", small_schema)
    backend = DaskBackend(client)
    with pytest.warns(UserWarning, match="persist"):
        stream = iter([private.take(slice(0, 1000)), private.take(slice(1000, None))])
        histogram = backend.vote(stream, population, metric, HardVote())
    np.testing.assert_array_equal(
        histogram, LocalBackend().vote(private, population, metric, HardVote())
    )
    assert backend._cached is None


def _dirty_parquet(folder: Path, table: pd.DataFrame) -> Path:
    frame = table.astype({"age": float, "job": object})
    frame.loc[[5, 300], "age"] = [200.0, np.nan]
    frame.loc[[7, 250], "job"] = ["pilot", None]
    path = folder / "dirty.parquet"
    # Four row groups, so the workers see several partitions.
    frame.to_parquet(path, index=False, row_group_size=100)
    return path


@pytest.mark.parametrize("persist", [True, False])
@pytest.mark.parametrize("mode", ["drop", "clip"])
def test_read_parquet_on_workers(
    client, tmp_path, small_schema, small_table, population, persist, mode
):
    path = _dirty_parquet(tmp_path, small_table)
    frame, report = small_schema.validate(pd.read_parquet(path), mode, what="private table")
    backend = DaskBackend(client)
    held = backend.read_parquet(path, small_schema, mode, persist=persist, split_row_groups=True)
    assert len(held.parts) == 4
    assert held.report == report and held.rows == report.rows_out
    assert Records.concat(list(held)).equals(encode(frame, small_schema))
    metric = make_distance("gower", small_schema)
    np.testing.assert_array_equal(
        backend.vote(held, population, metric, HardVote()),
        LocalBackend().vote(encode(frame, small_schema), population, metric, HardVote()),
    )
    held.release()


def test_read_parquet_errors(client, tmp_path, small_schema, small_table):
    path = _dirty_parquet(tmp_path, small_table)
    backend = DaskBackend(client)
    with pytest.raises(InputError) as whole:
        small_schema.validate(pd.read_parquet(path), "error", what="private table")
    with pytest.raises(InputError) as workers:
        backend.read_parquet(path, small_schema, "error", split_row_groups=True)
    assert str(workers.value).split(" (first")[0] == str(whole.value).split(" (first")[0]
    with pytest.raises(InputError, match="file not found"):
        backend.read_parquet(tmp_path / "absent.parquet", small_schema)
    extra = tmp_path / "extra.parquet"
    small_table.assign(extra=1).to_parquet(extra, index=False)
    with pytest.raises(InputError, match="column 'extra' that the schema does not declare"):
        backend.read_parquet(extra, small_schema)


def test_fit_parquet_equals_fit(client, tmp_path, small_schema, small_table):
    path = tmp_path / "private.parquet"
    small_table.to_parquet(path, index=False, row_group_size=128)
    local = Synthesizer(small_schema, **SETTINGS).fit(small_table)
    model = Synthesizer(small_schema, **SETTINGS, backend=DaskBackend(client))
    fitted = fit_parquet(model, path, split_row_groups=True)
    pd.testing.assert_frame_equal(fitted.synthetic_, local.synthetic_)
    with pytest.raises(InputError, match="DaskBackend"):
        fit_parquet(Synthesizer(small_schema, **SETTINGS), path)


def test_arguments_and_default_client(client, small_schema, private, population):
    with pytest.raises(InputError, match="partitions"):
        DaskBackend(client, partitions=0)
    with pytest.raises(InputError, match="inner kernel"):
        DaskBackend(client, inner="gpu")  # type: ignore[arg-type]
    backend = DaskBackend(inner=LocalBackend(chunk_cells=50_000))  # default client
    assert backend.client is client
    assert pickle.loads(pickle.dumps(backend)).client is client  # the client is not pickled
    metric = make_distance("gower", small_schema)
    np.testing.assert_array_equal(
        backend.vote(private, population, metric, HardVote()),
        LocalBackend().vote(private, population, metric, HardVote()),
    )
    backend.release()


def test_empty_partition_encodes_to_no_rows(small_schema, small_table):
    from dpevolve.backends.dask_worker import load_partition as _load_partition

    records, tally = _load_partition(small_table.iloc[:0], small_schema, "error", "t")
    assert len(records) == 0 and tally.rows_in == tally.rows_out == 0
    assert records.numeric.shape == (0, 2) and records.codes.shape == (0, 2)


def test_kernel_choice():
    """Which kernel a worker votes with (voting with it is tests/test_fused.py's job: its
    numba compile, once per worker process, would dominate this file's time)."""
    from dpevolve.backends.dask_worker import worker_kernel as _kernel
    from dpevolve.backends.fused import FusedBackend, fused_available

    assert type(_kernel("local")) is LocalBackend
    local = LocalBackend(chunk_cells=10)
    assert _kernel(local) is local
    if fused_available():
        assert type(_kernel("fused")) is FusedBackend
        assert type(_kernel("auto")) is FusedBackend
    else:
        assert type(_kernel("auto")) is LocalBackend
        with pytest.raises(InputError, match="fused"):
            DaskBackend(inner="fused")


def test_nullable_votes_identical_over_many_partitions(client) -> None:
    """Fused kernels on the workers, a tree reduce of 17 partials: the reference's bits."""
    from dpevolve.data.schema import CategoricalColumn, NumericColumn

    schema = Schema(
        (
            NumericColumn("x", 0, 7, nullable=True),
            NumericColumn("y", 0, 7),
            CategoricalColumn("c", ("a", "b", "c")),
        )
    )
    rng = np.random.default_rng(5)
    layout = Layout.of(schema)

    def records(n: int) -> Records:
        numeric = rng.integers(0, 8, (n, 2)) / 7.0
        numeric[rng.random(n) < 0.3, 0] = np.nan
        return Records(numeric, rng.integers(0, 3, (n, 1)).astype(np.int32))

    private, population = records(2000), records(60)
    assert layout.nullable_mask.tolist() == [True, False]
    backend = DaskBackend(client, partitions=17)
    for metric in ("gower", "tabpe"):
        distance = make_distance(metric, schema)
        for vote in (HardVote(), SoftVote(0.05)):
            np.testing.assert_array_equal(
                backend.vote(private, population, distance, vote),
                LocalBackend().vote(private, population, distance, vote),
            )
    backend.release()


def test_only_the_reduced_histogram_reaches_the_driver(
    client, private, population, small_schema, monkeypatch
) -> None:
    gathered: list[object] = []
    real = client.gather

    def spy(what, *args, **kwargs):
        gathered.append(what)
        return real(what, *args, **kwargs)

    backend = DaskBackend(client, partitions=11)
    held = backend.persist(private)
    monkeypatch.setattr(client, "gather", spy)
    distance = make_distance("tabpe", small_schema)
    got = backend.vote(held, population, distance, HardVote())
    assert len(gathered) == 1 and not isinstance(gathered[0], list)  # one future, not 11
    expected = LocalBackend().vote(private, population, distance, HardVote())
    np.testing.assert_array_equal(got, expected)
    held.release()


def test_backend_line_says_what_the_workers_run(client) -> None:
    from dpevolve.backends.fused import fused_available

    assert "numpy reference" in DaskBackend(client, inner="local").describe()
    default = DaskBackend(client).describe()
    assert ("fused numba kernels" in default) == fused_available()


def test_engine_counts_reduced_on_the_workers(client, small_schema, small_table) -> None:
    from dpevolve.data.sources import FrameSource
    from dpevolve.engine.discretise import Discretiser
    from dpevolve.engine.measure import MarginalCounts, count_marginals

    source = FrameSource(small_table, small_schema)
    disc = Discretiser(small_schema, bins=6, fine_cells=30)
    cliques = [("age",), ("age", "income"), ("job", "hours", "income")]
    backend = DaskBackend(client, partitions=13)
    query = MarginalCounts(disc, cliques, ["age", "hours"], rows=11)
    stacked = backend.count(source.batches(), query)  # pickled to two worker processes
    assert stacked.dtype == np.int64 and stacked.size == query.size
    np.testing.assert_array_equal(stacked, LocalBackend().count(source.batches(), query))
    got, got_fine = count_marginals(source, disc, cliques, ["age", "hours"], backend=backend)
    want, want_fine = count_marginals(source, disc, cliques, ["age", "hours"])
    for clique in cliques:
        assert got[clique].tobytes() == want[clique].tobytes()
        assert got[clique].sum() == len(small_table)
    assert all(got_fine[f].tobytes() == want_fine[f].tobytes() for f in want_fine)
    backend.release()


def _no_local_counting(monkeypatch) -> None:
    """Counting on the driver fails: only the workers may count."""
    from dpevolve.backends.fused import FusedBackend

    def refuse(self, private, query):
        raise AssertionError("counted on the driver, not on the workers")

    monkeypatch.setattr(LocalBackend, "count", refuse)
    monkeypatch.setattr(FusedBackend, "count", refuse)


def _spy_dask_counts(monkeypatch) -> list[DaskBackend]:
    """Record the backend of every count vector the workers reduce and send back."""
    seen: list[DaskBackend] = []
    real = DaskBackend.count

    def count(self, private, query):
        out = real(self, private, query)
        seen.append(self)
        return out

    monkeypatch.setattr(DaskBackend, "count", count)
    return seen


def test_default_engine_counts_on_the_workers(client, monkeypatch, small_schema, small_table):
    # the default engine, its PE stage at 10 of the 400 rows per candidate
    chosen = get_method("adaptive", engine={"pe_candidates": 40})
    settings = {"epsilon": 1.0, "random_state": 5, "noise_seed": 5, "method": chosen}
    local = Synthesizer(small_schema, **settings, backend="local").fit(small_table)
    assert local.resolved_method().name == "adaptive"  # the default engine
    _no_local_counting(monkeypatch)
    seen = _spy_dask_counts(monkeypatch)
    votes: list[int] = []
    real_vote = DaskBackend.vote

    def vote(self, *args, **kwargs):
        votes.append(1)
        return real_vote(self, *args, **kwargs)

    def no_local_vote(self, *args, **kwargs):
        raise AssertionError("the PE stage voted on the driver, not on the workers")

    monkeypatch.setattr(DaskBackend, "vote", vote)
    monkeypatch.setattr(LocalBackend, "vote", no_local_vote)
    backend = CountingBackend(client, partitions=3)
    CountingBackend.shipped = 0
    dask = Synthesizer(small_schema, **settings, backend=backend).fit(small_table)
    assert seen and CountingBackend.shipped == 1  # counted on the workers, shipped once
    from dpevolve.engine.spec import EngineSpec

    assert len(votes) == EngineSpec().pe_rounds  # the PE stage votes on the workers too
    pd.testing.assert_frame_equal(dask.synthetic_, local.synthetic_)
    # the same rounds on the same releases; a refit's movement may differ in its last
    # bits (a BLAS call inside einsum, while the workers' threads run: seen once in CI,
    # 67.38210750 against 67.38210570), so floats are compared to 1e-6
    assert len(dask.history_) == len(local.history_)
    for there, here in zip(dask.history_, local.history_, strict=True):
        assert there.keys() == here.keys()
        for key, value in here.items():
            expected = pytest.approx(value, rel=1e-6) if isinstance(value, float) else value
            assert there[key] == expected, key


def test_hybrid_marginals_counted_on_the_workers(
    client, monkeypatch, small_schema, small_table
) -> None:
    """The ``hybrid`` preset's marginal release: the workers count and reduce, the driver
    gets one vector, and the model is the local one, bit for bit."""
    import dpevolve.pe.hybrid.marginals as marginals
    from dpevolve.presets import get_method

    settings = {"epsilon": 1.0, "random_state": 2, "noise_seed": 2,
                "method": get_method("hybrid", population=24, rounds=2)}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = Synthesizer(small_schema, **settings, backend="local").fit(small_table)
        _no_local_counting(monkeypatch)

        def no_driver_count(self, records):
            raise AssertionError("the marginals were counted on the driver")

        monkeypatch.setattr(marginals.CellIndex, "counts", no_driver_count)
        seen = _spy_dask_counts(monkeypatch)
        backend = DaskBackend(client, partitions=3)
        dask = Synthesizer(small_schema, **settings, backend=backend).fit(small_table)
    assert seen  # the marginal release went through the workers' reduce
    assert dask.ledger_.to_dict()["events"][-1]["marginal_sets"] > 0
    pd.testing.assert_frame_equal(dask.synthetic_, local.synthetic_)
    backend.release()


def test_cli_synth_backend_dask_counts_on_the_workers(
    client, monkeypatch, tmp_path, small_schema, small_table, capsys
) -> None:
    from dpevolve.cli import main

    schema, private = tmp_path / "schema.yaml", tmp_path / "private.csv"
    schema.write_text(small_schema.to_yaml())
    small_table.to_csv(private, index=False)

    def synth(out: str, backend: str) -> bytes:
        argv = ["synth", str(private), "--schema", str(schema), "--epsilon", "1",
                "-o", str(tmp_path / out), "--seed", "3", "--noise-seed", "11",
                "--backend", backend]  # fmt: skip
        assert main(argv) == 0, capsys.readouterr().err
        return (tmp_path / out).read_bytes()

    local = synth("local.csv", "local")
    # The command's own cluster would be in-process: point it at the two-process one.
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", client.scheduler.address)
    _no_local_counting(monkeypatch)
    seen = _spy_dask_counts(monkeypatch)
    try:
        assert synth("dask.csv", "dask") == local
    finally:
        for own in {id(b.client): b.client for b in seen}.values():
            own.close()  # the command's client (a command exits; a test goes on)
    assert seen and "backend: dask (tcp://" in capsys.readouterr().err


def test_fit_parquet_cuts_by_row_group_and_never_gathers_rows(
    client, monkeypatch, tmp_path, small_schema, small_table
) -> None:
    """The default engine on a Parquet file the workers read: one partition per row
    group without being asked, no record ever iterated on the driver, no n-row draw in
    fit, and the local model's rows, bit for bit."""
    path = tmp_path / "private.parquet"
    small_table.to_parquet(path, index=False, row_group_size=100)  # 4 row groups
    settings = {"epsilon": 1.0, "random_state": 4, "noise_seed": 4}
    local = Synthesizer(small_schema, **settings, backend="local").fit(small_table)
    parts: list[int] = []
    real_read = DaskBackend.read_parquet

    def read(self, *args, **kwargs):
        held = real_read(self, *args, **kwargs)
        parts.append(len(held.parts))
        return held

    def no_rows_here(self):
        raise AssertionError("the driver gathered private records")

    monkeypatch.setattr(DaskBackend, "read_parquet", read)
    monkeypatch.setattr(DaskPrivate, "__iter__", no_rows_here)
    _no_local_counting(monkeypatch)
    model = fit_parquet(Synthesizer(small_schema, **settings, backend=DaskBackend(client)), path)
    assert parts == [4]
    assert "synthetic_" not in vars(model)  # fit drew no table
    pd.testing.assert_frame_equal(model.sample(len(small_table)), local.sample(len(small_table)))
