"""Belief propagation and out-of-tree marginals against brute-force enumeration."""

from __future__ import annotations

import string

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.estimate import junction_tree
from dpevolve.estimate.factor import broadcast_shape
from dpevolve.estimate.inference import calibrate, clique_marginal
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
    probs = [np.exp(b) for b in calibrate(tree, potentials)]
    for clique, p in zip(tree.cliques, probs, strict=True):
        np.testing.assert_allclose(p, _marg(domain, joint, clique), atol=1e-12)
    query = domain.canonical(data.draw(subsets))
    np.testing.assert_allclose(
        clique_marginal(tree, probs, query), _marg(domain, joint, query), atol=1e-12
    )


def test_log_space_survives_extreme_potentials() -> None:
    domain = Domain(("a", "b"), (2, 3))
    tree = junction_tree(domain, [("a", "b")])
    pot = np.array([[0.0, -2000.0, 5000.0], [1.0, 4999.0, -1e4]])
    (belief,) = calibrate(tree, [pot])
    probs = np.exp(belief)
    assert np.isclose(probs.sum(), 1.0)
    np.testing.assert_allclose(probs[0, 2] / probs[1, 1], np.e, rtol=1e-9)
