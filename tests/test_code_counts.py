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
