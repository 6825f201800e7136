"""The engine's options as users meet them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import fit_engine
from dpevolve.engine.spec import BINS, SMALL_BINS, SMALL_TABLE, EngineSpec
from dpevolve.errors import InputError
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise


def test_every_engine_option_is_documented() -> None:
    """docs/engine.md's Options table names every EngineSpec field (users set them)."""
    from dataclasses import fields
    from pathlib import Path

    from dpevolve.engine.spec import EngineSpec

    docs = Path(__file__).resolve().parents[2] / "docs" / "engine.md"
    table = docs.read_text(encoding="utf-8").split("## Options", 1)[1]
    missing = [f.name for f in fields(EngineSpec) if f"`{f.name}`" not in table]
    assert not missing, f"docs/engine.md's Options table lacks {missing}"


@given(st.integers(1, 10**7), st.one_of(st.none(), st.integers(1, 64)))
def test_the_bins_follow_the_rows_unless_set(n: int, bins: int | None) -> None:
    """``bins`` left to the default: 10 under 1,000 rows (n is public), 20 from there;
    set, it stays."""
    chosen = EngineSpec(bins=bins).for_rows(n)
    expected = bins if bins is not None else SMALL_BINS if n < SMALL_TABLE else BINS
    assert chosen.bins == chosen.numeric_bins == expected
    assert EngineSpec().numeric_bins == BINS


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_a_bad_bin_count_is_refused(bad: object) -> None:
    with pytest.raises(InputError):
        EngineSpec(bins=bad)  # type: ignore[arg-type]


def test_the_run_uses_and_records_the_bins_of_its_rows() -> None:
    """Either side of 1,000 rows, the discretiser and the ledger's spec hold the bins."""
    schema = Schema((NumericColumn("v", 0, 100), CategoricalColumn("y", ("0", "1"))), label="y")
    rng = np.random.default_rng(0)
    for rows, expected in ((SMALL_TABLE - 1, SMALL_BINS), (SMALL_TABLE, BINS)):
        frame = pd.DataFrame({"v": rng.uniform(0, 100, rows), "y": rng.choice(["0", "1"], rows)})
        result = fit_engine(
            FrameSource(frame, schema), schema, Budget(epsilon=1.0, delta=1e-5),
            EngineSpec(rounds=1, pe_share=0.0), noise=SeededNoise(0), rng=rng,
        )  # fmt: skip
        assert result.discretiser.bins == expected
        assert result.ledger.metadata["engine"]["spec"]["bins"] == expected
