"""The standalone sampler reads private rows through the one door, with a public ``n``.

``sample_discrete`` takes a :class:`~dpevolve.data.sources.PrivateSource`: every row
read counts in ``n``, and under ``drop`` or ``clip`` a row that breaks the schema
counts in the cell of the fixed stand-in record, as in ``synth``. A valid row replaced
by an invalid one therefore moves one count between two cells: a replacement.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.encoding import Layout, decode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.data.streaming import StreamedTable
from dpevolve.pe.invalid_rows import stand_in_record
from dpevolve.pe.pubmix.discrete import ProductDomain, sample_discrete
from dpevolve.privacy import Budget, default_delta

SCHEMA = Schema(
    (
        NumericColumn("age", 17.5, 90, integer=True),  # the stand-in's lowest whole value: 18
        CategoricalColumn("sex", ("F", "M")),
        NumericColumn("score", 0.0, 1.0),
    )
)


def table(n: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 91, n),
            "sex": rng.choice(["F", "M"], n),
            "score": rng.random(n),
        }
    )


def stand_in_cell(domain: ProductDomain) -> int:
    record = decode(stand_in_record(Layout.of(SCHEMA)), SCHEMA)
    return int(np.argmax(domain.counts(record)))


@pytest.mark.parametrize("mode", ["drop", "clip"])
@pytest.mark.parametrize("cells", [{"age": 500.0}, {"sex": "X"}, {"age": 40.5}])
def test_an_invalid_row_counts_as_the_stand_in_record(mode, cells) -> None:
    domain = ProductDomain.of(SCHEMA)
    base = table()
    other = base.astype(object).copy()
    for column, value in cells.items():
        other.loc[4, column] = value
    counts = [domain.source_counts(FrameSource(t, SCHEMA, on_invalid=mode)) for t in (base, other)]
    assert counts[0].sum() == counts[1].sum() == len(base)
    change = counts[1] - counts[0]
    assert np.abs(change).sum() <= 2  # one count moved: a replacement
    before = int(np.argmax(domain.counts(base.iloc[[4]])))
    if mode == "clip" and cells == {"age": 500.0}:
        after = int(np.argmax(domain.counts(base.iloc[[4]].assign(age=90))))  # clipped
    else:
        after = stand_in_cell(domain)
    expected = np.zeros_like(change)
    expected[after] += 1
    expected[before] -= 1
    np.testing.assert_array_equal(change, expected)


def test_counts_through_a_stream_equal_counts_in_memory(tmp_path) -> None:
    domain = ProductDomain.of(SCHEMA)
    frame = table(41).astype(object)
    frame.loc[[3, 17], "age"] = [200, 30.5]
    path = tmp_path / "private.csv"
    frame.to_csv(path, index=False)
    streamed = StreamedTable(path, SCHEMA, batch_rows=7, on_invalid="drop")
    in_memory = FrameSource(frame, SCHEMA, on_invalid="drop")
    assert streamed.n == in_memory.n == 41
    np.testing.assert_array_equal(domain.source_counts(streamed), domain.source_counts(in_memory))


def test_n_beta_and_delta_come_from_every_row() -> None:
    frame = table(300).astype(object)
    other = frame.copy()
    other.loc[0, "sex"] = "unknown"
    public = table(200)
    out = []
    for t in (frame, other):
        release = sample_discrete(
            FrameSource(t, SCHEMA, on_invalid="drop"), public, SCHEMA, 20,
            Budget(epsilon=2.0, delta=default_delta(300)), noise_seed=1, random_state=0,
            gamma=0.2,
        )  # fmt: skip
        shared = release.ledger.shareable_dict()
        out.append((shared["private_rows"], shared["delta"], release.details["beta"]))
        assert "validation" not in shared and "validation" in release.ledger.to_dict()
    assert out[0] == out[1]
    assert out[0][0] == 300


def test_a_table_in_memory_still_goes_through_the_door() -> None:
    """A plain table is wrapped in a FrameSource (invalid cells refused)."""
    from dpevolve.errors import InputError

    frame = table().astype(object)
    release = sample_discrete(frame, None, SCHEMA, 5, Budget(rho=0.5), noise="gaussian")
    assert release.ledger.to_dict()["private_rows"] == len(frame)
    frame.loc[0, "sex"] = "X"
    with pytest.raises(InputError, match="sex"):
        sample_discrete(frame, None, SCHEMA, 5, Budget(rho=0.5), noise="gaussian")
