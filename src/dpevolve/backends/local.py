"""Voting and counting on this machine, chunk by chunk: memory O(chunk x population)
for a vote, O(chunk + cells) for counts, never n x m."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dpevolve.backends.base import CountQuery, Distance, PrivateData, Vote
from dpevolve.backends.canonical import soft_histogram
from dpevolve.data.encoding import Records


def chunks(private: PrivateData, rows: int) -> Iterator[Records]:
    """Private records in blocks of at most ``rows`` (a stream of batches is re-chunked)."""
    batches = [private] if isinstance(private, Records) else private
    for batch in batches:
        for start in range(0, len(batch), rows):
            yield batch.take(slice(start, start + rows))


class LocalBackend:
    """The reference backend: ``distance.pairwise`` then the vote's histogram per chunk.

    ``chunk_cells`` caps the size of one distance block (rows x candidates), so the
    private chunk shrinks as the population grows.
    """

    def __init__(self, chunk_cells: int = 2_000_000) -> None:
        self.chunk_cells = int(chunk_cells)

    def vote(
        self, private: PrivateData, population: Records, distance: Distance, vote: Vote
    ) -> np.ndarray:
        rows = max(1, self.chunk_cells // max(1, len(population)))
        histogram = np.zeros(len(population), dtype=np.float64)
        for chunk in chunks(private, rows):
            histogram += chunk_histogram(vote, distance.pairwise(chunk, population))
        return histogram

    def count(self, private: PrivateData, query: CountQuery) -> np.ndarray:
        return stream_counts(private, query)


def stream_counts(private: PrivateData, query: CountQuery) -> np.ndarray:
    """``query``'s counts over ``private``, slice by slice (at most ``query.rows`` rows
    at once): memory is the count vector plus one slice's work, never rows x cells."""
    total = np.zeros(query.size, dtype=np.int64)
    for chunk in chunks(private, query.rows):
        total += query.counts(chunk)
    return total


def chunk_histogram(vote: Vote, distances: np.ndarray) -> np.ndarray:
    """One chunk's histogram; a soft rule by the canonical quantised arithmetic, so that
    every backend and chunking sums to the same bits (:mod:`dpevolve.backends.canonical`)."""
    rule = vote.rule()
    if rule is not None and rule.kind == "soft":
        return soft_histogram(distances, rule.temperature)
    return vote.histogram(distances)
