from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpevolve.errors import InputError
from dpevolve.pe.votes import HardVote, SoftVote, make_vote, noise_ratio

distances = arrays(
    np.float64,
    st.tuples(st.integers(1, 8), st.integers(1, 9)),
    elements=st.floats(0, 50, allow_nan=False),
)


@settings(max_examples=100, deadline=None)
@given(distances, st.floats(1e-3, 10))
def test_every_vote_row_sums_to_one(d: np.ndarray, tau: float) -> None:
    for vote in (HardVote(), SoftVote(tau)):
        rows = vote.row_votes(d)
        assert np.all(rows >= 0)
        assert np.allclose(rows.sum(axis=1), 1.0)
        assert np.allclose(vote.histogram(d), rows.sum(axis=0))


def test_hard_vote_ties_go_to_the_lowest_index() -> None:
    votes = HardVote().row_votes(np.array([[0.3, 0.1, 0.1]]))
    assert votes.tolist() == [[0.0, 1.0, 0.0]]


def test_soft_vote_is_stable_for_tiny_temperatures() -> None:
    rows = SoftVote(1e-6).row_votes(np.array([[10.0, 10.5, 11.0]]))
    assert np.allclose(rows, [[1.0, 0.0, 0.0]])


def test_sensitivity_bounds() -> None:
    soft = SoftVote(0.03)
    r = 7 / 365
    assert math.isclose(soft.l1_bound(r), 2 * math.tanh(r / 0.06))
    assert math.isclose(soft.l2_sensitivity(r), math.sqrt(2) * math.tanh(r / 0.06))
    assert math.isclose(noise_ratio(r, 0.03), 0.3092, abs_tol=5e-5)
    assert HardVote().l2_sensitivity(r) == math.sqrt(2)
    assert HardVote().l2_sensitivity(0.0) == 0.0


def test_bad_votes() -> None:
    with pytest.raises(InputError, match="temperature"):
        make_vote("soft")
    with pytest.raises(InputError, match="temperature"):
        SoftVote(0.0)
    with pytest.raises(InputError, match="unknown vote"):
        make_vote("median")
