"""The PE stage's cells (engine/nearest.py): the vote's own assignment, by any path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.backends.canonical import hard_nearest
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import nearest as module
from dpevolve.engine.nearest import CandidateTree, hard_votes, nearest
from dpevolve.pe.distance import TabPEEmbedding, make_distance
from dpevolve.pe.votes import HardVote


def _schema(numeric: int, cards: list[int], nullable: bool = False) -> Schema:
    return Schema(
        tuple(NumericColumn(f"x{i}", 0.0, 1.0, nullable=nullable) for i in range(numeric))
        + tuple(
            CategoricalColumn(f"c{i}", tuple(f"v{j}" for j in range(c)))
            for i, c in enumerate(cards)
        )
    )


def _records(
    rng: np.random.Generator, n: int, numeric: int, cards: list[int], grid: int
) -> Records:
    """Rows on a ``grid`` of values per numeric column (0: continuous): a coarse grid
    makes duplicate candidates and rows equally far from several candidates."""
    values = rng.random((n, numeric))
    if grid:
        values = np.round(values * grid) / grid
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1) if cards else None
    return Records(values, np.zeros((n, 0), np.int32) if codes is None else codes.astype(np.int32))


@settings(max_examples=60, deadline=None)
@given(
    numeric=st.integers(0, 3),
    cards=st.lists(st.integers(2, 5), max_size=2),
    grid=st.sampled_from([0, 1, 2, 4]),
    m=st.integers(1, 40),
    seed=st.integers(0, 2**31 - 1),
    block=st.sampled_from([7, module.TREE_BLOCK]),
)
def test_the_cells_are_the_votes_argmin_bit_for_bit(
    numeric: int, cards: list[int], grid: int, m: int, seed: int, block: int
) -> None:
    if numeric == 0 and not cards:
        cards = [3]
    rng = np.random.default_rng(seed)
    schema = _schema(numeric, cards)
    distance = make_distance("tabpe", schema)
    rows = _records(rng, 300, numeric, cards, grid)
    candidates = _records(rng, m, numeric, cards, grid)
    want = hard_nearest(distance.pairwise(rows, candidates))
    with pytest.MonkeyPatch.context() as patch:  # many blocks on the tree path, or one
        patch.setattr(module, "TREE_BLOCK", block)
        assert (nearest(rows, candidates, distance) == want).all()
    # the private histogram: what the local reference backend sums for the hard vote
    batches = [rows.take(slice(0, 120)), rows.take(slice(120, 300))]
    local = LocalBackend().vote(batches, candidates, distance, HardVote())
    assert (hard_votes(batches, candidates, distance) == local).all()
    assert (hard_votes(rows, candidates, distance) == local).all()


def test_duplicates_and_ties_go_to_the_lowest_index() -> None:
    distance = make_distance("tabpe", _schema(1, []))
    candidates = Records(np.array([[0.2], [0.6], [0.2], [0.4], [0.6]]), np.zeros((5, 0), np.int32))
    rows = Records(np.array([[0.2], [0.5], [0.3], [0.6], [1.0]]), np.zeros((5, 0), np.int32))
    # 0.5 is as far from 0.4 as from 0.6 in exact arithmetic; the float sums decide,
    # as they decide the vote
    assert list(nearest(rows, candidates, distance)) == list(
        hard_nearest(distance.pairwise(rows, candidates))
    )
    assert list(nearest(rows, candidates, distance))[::3] == [0, 1]


def test_unsettled_rows_take_the_block_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A category no candidate holds: every candidate equally far, so the tree cannot
    settle the row and the block decides (the lowest index)."""
    distance = make_distance("tabpe", _schema(0, [6]))
    assert isinstance(distance, TabPEEmbedding)
    candidates = Records(np.zeros((5, 0)), np.array([[4], [3], [2], [1], [0]], dtype=np.int32))
    rows = Records(np.zeros((5, 0)), np.array([[5], [0], [5], [2], [5]], dtype=np.int32))
    calls: list[int] = []
    block = module._block_nearest

    def spy(r: Records, c: Records, d: TabPEEmbedding) -> np.ndarray:
        calls.append(len(r))
        return block(r, c, d)

    monkeypatch.setattr(module, "_block_nearest", spy)
    got = CandidateTree(candidates, distance).nearest(rows)
    assert list(got) == [0, 4, 0, 2, 0]
    assert list(got) == list(hard_nearest(distance.pairwise(rows, candidates)))
    assert calls == [3]  # the rows that match a candidate settle; the 3 tied ones do not


def test_the_missing_aware_distance_takes_the_block_path() -> None:
    rng = np.random.default_rng(3)
    distance = make_distance("tabpe", _schema(2, [3], nullable=True))
    assert type(distance) is not TabPEEmbedding
    rows = _records(rng, 200, 2, [3], 0)
    rows = Records(np.where(rng.random(rows.numeric.shape) < 0.2, np.nan, rows.numeric), rows.codes)
    candidates = rows.take(slice(0, 25))
    want = hard_nearest(distance.pairwise(rows, candidates))
    assert (nearest(rows, candidates, distance) == want).all()
