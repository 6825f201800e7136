"""Every release of a fit enters one measurement list, in the ledger's order
(docs/architecture.md, the measurement list): PE's votes and the hybrid tail's
workload included."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dpevolve import Synthesizer, datasets
from dpevolve.measurements import VoteQuery, WorkloadQuery
from dpevolve.presets import get_method

CASES: dict[str, dict[str, Any]] = {
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
        if isinstance(m.query, VoteQuery):
            assert m.noisy.shape == (m.query.candidates,)
        else:
            assert isinstance(m.query, WorkloadQuery)
            assert m.sigma > 0
        assert np.all(np.isfinite(m.noisy))
        assert math.isnan(m.sigma) == (name == "pubmix")
