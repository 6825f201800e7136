"""A date column decodes within the range its data occupy (issue 25), not over the
whole years schema inference widens its declared range to (docs/engine.md, Decoding
values within a bin): a date is a numeric column counted in days, so the bins move to
where the released histogram shows the dates and the end bins decode inward."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.infer import infer_schema
from dpevolve.data.types import DateColumn
from dpevolve.engine import synthesize


def _table(n: int, seed: int) -> pd.DataFrame:
    """Dates over March to May 2020 (a triangular spread), an amount, a label."""
    rng = np.random.default_rng(seed)
    offset = pd.to_timedelta(rng.triangular(0.0, 30.0, 91.0, n).round(), unit="D")
    day = pd.Timestamp("2020-03-01") + offset
    late = (day - pd.Timestamp("2020-03-01")).days.to_numpy()
    y = np.where(rng.random(n) < 0.3 + 0.004 * late, "yes", "no")
    amount = rng.gamma(2.0, 50.0, n).round(2)
    return pd.DataFrame({"when": day.strftime("%Y-%m-%d"), "amount": amount, "y": y})


@pytest.mark.parametrize("seed", [0, 1])
def test_dates_decode_within_the_range_the_data_occupy(seed: int) -> None:
    """The schema inferred from public rows declares the whole of 2020 (366 days) for
    dates held in 91: at epsilon 1 on 2,000 rows, no output date lies beyond the private
    dates by a tenth of their span, and at most 1% outside them at all."""
    schema = infer_schema(_table(2000, 99), label="y").schema
    column = schema["when"]
    assert isinstance(column, DateColumn)
    assert column.hi - column.lo >= 365.0  # whole years: far wider than the data
    private = _table(2000, seed)
    out = synthesize(private, schema, epsilon=1.0, seed=seed, noise_seed=500 + seed)
    dates = pd.to_datetime(out["when"], format="%Y-%m-%d")
    real = pd.to_datetime(private["when"], format="%Y-%m-%d")
    slack = pd.Timedelta(days=0.1 * (real.max() - real.min()).days)
    assert not ((dates < real.min() - slack) | (dates > real.max() + slack)).any()
    assert ((dates < real.min()) | (dates > real.max())).mean() <= 0.01
