"""Every release of a fit enters one measurement list, in the ledger's order
(docs/architecture.md, the measurement list): the engine's fine histograms, selections,
marginals and PE-stage votes, PE's votes and the hybrid tail's workload."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpevolve import Synthesizer, datasets
from dpevolve.measurements import (
    HistogramQuery,
    MarginalQuery,
    SelectionQuery,
    VoteQuery,
    WorkloadQuery,
)
from dpevolve.presets import get_method

CASES: dict[str, dict[str, Any]] = {
    "adaptive": {},
    "adaptive-public": {"public": True},
    # the PE stage runs on the demo table's share of numeric columns, 10 rows a candidate
    "adaptive-votes": {
        "method": get_method("adaptive", engine={"pe_min_numeric": 0.0, "pe_candidates": 40})
    },
    "tabpe": {"method": "tabpe"},
    "tabpe-marginals": {"method": get_method("tabpe", marginals=0.5)},
    "bfsoft": {"method": "bfsoft"},
    "pubmix": {"method": get_method("bfsoft", mechanism="pubmix"), "public": True},
    "hybrid": {"method": "hybrid"},
}


def _fit(settings: dict[str, Any]) -> Synthesizer:
    demo = datasets.load("demo")
    settings = dict(settings)
    if settings.get("public"):
        settings["public"] = demo.frame.iloc[400:800].reset_index(drop=True)
    model = Synthesizer(
        demo.schema, epsilon=1.0, delta=1e-5, random_state=0, noise_seed=1, backend="local",
        **settings,
    )  # fmt: skip
    return model.fit(demo.frame.iloc[:400])


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_measurement_list_holds_every_ledger_event_in_order(name: str) -> None:
    model = _fit(CASES[name])
    measurements = model.measurements_
    assert measurements is not None
    assert len(measurements) > 0
    assert measurements.events() == list(model.ledger_.events)
    for m in measurements:
        assert np.all(np.isfinite(m.noisy))
        if isinstance(m.query, SelectionQuery):
            assert m.noisy.shape == (1,) and 0 <= m.noisy[0] < m.query.candidates
            assert math.isnan(m.sigma)
            continue
        if isinstance(m.query, VoteQuery):
            assert m.noisy.shape == (m.query.candidates,)
        elif isinstance(m.query, HistogramQuery):
            assert m.noisy.shape == (m.query.cells,)
        elif isinstance(m.query, MarginalQuery):
            assert name.startswith("adaptive") and m.noisy.ndim == len(m.query.clique)
        else:
            assert isinstance(m.query, WorkloadQuery)
        assert math.isnan(m.sigma) == (name == "pubmix")
        assert m.sigma > 0 or name == "pubmix"


def test_the_default_method_lists_every_kind_of_release() -> None:
    """The engine's phases each release: fine histograms, then the 1-ways, the
    spanning picks and the rounds' selections and marginals, then the PE stage's votes."""
    model = _fit(CASES["adaptive-votes"])
    measurements = model.measurements_
    assert measurements is not None
    kinds = [type(m.query) for m in measurements]
    assert set(kinds) == {HistogramQuery, MarginalQuery, SelectionQuery, VoteQuery}
    # the fine histograms come first, the PE stage's votes last
    assert kinds[0] is HistogramQuery and kinds[-1] is VoteQuery
    first_marginal = kinds.index(MarginalQuery)
    assert set(kinds[:first_marginal]) == {HistogramQuery}
    votes = [i for i, k in enumerate(kinds) if k is VoteQuery]
    assert votes == list(range(votes[0], len(kinds)))
    # what the estimator reconciled: the marginals alone, in release order
    assert [m.clique for m in measurements.marginals()] == measurements.cliques()
    assert len(measurements.marginals()) == kinds.count(MarginalQuery)
    # each selection precedes the release of what it picked (the tree's releases may
    # wait for the phase's last pick); none is released without being selected, bar
    # the 1-ways
    assert kinds.count(SelectionQuery) <= kinds.count(MarginalQuery)
