"""The noise source: exact distributions, secure vs seeded, grid rounding, PubMix draws.

The suite is deterministic. Each distribution is checked exactly on the seeded twin
of the sampler (:class:`SeededNoise`: the same grid, rounding and tail code as the
secure source, a fixed seed, so a check passes or fails the same way every run, at
``ALPHA``). The secure source cannot be seeded by design; its checks use
``SECURE_ALPHA = 1e-9`` (and moment margins of six standard errors or more), a false
alarm nobody will see, while the sample sizes still detect a wrong scale or shape.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpevolve.errors import InputError
from dpevolve.privacy.noise import GRID, SecureNoise, SeededNoise, make_noise

ALPHA = 1e-4  # seeded checks: a fixed seed, the same verdict every run
SECURE_ALPHA = 1e-9  # checks of the OS-random path: a false alarm once in 10**9 runs


@pytest.fixture(scope="module")
def secure() -> SecureNoise:
    return SecureNoise()


def discrete_gaussian_pmf(scale: float, support: np.ndarray) -> np.ndarray:
    grid = np.arange(-int(15 * scale) - 2, int(15 * scale) + 3)
    mass = np.exp(-(grid.astype(float) ** 2) / (2 * scale**2))
    return np.exp(-(support.astype(float) ** 2) / (2 * scale**2)) / mass.sum()


def chi_square_pvalue(draws: np.ndarray, support: np.ndarray, probs: np.ndarray) -> float:
    """Goodness of fit on ``support`` plus one pooled tail bin."""
    observed = np.array([np.count_nonzero(draws == y) for y in support], dtype=float)
    observed = np.append(observed, draws.size - observed.sum())
    expected = np.append(probs, max(1.0 - probs.sum(), 0.0)) * draws.size
    keep = expected > 0
    return float(
        stats.chisquare(
            observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()
        ).pvalue
    )


# ---------------------------------------------------------------- the distributions
@pytest.mark.parametrize("scale", [0.7, 1.5, 4.0])
def test_seeded_discrete_gaussian_has_the_exact_pmf(scale: float) -> None:
    draws = SeededNoise(11)._discrete_gaussian(scale, 100_000)
    support = np.arange(-int(3 * scale) - 1, int(3 * scale) + 2)
    assert chi_square_pvalue(draws, support, discrete_gaussian_pmf(scale, support)) > ALPHA


def test_secure_discrete_gaussian_has_the_exact_pmf(secure: SecureNoise) -> None:
    """The release path (values to grid units, the integer sampler, back), exactly on the
    seeded twin; then the secure source through the same path at a false-alarm rate of
    1e-9."""
    support = np.arange(-5, 6)
    pmf = discrete_gaussian_pmf(1.5, support)
    for source, size, alpha in ((SeededNoise(21), 100_000, ALPHA), (secure, 20_000, SECURE_ALPHA)):
        draws = np.rint(source.gaussian(np.zeros(size), 1.5 * GRID) / GRID).astype(np.int64)
        assert chi_square_pvalue(draws, support, pmf) > alpha


def test_secure_and_seeded_sample_the_same_discrete_laplace(secure: SecureNoise) -> None:
    a = secure._discrete_laplace(1.5, 20_000)
    b = SeededNoise(3)._discrete_laplace(1.5, 20_000)
    support = np.arange(-6, 7)
    table = np.array([[np.count_nonzero(x == y) for y in support] for x in (a, b)])
    table = np.column_stack([table, [a.size, b.size] - table.sum(axis=1)])
    assert stats.chi2_contingency(table).pvalue > SECURE_ALPHA
    # P(y) ~ exp(-|y| / s): variance 2 r / (1 - r)^2 with r = exp(-1 / s).
    r = math.exp(-1 / 1.5)
    assert np.var(b) == pytest.approx(2 * r / (1 - r) ** 2, rel=0.05)


@pytest.mark.parametrize("sigma", [0.5, 5.0, 50.0])
def test_gaussian_noise_on_the_grid_has_spread_sigma(secure: SecureNoise, sigma: float) -> None:
    values = np.linspace(-3.3, 1e4, 20_000)
    for source, seeded in ((SeededNoise(5), True), (secure, False)):
        out = source.gaussian(values, sigma)
        # On the grid: every output is an exact multiple of GRID.
        assert np.array_equal(np.rint(out / GRID) * GRID, out)
        noise = out - values
        assert abs(noise.mean()) < 6.5 * sigma / math.sqrt(values.size)
        assert noise.std() == pytest.approx(sigma, rel=0.03)  # six standard errors
        ks = stats.kstest(noise / sigma, "norm").pvalue
        assert ks > (1e-3 if seeded else SECURE_ALPHA)


def test_secure_and_seeded_gaussians_agree(secure: SecureNoise) -> None:
    zeros = np.zeros(20_000)
    a = secure.gaussian(zeros, 2.0)
    b = SeededNoise(9).gaussian(zeros, 2.0)
    assert stats.ks_2samp(a, b).pvalue > SECURE_ALPHA


def test_laplace_spread_matches_scale(secure: SecureNoise) -> None:
    for source, alpha in ((SeededNoise(2), ALPHA), (secure, SECURE_ALPHA)):
        noise = source.laplace(np.full(20_000, 7.25), 3.0) - 7.25
        # the sample sd's standard error is 0.8% here: 5% is over six of them
        assert noise.std() == pytest.approx(math.sqrt(2) * 3.0, rel=0.05)
        assert stats.kstest(noise, "laplace", args=(0, 3.0)).pvalue > alpha


# ---------------------------------------------------------------- reproducibility
def test_secure_never_repeats(secure: SecureNoise) -> None:
    values = np.zeros(64)
    assert not np.array_equal(secure.gaussian(values, 1.0), secure.gaussian(values, 1.0))
    assert not np.array_equal(
        secure.mixture_sample(np.ones(64, dtype=int), np.ones(64), 0.5, 64),
        SecureNoise().mixture_sample(np.ones(64, dtype=int), np.ones(64), 0.5, 64),
    )
    assert make_noise(None).name == "secure"


def draw_everything(seed: int) -> bytes:
    source = make_noise(seed)
    assert source.name == "seeded"
    parts = [
        source.gaussian(np.arange(50.0) / 3, 4.0),
        source.laplace(np.arange(50.0) / 7, 2.0),
        np.array([source.noisy_argmax(np.arange(10.0), 3.0) for _ in range(20)]),
        source.mixture_sample(np.arange(20), np.linspace(0.1, 1, 20), 0.3, 200),
    ]
    return b"".join(p.tobytes() for p in parts)


def test_seeded_repeats_bit_for_bit() -> None:
    assert draw_everything(42) == draw_everything(42)
    assert draw_everything(42) != draw_everything(43)


# ---------------------------------------------------------------- grid rounding
@given(
    st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40),
    st.data(),
)
def test_rounding_adds_at_most_the_slack(values: list[float], data: st.DataObject) -> None:
    noise = SeededNoise(0)
    v = np.array(values)
    changed = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=len(values)))
    deltas = data.draw(st.lists(st.floats(-5, 5), min_size=len(changed), max_size=len(changed)))
    w = v.copy()
    w[changed] = v[changed] + np.array(deltas)
    k = np.count_nonzero(w != v)
    rounded = (noise._to_units(v, 1.0) - noise._to_units(w, 1.0)).astype(float) * GRID
    bound = np.linalg.norm(v - w) + noise.rounding_slack(int(k))
    assert np.linalg.norm(rounded) <= bound * (1 + 1e-12)
    l1_bound = np.abs(v - w).sum() + noise.rounding_slack(int(k), "l1")
    assert np.abs(rounded).sum() <= l1_bound * (1 + 1e-12)


def test_integer_inputs_round_exactly() -> None:
    counts = np.array([0.0, 3.0, 17.0, 123456.0])
    assert np.array_equal(SeededNoise(0)._to_units(counts, 1.0) * GRID, counts)
    assert SeededNoise(0).rounding_slack(30_000) == pytest.approx(GRID * math.sqrt(30_000))


# ---------------------------------------------------------------- selection
def test_noisy_argmax_is_the_exponential_mechanism(secure: SecureNoise) -> None:
    # P(pick the larger of two scores a apart) = 1 / (1 + exp(-a / scale)).
    expected = 1 / (1 + math.exp(-1.0))
    seeded = SeededNoise(4)
    hits = sum(seeded.noisy_argmax([0.0, 2.0], 2.0) for _ in range(40_000))
    assert stats.binomtest(hits, 40_000, expected).pvalue > 1e-3
    hits = sum(secure.noisy_argmax([1.5, 0.5], 1.0) == 0 for _ in range(4_000))
    assert stats.binomtest(hits, 4_000, expected).pvalue > SECURE_ALPHA


# ---------------------------------------------------------------- PubMix draws
def mixture(counts: np.ndarray, p_public: np.ndarray, beta: float) -> np.ndarray:
    return (1 - beta) * counts / counts.sum() + beta * p_public / p_public.sum()


@pytest.mark.parametrize(
    ("counts", "p_public", "beta"),
    [
        ([5, 0, 3, 2], [0.1, 0.2, 0.3, 0.4], 0.3),
        ([1, 2, 0, 1], [0.25, 0.25, 0.5, 0.0], 0.6),  # small integer weights: slow path
        ([4, 4, 1, 1], [1e-300, 0.5, 0.25, 0.25], 1 / 3),  # weights far above 2**62
        ([2, 1, 1], [0.2, 0.3, 0.5], 1.0),
        ([2, 1, 1], [0.2, 0.3, 0.5], 0.0),
    ],
)
def test_mixture_sample_matches_the_mixture(
    secure: SecureNoise, counts: list[int], p_public: list[float], beta: float
) -> None:
    h, p = np.array(counts), np.array(p_public)
    expected = mixture(h, p, beta)
    for source, m, alpha in ((SeededNoise(8), 100_000, ALPHA), (secure, 20_000, SECURE_ALPHA)):
        draws = source.mixture_sample(h, p, beta, m)
        observed = np.bincount(draws, minlength=h.size)
        assert observed.size == h.size
        assert np.all(observed[expected == 0] == 0)
        support = expected > 0
        if support.sum() > 1:
            pvalue = stats.chisquare(observed[support], expected[support] * m).pvalue
            assert pvalue > alpha


class TiedHead(SeededNoise):
    """Forces every vectorised 62-bit head to tie, so the exact tail decides."""

    tie = 1 << 42

    def _below(self, bound: int, size: int) -> np.ndarray:
        if bound == 1 << 62:
            return np.full(size, self.tie, dtype=np.int64)
        return super()._below(bound, size)


def test_bernoulli_reads_bits_past_the_head() -> None:
    # beta = 2**-20 + 2**-72 has 72 bits: head 2**42, then 10 more bits give 1 in 1024.
    beta = 2.0**-20 + 2.0**-72
    source = TiedHead(1)
    hits = int(source._bernoulli(beta, 20_000).sum())
    assert stats.binomtest(hits, 20_000, 1 / 1024).pvalue > 1e-3


def test_mixture_sample_rejects_bad_input(secure: SecureNoise) -> None:
    with pytest.raises(InputError):
        secure.mixture_sample(np.array([1.5, 2.0]), np.ones(2), 0.5, 3)
    with pytest.raises(InputError):
        secure.mixture_sample(np.array([1, 2]), np.ones(3), 0.5, 3)
    with pytest.raises(InputError):
        secure.mixture_sample(np.array([1, 2]), np.ones(2), 1.5, 3)
    with pytest.raises(InputError):
        secure.gaussian(np.array([np.nan]), 1.0)
    with pytest.raises(InputError):
        secure.gaussian(np.zeros(2), 0.0)
    with pytest.raises(InputError):
        secure.noisy_argmax([], 1.0)
