"""The tree phase's coarse candidates (:func:`dpevolve.engine.tree.coarse_pairs`) under
the coupled audit.

Whole engine runs with the tree's pairs of a number and the label also scored on two
quantile groups of four bins (``tree_groups`` 2), the relations phase off and a budget
small enough for the fine pairs' noise to outweigh their 25 rows, on the neighbours of
``test_relations_exact`` (the moving record takes x's median bin edge across the middle
of its mass): every tree pick and release is paid for by its ledger event, and the
groups a coarse candidate cuts its numerics into are a function of the released 1-ways
alone. A mutant that cuts them at the exact 1-way counts (``test_label_tree_exact``'s,
which hands the tree's candidates the exact counts) is caught (``test_mutants.py``).
"""

from __future__ import annotations

import dataclasses

from dpevolve.privacy import Budget

from .test_relations_exact import CUT_SPEC, cut_audit, cut_fit

COARSE_SPEC = dataclasses.replace(CUT_SPEC, relation_share=0.0, tree_groups=2)
BUDGET = Budget(rho=0.2)


def coarse_audit() -> list[str]:
    return cut_audit(COARSE_SPEC, BUDGET)


def test_the_tree_can_pick_a_coarse_pair_on_the_audited_tables() -> None:
    """Some seeded run draws a coarse pair, released on its groups (the audit then
    covers that path, not only the fine one)."""
    seen = set()
    for seed in range(6):
        result = cut_fit(COARSE_SPEC, BUDGET, seed)
        tree = [h for h in result.history if h.get("stage") == "tree"]
        assert len(tree) == 2
        seen |= {tuple(h["groups"]) if h["groups"] else None for h in tree}
    assert any(g is not None and 2 in g for g in seen)


def test_every_coarse_tree_release_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert coarse_audit() == []
