"""The engine's marginal counts as ``GROUP BY GROUPING SETS`` queries (docs/scale.md).

One query counts up to :data:`SETS_PER_QUERY` cliques and fine histograms in one scan
of a relation of cell codes; only the cells' counts come back. The SQL is the same in
DuckDB (:mod:`dpevolve.backends.duckdb`, over a table of codes written once) and in
PostgreSQL (:mod:`dpevolve.backends.postgres`, over the codes computed in the server by
:mod:`dpevolve.backends.sql_codes`); this module writes the queries and stacks their
answers into the vector the local backend adds up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["SETS_PER_QUERY", "CodedCounts", "Part", "grouped_sql", "parts_of", "stacked_counts"]

#: Cliques (grouping sets) per query: one scan of the codes counts them all.
SETS_PER_QUERY = 32

#: A count of a query: its index among the query's counts, its attributes (a clique's
#: columns, or ``fine:NAME`` for a fine histogram) and its shape.
Part = tuple[int, tuple[str, ...], tuple[int, ...]]

#: A query's answer: each selected code column's values (``None``: not grouped on),
#: then the counts, as numpy arrays.
Answer = tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray], np.ndarray]


@runtime_checkable
class CodedCounts(Protocol):
    """A count query over the cell codes of a discretiser (the engine's
    :class:`~dpevolve.engine.measure.MarginalCounts`): cliques of coarse codes, then
    fine histograms, stacked at ``offsets``."""

    discretiser: Any
    cliques: list[tuple[str, ...]]
    fine: list[str]

    @property
    def offsets(self) -> np.ndarray:
        """Start of every clique's and fine histogram's counts in the stacked vector."""
        ...


def parts_of(query: CodedCounts) -> list[Part]:
    """Every clique and fine histogram of ``query`` as a :data:`Part`."""
    domain = query.discretiser.domain
    parts: list[Part] = [(k, tuple(c), domain.shape(c)) for k, c in enumerate(query.cliques)]
    first = len(query.cliques)
    parts += [
        (first + j, (f"fine:{f}",), (query.discretiser.fine[f].size,))
        for j, f in enumerate(query.fine)
    ]
    return parts


def grouped_sql(relation: str, parts: Sequence[Part], columns: Mapping[str, str]) -> str:
    """One query counting every part of ``parts`` over ``relation`` (whose code columns
    are ``columns[attribute]``): the used code columns, then ``n``, one row per cell."""
    sets = list(dict.fromkeys(frozenset(columns[a] for a in p[1]) for p in parts))
    used = sorted({c for s in sets for c in s})
    grouping = ", ".join("(" + ", ".join(sorted(s)) + ")" for s in sets)
    return (
        f"SELECT {', '.join(used)}, count(*) AS n FROM {relation} AS codes "
        f"GROUP BY GROUPING SETS ({grouping})"
    )


def used_columns(parts: Sequence[Part], columns: Mapping[str, str]) -> list[str]:
    """The code columns :func:`grouped_sql` selects, in its order."""
    return sorted({columns[a] for p in parts for a in p[1]})


def stacked_counts(
    query: CodedCounts,
    columns: Mapping[str, str],
    run: Callable[[Sequence[Part]], Answer],
) -> np.ndarray:
    """The stacked counts of ``query``: ``run`` answers one :func:`grouped_sql` query of
    at most :data:`SETS_PER_QUERY` parts as ``(present, values, n)``: each used column's
    mask of rows grouped on it, its values (0 where not grouped), the counts."""
    offsets = np.asarray(query.offsets, dtype=np.int64)
    out = np.zeros(int(offsets[-1]), dtype=np.int64)
    parts = parts_of(query)
    for start in range(0, len(parts), SETS_PER_QUERY):
        chunk = parts[start : start + SETS_PER_QUERY]
        present, values, n = run(chunk)
        used = list(present)
        for k, attrs, shape in chunk:
            cols = [columns[a] for a in attrs]
            # The rows of this grouping set: its columns present, every other one null.
            mask = np.ones(len(n), dtype=bool)
            for c in used:
                mask &= present[c] if c in cols else ~present[c]
            # One row per cell of a grouping set: each flat index comes once.
            cells = np.ravel_multi_index(tuple(values[c][mask] for c in cols), shape)
            out[offsets[k] + cells] += n[mask]
    return out


def answer_of_rows(rows: Sequence[Sequence[Any]], used: Sequence[str]) -> Answer:
    """A :func:`grouped_sql` query's rows (tuples, NULL as ``None``) as an answer."""
    present = {
        c: np.array([r[i] is not None for r in rows], dtype=bool) for i, c in enumerate(used)
    }
    values = {
        c: np.array([0 if r[i] is None else int(r[i]) for r in rows], dtype=np.int64)
        for i, c in enumerate(used)
    }
    n = np.array([int(r[len(used)]) for r in rows], dtype=np.int64)
    return present, values, n
