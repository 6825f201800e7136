"""Memory bounded in rows (docs/scale.md): no table drawn inside ``fit``, rows drawn and
written in blocks, the same rows whatever the blocks."""

from __future__ import annotations

import gzip
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpevolve.engine.model as engine_model
import dpevolve.engine.refine as refine_module
from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.writer import write_blocks
from dpevolve.presets import get_method


@pytest.fixture
def adaptive(small_schema, small_table) -> Synthesizer:
    return Synthesizer(small_schema, epsilon=1.0, random_state=3, noise_seed=4).fit(small_table)


def test_fit_draws_no_table(adaptive, small_schema, small_table, tmp_path) -> None:
    """The n-row table is drawn on first access of ``synthetic_``, the same rows every
    time and after a save made before it was drawn."""
    fresh = Synthesizer(small_schema, epsilon=1.0, random_state=3, noise_seed=4)
    fresh.fit(small_table)
    assert "synthetic_" not in vars(fresh)  # nothing of n rows held after fit
    fresh.save(tmp_path / "m.pkl")
    loaded = Synthesizer.load(tmp_path / "m.pkl")
    table = fresh.synthetic_
    assert len(table) == len(small_table) and "synthetic_" in vars(fresh)
    pd.testing.assert_frame_equal(table, adaptive.synthetic_)
    pd.testing.assert_frame_equal(loaded.synthetic_, table)
    assert not hasattr(Synthesizer(small_schema, epsilon=1.0), "synthetic_")
    with pytest.warns(UserWarning, match="fit\\(\\) called again"):
        fresh.fit(small_table.iloc[:100])
    assert len(fresh.synthetic_) == 100  # the new fit's table, not the first one's


@pytest.mark.parametrize("rows", [0, 5, 64, 65, 200])
def test_blocks_join_to_the_sample(adaptive, monkeypatch, rows) -> None:
    """Blocks of at most SAMPLE_ROWS rows whose concatenation is ``sample(rows)``."""
    monkeypatch.setattr(engine_model, "SAMPLE_ROWS", 64)
    state = adaptive._sample_rng.bit_generator.state
    blocks = list(adaptive.sample_blocks(rows))
    adaptive._sample_rng.bit_generator.state = state
    whole = adaptive.sample(rows)
    assert all(len(b) <= 64 for b in blocks) and sum(map(len, blocks)) == rows
    pd.testing.assert_frame_equal(pd.concat(blocks, ignore_index=True), whole)


@pytest.mark.parametrize("preset", ["tabpe", "hybrid"])
def test_pe_blocks_join_to_the_sample(small_schema, small_table, monkeypatch, preset) -> None:
    monkeypatch.setattr(refine_module, "SAMPLE_ROWS", 32)  # PE's generator reads it here
    model = Synthesizer(
        small_schema, epsilon=1.0, delta=1e-5, random_state=1, noise_seed=2,
        method=get_method(preset, population=40, rounds=2), backend="local",
    ).fit(small_table)  # fmt: skip
    state = model._sample_rng.bit_generator.state
    blocks = list(model.sample_blocks(100))
    model._sample_rng.bit_generator.state = state
    assert [len(b) for b in blocks] == [32, 32, 32, 4]
    pd.testing.assert_frame_equal(pd.concat(blocks, ignore_index=True), model.sample(100))


def _frame(rng: np.random.Generator, rows: int) -> pd.DataFrame:
    ints = pd.array(rng.integers(0, 9, rows), dtype="Int64")
    ints[rng.random(rows) < 0.2] = pd.NA
    floats = rng.normal(size=rows)
    floats[rng.random(rows) < 0.2] = np.nan
    words = np.array(["a", "b,c", 'q"uote', "é", ""], dtype=object)[rng.integers(0, 5, rows)]
    return pd.DataFrame({"i": ints, "x": floats, "w": words, "k": rng.integers(-5, 5, rows)})


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    cuts=st.lists(st.integers(0, 60), max_size=5),
    suffix=st.sampled_from([".csv", ".csv.gz", ".parquet"]),
)
def test_written_in_blocks_as_written_whole(tmp_path: Path, seed, cuts, suffix) -> None:
    """Any split into blocks writes the table written whole: the same CSV bytes, the
    same Parquet table."""
    frame = _frame(np.random.default_rng(seed), 60)
    edges = [0, *sorted(cuts), 60]
    blocks = [frame.iloc[a:b] for a, b in itertools.pairwise(edges)]
    whole, parts = tmp_path / f"whole{suffix}", tmp_path / f"parts{suffix}"
    whole.unlink(missing_ok=True)
    parts.unlink(missing_ok=True)
    assert write_blocks([frame], whole) == 60
    assert write_blocks(iter(blocks), parts) == 60
    if suffix == ".parquet":
        pd.testing.assert_frame_equal(pd.read_parquet(parts), pd.read_parquet(whole))
        pd.testing.assert_frame_equal(pd.read_parquet(parts), frame)
    else:
        read = gzip.open if suffix == ".csv.gz" else open
        with read(whole, "rb") as a, read(parts, "rb") as b:
            assert a.read() == b.read()
        with read(whole, "rb") as a:
            assert a.read() == frame.to_csv(index=False).encode()


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    """An error (or an interrupt) after some blocks: no output, no temporary file."""
    frame = _frame(np.random.default_rng(0), 10)

    def blocks():
        yield frame
        raise KeyboardInterrupt

    for suffix in (".csv", ".parquet"):
        with pytest.raises(KeyboardInterrupt):
            write_blocks(blocks(), tmp_path / f"out{suffix}")
    assert list(tmp_path.iterdir()) == []


def test_cli_rows_written_in_blocks(small_schema, small_table, tmp_path, monkeypatch, capsys):
    """``synth --rows`` writes block by block: the same file as with a report (which
    holds the whole table), CSV and Parquet alike."""
    monkeypatch.setattr(engine_model, "SAMPLE_ROWS", 128)
    schema = tmp_path / "schema.yaml"
    schema.write_text(small_schema.to_yaml())
    private = tmp_path / "private.csv"
    small_table.to_csv(private, index=False)
    args = ["synth", private, "-s", schema, "-e", "1", "--seed", "5", "--noise-seed", "6",
            "--rows", "1000", "-q", "--engine-options", "{max_rounds: 3}"]  # fmt: skip
    for suffix in (".csv", ".parquet"):
        plain, reported = tmp_path / f"a{suffix[1:]}{suffix}", tmp_path / f"b{suffix[1:]}{suffix}"
        assert main([str(a) for a in [*args, "-o", plain]]) == 0
        extra = ["-o", reported, "--share-report", tmp_path / f"b{suffix[1:]}.html"]
        assert main([str(a) for a in [*args, *extra]]) == 0
        if suffix == ".csv":
            assert plain.read_bytes() == reported.read_bytes()
        else:
            import pyarrow.parquet as pq

            assert pq.ParquetFile(plain).num_row_groups == 8  # 1000 rows in blocks of 128
            pd.testing.assert_frame_equal(pd.read_parquet(plain), pd.read_parquet(reported))
    capsys.readouterr()


def test_rows_checked_against_memory_only_when_held(small_schema, tmp_path, monkeypatch):
    """Without a report the rows are written block by block: only the disk bounds them."""
    import dpevolve.cli.preflight as preflight
    from dpevolve.errors import InputError

    monkeypatch.setattr(preflight, "_available_memory", lambda: 1 << 20)
    preflight.check_rows(10**6, small_schema, tmp_path, in_memory=False)
    with pytest.raises(InputError, match="memory"):
        preflight.check_rows(10**6, small_schema, tmp_path, in_memory=True)
