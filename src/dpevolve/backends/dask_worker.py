"""What a Dask worker runs for :class:`~dpevolve.backends.dask.DaskBackend`.

Functions here are shipped to the workers by name: they vote on or count the partitions
a worker holds, add partial histograms and counts, and validate and encode the
partitions it reads.
Nothing here adds noise; the release adds it once, on the driver, to the sum.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dpevolve.backends.base import Backend, CountQuery, Distance, Vote
from dpevolve.backends.code_counts import CodesPlan, count_codes
from dpevolve.backends.local import LocalBackend, stream_counts
from dpevolve.data.encoding import Records
from dpevolve.data.schema import Schema
from dpevolve.data.streaming import (
    BatchTally,
    encode_batch,
    encode_clean,
)
from dpevolve.errors import InputError

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "CodedQuery",
    "count_cells",
    "encode_cells",
    "load_partition",
    "partial_count",
    "partial_vote",
    "records_of",
    "sum_partials",
    "tally_of",
    "worker_kernel",
]


# ----------------------------------------------------------------- on the workers
def worker_kernel(inner: Backend | str) -> Backend:
    """The backend a worker votes with (resolved there: a compiled kernel may not pickle)."""
    if not isinstance(inner, str):
        return inner
    key = (inner, worker_threads())
    if key not in _KERNELS:
        _KERNELS[key] = _resolve_kernel(*key)
    return _KERNELS[key]


# One backend per kernel name and thread count in a process: its fallback warnings are
# said once, and it is not rebuilt for every partition of every round.
_KERNELS: dict[tuple[str, int | None], Backend] = {}


def _resolve_kernel(inner: str, threads: int | None) -> Backend:
    if inner in ("fused", "auto"):
        try:
            from dpevolve.backends.fused import FusedBackend, fused_available

            if fused_available():
                # As many numba threads as the worker has task threads: numba's default
                # (every core) would oversubscribe a machine running several workers.
                return FusedBackend(threads=threads)
        except ImportError:
            pass
        if inner == "fused":
            raise InputError("the fused kernel is not available on this worker (install numba)")
    return LocalBackend()


def worker_threads() -> int | None:
    try:
        from distributed import get_worker

        return int(get_worker().state.nthreads)
    except (ImportError, ValueError, AttributeError):
        return None  # not on a worker (the driver checking availability)


def partial_vote(
    part: Records, payload: tuple[Records, Distance, Vote], inner: Backend | str
) -> np.ndarray:
    population, distance, vote = payload
    return worker_kernel(inner).vote(part, population, distance, vote)


def partial_count(part: Records, query: CountQuery) -> np.ndarray:
    """Exact counts of one partition (int64), slice by slice as on one machine."""
    return stream_counts(part, query)


class CodedQuery(Protocol):
    """A count query whose records a backend may keep as cell codes (the engine's
    :class:`~dpevolve.engine.measure.MarginalCounts`)."""

    discretiser: Any

    def cell_codes(self, records: Records) -> np.ndarray: ...

    def on_codes(self) -> Any: ...


def encode_cells(part: Records, query: CodedQuery) -> np.ndarray:
    """One partition's cell codes, kept on the worker for every later pass."""
    return query.cell_codes(part)


def count_cells(plan: CodesPlan, *cells: np.ndarray) -> np.ndarray:
    """Exact counts (int64) of the kept codes of every partition given (one task per
    worker and pass: all its partitions and all the pass's cliques)."""
    total = np.zeros(plan.size, dtype=np.int64)
    for codes in cells:
        total += count_codes(plan, codes)
    return total


def sum_partials(*partials: np.ndarray) -> np.ndarray:
    """The sum of partial histograms or counts, in the order given (exact: see dask.py);
    counts stay int64."""
    total = np.array(partials[0], dtype=np.result_type(*partials))
    for partial in partials[1:]:
        total += partial
    return total


def load_partition(
    frame: pd.DataFrame, schema: Schema, on_invalid: str, what: str
) -> tuple[Records, BatchTally]:
    import pyarrow as pa

    # Dask hands over Arrow-backed columns: the clean-batch path skips Python strings.
    records = encode_clean(pa.Table.from_pandas(frame, preserve_index=False), schema)
    if records is not None:
        return records, BatchTally(len(records), len(records))
    return encode_batch(frame, schema, on_invalid, what)  # type: ignore[arg-type]


def records_of(loaded: tuple[Records, BatchTally]) -> Records:
    return loaded[0]


def tally_of(loaded: tuple[Records, BatchTally]) -> BatchTally:
    return loaded[1]
