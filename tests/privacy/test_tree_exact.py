"""The tree phase's draws, exactly: every neighbour of a tiny domain, no sampling.

Each pick of the spanning-tree phase (:mod:`dpevolve.engine.tree`) scores the pairs
joining two components against the independent product of the released 1-ways (fixed
by earlier releases, so any public array will do) and draws one by the engine's
:func:`~dpevolve.engine.select.draw`. On every pair of neighbouring :data:`TINY` tables
the exact distribution of the first and of a later pick is set against the event the
phase charges (:func:`draw_violations`): a draw at a smaller scale fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.data.sources import FrameSource
from dpevolve.engine import select
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals
from dpevolve.engine.tree import Forest, independent
from dpevolve.privacy.audit import exact_loss

from .exact import TINY, draw_log_pmf, draw_violations, drawn_call, tiny_neighbours


@pytest.mark.parametrize("joined", [None, ("x", "y")])
def test_each_tree_pick_is_exactly_as_private_as_claimed(joined) -> None:
    disc = Discretiser(TINY, bins=4, fine_cells=8)
    domain = disc.domain
    pairs = [c for c in select.candidates(domain, (), 2) if len(c) == 2]
    forest = Forest(domain.names)
    if joined is not None:
        forest.join(domain.canonical(joined))
    open_ = [p for p, o in zip(pairs, forest.open_mask(pairs), strict=True) if o]
    weights = [select.weight(p, TINY.label, 2.0) for p in open_]
    event = select.selection_event(1.5, weights)
    ones = {a: np.linspace(1.0, 2.0, domain.shape((a,))[0]) for a in domain.names}
    worst = 0.0
    for a, b, on_invalid in tiny_neighbours():
        calls = []
        for frame in (a, b):
            counts = count_marginals(FrameSource(frame, TINY, on_invalid=on_invalid), disc, open_)[
                0
            ]
            values = np.array(
                [
                    select.quality(
                        counts[p],
                        independent(ones[p[0]], ones[p[1]], 4).reshape(counts[p].shape),
                        0.3,
                        w,
                    )
                    for p, w in zip(open_, weights, strict=True)
                ]
            )
            calls.append(drawn_call(values, event))
        assert draw_violations(0, calls[0], calls[1], event) == []
        loss = exact_loss(draw_log_pmf(calls[0]), draw_log_pmf(calls[1]))
        worst = max(worst, loss.loss_range)
        assert loss.rho <= event.rho + 1e-12
    assert 0.0 < worst <= event.epsilon + 1e-9
