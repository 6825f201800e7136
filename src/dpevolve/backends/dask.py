"""Votes and counts on a Dask cluster: the private records stay on the workers.

The vote histogram and a marginal's counts are sums over private records, so they
split over partitions: each worker votes on the partitions it holds with the fused
kernels (:class:`~dpevolve.backends.fused.FusedBackend`, when numba is installed there;
else the numpy reference), or counts them, and the workers add the partial vectors (a
tree reduce: only one vector of ``m`` numbers or cells reaches the driver, never a row);
the release adds noise once to the sum, on the driver. The result (and so the privacy
analysis) is the same as on one machine, to the last bit: counts and hard votes are
integers and soft votes whole units of the canonical grid (:mod:`dpevolve.backends.canonical`),
so no partitioning or order of summation changes a bit.

The private data is shipped to the workers once and kept there for every round; each
round only the population, distance and vote (small) travel. For the adaptive engine's
counts the workers also keep each partition's cell codes (one or two bytes a cell,
made on the first pass of marginals with a discretiser:
:meth:`~dpevolve.backends.dask_held.DaskPrivate.cell_codes`), so a later pass only
counts: one task per worker and pass, all its partitions and all the pass's cliques,
with the cliques' columns and shapes (a few hundred bytes) as the only payload, in one
compiled loop where numba is installed (:mod:`dpevolve.backends.code_counts`).

Using it
--------
Install ``dpevolve[dask]``. On one machine::

    from distributed import Client, LocalCluster
    from dpevolve import Synthesizer
    from dpevolve.backends.dask import DaskBackend

    client = Client(LocalCluster(n_workers=4, threads_per_worker=1))
    model = Synthesizer("schema.yaml", epsilon=1.0, random_state=0,
                        backend=DaskBackend(client))
    model.fit(private_frame)              # scattered to the workers once, not per round

On a real cluster, point the client at its scheduler (dpevolve must be installed on the
workers, at the same version)::

    client = Client("tcp://scheduler:8786")

A table that never fits the driver is read by the workers themselves, straight from
Parquet (local disk shared by all, or ``s3://``/``gs://`` with the matching fsspec
package installed)::

    from dpevolve.backends.dask import DaskBackend, fit_parquet

    backend = DaskBackend(client)
    model = Synthesizer("schema.yaml", epsilon=1.0, backend=backend)
    fit_parquet(model, "s3://bucket/private/*.parquet")

The workers validate and encode their partitions, one per Parquet row group unless
``split_row_groups`` or ``blocksize`` says otherwise (so a single file is shared by
every worker); only row counts and validation counts come back to the driver, which
never holds the table or a row of it (nor, since ``fit`` draws no table, a synthetic
one: ``model.sample_blocks`` draws rows when asked).

Spark
-----
There is no Spark backend. Dask was chosen because the Python data teams this library
is for already run it, it needs no JVM, and a worker runs the very NumPy kernel the
local backend runs (no serialisation through Arrow to the JVM and back). A Spark backend
would slot in the same way, as one module implementing the two methods of the
:class:`~dpevolve.backends.base.Backend` protocol, ``vote`` and ``count``: for ``vote``,
broadcast the population, distance and vote, then ``rdd.mapPartitions`` turning each
partition into Records and yielding one partial histogram, then ``treeReduce`` with
``+`` to the driver; for ``count``, the same with the
:class:`~dpevolve.backends.base.CountQuery`'s ``counts`` per slice (or, for the engine's
queries, its ``cell_codes`` cached once per discretiser and ``on_codes().counts`` per
pass, as here). The release adds noise on the driver, once. A ``persist`` would cache
the encoded partitions.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterable, Iterator, Sequence
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import numpy as np

from dpevolve.backends.base import Backend, CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.dask_held import DaskPrivate, coded, count_cells_by_worker, map_reduce
from dpevolve.backends.dask_worker import (
    load_partition,
    partial_count,
    partial_vote,
    records_of,
    tally_of,
    worker_kernel,
)
from dpevolve.data.encoding import Records
from dpevolve.data.messages import reader_error
from dpevolve.data.schema import Schema
from dpevolve.data.streaming import (
    StreamedTable,
    TableStream,
    Tally,
    check_columns,
)
from dpevolve.errors import InputError

if TYPE_CHECKING:
    from distributed import Client

Kernel = Literal["local", "fused", "auto"]


class Fittable(Protocol):
    """What :func:`fit_parquet` needs of a Synthesizer (a backend never imports the facade)."""

    schema: Any
    backend: Any
    on_invalid: Any

    def fit_source(self, source: Any) -> Any: ...


Model = TypeVar("Model", bound=Fittable)


class DaskBackend:
    """Vote on a Dask cluster, with the private records kept on its workers.

    Parameters
    ----------
    client
        A ``distributed.Client``. ``None`` uses the current default client.
    partitions
        How many partitions an in-memory private table is cut into. ``None``: one per
        worker thread. A stream of batches keeps its batches as partitions.
    inner
        The kernel each worker votes with: ``auto`` (default: the fused kernels where
        numba is installed, else the reference), ``fused`` (required), ``local`` (the
        numpy reference, about 20 times slower), or a backend object (it must pickle).
        Every choice gives the same histogram, bit for bit.

    Notes
    -----
    The first :meth:`vote` on a new private table (an in-memory :class:`Records` or a
    :class:`~dpevolve.data.streaming.StreamedTable` pass) ships it to the workers; later
    rounds on the same table reuse it. :meth:`persist` and :meth:`read_parquet` do the
    shipping explicitly and return a :class:`DaskPrivate` to pass as the private data.
    Any other iterable of batches is shipped anew every round (with a warning).
    """

    def __init__(
        self,
        client: Client | None = None,
        partitions: int | None = None,
        inner: Backend | Kernel = "auto",
    ) -> None:
        if partitions is not None and (isinstance(partitions, bool) or partitions < 1):
            raise InputError(f"partitions must be a positive integer, got {partitions!r}")
        if isinstance(inner, str) and inner not in ("local", "fused", "auto"):
            raise InputError(f"inner kernel must be local, fused or auto, got '{inner}'")
        if inner == "fused":
            worker_kernel("fused")  # fail here, on the driver, rather than on every worker
        self._client = client
        self.partitions = partitions
        self.inner = inner
        # The table the cached partitions were made from, held weakly: when the caller
        # drops it (a fit ends), a finalizer frees the workers' copy.
        self._source: weakref.ref[Any] | None = None
        self._cached: DaskPrivate | None = None

    def __getstate__(self) -> dict[str, Any]:
        # A client and its futures belong to one process: an unpickled backend uses the
        # default client there and ships the private data again.
        state = self.__dict__.copy()
        state.update(_client=None, _source=None, _cached=None)
        return state

    def __repr__(self) -> str:
        return (
            f"DaskBackend(client={self._client!r}, partitions={self.partitions}, "
            f"inner={self.inner!r})"
        )

    # -------------------------------------------------------------------- client
    @property
    def client(self) -> Client:
        """The Dask client (the default one when none was given)."""
        if self._client is None:
            from distributed import get_client

            try:
                self._client = get_client()
            except ValueError:
                raise InputError(
                    "DaskBackend needs a Dask client: pass client=distributed.Client(...) "
                    "or start one first"
                ) from None
        return self._client

    def _workers(self) -> list[str]:
        return sorted(self.client.scheduler_info()["workers"])

    def _threads(self) -> int:
        workers = self.client.scheduler_info()["workers"].values()
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers))

    # -------------------------------------------------------------- shipping data
    def persist(self, private: PrivateData | StreamedTable | DaskPrivate) -> DaskPrivate:
        """Ship private records to the workers once; vote on the result every round.

        Parameters
        ----------
        private
            :class:`Records` (cut into ``partitions`` parts), a
            :class:`~dpevolve.data.streaming.StreamedTable` or any iterable of
            :class:`Records` batches (each batch becomes a partition, sent as it is
            read, so the driver holds one batch at a time), or a zero-argument callable
            returning one of those.

        Returns
        -------
        DaskPrivate
            Futures of the partitions, held in worker memory until released.
        """
        if isinstance(private, DaskPrivate):
            return private
        report = None
        if isinstance(private, StreamedTable):
            report, private = private.report, private.batches()
        elif isinstance(private, TableStream):
            report = private.table.report
        elif callable(private):
            return self.persist(private())
        client = self.client
        if isinstance(private, Records):
            count = self.partitions or self._threads()
            bounds = np.linspace(0, len(private), min(count, max(1, len(private))) + 1)
            parts = [private.take(slice(int(a), int(b))) for a, b in pairwise(bounds)]
            futures = client.scatter(parts, hash=False)
            return DaskPrivate(list(futures), len(private), client, report)
        workers = self._workers()
        futures = []
        rows = 0
        for k, batch in enumerate(_records_only(private)):
            # Round-robin placement: each batch leaves the driver as soon as it is read.
            target = [workers[k % len(workers)]] if workers else None
            futures.append(client.scatter(batch, workers=target, hash=False))
            rows += len(batch)
        return DaskPrivate(futures, rows, client, report)

    def read_parquet(
        self,
        path: str | Path,
        schema: Schema,
        on_invalid: Literal["error", "drop", "clip"] = "error",
        *,
        persist: bool = True,
        what: str = "private table",
        **read_kwargs: Any,
    ) -> DaskPrivate:
        """Read, validate and encode a Parquet table on the workers.

        Only validation counts and row counts come back to the driver. With
        ``persist=True`` the encoded partitions stay in worker memory for every round
        (about ``8 * numeric + 4 * categorical`` bytes a row); with ``persist=False``
        each round reads them again from Parquet (for tables larger than the cluster's
        memory).

        Parameters
        ----------
        path
            A Parquet file, folder or glob, as ``dask.dataframe.read_parquet`` takes it.
        schema
            The declared domains.
        on_invalid
            ``error``, ``drop`` or ``clip`` (counts and errors are the whole table's,
            as :meth:`Schema.validate` gives them).
        persist
            Keep the encoded partitions on the workers.
        what
            How error messages name the table.
        **read_kwargs
            Passed to ``dask.dataframe.read_parquet`` (``storage_options``...). By
            default every row group is a partition (``split_row_groups=True``), so the
            workers share even a single file; give ``split_row_groups`` or
            ``blocksize`` to cut otherwise.

        Returns
        -------
        DaskPrivate
            The encoded partitions, with ``rows`` and ``report``.
        """
        import dask
        import dask.dataframe as dd

        local = Path(str(path))
        remote_or_glob = "://" in str(path) or any(ch in str(path) for ch in "*?[")
        if not remote_or_glob and not local.exists():
            raise InputError(f"{what} file not found: {path}")
        if local.exists():
            _check_parquet_columns(local, schema, what)
        if "blocksize" not in read_kwargs:
            read_kwargs.setdefault("split_row_groups", True)
        try:
            frame = dd.read_parquet(path, columns=schema.names, **read_kwargs)
        except (OSError, ValueError) as exc:
            raise InputError(f"{what} {path} could not be read: {reader_error(exc)}") from None
        client = self.client
        loaded = [
            dask.delayed(load_partition)(part, schema, on_invalid, what)
            for part in frame.to_delayed()
        ]
        if persist:
            held = client.compute(loaded)
            tallies = client.gather(client.map(tally_of, held))
            parts: list[Any] = client.map(records_of, held)
            del held  # the Records futures keep the encoded partitions alive
        else:
            tallies = client.gather(client.compute([dask.delayed(tally_of)(x) for x in loaded]))
            parts = [dask.delayed(records_of)(x) for x in loaded]
        total = Tally(schema, on_invalid, what)
        for tally in tallies:
            total.add(tally)
        try:
            report = total.report()
        except InputError:
            if persist:
                for part in parts:
                    part.release()
            raise
        return DaskPrivate(parts, report.rows_out, client, report, persisted=persist)

    def _resolve(self, private: Any) -> tuple[DaskPrivate, bool]:
        """The cluster-side copy of ``private``, and whether to drop it after voting."""
        if isinstance(private, DaskPrivate):
            return private, False
        source = private.table if isinstance(private, TableStream) else private
        if self._cached is not None and self._source is not None and self._source() is source:
            return self._cached, False
        if isinstance(private, (Records, TableStream, StreamedTable)):
            self.release()
            held = self.persist(private)
            self._source, self._cached = weakref.ref(source), held
            weakref.finalize(source, _forget, weakref.ref(self), held)
            return held, False
        warnings.warn(
            "DaskBackend got a stream it cannot recognise across rounds, so it ships the "
            "private batches to the workers again this round; persist() them once instead",
            stacklevel=3,
        )
        return self.persist(private), True

    def release(self) -> None:
        """Drop the cached private partitions from the workers."""
        if self._cached is not None:
            self._cached.release()
        self._source = self._cached = None

    close = release

    # ---------------------------------------------------------------------- vote
    def vote(
        self,
        private: PrivateData | DaskPrivate,
        population: Records,
        distance: Distance,
        vote: Vote,
    ) -> np.ndarray:
        """The vote histogram ``H`` summed over the workers' partitions (no noise)."""
        held, temporary = self._resolve(private)
        if held.rows and not held.parts:
            raise InputError("the private partitions were released from the workers")
        try:
            payload = (population, distance, vote)
            histogram = map_reduce(held, partial_vote, payload, self.inner)
        finally:
            if temporary:
                held.release()
        return np.asarray(histogram, dtype=np.float64)

    def count(self, private: PrivateData | DaskPrivate, query: CountQuery) -> np.ndarray:
        """``query``'s exact counts (int64, no noise), counted and added on the workers.

        Each worker counts its partitions slice by slice (as
        :class:`~dpevolve.backends.local.LocalBackend` does on one machine) and the
        workers add the count vectors in a tree; the driver receives one vector of
        ``query.size`` integers, never a row. Integer sums are exact in any order, so
        the counts are the local backend's, bit for bit.
        """
        held, temporary = self._resolve(private)
        if held.rows and not held.parts:
            raise InputError("the private partitions were released from the workers")
        try:
            if coded(query) and (cells := held.cell_codes(query)) is not None:
                counts = count_cells_by_worker(held.client, cells, query.on_codes())
            else:
                counts = map_reduce(held, partial_count, query)
        finally:
            if temporary:
                held.release()
        return np.asarray(counts, dtype=np.int64)

    def describe(self) -> str:
        """What the workers vote with, for the CLI's backend line."""
        if not isinstance(self.inner, str):
            return f"{type(self.inner).__name__} on the workers"
        if self.inner == "local":
            return "numpy reference on the workers (inner='local')"
        return (
            "fused numba kernels on the workers"
            if worker_kernel(self.inner).__class__.__name__ == "FusedBackend"
            else "numpy reference on the workers (numba is not installed)"
        )


def fit_parquet(
    model: Model,
    path: str | Path,
    *,
    persist: bool = True,
    **read_kwargs: Any,
) -> Model:
    """Fit ``model`` on a Parquet table its :class:`DaskBackend`'s workers read.

    Parameters
    ----------
    model
        An unfitted :class:`~dpevolve.synthesizer.Synthesizer` whose ``backend`` is a
        :class:`DaskBackend`.
    path
        Parquet file, folder or glob, readable from every worker.
    persist
        Keep the encoded partitions in worker memory between rounds.
    **read_kwargs
        Passed to ``dask.dataframe.read_parquet``.

    Returns
    -------
    Synthesizer
        ``model``, fitted.
    """
    backend = model.backend
    if not isinstance(backend, DaskBackend):
        raise InputError("fit_parquet needs a Synthesizer with backend=DaskBackend(...)")
    schema = Schema.of(model.schema)
    held = backend.read_parquet(path, schema, model.on_invalid, persist=persist, **read_kwargs)
    try:
        model.fit_source(held)
        return model
    finally:
        held.release()


def _forget(backend: weakref.ref[DaskBackend], held: DaskPrivate) -> None:
    """The cached table is gone: free its partitions on the workers."""
    owner = backend()
    if owner is not None and owner._cached is held:
        owner._source = owner._cached = None
    held.release()


def _records_only(batches: Iterable[Any]) -> Iterator[Records]:
    for batch in batches:
        if not isinstance(batch, Records):
            raise InputError(f"private data must be Records batches, got {type(batch).__name__}")
        if len(batch):
            yield batch


def _check_parquet_columns(path: Path, schema: Schema, what: str) -> None:
    """The in-memory column checks, on the driver, from the Parquet footer alone."""
    import pyarrow.dataset as ds

    try:
        names: Sequence[str] = ds.dataset(path, format="parquet").schema.names
    except (OSError, ValueError) as exc:
        raise InputError(f"{what} {path} could not be read: {reader_error(exc)}") from None
    check_columns([n for n in names if not n.startswith("__index_level_")], schema, what)


__all__ = ["DaskBackend", "DaskPrivate", "fit_parquet"]
