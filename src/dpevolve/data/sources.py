"""The one door for private records (docs/architecture.md, "The one door").

A :class:`PrivateSource` is how private records enter a run: it validates them against
the schema when it is opened, knows the public row count ``n`` (replace-one adjacency),
and hands backends a fresh pass of encoded batches each round. Four sources exist: an
in-memory table (:class:`FrameSource`), a file read in bounded batches
(:class:`~dpevolve.data.streaming.StreamedTable`), a table validated in its database,
DuckDB or PostgreSQL (:class:`~dpevolve.data.database.DatabaseTable`), and partitions
held by a Dask cluster (:class:`~dpevolve.backends.dask.DaskPrivate`). Nothing else
reads private records.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import Schema
from dpevolve.data.validation import OnInvalid, ValidationReport


@runtime_checkable
class PrivateSource(Protocol):
    """Validated private records, encoded; ``n`` is public, ``report`` is not."""

    @property
    def n(self) -> int:
        """The row count (public under replace-one adjacency)."""
        ...

    @property
    def report(self) -> ValidationReport | None:
        """What validation changed: counts from the private data, never shared."""
        ...

    def batches(self) -> Records | Iterable[Records]:
        """One pass over the encoded records, for a backend to vote over."""
        ...


class OnePass(Iterator[Records]):
    """One pass over a source read in batches, opened on the first ``next``.

    ``table`` is the source, so a backend can recognise it (and, distributed, ship it to
    its workers once instead of once per round).
    """

    def __init__(self, table: Any, records: Callable[[], Iterator[Records]]) -> None:
        self.table = table
        self._open = records
        self._records: Iterator[Records] | None = None

    def __iter__(self) -> OnePass:
        return self

    def __next__(self) -> Records:
        if self._records is None:
            self._records = self._open()
        return next(self._records)


class FrameSource:
    """A private table in memory, validated and encoded once.

    ``batches()`` returns the same :class:`Records` every round, so a backend that
    ships data elsewhere (Dask) can recognise it and ship it once.
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        schema: Schema,
        on_invalid: OnInvalid = "error",
        what: str = "private table",
    ) -> None:
        clean, self._report = schema.validate(frame, on_invalid=on_invalid, what=what)
        self._records = encode(clean, schema)

    @property
    def n(self) -> int:
        # Every row counts, invalid ones too (they vote empty): n stays public.
        return self._report.rows_in

    @property
    def report(self) -> ValidationReport | None:
        return self._report

    def batches(self) -> Records:
        return self._records
