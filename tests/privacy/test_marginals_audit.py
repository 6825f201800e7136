"""The marginal release of the ``hybrid`` preset on adversarial neighbours.

One Gaussian release of the stacked low-order marginals: replacing a record moves one
cell of each marginal down and one up, so the L2 sensitivity is ``sqrt(2 K)`` for ``K``
marginals; a valid record replaced by an invalid one (``on_invalid="drop"``) moves one
cell of each down, ``sqrt(K)``. These tests brute-force the worst change over a tiny
domain, including boundary values and invalid rows, check the noise actually drawn
against the recorded sigma, and recompute the ledger's epsilon with the audit's own
accountant, for the marginals alone and split with PE rounds.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import Schema
from dpevolve.pe.hybrid.marginals import CellIndex, Workload, l2_change, measure_marginals
from dpevolve.pe.specs import MarginalSpec
from dpevolve.presets import get_method
from dpevolve.privacy.audit import independent_epsilon
from dpevolve.privacy.noise import SeededNoise

FAST = {"grow_rounds": 1, "children": 60, "iterations": 20}


def _domain(schema: Schema) -> Records:
    """Every record of the tiny domain, boundary ages included."""
    ages = [17, 18, 53, 89, 90]
    rows = list(itertools.product(ages, ["Female", "Male"]))
    return encode(pd.DataFrame(rows, columns=["age", "sex"]), schema)


def test_replacement_and_invalid_rows_stay_within_the_sensitivity(age_sex) -> None:
    workload = Workload.all_up_to(age_sex, one_way=True)
    index = CellIndex(age_sex, workload)
    domain = _domain(age_sex)
    others = domain.take(np.array([0, 3, 7]))
    worst = 0.0
    for i, j in itertools.product(range(len(domain)), repeat=2):
        before = Records.concat([others, domain.take(np.array([i]))])
        after = Records.concat([others, domain.take(np.array([j]))])
        worst = max(worst, l2_change(index, before, after))
        # The record turned invalid (dropped: an empty vote) moves each marginal once.
        assert l2_change(index, before, others) <= workload.sensitivity / math.sqrt(2) + 1e-12
    assert worst == pytest.approx(workload.sensitivity)
    assert workload.sensitivity == pytest.approx(math.sqrt(2 * len(workload.sets)))


def test_the_noise_drawn_matches_the_recorded_sigma(age_sex) -> None:
    workload = Workload.all_up_to(age_sex, one_way=True)
    domain = _domain(age_sex)
    exact = measure_marginals(domain, age_sex, workload, 1e9, SeededNoise(0)).noisy
    draws = np.stack(
        [
            measure_marginals(domain, age_sex, workload, 0.05, SeededNoise(s)).noisy
            for s in range(400)
        ]
    )
    sigma = workload.sensitivity / math.sqrt(2 * 0.05)
    spread = (draws - exact).std()
    assert spread == pytest.approx(sigma, rel=0.03)


@pytest.mark.parametrize(("share", "rounds"), [(1.0, 2), (0.5, 2)])
@pytest.mark.parametrize("on_invalid", ["error", "drop"])
def test_ledger_epsilon_is_what_the_events_cost(age_sex, share, rounds, on_invalid) -> None:
    rng = np.random.default_rng(3)
    table = pd.DataFrame(
        {"age": rng.integers(17, 91, 60), "sex": rng.choice(["Female", "Male"], 60)}
    )
    if on_invalid == "drop":
        table.loc[0, "age"] = 95  # out of range: an empty vote, n stays 60
    model = Synthesizer(
        age_sex,
        epsilon=1.0,
        method=get_method(
            "hybrid", population=8, rounds=rounds, marginals=MarginalSpec(share=share, options=FAST)
        ),
        on_invalid=on_invalid,
        random_state=0,
    ).fit(table)
    ledger = model.ledger_
    kinds = [e.label for e in ledger.events]
    assert kinds.count("marginals") == 1
    assert len(kinds) == 1 + (rounds if share < 1 else 0)
    assert all(e.discrete for e in ledger.events)
    independent = independent_epsilon(ledger.events, ledger.delta)
    reported = ledger.result().epsilon
    assert reported == pytest.approx(independent, rel=1e-6)
    assert independent <= 1.0 * (1 + 1e-6)
    assert ledger.to_dict()["private_rows"] == 60
    assert len(model.sample()) == 60
