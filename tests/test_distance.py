from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.backends.local import LocalBackend
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import Schema
from dpevolve.pe.distance import Gower, TabPEEmbedding
from dpevolve.pe.variation import Variation
from dpevolve.pe.votes import HardVote, SoftVote


def _records(schema: Schema, seed: int, size: int) -> Records:
    return Variation(Layout.of(schema)).random(size, np.random.default_rng(seed))


def test_gower_matches_the_formula(small_schema: Schema) -> None:
    gower = Gower(small_schema)
    x, c = _records(small_schema, 1, 5), _records(small_schema, 2, 4)
    d = gower.pairwise(x, c)
    job = small_schema["job"].distance_matrix()  # type: ignore[union-attr]
    for i in range(5):
        for j in range(4):
            expected = 0.25 * (
                abs(x.numeric[i, 0] - c.numeric[j, 0])
                + abs(x.numeric[i, 1] - c.numeric[j, 1])
                + job[x.codes[i, 0], c.codes[j, 0]]
                + (x.codes[i, 1] != c.codes[j, 1])
            )
            assert math.isclose(d[i, j], expected, abs_tol=1e-12)


def test_embedding_distance_equals_l2_of_the_explicit_embedding(small_schema: Schema) -> None:
    emb = TabPEEmbedding(small_schema)
    x, c = _records(small_schema, 3, 6), _records(small_schema, 4, 5)
    ex, ec = emb.embed(x), emb.embed(c)
    direct = np.linalg.norm(ex[:, None, :] - ec[None, :, :], axis=2)
    assert np.allclose(emb.pairwise(x, c), direct, atol=1e-7)
    assert math.isclose(emb.diameter(), math.sqrt(2 + 2 * 2 / 9))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000))
def test_triangle_inequality(small_schema: Schema, seed: int) -> None:
    pts = _records(small_schema, seed, 12)
    # The embedding goes through ||x||^2 + ||c||^2 - 2 x.c, exact to ~1e-8 after the sqrt.
    for dist, tol in ((Gower(small_schema), 1e-12), (TabPEEmbedding(small_schema), 1e-7)):
        d = dist.pairwise(pts, pts)
        # d(a, c) <= d(a, b) + d(b, c) for all triples
        assert np.all(d[:, None, :] <= d[:, :, None] + d[None, :, :] + tol)
        assert np.allclose(np.diag(d), 0.0, atol=tol)
        assert d.max() <= dist.diameter() + tol


def test_chunked_histogram_equals_one_block(small_schema: Schema) -> None:
    private, population = _records(small_schema, 5, 1000), _records(small_schema, 6, 37)
    gower = Gower(small_schema)
    for vote in (HardVote(), SoftVote(0.05)):
        whole = LocalBackend().vote(private, population, gower, vote)
        chunked = LocalBackend(chunk_cells=37 * 13).vote(private, population, gower, vote)
        np.testing.assert_array_equal(whole, chunked)  # exact sums: chunking cannot matter
        streamed = LocalBackend(chunk_cells=10_000).vote(
            [private.take(slice(0, 400)), private.take(slice(400, None))], population, gower, vote
        )
        np.testing.assert_array_equal(whole, streamed)
        # Soft votes are rounded to multiples of 2^-30: within 1000 * 2^-30 of the softmax.
        unrounded = vote.histogram(gower.pairwise(private, population))
        assert np.allclose(whole, unrounded, rtol=0, atol=1000 * 2.0**-30)
        assert math.isclose(whole.sum(), 1000.0, abs_tol=1000 * 37 * 2.0**-30)
