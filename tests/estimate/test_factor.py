"""The named-axis helpers against plain numpy on random shapes and attribute subsets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.estimate.factor import add_all_into, broadcast_shape, marginals, nesting, sum_to

NAMES = ("a", "b", "c", "d", "e")


@st.composite
def arrays_and_parts(draw: st.DrawFn):
    k = draw(st.integers(1, 5))
    attrs = NAMES[:k]
    shape = tuple(draw(st.lists(st.integers(1, 18), min_size=k, max_size=k)))
    subsets = st.lists(st.booleans(), min_size=k, max_size=k).map(
        lambda mask: tuple(a for a, m in zip(attrs, mask, strict=True) if m)
    )
    parts = draw(st.lists(subsets, min_size=1, max_size=5))
    seed = draw(st.integers(0, 2**31))
    return attrs, np.random.default_rng(seed).random(shape), parts


def _reference_sum(values, attrs, keep):
    return values.sum(axis=tuple(i for i, a in enumerate(attrs) if a not in keep))


@settings(max_examples=120, deadline=None)
@given(arrays_and_parts())
def test_sums_and_nested_marginals_match_numpy(case) -> None:
    attrs, values, parts = case
    for part in parts:
        np.testing.assert_allclose(sum_to(values, attrs, part), _reference_sum(values, attrs, part))
        kept = sum_to(values, attrs, part, keepdims=True)
        assert kept.ndim == values.ndim
    for part, got in zip(parts, marginals(values, attrs, parts), strict=True):
        np.testing.assert_allclose(got, _reference_sum(values, attrs, part))


@settings(max_examples=120, deadline=None)
@given(arrays_and_parts())
def test_nested_adds_match_broadcast_adds(case) -> None:
    attrs, values, parts = case
    rng = np.random.default_rng(0)
    items = [(p, rng.random(tuple(values.shape[attrs.index(a)] for a in p))) for p in parts]
    before = [v.copy() for _, v in items]
    expected = values.copy()
    for p, v in items:
        expected = expected + broadcast_shape(v, p, attrs)
    got = values.copy()
    add_all_into(got, attrs, items)
    np.testing.assert_allclose(got, expected)
    # The items themselves are left alone (nested ones are merged into copies).
    for (_, v), w in zip(items, before, strict=True):
        np.testing.assert_array_equal(v, w)


def test_a_part_nests_in_the_smallest_holder_listed_before_it() -> None:
    attrs = ("a", "b", "c")
    plan = dict(nesting((2, 3, 4), attrs, (("a",), ("a", "b"), ("a", "c"), ("a", "b"))))
    assert plan[1] is None and plan[2] is None
    assert plan[3] == 1  # an equal part nests in the earlier one
    assert plan[0] == 1  # (a, b) has 6 cells, (a, c) 8
