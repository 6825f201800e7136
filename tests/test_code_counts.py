"""The compiled count of kept cell codes equals numpy's (dpevolve.backends.code_counts)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.backends.code_counts import count_codes, kernel_layout
from dpevolve.engine.measure import CodeCounts


@st.composite
def passes(draw: st.DrawFn) -> tuple[CodeCounts, np.ndarray]:
    """Kept codes of a few columns (some wider than a byte) and a pass over them."""
    sizes = draw(st.lists(st.integers(1, 300), min_size=1, max_size=6))
    rows = draw(st.integers(0, 400))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dtype = np.min_scalar_type(max(sizes) - 1)
    codes = np.asfortranarray(
        np.stack([rng.integers(0, s, rows) for s in sizes], axis=1).astype(dtype)
    )
    columns = st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=3, unique=True)
    where = draw(st.lists(columns, max_size=6))
    fine = draw(st.lists(st.integers(0, len(sizes) - 1), max_size=3))
    shapes = [tuple(sizes[c] for c in cols) for cols in where]
    cells = [int(np.prod(s)) for s in shapes] + [sizes[c] for c in fine]
    offsets = np.concatenate([[0], np.cumsum(cells, dtype=np.int64)]).astype(int)
    plan = CodeCounts(
        tuple(tuple(w) for w in where), tuple(shapes), tuple(fine), offsets,
        draw(st.sampled_from([1, 7, 8192])),
    )  # fmt: skip
    return plan, codes


@settings(max_examples=150, deadline=None)
@given(passes())
def test_compiled_counts_equal_numpy(case: tuple[CodeCounts, np.ndarray]) -> None:
    plan, codes = case
    expected = plan.counts(codes)
    got = count_codes(plan, codes)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


def test_layout_strides_are_ravel_multi_index() -> None:
    plan = CodeCounts(((0, 1, 2),), ((3, 4, 5),), (1,), np.array([0, 60, 64]), 8192)
    columns, strides, starts = kernel_layout(plan)
    np.testing.assert_array_equal(strides[0], [20, 5, 1])
    np.testing.assert_array_equal(columns[1], [1, 0, 0])
    np.testing.assert_array_equal(strides[1], [1, 0, 0])
    np.testing.assert_array_equal(starts, [0, 60, 64])
    assert np.ravel_multi_index((2, 3, 4), (3, 4, 5)) == 2 * 20 + 3 * 5 + 4


def test_a_code_beyond_its_cells_is_refused() -> None:
    """Compiled code does not check bounds: a code beyond the clique's cells raises
    rather than counting into the next clique."""
    pytest.importorskip("numba")
    plan = CodeCounts(((0,), (1,)), ((2,), (2,)), (), np.array([0, 2, 4]), 8192)
    codes = np.asfortranarray(np.array([[0, 1], [2, 0]], dtype=np.uint8))
    with pytest.raises(IndexError):
        count_codes(plan, codes)


def _reference(plan: CodeCounts, codes: np.ndarray) -> np.ndarray:
    """Each clique's counts by ``np.ravel_multi_index``, each fine column's by bincount."""
    parts = [
        np.bincount(
            np.ravel_multi_index(tuple(codes[:, c].astype(np.int64) for c in cols), shape),
            minlength=int(np.prod(shape)),
        )
        for cols, shape in zip(plan.where, plan.shapes, strict=True)
    ]
    parts += [
        np.bincount(codes[:, c].astype(np.int64), minlength=int(b - a))
        for c, a, b in zip(
            plan.fine, plan.offsets[len(plan.where) : -1], plan.offsets[len(plan.where) + 1 :],
            strict=True,
        )
    ]  # fmt: skip
    return np.concatenate([np.zeros(0, dtype=np.int64), *parts])


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(1, 9), min_size=1, max_size=5),
    st.integers(0, 120),
    st.integers(0, 2**32 - 1),
    st.data(),
)
def test_numpy_counts_equal_ravel_multi_index(
    sizes: list[int], rows: int, seed: int, data: st.DataObject
) -> None:
    rng = np.random.default_rng(seed)
    codes = np.asfortranarray(np.stack([rng.integers(0, s, rows) for s in sizes], axis=1))
    columns = st.lists(st.integers(0, len(sizes) - 1), min_size=1, max_size=3, unique=True)
    where = data.draw(st.lists(columns, max_size=5))
    fine = data.draw(st.lists(st.integers(0, len(sizes) - 1), max_size=2))
    shapes = [tuple(sizes[c] for c in cols) for cols in where]
    cells = [int(np.prod(s)) for s in shapes] + [sizes[c] for c in fine]
    offsets = np.concatenate([[0], np.cumsum(cells, dtype=np.int64)]).astype(int)
    plan = CodeCounts(
        tuple(tuple(w) for w in where), tuple(shapes), tuple(fine), offsets,
        data.draw(st.sampled_from([1, 7, 8192])),
    )  # fmt: skip
    np.testing.assert_array_equal(plan.counts(codes), _reference(plan, codes))
    # a row-major copy of the same codes counts the same
    np.testing.assert_array_equal(plan.counts(np.ascontiguousarray(codes)), plan.counts(codes))


@pytest.mark.parametrize("bad", [[[2, 0]], [[0, 2]], [[-1, 0]]])
def test_numpy_counts_refuse_a_code_beyond_its_cells(bad: list[list[int]]) -> None:
    """A first column's code equal to its size would land in the next row of cells, a
    last column's past the clique's end: both raise, as ``np.ravel_multi_index`` does."""
    plan = CodeCounts(((0, 1),), ((2, 2),), (), np.array([0, 4]), 8192)
    with pytest.raises(ValueError):
        plan.counts(np.asfortranarray(np.array(bad, dtype=np.int64)))
