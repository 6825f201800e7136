"""Choice of the floor, gamma, LinMix and sampling (spec §5)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpevolve.errors import InputError
from dpevolve.pe.pubmix import (
    beta_min,
    choose_floor,
    deficit,
    floor_objective,
    gamma_from_fold_counts,
    gamma_from_folds,
    invariant_mass,
    linmix,
    max_invariance_fill,
    pubmix_distribution,
    pubmix_sample,
    water_fill,
)
from dpevolve.privacy.noise import SeededNoise

N, M, EPS = 1200, 300, 5.0
DELTA = 1.0 / N


@pytest.fixture(scope="module")
def public() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    d = 200
    counts = rng.multinomial(3000, rng.dirichlet(np.full(d, 0.2)))
    return counts, counts / counts.sum()


def test_floor_objective_formula(public: tuple[np.ndarray, np.ndarray]) -> None:
    _, A = public
    d = A.size
    for t in (0.0, 0.3 / d, 1.0 / d):
        n1 = max(t, A.min())
        expected = beta_min(N, M, EPS, DELTA, n1, n1) * (0.05 + deficit(A, t))
        got = floor_objective(A, t, n=N, m=M, epsilon=EPS, delta=DELTA, gamma=0.05)
        assert got == expected


@pytest.mark.parametrize("method", ["wf", "mifr"])
def test_choose_floor(public: tuple[np.ndarray, np.ndarray], method: str) -> None:
    counts, A = public
    d = A.size
    choice = choose_floor(A, N, M, EPS, DELTA, 0.05, method, counts=counts)  # type: ignore[arg-type]
    assert 0.0 <= choice.t <= 1.0 / d
    grid = [
        floor_objective(A, float(t), n=N, m=M, epsilon=EPS, delta=DELTA, gamma=0.05)
        for t in np.linspace(0, 1 / d, 41)
    ]
    assert choice.objective <= min(grid)
    assert choice.objective == pytest.approx(
        floor_objective(A, choice.t, n=N, m=M, epsilon=EPS, delta=DELTA, gamma=0.05), rel=1e-12
    )
    expected = (
        water_fill(A, choice.t)
        if method == "wf"
        else max_invariance_fill(A, choice.t, counts=counts)
    )
    assert np.array_equal(choice.p_noise, expected)
    assert not choice.p_noise.flags.writeable
    z1, z2 = np.sort(choice.p_noise)[:2]
    assert (choice.z1, choice.z2) == (z1, z2)
    assert choice.z1 == max(choice.t, A.min())
    assert choice.beta == beta_min(N, M, EPS, DELTA, z1, z2)
    assert choice.beta <= beta_min(N, M, EPS, DELTA, choice.z1, choice.z1)
    assert choice.deficit == pytest.approx(0.5 * np.abs(choice.p_noise - A).sum(), abs=1e-12)


def test_wf_and_mifr_share_the_objective(public: tuple[np.ndarray, np.ndarray]) -> None:
    counts, A = public
    wf = choose_floor(A, N, M, EPS, DELTA, 0.05, "wf")
    mifr = choose_floor(A, N, M, EPS, DELTA, 0.05, "mifr", counts=counts)
    assert wf.t == mifr.t and wf.objective == mifr.objective
    assert invariant_mass(A, mifr.p_noise) >= invariant_mass(A, wf.p_noise) - 1e-12


def test_choose_floor_needs_three_bins() -> None:
    with pytest.raises(InputError, match="d >= 3"):
        choose_floor(np.array([0.5, 0.5]), N, M, EPS, DELTA, 0.1)


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan")])
def test_choose_floor_rejects_bad_gamma(gamma: float) -> None:
    with pytest.raises(InputError):
        choose_floor(np.full(4, 0.25), N, M, EPS, DELTA, gamma)


def test_linmix() -> None:
    d = 1000
    lm = linmix(d, N, 1000, EPS, DELTA)
    assert lm.beta == pytest.approx(0.288189, abs=5e-7)  # spec §5: N_min = 1/d = 1e-3
    assert lm.worst_case_tv == pytest.approx((1 - 1 / d) * lm.beta, rel=1e-15)
    assert np.allclose(lm.p_noise, 1 / d)
    with pytest.raises(InputError, match="d >= 3"):
        linmix(2, N, 1000, EPS, DELTA)


def test_gamma_from_folds_matches_definition() -> None:
    rng = np.random.default_rng(3)
    d, k = 12, 5
    codes = rng.integers(0, d, size=503)
    got = gamma_from_folds(codes, d, k=k, quantile=0.95, rng=np.random.default_rng(11))
    folds = np.array_split(np.random.default_rng(11).permutation(codes.size), k)
    hists = [np.bincount(codes[f], minlength=d) / f.size for f in folds]
    tvs = [0.5 * np.abs(a - b).sum() for a, b in itertools.combinations(hists, 2)]
    assert got == pytest.approx(float(np.quantile(tvs, 0.95)), rel=1e-15)
    assert len(tvs) == k * (k - 1) // 2


def test_gamma_from_folds_edge_cases() -> None:
    rng = np.random.default_rng(0)
    assert gamma_from_folds(np.zeros(50, dtype=np.int64), 4, rng=rng) == 0.0
    counts = np.array([10, 0, 25, 5])
    g = gamma_from_fold_counts(counts, rng=np.random.default_rng(5))
    codes = np.repeat(np.arange(4), counts)
    assert g == gamma_from_folds(codes, 4, rng=np.random.default_rng(5))
    assert 0.0 <= g <= 1.0
    with pytest.raises(InputError):
        gamma_from_folds(np.array([0, 1, 2]), 3, k=5, rng=rng)
    with pytest.raises(InputError):
        gamma_from_folds(np.array([0, 1, 7, 1, 1]), 3, rng=rng)


def test_pubmix_sample() -> None:
    noise = SeededNoise(1)
    prv = np.array([0, 0, 7, 0])  # counts: Pbar_prv is one-hot on bin 2
    nse = np.array([0.4, 0.3, 0.2, 0.1])
    assert np.all(pubmix_sample(prv, nse, 0.0, 50, noise) == 2)
    mix = pubmix_distribution(prv / 7, nse, 0.3)
    assert np.allclose(mix, 0.7 * prv / 7 + 0.3 * nse)
    draws = pubmix_sample(prv, nse, 0.3, 200_000, noise)
    assert draws.shape == (200_000,) and draws.dtype == np.int64
    freq = np.bincount(draws, minlength=4) / draws.size
    assert np.allclose(freq, mix, atol=5e-3)
    # Whole counts in a float array (as vote backends return them) are the same release.
    a = pubmix_sample(prv, nse, 0.3, 20, SeededNoise(9))
    b = pubmix_sample(prv.astype(float), nse, 0.3, 20, SeededNoise(9))
    assert np.array_equal(a, b)
    with pytest.raises(InputError):
        pubmix_sample(prv, nse, 1.2, 5, noise)
    with pytest.raises(InputError):
        pubmix_sample(prv, nse[:3] / nse[:3].sum(), 0.5, 5, noise)
    with pytest.raises(InputError, match="whole numbers"):
        pubmix_sample(prv / 2, nse, 0.5, 5, noise)
    with pytest.raises(InputError, match="NoiseSource"):  # a seeded generator replays
        pubmix_sample(prv, nse, 0.3, 5, np.random.default_rng(9))  # type: ignore[arg-type]
