"""One vote arithmetic on every backend: histograms equal bit for bit.

Hard and soft votes, Gower and the Tab-PE embedding, on adversarial data (duplicated
candidates, candidates mirrored around records so distances tie in exact arithmetic,
ranges like 73 whose fractions tie only approximately in floating point), for several
chunk sizes including one-row chunks and batched streams.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.backends.canonical import (
    EXACT_CELL_LIMIT,
    exp_canonical,
    soft_histogram,
    soft_quantisation_slack,
    soft_row_votes,
)
from dpevolve.backends.fused import (
    FusedBackend,
    fallback_reason,
    fused_available,
    fused_nearest,
)
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.pe.distance import (
    Gower,
    NullableGower,
    NullableTabPEEmbedding,
    TabPEEmbedding,
    make_distance,
)
from dpevolve.pe.specs import VoteSpec
from dpevolve.pe.votes import HardVote, SoftVote
from dpevolve.presets import get_method

needs_numba = pytest.mark.skipif(not fused_available(), reason="numba not installed")

SCHEMA = Schema(
    (
        NumericColumn("age", 17, 90, integer=True),
        NumericColumn("hours", 1, 98, integer=True),
        CategoricalColumn("sex", ("F", "M")),
        CategoricalColumn("job", ("a", "b", "c", "d")),
    )
)
RANGES = np.array([73.0, 97.0])


def _records(raw: np.ndarray, codes: np.ndarray) -> Records:
    return Records((raw - np.array([17.0, 1.0])) / RANGES, codes.astype(np.int32))


def _adversarial(rng: np.random.Generator) -> tuple[Records, Records]:
    """Private records and a population full of exact-arithmetic ties."""
    n = 700
    raw = np.column_stack([rng.integers(17, 91, n), rng.integers(1, 99, n)]).astype(float)
    codes = np.column_stack([rng.integers(0, 2, n), rng.integers(0, 4, n)])
    private = _records(raw, codes)
    # Mirror pairs around a few private records (equal distances in exact arithmetic),
    # then duplicate every candidate once, then shuffle.
    centres = raw[:40]
    gaps = rng.integers(1, 6, (40, 2))
    pop_raw = np.clip(np.vstack([centres - gaps, centres + gaps]), [17, 1], [90, 98])
    pop_codes = np.vstack([codes[:40], codes[:40]])
    pop_raw, pop_codes = np.vstack([pop_raw, pop_raw]), np.vstack([pop_codes, pop_codes])
    order = rng.permutation(len(pop_raw))
    return private, _records(pop_raw[order], pop_codes[order])


def _backends(m: int) -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = [
        ("local-1-row", LocalBackend(chunk_cells=1)),
        ("local-7-rows", LocalBackend(chunk_cells=7 * m)),
        ("local", LocalBackend()),
    ]
    if fused_available():
        out += [
            ("fused-1-row", FusedBackend(chunk_rows=1)),
            ("fused-300-rows", FusedBackend(chunk_rows=300)),
            ("fused-1-thread", FusedBackend(threads=1)),
            ("fused", FusedBackend()),
        ]
    return out


@pytest.mark.parametrize("metric", ["tabpe", "gower"])
@pytest.mark.parametrize("vote", ["hard", "soft-0.05", "soft-0.002"])
def test_histograms_identical_across_backends_and_chunks(metric, vote) -> None:
    private, population = _adversarial(np.random.default_rng(11))
    distance = TabPEEmbedding(SCHEMA) if metric == "tabpe" else Gower(SCHEMA)
    rule = HardVote() if vote == "hard" else SoftVote(float(vote.split("-")[1]))
    results = {
        name: backend.vote(private, population, distance, rule)  # type: ignore[attr-defined]
        for name, backend in _backends(len(population))
    }
    # A stream of uneven batches gives the same sum.
    batches = [private.take(slice(a, b)) for a, b in ((0, 1), (1, 250), (250, 251), (251, 700))]
    results["local-stream"] = LocalBackend().vote(batches, population, distance, rule)
    reference = results["local"]
    for name, histogram in results.items():
        np.testing.assert_array_equal(histogram, reference, err_msg=name)
    m = len(population)
    assert reference.sum() == pytest.approx(len(private), abs=len(private) * m * 2.0**-30)
    if vote == "hard":
        assert reference.sum() == len(private)


def test_near_ties_resolve_alike_on_one_row_and_block() -> None:
    """The review's example: a BLAS distance split this tie by the batch's shape."""
    schema = Schema((NumericColumn("age", 17, 90, True), CategoricalColumn("sex", ("M", "F"))))
    distance = TabPEEmbedding(schema)
    population = Records(
        ((np.array([54.0, 61, 88, 70, 63]) - 17) / 73)[:, None], np.zeros((5, 1), dtype=np.int32)
    )
    everyone = Records(
        np.repeat((np.arange(17.0, 91.0) - 17) / 73, 2)[:, None],
        np.tile([0, 1], 74)[:, None].astype(np.int32),
    )
    block = np.argmin(distance.pairwise(everyone, population), axis=1)
    alone = [
        int(np.argmin(distance.pairwise(everyone.take(slice(i, i + 1)), population)))
        for i in range(len(everyone))
    ]
    np.testing.assert_array_equal(block, alone)


def test_exp_canonical_within_one_ulp_of_libm() -> None:
    spread = np.random.default_rng(0).exponential(3, 5000)
    x = -np.concatenate([np.linspace(0, 750, 20_001), spread])
    got = exp_canonical(x)
    want = np.array([math.exp(v) for v in x])
    normal = x >= -708.0  # below, the polynomial's 2^k would be subnormal
    ulps = np.abs(got[normal] - want[normal]) / np.spacing(want[normal])
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(got[~normal], want[~normal])  # libm takes over there


def test_soft_histogram_is_quantised_and_order_free() -> None:
    rng = np.random.default_rng(5)
    distances = rng.random((300, 64))
    units = soft_histogram(distances, 0.1) * 2.0**30
    np.testing.assert_array_equal(units, np.round(units))  # whole grid units
    shuffled = soft_histogram(distances[rng.permutation(300)], 0.1)
    np.testing.assert_array_equal(shuffled, soft_histogram(distances, 0.1))
    exact = soft_row_votes(distances, 0.1).sum(axis=0)
    assert np.abs(soft_histogram(distances, 0.1) - exact).max() <= 300 * 2.0**-30
    assert soft_quantisation_slack(4000) == pytest.approx(math.sqrt(4000) * 2.0**-30)
    assert EXACT_CELL_LIMIT == 2**23


def _table(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "hours": rng.integers(1, 99, n),
            "sex": rng.choice(["F", "M"], n),
            "job": rng.choice(list("abcd"), n),
        }
    )


@needs_numba
@pytest.mark.parametrize(
    "extra",
    [
        {"method": get_method("tabpe", population=60, rounds=3, distance="tabpe")},
        {
            "method": get_method(
                "tabpe",
                population=60,
                rounds=3,
                distance="gower",
                vote=VoteSpec(kind="soft", temperature=0.05),
            ),
        },
    ],
)
def test_same_seed_same_table_on_local_and_fused(extra) -> None:
    table = _table(500, 2)
    settings = {
        "epsilon": 1.0,
        "random_state": 3,
        "noise_seed": 3,
        "method": get_method("tabpe", population=60, rounds=3),
        **extra,
    }
    local = Synthesizer(SCHEMA, **settings, backend=LocalBackend(chunk_cells=997)).fit(table)
    fused = Synthesizer(SCHEMA, **settings, backend=FusedBackend(chunk_rows=33)).fit(table)
    pd.testing.assert_frame_equal(local.synthetic_, fused.synthetic_)
    assert local.population_.equals(fused.population_)


# ----------------------------------------------------- nullable numeric columns (NaN)


@st.composite
def _nullable_problem(draw: st.DrawFn) -> tuple[Schema, Records, Records]:
    """A schema with nullable numerics, and records on a coarse grid (ties) with gaps."""
    flags = draw(st.lists(st.booleans(), min_size=1, max_size=5))
    if not any(flags):
        flags[draw(st.integers(0, len(flags) - 1))] = True
    cards = draw(st.lists(st.integers(2, 4), max_size=3))
    columns: list[NumericColumn | CategoricalColumn] = [
        NumericColumn(f"x{k}", 0, 7, nullable=flag) for k, flag in enumerate(flags)
    ]
    columns += [CategoricalColumn(f"c{k}", tuple("abcd"[:size])) for k, size in enumerate(cards)]
    schema = Schema(tuple(columns))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    missing = draw(st.sampled_from([0.0, 0.3, 0.9]))

    def records(n: int) -> Records:
        numeric = rng.integers(0, 8, (n, len(flags))) / 7.0
        gaps = (rng.random(numeric.shape) < missing) & np.array(flags)
        numeric[gaps] = np.nan
        codes = np.stack([rng.integers(0, c, n) for c in cards], 1) if cards else None
        return Records(numeric, np.zeros((n, 0), np.int32) if codes is None else codes)

    private = records(draw(st.integers(1, 150)))
    population = records(draw(st.integers(1, 40)))
    population = Records.concat([population, population])  # exact duplicates tie
    return schema, private, population


@needs_numba
@settings(max_examples=30, deadline=None)
@given(
    problem=_nullable_problem(),
    metric=st.sampled_from(["gower", "tabpe"]),
    vote=st.sampled_from(["hard", "soft-0.05", "soft-0.5"]),
    chunk=st.sampled_from([1, 7, 65_536]),
)
def test_nullable_histograms_identical_on_fused_and_reference(problem, metric, vote, chunk) -> None:
    schema, private, population = problem
    distance = make_distance(metric, schema)
    assert type(distance) in (NullableGower, NullableTabPEEmbedding)
    rule = HardVote() if vote == "hard" else SoftVote(float(vote.split("-")[1]))
    reference = LocalBackend().vote(private, population, distance, rule)
    fused = FusedBackend(chunk_rows=chunk)
    assert fused.supports(distance, rule)
    np.testing.assert_array_equal(fused.vote(private, population, distance, rule), reference)
    if vote == "hard":
        nearest = fused_nearest(private, population, distance)
        np.testing.assert_array_equal(nearest, np.argmin(distance.pairwise(private, population), 1))
        assert reference.sum() == len(private)


@needs_numba
def test_nullable_distances_fuse_and_say_so() -> None:
    schema = Schema((NumericColumn("x", 0, 1, nullable=True), CategoricalColumn("c", ("a", "b"))))
    for metric in ("gower", "tabpe"):
        distance = make_distance(metric, schema)
        assert fallback_reason(distance, HardVote()) is None
        assert FusedBackend().supports(distance, SoftVote(0.1))

    class Other(Gower):
        pass

    assert "Other distance" in str(fallback_reason(Other(schema), HardVote()))
