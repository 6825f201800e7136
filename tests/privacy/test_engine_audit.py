"""The engine's releases on adversarial neighbours: lower bounds never above the claim.

Two steps read private data: the selection (an exponential mechanism on the model's
L1 errors) and the marginal release (a discrete Gaussian). Both are audited on
neighbouring tables built to be hard: a record alone in its cell, boundary values of a
numeric column, a record turned invalid (dropped, ``n`` kept) or clipped to the range,
and candidates whose scores tie on ``D`` so that the replacement decides between them.
The draws come from the seeded twin of the noise source (the same distributions), so
the audit is deterministic; Clopper-Pearson bounds turn event counts into a lower bound
on epsilon (:func:`dpevolve.privacy.audit.eps_lower_bound`), which must stay below the
claim. A whole small run is audited in ``test_run_audit.py``. The exact
counterparts, with no sampling, are ``test_selection_exact.py`` (every neighbour of a
tiny domain) and ``test_engine_exact.py`` (whole runs, coupled).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals, marginal_event, release
from dpevolve.engine.select import (
    candidates,
    coarse_candidates,
    draw,
    scores,
    selection_event,
    weight,
)
from dpevolve.measurements import MarginalQuery, even_grouping
from dpevolve.privacy.audit import eps_lower_bound
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("age", 17, 90, integer=True),
        CategoricalColumn("job", ("a", "b", "c")),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)
COLS = ["age", "job", "y"]
BASE = [(30, "a", "no"), (31, "a", "no"), (45, "b", "yes"), (46, "b", "no"), (60, "a", "yes")]
TRIALS = 6000

#: (record in D, record in D', on_invalid of D'): alone in its cell, boundary values,
#: invalid (dropped) and out of range (clipped to the boundary).
NEIGHBOURS = [
    ((17, "c", "yes"), (90, "a", "no"), "error"),
    ((90, "c", "no"), (17, "c", "yes"), "error"),
    ((17, "c", "yes"), (200, "a", "no"), "drop"),
    ((17, "c", "yes"), (200, "a", "no"), "clip"),
]


def _source(record, on_invalid: str) -> FrameSource:
    frame = pd.DataFrame([*BASE, record], columns=COLS)
    return FrameSource(frame, SCHEMA, on_invalid=on_invalid)


def _tied_model(exact, pool, weights, sigma, first, second, domain):
    """Public model answers under which ``first`` and ``second`` tie on ``D``."""
    model = {c: np.zeros(domain.shape(c)) for c in pool}
    q = scores(pool, exact.__getitem__, model.__getitem__, weights, sigma)
    i, j = pool.index(first), pool.index(second)
    low = j if q[j] < q[i] else i
    gap = abs(q[i] - q[j]) / weights[low]
    cell = np.unravel_index(int(np.argmin(exact[pool[low]])), domain.shape(pool[low]))
    model[pool[low]][cell] += gap  # raises that candidate's L1 error by exactly ``gap``
    return model


@pytest.mark.parametrize(("here", "there", "on_invalid"), NEIGHBOURS)
def test_selection_on_near_ties(here, there, on_invalid) -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    pool = candidates(disc.domain, [("age", "y")], 3)
    weights = [weight(c, "y", 2.0) for c in pool]
    sigma, epsilon = 0.05, 1.0
    event = selection_event(epsilon, weights)
    exact_d, _ = count_marginals(_source(here, "error"), disc, pool)
    exact_n, _ = count_marginals(_source(there, on_invalid), disc, pool)
    first, second = ("age", "job", "y"), ("job", "y")
    model = _tied_model(exact_d, pool, weights, sigma, first, second, disc.domain)
    q_d = scores(pool, exact_d.__getitem__, model.__getitem__, weights, sigma)
    q_n = scores(pool, exact_n.__getitem__, model.__getitem__, weights, sigma)
    assert np.max(np.abs(q_d - q_n)) <= event.sensitivity + 1e-9
    target = pool.index(first)
    noise_d, noise_n = SeededNoise(11), SeededNoise(12)
    hits_d = sum(draw(q_d, event, noise_d) == target for _ in range(TRIALS))
    hits_n = sum(draw(q_n, event, noise_n) == target for _ in range(TRIALS))
    bound = max(
        eps_lower_bound(hits_d, TRIALS, hits_n, TRIALS, 0.0),
        eps_lower_bound(hits_n, TRIALS, hits_d, TRIALS, 0.0),
    )
    assert bound <= epsilon
    assert hits_d != hits_n  # the neighbours are told apart: the audit has power


@pytest.mark.parametrize(("here", "there", "on_invalid"), NEIGHBOURS)
def test_selection_on_near_ties_with_coarse_splits(here, there, on_invalid) -> None:
    """A label clique cut in two off the midpoint ties with a fine one on ``D``."""
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    domain = disc.domain
    fine = [MarginalQuery(c) for c in candidates(domain, [("age", "y")], 3)]
    coarse = coarse_candidates(domain, [], "y", {"age": 4}, (2,), 4, 1, (0.25, 0.75))
    pool = fine + coarse
    weights = [weight(q.clique, "y", 2.0) * (0.25 if q.coarse else 1.0) for q in pool]
    sigma, epsilon = 0.05, 1.0
    event = selection_event(epsilon, weights)
    cliques = list(dict.fromkeys(q.clique for q in pool))
    counted_d, _ = count_marginals(_source(here, "error"), disc, cliques)
    counted_n, _ = count_marginals(_source(there, on_invalid), disc, cliques)
    exact_d = {q: q.project(counted_d[q.clique]) for q in pool}
    exact_n = {q: q.project(counted_n[q.clique]) for q in pool}
    first = next(q for q in coarse if q.groups is not None and q.groups[0] == (0, 0, 0, 1))
    second = MarginalQuery(("job", "y"))
    model = {q: np.zeros(q.shape(domain)) for q in pool}
    q_d = scores(pool, exact_d.__getitem__, model.__getitem__, weights, sigma)
    i, j = pool.index(first), pool.index(second)
    low = j if q_d[j] < q_d[i] else i
    cell = np.unravel_index(int(np.argmin(exact_d[pool[low]])), pool[low].shape(domain))
    model[pool[low]][cell] += abs(q_d[i] - q_d[j]) / weights[low]  # the tie on D
    q_d = scores(pool, exact_d.__getitem__, model.__getitem__, weights, sigma)
    q_n = scores(pool, exact_n.__getitem__, model.__getitem__, weights, sigma)
    assert q_d[i] == pytest.approx(q_d[j])
    assert np.max(np.abs(q_d - q_n)) <= event.sensitivity + 1e-9
    noise_d, noise_n = SeededNoise(13), SeededNoise(14)
    hits_d = sum(draw(q_d, event, noise_d) == i for _ in range(TRIALS))
    hits_n = sum(draw(q_n, event, noise_n) == i for _ in range(TRIALS))
    bound = max(
        eps_lower_bound(hits_d, TRIALS, hits_n, TRIALS, 0.0),
        eps_lower_bound(hits_n, TRIALS, hits_d, TRIALS, 0.0),
    )
    assert bound <= epsilon
    assert hits_d != hits_n


@pytest.mark.parametrize("coarse", [False, True])
@pytest.mark.parametrize(("here", "there", "on_invalid"), NEIGHBOURS[:3])
def test_marginal_release_of_a_lone_record(here, there, on_invalid, coarse) -> None:
    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    clique = ("age", "job")
    query = MarginalQuery(clique, (even_grouping(4, 2), None) if coarse else None)
    fine_d, _ = count_marginals(_source(here, "error"), disc, [clique])
    fine_n, _ = count_marginals(_source(there, on_invalid), disc, [clique])
    exact_d = {clique: query.project(fine_d[clique])}
    exact_n = {clique: query.project(fine_n[clique])}
    event = marginal_event(1.0)  # rho = 1: loud enough for the bound to bite
    diff = (exact_d[clique] - exact_n[clique]).ravel()
    assert np.linalg.norm(diff) <= event.sensitivity + 1e-12
    direction = diff / np.linalg.norm(diff)
    cut = float(direction @ exact_n[clique].ravel()) + 2.0  # two sigmas beyond D'
    noise_d, noise_n = SeededNoise(21), SeededNoise(22)
    hits = [
        sum(
            float(
                direction @ release(exact[clique], clique, event, noise, query=query).noisy.ravel()
            )
            > cut
            for _ in range(TRIALS)
        )
        for exact, noise in ((exact_d, noise_d), (exact_n, noise_n))
    ]
    delta = 1e-5
    claim = 1.0 + 2.0 * np.sqrt(np.log(1.0 / delta))  # rho = 1 -> (eps, delta), simple bound
    bound = eps_lower_bound(hits[0], TRIALS, hits[1], TRIALS, delta)
    assert 0.0 < bound <= claim
