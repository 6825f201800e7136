"""The engine's PE stage on adversarial neighbours: lower bounds never above the claim.

The stage reads private records once per round, in PE's hard vote; what leaves is the
density ratio of each candidate's cell, a function of the noisy vote and public draws.
A record alone near its candidate is replaced by one at the far end of the domain, or
turned invalid (dropped, ``n`` kept). The candidates come from a public sampler under
the same post-processing seed on both sides; the noise from the seeded twin of the noise
source, so the audit is deterministic. Clopper-Pearson bounds on the events "the lone
record's candidate has ratio above t" must stay below the ledger's epsilon.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine.nearest import nearest
from dpevolve.engine.plan import Spend
from dpevolve.engine.refine import StageInputs, refine
from dpevolve.pe.distance import make_distance
from dpevolve.privacy import Ledger
from dpevolve.privacy.audit import eps_lower_bound
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (
        NumericColumn("x", 0.0, 10.0),
        CategoricalColumn("c", ("a", "b", "z")),
        CategoricalColumn("y", ("no", "yes")),
    ),
    label="y",
)
COLS = ["x", "c", "y"]
BASE = [(2.0, "a", "no"), (3.0, "a", "yes"), (6.0, "b", "no"), (7.0, "b", "yes")]
HERE = (0.0, "z", "yes")  # alone: no other record has "z"
NEIGHBOURS = [((10.0, "a", "no"), "error"), ((50.0, "a", "no"), "drop")]
RHO = 1.0
RUNS = 500
DELTA = 1e-5


def _public(count: int, rng: np.random.Generator) -> pd.DataFrame:
    """A public sampler (no private record read): uniform over the declared domain."""
    return pd.DataFrame(
        {
            "x": rng.uniform(0.0, 10.0, count),
            "c": rng.choice(["a", "b", "z"], count),
            "y": rng.choice(["no", "yes"], count),
        }
    )


def _ratios(record, on_invalid: str, seed: int) -> tuple[list[float], float]:
    """Per run: the ratio of the candidate nearest to HERE; and the ledger's epsilon."""
    here = encode(pd.DataFrame([HERE], columns=COLS), SCHEMA)
    distance = make_distance("tabpe", SCHEMA)
    out = []
    source = FrameSource(pd.DataFrame([*BASE, record], columns=COLS), SCHEMA, on_invalid=on_invalid)
    for k in range(RUNS):
        ledger = Ledger(DELTA)
        stage = StageInputs(
            source, SCHEMA, SeededNoise(seed * 100_000 + k), ledger, Spend(RHO), RHO,
            rounds=1, candidates=6, pool=2, first_round=1,
        )  # fmt: skip
        result = refine(_public, stage, np.random.default_rng(k))
        correction = result.corrections[0]
        j = int(nearest(here, correction.candidates, distance)[0])
        out.append(float(correction.ratio[j]))
    return out, ledger.result().epsilon


@pytest.mark.parametrize(("there", "on_invalid"), NEIGHBOURS)
def test_the_stage_stays_below_its_ledger(there, on_invalid) -> None:
    ratios_d, claim = _ratios(HERE, "error", 1)
    ratios_n, claim_n = _ratios(there, on_invalid, 2)
    assert claim == pytest.approx(claim_n)
    d, n = np.array(ratios_d), np.array(ratios_n)
    bounds = []
    for t in np.quantile(np.concatenate([d, n]), [0.1, 0.25, 0.5, 0.75, 0.9]):
        a, b = int((d > t).sum()), int((n > t).sum())
        bounds += [eps_lower_bound(a, RUNS, b, RUNS, DELTA)]
        bounds += [eps_lower_bound(b, RUNS, a, RUNS, DELTA)]
    assert max(bounds) <= claim
    assert max(bounds) > 0.1  # the lone record shows in its candidate's ratio: power
    assert d.mean() > n.mean()
