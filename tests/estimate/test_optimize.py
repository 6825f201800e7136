"""Mirror descent with and without momentum reach the same optimum; the stopping rule."""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.estimate import MarkovRandomField
from dpevolve.estimate.objective import attribute_estimates, targets
from dpevolve.measurements import Domain, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

EVENT = GaussianEvent(sensitivity=np.sqrt(2.0), sigma=3.0)


def _noisy_cycle() -> tuple[Domain, list[Measurement]]:
    """Inconsistent noisy marginals on a 4-cycle (the tree needs a chord)."""
    domain = Domain(("a", "b", "c", "d"), (3, 4, 3, 2))
    rng = np.random.default_rng(11)
    out = []
    for clique in [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a",), ("c",)]:
        shape = domain.shape(clique)
        truth = 500.0 * rng.dirichlet(np.ones(int(np.prod(shape)))).reshape(shape)
        out.append(
            Measurement(MarginalQuery(clique), truth + rng.normal(0, 3.0, shape), 3.0, EVENT)
        )
    return domain, out


def test_momentum_reaches_the_plain_optimum_in_fewer_evaluations() -> None:
    domain, measurements = _noisy_cycle()
    runs = {}
    for momentum in (False, True):
        mrf = MarkovRandomField(
            domain, 500.0, iterations=20_000, tol=1e-9, patience=50, momentum=momentum
        )
        runs[momentum] = mrf.fit(measurements)
    plain, fast = runs[False], runs[True]
    assert fast.stats.losses[-1] == pytest.approx(plain.stats.losses[-1], rel=1e-4)
    assert fast.stats.evaluations < plain.stats.evaluations
    np.testing.assert_allclose(fast.answer(("a", "c")), plain.answer(("a", "c")), atol=0.05)
    # The loss never rises along accepted steps.
    assert np.all(np.diff(fast.stats.losses) <= 1e-9 * fast.stats.losses[0])


def test_the_stopping_rule_ends_the_fit_early() -> None:
    domain, measurements = _noisy_cycle()
    loose = MarkovRandomField(domain, 500.0, iterations=5000, tol=1e-2, patience=10)
    loose.fit(measurements)
    assert loose.stats.converged and loose.stats.iterations < 5000
    history = loose.stats.losses
    assert history[-11] - history[-1] <= 1e-2 * history[-11]


def test_pooled_attribute_estimates_weigh_by_precision() -> None:
    domain = Domain(("a", "b"), (2, 2))
    one = Measurement(MarginalQuery(("a",)), np.array([30.0, 70.0]), 1.0, EVENT)
    # Its projection on a is [50, 50], two cells per value: precision 1/2 per value.
    two = Measurement(MarginalQuery(("a", "b")), np.array([[25.0, 25.0], [25.0, 25.0]]), 1.0, EVENT)
    pooled = attribute_estimates(domain, targets(domain, [one, two]))
    np.testing.assert_allclose(pooled["a"] * 100, [(30 + 0.5 * 50) / 1.5, (70 + 0.5 * 50) / 1.5])
    np.testing.assert_allclose(pooled["b"], [0.5, 0.5])
