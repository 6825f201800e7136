"""The label tree's quantile groups (:func:`dpevolve.engine.tree.joined`) under the
coupled audit.

Whole engine runs with the label tree made to run (``tree_label_columns`` 3, two
groups of four bins) and the relations phase off: every tree pick and release is paid
for by its ledger event, and the groups each released triple cuts its numerics into
are a function of the released 1-ways alone. A mutant that cuts them at the exact
1-way counts instead is caught (``test_mutants.py``; the tables of
``test_relations_exact``: the moving record takes x's median bin edge across the
middle of its mass).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpevolve.engine import loop
from dpevolve.engine.measure import release
from dpevolve.engine.tree import tree_picks

from .test_relations_exact import CUT_SPEC, cut_audit, cut_fit

TREE_SPEC = dataclasses.replace(
    CUT_SPEC, relation_share=0.0, tree_label_columns=3, tree_label_groups=2
)


def tree_audit() -> list[str]:
    return cut_audit(TREE_SPEC)


def test_the_label_tree_runs_on_quantile_groups() -> None:
    result = cut_fit(TREE_SPEC)
    tree = [h for h in result.history if h.get("stage") == "tree"]
    assert len(tree) == 1 and tree[0]["clique"] == ("x", "z", "y")
    assert tree[0]["groups"] == [2, 2, None]


def test_every_label_tree_release_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert tree_audit() == []


def exact_tree_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    """The mutant (``test_mutants.py``, caught by :func:`tree_audit`, and by
    ``test_tree_coarse_exact.coarse_audit`` where it cuts the coarse tree pairs): the
    groups cut at the exact 1-way counts (never released)."""
    exact: dict[tuple[str, ...], np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        if len(clique) == 1:
            exact[tuple(clique)] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    def leaked(domain, label, numeric, groups, wide, masses=None, coarse=0, most=0.0):
        masses = {a: exact[(a,)] for a in numeric}
        return tree_picks(domain, label, numeric, groups, wide, masses, coarse, most)

    monkeypatch.setattr(loop, "release", spied)
    monkeypatch.setattr(loop, "tree_picks", leaked)
