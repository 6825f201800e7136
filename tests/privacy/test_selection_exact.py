"""The selection, exactly: every neighbour of a tiny domain, no sampling.

The exponential mechanism's output distribution is known exactly (the Gumbel noisy max
at scale ``s`` picks ``i`` with probability ``softmax(q / s)_i``), so the engine's own
counting, scoring and draw are run on every pair of neighbouring tables of a tiny
domain (every replacement of one record, boundary values and the missing category
included, and a record turned invalid under ``drop``), and the exact privacy loss of
each pair is set against the event the selection charges: every log ratio and every
loss range within ``epsilon`` (pure DP, bounded range), every Renyi divergence within
``alpha epsilon^2 / 8`` (the zCDP charged), the scale drawn at the one the ledger
records. A draw at a smaller scale, or a charge below ``epsilon^2 / 8``, fails here.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.data.sources import FrameSource
from dpevolve.engine import select
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import MARGINAL_SENSITIVITY, count_marginals
from dpevolve.engine.select import L1_SENSITIVITY
from dpevolve.privacy.audit import exact_loss

from .exact import (
    TINY,
    draw_log_pmf,
    draw_violations,
    drawn_call,
    selection_audit,
    selection_pool,
    tiny_neighbours,
)


@pytest.mark.parametrize("kind", ["fine", "coarse"])
def test_the_selection_is_exactly_as_private_as_claimed(kind) -> None:
    audit = selection_audit(kind, epsilon=2.0)
    assert audit.violations == []
    event = audit.event
    assert audit.worst_score == pytest.approx(event.sensitivity)  # the bound is attained
    assert audit.worst.epsilon <= event.epsilon + 1e-9
    assert audit.worst.loss_range <= event.epsilon + 1e-9
    assert audit.worst.rho <= event.rho + 1e-12
    # The pairs come close to the claim: a draw at half the scale would exceed it.
    assert audit.worst.loss_range > 0.6 * event.epsilon


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_a_tie_broken_both_ways_reaches_the_charge(epsilon) -> None:
    """Any two score vectors within the sensitivity are neighbours' scores as far as
    the guarantee goes: two candidates tied on ``D`` and pushed apart by the full
    sensitivity on ``D'`` have loss range ``epsilon`` and a divergence near
    ``epsilon^2 / 8``, so the draw and its charge are tight, not only sound."""
    event = select.selection_event(epsilon, [1.0, 1.0])
    tie = np.zeros(2)
    apart = np.array([1.0, -1.0]) * event.sensitivity
    d, n = (drawn_call(q, event) for q in (tie, apart))
    assert draw_violations(0, d, n, event) == []
    loss = exact_loss(draw_log_pmf(d), draw_log_pmf(n))
    assert loss.loss_range == pytest.approx(epsilon)
    assert 0.85 * event.rho < loss.rho <= event.rho


def test_coarse_counts_move_by_at_most_the_fine_bound() -> None:
    disc = Discretiser(TINY, bins=4, fine_cells=8)
    pool = [q for q in selection_pool("coarse")[0] if q.coarse]
    assert pool
    cliques = list(dict.fromkeys(q.clique for q in pool))
    counted: dict[tuple, dict] = {}

    def counts(frame, on_invalid):
        key = (on_invalid, *frame.itertuples(index=False, name=None))
        if key not in counted:
            source = FrameSource(frame, TINY, on_invalid=on_invalid)
            counted[key] = count_marginals(source, disc, cliques)[0]
        return counted[key]

    for a, b, on_invalid in tiny_neighbours():
        fa, fb = counts(a, "error"), counts(b, on_invalid)
        for q in pool:
            diff = (q.project(fa[q.clique]) - q.project(fb[q.clique])).ravel()
            assert np.abs(diff).sum() <= L1_SENSITIVITY
            assert np.linalg.norm(diff) <= MARGINAL_SENSITIVITY + 1e-12
