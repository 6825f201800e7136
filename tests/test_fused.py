"""FusedBackend against exact references; GpuBackend's absence and its shared logic."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve.backends import fused as fused_module
from dpevolve.backends import fused_kernels
from dpevolve.backends import gpu as gpu_module
from dpevolve.backends.canonical import soft_histogram
from dpevolve.backends.fused import FusedBackend, fused_available
from dpevolve.backends.gpu import GpuBackend, gpu_available
from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import CategoricalColumn, Hierarchy, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.distance import Gower, TabPEEmbedding, make_distance
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote

needs_numba = pytest.mark.skipif(not fused_available(), reason="numba is not installed")

SOFT_RTOL = 1e-12
# Weights under ~1e-300 may underflow differently in numpy's SIMD exp and libm.
SOFT_ATOL = 1e-290


# ------------------------------------------------------------------ references


def exact_embedding(x: Records, c: Records) -> np.ndarray:
    """Tab-PE distances per pair, as the fused kernels define them (no BLAS identity)."""
    s = np.zeros((len(x), len(c)))
    for k in range(x.numeric.shape[1]):
        s += (x.numeric[:, k, None] - c.numeric[None, :, k]) ** 2
    mismatches = np.zeros((len(x), len(c)), dtype=np.int64)
    for k in range(x.codes.shape[1]):
        mismatches += x.codes[:, k, None] != c.codes[None, :, k]
    return np.sqrt(s + mismatches * (2.0 * TabPEEmbedding.CATEGORY_WEIGHT**2))


def reference(private: Records, population: Records, distance, vote) -> np.ndarray:
    """The spec's histogram from an exact distance matrix (one block); soft votes by
    the canonical quantised rule every backend follows (dpevolve.backends.canonical)."""
    if isinstance(distance, TabPEEmbedding):
        d = exact_embedding(private, population)
    else:
        d = distance.pairwise(private, population)
    if len(private) == 0:
        return np.zeros(len(population))
    if isinstance(vote, SoftVote):
        return soft_histogram(d, vote.temperature)
    return vote.histogram(d)


# ------------------------------------------------------------------ generators


def make_schema(rng: np.random.Generator, n_num: int, n_cat: int, weighted: bool) -> Schema:
    columns: list[NumericColumn | CategoricalColumn] = []
    for k in range(n_num):
        weight = float(rng.uniform(0.05, 1.0)) if weighted else None
        columns.append(
            NumericColumn(f"n{k}", 0, int(rng.integers(1, 20)), bool(rng.random() < 0.7), weight)
        )
    for k in range(n_cat):
        size = int(rng.integers(1, 7))
        values = tuple(f"v{v}" for v in range(size))
        hierarchy = None
        if size >= 3 and rng.random() < 0.5:
            tree = {"left": list(values[: size // 2]), "right": list(values[size // 2 :])}
            hierarchy = Hierarchy.from_nested(f"c{k}", tree, values)
        weight = float(rng.uniform(0.05, 1.0)) if weighted else None
        columns.append(CategoricalColumn(f"c{k}", values, hierarchy, weight))
    order = rng.permutation(len(columns))
    return Schema(tuple(columns[i] for i in order))


def make_records(schema: Schema, rng: np.random.Generator, size: int, coarse: bool) -> Records:
    records = Variation(Layout.of(schema)).random(size, rng)
    if coarse:  # a grid of 5 values: many exact ties between distances
        records = Records(np.round(records.numeric * 4) / 4, records.codes)
    return records


def make_population(schema: Schema, rng: np.random.Generator, size: int, coarse: bool) -> Records:
    base = make_records(schema, rng, max(1, size // 2), coarse)
    # Duplicated candidates: ties that must go to the lowest index.
    return base.take(rng.integers(0, len(base), size=size))


kinds = st.sampled_from(["numeric", "categorical", "mixed"])


@st.composite
def problems(draw: st.DrawFn) -> tuple[Schema, Records, Records]:
    kind = draw(kinds)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_num = draw(st.integers(1, 3)) if kind != "categorical" else 0
    n_cat = draw(st.integers(1, 4)) if kind != "numeric" else 0
    schema = make_schema(rng, n_num, n_cat, draw(st.booleans()))
    coarse = draw(st.booleans())
    private = make_records(schema, rng, draw(st.integers(0, 70)), coarse)
    population = make_population(schema, rng, draw(st.integers(1, 40)), coarse)
    return schema, private, population


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------ properties


@needs_numba
@PROPERTY
@given(problems(), st.sampled_from(["gower", "tabpe"]))
def test_hard_votes_are_exact(problem: tuple[Schema, Records, Records], name: str) -> None:
    schema, private, population = problem
    distance = Gower(schema) if name == "gower" else TabPEEmbedding(schema)
    got = FusedBackend().vote(private, population, distance, HardVote())
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, reference(private, population, distance, HardVote()))
    if name == "gower":  # LocalBackend's Gower is exact too
        expected = LocalBackend().vote(private, population, distance, HardVote())
        np.testing.assert_array_equal(got, expected)


@needs_numba
@PROPERTY
@given(
    problems(),
    st.sampled_from(["gower", "tabpe"]),
    st.sampled_from([1e-3, 0.015, 0.03, 0.06, 1.0, 50.0]),
)
def test_soft_votes_match_to_1e12(
    problem: tuple[Schema, Records, Records], name: str, tau: float
) -> None:
    schema, private, population = problem
    distance = Gower(schema) if name == "gower" else TabPEEmbedding(schema)
    vote = SoftVote(tau)
    got = FusedBackend().vote(private, population, distance, vote)
    expected = reference(private, population, distance, vote)
    np.testing.assert_array_equal(got, expected)  # the canonical rule, bit for bit
    # Quantisation moves each vote by at most ~2^-31: close to the unrounded softmax.
    unrounded = vote.histogram(distance.pairwise(private, population))
    np.testing.assert_allclose(got, unrounded, rtol=SOFT_RTOL, atol=len(private) * 2.0**-30)
    slack = len(private) * len(population) * 2.0**-30
    assert math.isclose(got.sum(), len(private), rel_tol=1e-12, abs_tol=slack)


@needs_numba
@settings(max_examples=25, deadline=None)
@given(problems(), st.sampled_from(["gower", "tabpe"]), st.integers(1, 9), st.booleans())
def test_streamed_batches_equal_one_block(
    problem: tuple[Schema, Records, Records], name: str, chunk: int, soft: bool
) -> None:
    schema, private, population = problem
    distance = Gower(schema) if name == "gower" else TabPEEmbedding(schema)
    vote = SoftVote(0.05) if soft else HardVote()
    cuts = [0, len(private) // 3, len(private) // 3, len(private)]  # one empty batch
    batches = [private.take(slice(a, b)) for a, b in itertools.pairwise(cuts)]
    got = FusedBackend(chunk_rows=chunk).vote(iter(batches), population, distance, vote)
    expected = reference(private, population, distance, vote)
    if soft:
        np.testing.assert_allclose(got, expected, rtol=SOFT_RTOL, atol=SOFT_ATOL)
    else:
        np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ edge cases


@pytest.fixture(scope="module")
def adultish() -> Schema:
    cards = {"workclass": 8, "education": 16, "marital": 7, "race": 5, "sex": 2}
    columns: list[NumericColumn | CategoricalColumn] = [NumericColumn("age", 17, 90, True)]
    columns += [CategoricalColumn(k, tuple(range(v))) for k, v in cards.items()]
    columns.append(NumericColumn("hours", 1, 99, True))
    return Schema(tuple(columns))


@needs_numba
@pytest.mark.parametrize("name", ["gower", "tabpe"])
def test_many_tiles_and_blocks(adultish: Schema, name: str) -> None:
    # Past one tile of candidates (512) and one block of records (256), with ties.
    rng = np.random.default_rng(11)
    private = make_records(adultish, rng, 700, coarse=False)
    population = make_population(adultish, rng, 1300, coarse=False)
    distance = Gower(adultish) if name == "gower" else TabPEEmbedding(adultish)
    hard = FusedBackend().vote(private, population, distance, HardVote())
    np.testing.assert_array_equal(hard, reference(private, population, distance, HardVote()))
    soft = FusedBackend().vote(private, population, distance, SoftVote(0.03))
    expected = reference(private, population, distance, SoftVote(0.03))
    np.testing.assert_allclose(soft, expected, rtol=SOFT_RTOL, atol=SOFT_ATOL)


@needs_numba
def test_embedding_ties_are_broken_on_the_root_not_the_square() -> None:
    # Candidate 0 is one ulp further in squared distance than candidate 1, but both
    # squares round to the same root: the spec's vote (on d) picks the lower index.
    schema = Schema((NumericColumn("a", 0.0, 1.0), NumericColumn("b", 0.0, 1.0)))
    a, b = 0.9066351196001362, 0.9563777886388609
    population = Records(
        np.array([[np.nextafter(a, 2.0), b], [a, b]]), np.zeros((2, 0), dtype=np.int32)
    )
    private = Records(np.zeros((1, 2)), np.zeros((1, 0), dtype=np.int32))
    d = exact_embedding(private, population)
    s = np.array([(0.0 + x * x) + y * y for x, y in population.numeric])
    assert s[0] > s[1] and d[0, 0] == d[0, 1]  # the premise
    got = FusedBackend().vote(private, population, TabPEEmbedding(schema), HardVote())
    np.testing.assert_array_equal(got, [1.0, 0.0])


@needs_numba
def test_soft_votes_do_not_depend_on_threads(adultish: Schema) -> None:
    import numba

    rng = np.random.default_rng(3)
    private = make_records(adultish, rng, 1500, coarse=False)
    population = make_records(adultish, rng, 300, coarse=False)
    vote = SoftVote(0.03)
    results = [
        FusedBackend(threads=t).vote(private, population, Gower(adultish), vote)
        for t in sorted({1, numba.config.NUMBA_NUM_THREADS})
    ]
    for other in results[1:]:
        np.testing.assert_array_equal(other, results[0])


@needs_numba
@pytest.mark.parametrize("name", ["gower", "tabpe"])
@pytest.mark.parametrize("vote", [HardVote(), SoftVote(0.03)], ids=["hard", "soft"])
def test_population_of_one_and_no_private_records(adultish: Schema, name: str, vote) -> None:
    rng = np.random.default_rng(5)
    distance = Gower(adultish) if name == "gower" else TabPEEmbedding(adultish)
    private = make_records(adultish, rng, 17, coarse=False)
    one = make_records(adultish, rng, 1, coarse=False)
    np.testing.assert_array_equal(FusedBackend().vote(private, one, distance, vote), [17.0])
    empty = private.take(slice(0, 0))
    population = make_records(adultish, rng, 4, coarse=False)
    np.testing.assert_array_equal(FusedBackend().vote(empty, population, distance, vote), 0.0)
    np.testing.assert_array_equal(FusedBackend().vote([], population, distance, vote), 0.0)
    with pytest.raises(InputError, match="empty population"):
        FusedBackend().vote(private, empty, distance, vote)


@needs_numba
def test_blas_option_agrees_away_from_near_ties(adultish: Schema) -> None:
    # Continuous numeric values: distance gaps are far above the identity's ~1e-8 error.
    rng = np.random.default_rng(9)
    layout = Layout.of(adultish)
    numeric = rng.random((400, len(layout.numeric)))
    codes = np.stack([rng.integers(0, c, 400) for c in layout.cardinalities], 1)
    private = Records(numeric[:300], codes[:300].astype(np.int32))
    population = Records(numeric[300:], codes[300:].astype(np.int32))
    distance = TabPEEmbedding(adultish)
    fast = FusedBackend(exact=False, chunk_rows=64).vote(private, population, distance, HardVote())
    np.testing.assert_array_equal(fast, reference(private, population, distance, HardVote()))


def test_other_votes_and_distances_fall_back(adultish: Schema) -> None:
    class Halved(HardVote):
        def histogram(self, distances: np.ndarray) -> np.ndarray:
            return super().histogram(distances) / 2

    rng = np.random.default_rng(1)
    private = make_records(adultish, rng, 30, coarse=True)
    population = make_records(adultish, rng, 8, coarse=True)
    backend = FusedBackend()
    with pytest.warns(RuntimeWarning, match=r"numpy reference \(no fused kernel for the Halved"):
        got = backend.vote(private, population, Gower(adultish), Halved())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per backend, not every round
        backend.vote(private, population, Gower(adultish), Halved())
    expected = LocalBackend().vote(private, population, Gower(adultish), Halved())
    np.testing.assert_array_equal(got, expected)
    assert not FusedBackend().supports(Gower(adultish), Halved())


def test_without_numba_it_falls_back_with_a_warning(
    adultish: Schema, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(fused_module._numba_state, "ok", False)
    assert not fused_available()
    rng = np.random.default_rng(2)
    private = make_records(adultish, rng, 20, coarse=True)
    population = make_records(adultish, rng, 6, coarse=True)
    with pytest.warns(RuntimeWarning, match="numba is not installed"):
        got = FusedBackend().vote(private, population, Gower(adultish), HardVote())
    expected = LocalBackend().vote(private, population, Gower(adultish), HardVote())
    np.testing.assert_array_equal(got, expected)


def test_bad_arguments_are_input_errors() -> None:
    with pytest.raises(InputError):
        FusedBackend(chunk_rows=0)
    with pytest.raises(InputError):
        FusedBackend(threads=0)


# ------------------------------------------------------------------ kernel pieces


@needs_numba
def test_vectorised_exp_is_within_one_ulp_of_libm() -> None:
    fused_module.compile_kernels()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-746, 0, 200_000), rng.uniform(-1, 0, 50_000), [0.0]])
    d = -x  # exp_logits takes distances: exp(-d / 1 - 0)
    out = np.empty_like(d)
    fused_kernels.exp_logits(d, 1.0, 0.0, out, np.empty(len(d), dtype=np.int64))
    expected = np.array([math.exp(v) for v in x])
    normal = expected > 2.3e-308
    ulps = np.abs(out[normal] - expected[normal]) / np.spacing(expected[normal])
    assert ulps.max() <= 1.0
    np.testing.assert_array_equal(out[~normal], expected[~normal])


@needs_numba
def test_pairwise_sum_is_numpys() -> None:
    fused_module.compile_kernels()
    rng = np.random.default_rng(4)
    for m in [*range(1, 140), 255, 256, 1000, 4999, 100_003]:
        row = np.exp(-50 * rng.random(m))
        stack, values = np.empty((64, 3), dtype=np.int64), np.empty(64)
        assert fused_kernels.pairwise_sum(row, stack, values) == row.sum()


# ------------------------------------------------------------------ GPU


def test_gpu_is_unavailable_here_and_says_so() -> None:
    if gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(InputError, match="no GPU: install torch with CUDA"):
        GpuBackend()


@pytest.mark.parametrize("name", ["gower", "tabpe"])
@pytest.mark.parametrize("vote", [HardVote(), SoftVote(0.03)], ids=["hard", "soft"])
def test_gpu_computation_on_numpy_arrays(adultish: Schema, name: str, vote) -> None:
    # GpuBackend's array code is numpy-compatible (CuPy's path): run it on numpy.
    rng = np.random.default_rng(8)
    private = make_records(adultish, rng, 120, coarse=True)
    population = make_population(adultish, rng, 50, coarse=True)
    distance = Gower(adultish) if name == "gower" else TabPEEmbedding(adultish)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gpu_module._vote_with(
            gpu_module._xp_ops(np), private, population, distance, vote, chunk_cells=500
        )
    expected = reference(private, population, distance, vote)
    if isinstance(vote, HardVote):
        np.testing.assert_array_equal(got, expected)
    else:
        # The device's exp may differ in the last bit: a vote may move one grid unit.
        np.testing.assert_allclose(got, expected, rtol=0, atol=len(private) * 2.0**-30)
        np.testing.assert_array_equal(got * 2.0**30, np.round(got * 2.0**30))


@pytest.mark.parametrize("name", ["gower", "tabpe"])
@pytest.mark.parametrize("vote", [HardVote(), SoftVote(0.03)], ids=["hard", "soft"])
def test_gpu_computation_with_nullable_columns(name: str, vote) -> None:
    schema = Schema(
        (
            NumericColumn("a", 0, 7, nullable=True),
            NumericColumn("b", 0, 7),
            NumericColumn("c", 0, 7, nullable=True),
            CategoricalColumn("s", ("x", "y", "z")),
        )
    )
    rng = np.random.default_rng(9)

    def records(n: int) -> Records:
        numeric = rng.integers(0, 8, (n, 3)) / 7.0
        numeric[rng.random((n, 3)) < 0.3] = np.nan
        numeric[:, 1] = rng.integers(0, 8, n) / 7.0
        return Records(numeric, rng.integers(0, 3, (n, 1)).astype(np.int32))

    private, population = records(200), records(40)
    distance = make_distance(name, schema)
    got = gpu_module._vote_with(
        gpu_module._xp_ops(np), private, population, distance, vote, chunk_cells=700
    )
    expected = LocalBackend().vote(private, population, distance, vote)
    if isinstance(vote, HardVote):
        np.testing.assert_array_equal(got, expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=0, atol=len(private) * 2.0**-30)


@needs_numba
def test_warmup_runs_every_kernel_from_plain_terms(adultish: Schema) -> None:
    # warmup() builds its inputs from the backend vocabulary alone (no PE classes).
    backend = FusedBackend()
    backend.warmup()
    rng = np.random.default_rng(2)
    private = make_records(adultish, rng, 20, coarse=True)
    population = make_records(adultish, rng, 5, coarse=True)
    for distance in (Gower(adultish), TabPEEmbedding(adultish)):
        got = backend.vote(private, population, distance, HardVote())
        np.testing.assert_array_equal(got, reference(private, population, distance, HardVote()))
