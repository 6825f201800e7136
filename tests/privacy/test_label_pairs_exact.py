"""The label pairs (:mod:`dpevolve.engine.label_pairs`) under the coupled audit.

Whole engine runs on the neighbours of ``test_relations_exact`` (the moving record
takes x's median bin edge across the middle of its mass) with no tree phase, so that
both numbers are left apart from the label and the phase measures each with it on two
quantile groups of four bins: every label pair is paid for by its ledger event, and the
columns measured and their groups are functions of the released values alone. A mutant
that cuts the groups at the exact 1-way counts is caught (``test_mutants.py``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpevolve.engine import label_pairs, loop
from dpevolve.engine.measure import release

from .test_relations_exact import CUT_SPEC, cut_audit, cut_fit

LABEL_SPEC = dataclasses.replace(CUT_SPEC, relation_share=0.0, tree_share=0.0, label_groups=2)


def label_audit() -> list[str]:
    return cut_audit(LABEL_SPEC)


def test_the_phase_measures_both_numbers_with_the_label() -> None:
    result = cut_fit(LABEL_SPEC)
    paired = [h for h in result.history if h.get("stage") == "label"]
    assert [h["clique"] for h in paired] == [("x", "y"), ("z", "y")]
    assert all(h["groups"] == [2, None] for h in paired)
    events = result.ledger.to_dict()["events"]
    for h in paired:
        assert [e["kind"] for e in events if e.get("round") == h["round"]] == ["gaussian"]


def test_every_label_pair_is_paid_for_and_the_rest_is_post_processing() -> None:
    assert label_audit() == []


def exact_label_groups(mp: pytest.MonkeyPatch) -> None:
    """The mutant (``test_mutants.py``, caught by :func:`label_audit`): the label
    pairs' groups cut at the exact 1-way counts (never released)."""
    exact: dict[tuple[str, ...], np.ndarray] = {}

    def spied(counts, clique, event, noise, *, query=None):
        if len(clique) == 1:
            exact[tuple(clique)] = np.asarray(counts, dtype=np.float64)
        return release(counts, clique, event, noise, query=query)

    original = label_pairs.label_queries

    def leaked(domain, label, columns, masses, bins, groups):
        return original(domain, label, columns, {a: exact[(a,)] for a in masses}, bins, groups)

    mp.setattr(loop, "release", spied)
    mp.setattr(label_pairs, "label_queries", leaked)
