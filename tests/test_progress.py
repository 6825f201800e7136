"""Progress bars: on stderr, for the PE rounds and each phase of the marginal preset,
showing counts fixed by the settings and nothing read from private records."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.data.encoding import Layout, encode
from dpevolve.data.schema import Schema
from dpevolve.pe.hybrid.fit import MarginalFit
from dpevolve.pe.hybrid.marginals import CellIndex, Workload, measure_marginals
from dpevolve.pe.specs import MarginalSpec
from dpevolve.pe.variation import Variation
from dpevolve.presets import get_method
from dpevolve.privacy.noise import SeededNoise

HYBRID = {"grow_rounds": 1, "children": 50, "iterations": 20}


def test_hybrid_shows_release_and_fit_on_stderr(
    small_schema: Schema, small_table: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        random_state=0,
        noise_seed=0,
        method=get_method("hybrid", marginals=MarginalSpec(options=HYBRID)),
        progress=True,
    )
    model.fit(small_table)
    out, err = capsys.readouterr()
    assert out == ""  # stdout stays for results
    assert "marginals: count and release" in err
    assert "marginals: fit the pool (2 fits)" in err
    assert "40/40" in err  # 2 fits x 20 iterations, completed
    # Only the labels, public counts, bar glyphs and times: no cell of the table.
    for value in small_table["age"].unique():
        assert not re.search(rf"(?<![\d/:]){value}(?![\d/:])", err.replace("40/40", ""))


def test_pe_rounds_show_on_stderr(
    small_schema: Schema, small_table: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    Synthesizer(
        small_schema,
        epsilon=1.0,
        random_state=0,
        noise_seed=0,
        method=get_method("tabpe", population=30, rounds=2),
        progress=True,
    ).fit(small_table)
    out, err = capsys.readouterr()
    assert out == "" and "round" in err and "2/2" in err and "ε spent" in err


def test_quiet_fit_prints_nothing(
    small_schema: Schema, small_table: pd.DataFrame, capsys: pytest.CaptureFixture[str]
) -> None:
    Synthesizer(
        small_schema,
        epsilon=1.0,
        random_state=0,
        noise_seed=0,
        method=get_method("hybrid", marginals=MarginalSpec(options=HYBRID)),
    ).fit(small_table)
    assert capsys.readouterr() == ("", "")


def test_fit_progress_sees_only_counts(small_schema: Schema, small_table: pd.DataFrame) -> None:
    private = encode(small_table, small_schema)
    workload = Workload.all_up_to(small_schema, 2, 4)
    released = measure_marginals(private, small_schema, workload, 1.0, SeededNoise(0))
    calls: list[tuple[int, int]] = []
    fitter = MarginalFit(
        CellIndex(small_schema, workload),
        released,
        400,
        iterations=15,
        progress=lambda fit, it: calls.append((fit, it)),
    )
    rng = np.random.default_rng(0)
    variation = Variation(Layout.of(small_schema))
    fitter.grow(variation.random(40, rng), variation, rng, rounds=2, children=20)
    assert all(type(f) is int and type(i) is int for f, i in calls)
    assert {f for f, _ in calls} == {0, 1, 2}  # three fits, numbered in order
    assert calls == sorted(calls) and all(1 <= i <= 15 for _, i in calls)
