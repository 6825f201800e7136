"""Counting through the private source, and the marginal release's sensitivity."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import Records, encode
from dpevolve.data.sources import FrameSource
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import (
    MARGINAL_SENSITIVITY,
    count_marginals,
    marginal_event,
    release,
    sigma_for,
)
from dpevolve.privacy.noise import SeededNoise


class _Batched:
    """A source handing its records over in uneven batches (as a file stream does)."""

    def __init__(self, records: Records, cuts: list[int]) -> None:
        self._parts = [records.take(slice(a, b)) for a, b in itertools.pairwise([0, *cuts])]
        self.n = len(records)
        self.report = None

    def batches(self):
        return iter(self._parts)


def _records(schema, n=500, seed=0) -> Records:
    rng = np.random.default_rng(seed)
    table = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "spend": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) * 100),
            "job": rng.choice(["a", "b", "c", None], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )
    frame, _ = schema.validate(table)
    return encode(frame, schema)


def test_streamed_counts_equal_the_direct_count(nulls_schema) -> None:
    records = _records(nulls_schema)
    disc = Discretiser(nulls_schema, bins=7, fine_cells=40)
    cliques = [("age",), ("age", "y"), ("spend", "job", "y")]
    whole, fine = count_marginals(
        _Batched(records, [len(records)]), disc, cliques, ["age", "spend"]
    )
    parts, fine_parts = count_marginals(
        _Batched(records, [13, 200, 201, 500]), disc, cliques, ["age", "spend"], batch_rows=17
    )
    codes = disc.codes(records)
    for clique in cliques:
        idx = [disc.domain.index(a) for a in clique]
        direct = np.zeros(disc.domain.shape(clique))
        np.add.at(direct, tuple(codes[:, idx].T), 1)
        assert np.array_equal(whole[clique], direct)
        assert np.array_equal(parts[clique], direct)
        assert whole[clique].sum() == len(records)
    for name in fine:
        assert np.array_equal(fine[name], fine_parts[name])
        assert fine[name].sum() == len(records)


def test_one_replacement_moves_a_marginal_by_at_most_sqrt2(nulls_schema) -> None:
    disc = Discretiser(nulls_schema, bins=5, fine_cells=20)
    cells = pd.DataFrame(
        list(
            itertools.product([17, 18, 53, 89, 90], [0.0, 100.0, None], ["a", None], ["no", "yes"])
        ),
        columns=["age", "spend", "job", "y"],
    )
    others = cells.iloc[[0, 7, 30]]
    cliques = [("age",), ("age", "spend"), ("spend", "job", "y")]
    worst = 0.0
    for i in range(0, len(cells), 3):
        for j in range(1, len(cells), 5):
            a = FrameSource(pd.concat([others, cells.iloc[[i]]]), nulls_schema)
            b = FrameSource(pd.concat([others, cells.iloc[[j]]]), nulls_schema)
            ca, fa = count_marginals(a, disc, cliques, ["age", "spend"])
            cb, fb = count_marginals(b, disc, cliques, ["age", "spend"])
            for x, y in [
                *zip(ca.values(), cb.values(), strict=True),
                *zip(fa.values(), fb.values(), strict=True),
            ]:
                worst = max(worst, float(np.linalg.norm(x - y)))
    assert worst == pytest.approx(MARGINAL_SENSITIVITY)
    # a record turned invalid (dropped; n stays public) leaves one cell: 1 <= sqrt 2
    bad = pd.concat(
        [others, pd.DataFrame({"age": [95], "spend": [1.0], "job": ["a"], "y": ["no"]})]
    )
    dropped = FrameSource(bad, nulls_schema, on_invalid="drop")
    assert dropped.n == 4
    kept = FrameSource(pd.concat([others, cells.iloc[[0]]]), nulls_schema)
    c1, _ = count_marginals(dropped, disc, cliques)
    c2, _ = count_marginals(kept, disc, cliques)
    assert max(float(np.linalg.norm(c1[c] - c2[c])) for c in cliques) == pytest.approx(1.0)


def test_the_release_draws_at_the_recorded_sigma(nulls_schema) -> None:
    exact = np.arange(12.0).reshape(3, 4)
    sigma = sigma_for(0.02)
    assert sigma == pytest.approx(math.sqrt(2) / math.sqrt(0.04))
    event = marginal_event(sigma)
    assert event.rho == pytest.approx(0.02) and event.discrete
    draws = np.stack([release(exact, ("a", "b"), event, SeededNoise(s)).noisy for s in range(300)])
    assert draws.shape == (300, 3, 4)
    assert (draws - exact).std() == pytest.approx(sigma, rel=0.03)
    m = release(exact, ("a", "b"), event, SeededNoise(0))
    assert m.event is event and m.sigma == sigma and not m.noisy.flags.writeable


def test_a_repeated_clique_is_counted_once(nulls_schema) -> None:
    records = _records(nulls_schema, n=50)
    disc = Discretiser(nulls_schema, bins=4, fine_cells=8)
    source = _Batched(records, [len(records)])
    once, _ = count_marginals(source, disc, [("age", "y")])
    twice, _ = count_marginals(source, disc, [("age", "y"), ("age", "y")])
    assert twice[("age", "y")].sum() == once[("age", "y")].sum() == 50
