"""Private partitions held by a Dask cluster, and the map-reduce over them.

:class:`DaskPrivate` is what :class:`~dpevolve.backends.dask.DaskBackend` ships the
private records into: futures of encoded partitions in worker memory and, for the
adaptive engine's counts, the partitions' cell codes. :func:`map_reduce` and
:func:`count_cells_by_worker` run a task on them and sum the partial vectors on the
workers (:func:`tree_sum`): only one vector reaches the driver, never a row.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import numpy as np

from dpevolve.backends.base import CountQuery
from dpevolve.backends.dask_worker import CodedQuery, count_cells, encode_cells, sum_partials
from dpevolve.data.encoding import Records
from dpevolve.data.schema import ValidationReport
from dpevolve.errors import InputError

if TYPE_CHECKING:
    from distributed import Client


@dataclass
class DaskPrivate:
    """Private records held by a Dask cluster, partition by partition.

    ``parts`` are futures of :class:`Records` kept in worker memory (``persisted``) or
    delayed tasks that read and encode a partition again each round (not persisted).
    Iterating gathers the partitions to the driver one at a time (for checks; voting
    never does). Calling it returns itself, so it can be given wherever a callable
    returning the private data is accepted (``Evolution.run``, ``Synthesizer``).

    Attributes
    ----------
    rows : int
        Valid private rows held (private; the run's public ``n`` is ``report.rows_in``).
    report : ValidationReport or None
        Validation over all partitions, when the workers validated them.
    """

    parts: list[Any]
    rows: int
    client: Client = field(repr=False)
    report: ValidationReport | None = None
    persisted: bool = True
    #: The partitions' cell codes under one discretiser, kept on the workers and grouped
    #: by the worker that holds them: ``(discretiser, {worker: [futures]})``.
    cells: tuple[Any, dict[str, list[Any]]] | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return self.rows

    @property
    def n(self) -> int:
        """The row count, invalid rows included (public under replace-one adjacency)."""
        return self.rows if self.report is None else self.report.rows_in

    def batches(self) -> DaskPrivate:
        """What the :class:`DaskBackend` votes over: the partitions on the workers."""
        return self

    def __call__(self) -> DaskPrivate:
        return self

    def __iter__(self) -> Iterator[Records]:
        for part in self.parts:
            if self.persisted:
                yield part.result()
            else:
                yield self.client.compute(part).result()

    def cell_codes(self, query: CodedQuery) -> dict[str, list[Any]] | None:
        """The partitions' cell codes under ``query``'s discretiser, by worker.

        Encoded on the workers on the first pass with a discretiser and kept there for
        every later pass with the same one (a record's codes do not depend on the
        cliques; one or two bytes a cell, against 4 or 8 for the records): a pass then
        only counts. ``None`` when the partitions are not persisted (read anew each pass).
        """
        if not self.persisted:
            return None
        if self.cells is not None and self.cells[0] is query.discretiser:
            return self.cells[1]
        self._drop_cells()
        from distributed import wait

        client = self.client
        [shared] = client.scatter([query], hash=False, broadcast=True)
        futures = [client.submit(encode_cells, part, shared, pure=False) for part in self.parts]
        wait(futures)
        for future in futures:
            if future.status == "error":
                future.result()  # raises the worker's error here
        where = client.who_has(futures)
        groups: dict[str, list[Any]] = {}
        for future in futures:
            owners = sorted(where.get(future.key, ()))
            groups.setdefault(owners[0] if owners else "", []).append(future)
        self.cells = (query.discretiser, groups)
        return groups

    def _drop_cells(self) -> None:
        if self.cells is not None:
            for group in self.cells[1].values():
                for future in group:
                    future.release()
        self.cells = None

    def release(self) -> None:
        """Drop the partitions (and their cell codes) from worker memory."""
        self._drop_cells()
        if self.persisted:
            for part in self.parts:
                part.release()
        self.parts = []


def map_reduce(held: DaskPrivate, task: Any, payload: Any, *args: Any) -> np.ndarray:
    """``task(part, payload, *args)`` on every partition, summed on the workers."""
    client = held.client
    # One copy of the round's small objects per worker, not one per partition.
    [shared] = client.scatter([payload], hash=False, broadcast=True)
    if held.persisted:
        futures = [client.submit(task, part, shared, *args, pure=False) for part in held.parts]
    else:
        import dask

        futures = client.compute([dask.delayed(task)(part, shared, *args) for part in held.parts])
    return np.asarray(client.gather(tree_sum(client, futures)))


def coded(query: CountQuery) -> TypeGuard[CodedQuery]:
    """Whether to count ``query`` from kept cell codes (:class:`CodedQuery`): not for a
    query of fine histograms alone (the engine's first pass, whose discretiser is then
    replaced by one with bins placed from them: its codes would serve no other pass)."""
    names = ("discretiser", "cell_codes", "on_codes")
    return all(hasattr(query, name) for name in names) and bool(getattr(query, "cliques", True))


def count_cells_by_worker(client: Client, cells: dict[str, list[Any]], plan: Any) -> np.ndarray:
    """One task per worker counts all its partitions' kept codes; the sums meet in a tree.

    Each pass ships ``plan`` (the cliques' columns and shapes, a few hundred bytes) in
    as many tasks as there are workers, whatever the number of partitions.
    """
    futures = [
        client.submit(
            count_cells,
            plan,
            *group,
            workers=[worker] if worker else None,
            allow_other_workers=True,
            pure=False,
        )
        for worker, group in sorted(cells.items())
    ]
    return np.asarray(client.gather(tree_sum(client, futures)))


def tree_sum(client: Client, futures: list[Any], fan_in: int = 8) -> Any:
    """Sum the partial histograms on the workers, ``fan_in`` at a time (a tree).

    Sums are exact (integer counts or whole grid units), so the tree's shape changes no
    bit; partition order is kept anyway.
    """
    if not futures:
        raise InputError("the private data has no partitions to vote on")
    while len(futures) > 1:
        futures = [
            client.submit(sum_partials, *futures[k : k + fan_in], pure=False)
            for k in range(0, len(futures), fan_in)
        ]
    return futures[0]


__all__ = ["DaskPrivate", "coded", "count_cells_by_worker", "map_reduce", "tree_sum"]
