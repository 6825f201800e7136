"""GaussianRelease draws exactly the noise its ledger event records."""

from __future__ import annotations

import numpy as np
import pytest

from dpevolve.data.encoding import Records
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.privacy.noise import SecureNoise, SeededNoise


class KnownNormal:
    """A source whose Gaussian noise is a fixed unit-normal vector times sigma."""

    name = "seeded"

    def __init__(self, z: np.ndarray) -> None:
        self.z = z
        self.sigmas: list[float] = []

    def gaussian(self, values: np.ndarray, sigma: float) -> np.ndarray:
        self.sigmas.append(sigma)
        return values + sigma * self.z

    def laplace(self, values: np.ndarray, scale: float) -> np.ndarray:
        raise AssertionError("a Gaussian release draws no Laplace noise")

    def noisy_argmax(self, scores: np.ndarray, scale: float) -> int:
        raise AssertionError("a Gaussian release draws no noisy max")

    def mixture_sample(
        self, counts: np.ndarray, p_public: np.ndarray, beta: float, m: int
    ) -> np.ndarray:
        raise AssertionError("a Gaussian release draws no mixture")

    def rounding_slack(self, d: int, norm: str = "l2") -> float:
        return 0.0


def population(size: int) -> Records:
    return Records(np.zeros((size, 1)), np.zeros((size, 0), dtype=np.int32))


@pytest.mark.parametrize("sigma", [0.3, 7.0])
def test_noisy_histogram_is_h_plus_sigma_z(sigma: float) -> None:
    rng = np.random.default_rng(0)
    h = rng.integers(0, 50, 200).astype(float)
    z = rng.standard_normal(200)
    source = KnownNormal(z)
    release = GaussianRelease(sigma, 1.4, noise=source, rounding_slack=1e-6)
    assert np.array_equal(release.noisy(h), h + sigma * z)
    selection = release.select(h, 10, rng, population=population(200), mode="rank")
    assert source.sigmas == [sigma, sigma]
    assert selection.event.sigma == sigma
    assert selection.event.sensitivity == pytest.approx(1.4 + 1e-6, rel=0, abs=1e-15)
    assert np.array_equal(selection.parents, np.argsort(-(h + sigma * z), kind="stable")[:10])


def test_exact_calibration_is_reported_apart_and_never_charged() -> None:
    """The charged event is the calibrated bound whatever the search finds (the free
    rounds of an exact search depend on earlier noisy outputs); the exact value, with
    the rounding slack only when something can move, goes to ``exact_sensitivity``."""
    h = np.arange(5.0)
    for exact, recorded in ((0.0, 0.0), (0.5, 0.5 + 1e-6)):
        release = GaussianRelease(
            2.0,
            1.0,
            noise=KnownNormal(np.zeros(5)),
            sensitivity_of=lambda _, exact=exact: exact,
            rounding_slack=1e-6,
        )
        selection = release.select(
            h, 2, np.random.default_rng(0), population=population(5), mode="sample"
        )
        assert selection.event.sensitivity == 1.0 + 1e-6
        assert selection.info["exact_sensitivity"] == recorded


@pytest.mark.parametrize("sigma", [3.0, 40.0])
def test_real_sources_spread_matches_the_recorded_sigma(sigma: float) -> None:
    h = np.random.default_rng(1).random(20_000) * 100
    for source in (SeededNoise(1), SecureNoise()):
        release = GaussianRelease(sigma, 1.0, noise=source)
        spread = release.noisy(h) - h
        # The sample std of 20000 draws is within 0.5% (one s.d.) of the true one.
        assert spread.std() == pytest.approx(release.event().sigma, rel=0.03)


def test_slack_for_a_shorter_histogram_is_refused() -> None:
    source = SeededNoise(0)
    release = GaussianRelease(2.0, 1.0, noise=source, rounding_slack=source.rounding_slack(10))
    h = np.arange(11.0)
    with pytest.raises(AssertionError, match="shorter histogram"):
        release.select(h, 2, np.random.default_rng(0), population=population(11), mode="rank")
    release.rounding_slack = source.rounding_slack(11)
    selection = release.select(
        h, 2, np.random.default_rng(0), population=population(11), mode="rank"
    )
    assert selection.parents.size == 2
