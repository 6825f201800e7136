"""Belief propagation (the flat tree) and out-of-tree marginals against brute-force
enumeration."""

from __future__ import annotations

import string

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.estimate import junction_tree
from dpevolve.estimate.factor import broadcast_shape
from dpevolve.estimate.flat import FlatTree
from dpevolve.estimate.inference import clique_marginal, conditionals
from dpevolve.measurements import Domain


def _brute(domain: Domain, tree, potentials) -> np.ndarray:
    """The normalised joint over all attributes, built from the full table."""
    log_joint = np.zeros(domain.sizes)
    for clique, pot in zip(tree.cliques, potentials, strict=True):
        log_joint = log_joint + broadcast_shape(pot, clique, domain.names)
    joint = np.exp(log_joint - log_joint.max())
    return joint / joint.sum()


def _marg(domain: Domain, joint: np.ndarray, clique) -> np.ndarray:
    axes = tuple(i for i, n in enumerate(domain.names) if n not in clique)
    return joint.sum(axis=axes)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_calibrated_beliefs_and_any_marginal_match_enumeration(data) -> None:
    d = data.draw(st.integers(2, 6))
    names = tuple(string.ascii_lowercase[:d])
    domain = Domain(names, tuple(data.draw(st.lists(st.integers(1, 3), min_size=d, max_size=d))))
    subsets = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
    cliques = [domain.canonical(c) for c in data.draw(st.lists(subsets, max_size=6))]
    tree = junction_tree(domain, cliques)
    seed = data.draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    potentials = [3.0 * rng.standard_normal(domain.shape(c)) for c in tree.cliques]
    joint = _brute(domain, tree, potentials)
    # 0: every clique exchanges messages by broadcasts, 512: by pair lists
    probs = FlatTree(domain, tree, data.draw(st.sampled_from([0, 4, 512]))).beliefs(potentials)
    conds = conditionals(tree, probs)
    for clique, p in zip(tree.cliques, probs, strict=True):
        np.testing.assert_allclose(p, _marg(domain, joint, clique), atol=1e-12)
    query = domain.canonical(data.draw(subsets))
    np.testing.assert_allclose(
        clique_marginal(tree, probs, conds, query), _marg(domain, joint, query), atol=1e-12
    )


@pytest.mark.parametrize("batch", [0, 512])
def test_extreme_log_potentials_stay_in_range(batch: int) -> None:
    domain = Domain(("a", "b", "c"), (2, 3, 2))
    tree = junction_tree(domain, [("a", "b"), ("b", "c")])
    ab = np.array([[0.0, -2000.0, 5000.0], [1.0, 4999.0, -1e4]])
    bc = np.array([[3000.0, 2999.0], [0.0, 0.0], [-800.0, -801.0]])
    probs = FlatTree(domain, tree, batch).beliefs(
        [ab if c == ("a", "b") else bc for c in tree.cliques]
    )
    by_clique = dict(zip(tree.cliques, probs, strict=True))
    p_ab = by_clique[("a", "b")]
    assert np.isclose(p_ab.sum(), 1.0) and np.all(np.isfinite(p_ab))
    # The weights of b: e^3001 (b=0), about 2 e^4999 (b=1), e^4200 (b=2); b = 1 with
    # a = 1 takes all the mass, c split evenly.
    expected = np.zeros((2, 3))
    expected[1, 1] = 1.0
    np.testing.assert_allclose(p_ab, expected, atol=1e-300)
    np.testing.assert_allclose(by_clique[("b", "c")], [[0, 0], [0.5, 0.5], [0, 0]], atol=1e-300)


@pytest.mark.parametrize("mass", [5e-324, 1e-310, 0.0])
def test_a_subnormal_separator_mass_leaves_every_marginal_finite(mass: float) -> None:
    """A separator value whose mass is subnormal (or 0) gives its clique's conditional 0
    where its belief is 0: the reciprocal of such a mass overflows to infinity, and times
    a belief of 0 had made NaN, and every out-of-tree marginal through it (a 20-row
    table at 10 bins)."""
    domain = Domain(("a", "b", "c"), (2, 2, 2))
    tree = junction_tree(domain, [("a", "b"), ("b", "c")])
    rest = 1.0 - mass
    beliefs = {
        ("a", "b"): np.array([[0.5 * rest, mass], [0.5 * rest, 0.0]]),
        ("b", "c"): np.array([[0.5 * rest, 0.5 * rest], [mass, 0.0]]),
    }
    probs = [beliefs[c] for c in tree.cliques]
    conds = conditionals(tree, probs)
    assert all(np.all(np.isfinite(c)) and np.all((c >= 0) & (c <= 1)) for c in conds)
    joint = clique_marginal(tree, probs, conds, ("a", "c"))
    assert np.all(np.isfinite(joint)) and joint.sum() == pytest.approx(1.0)
