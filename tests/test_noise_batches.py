"""Noise drawn in batches: one call into a sampler per batch, on both noise sources.

The seeded twin goes through the same batching as the secure source, so its
statistical checks (seeded, deterministic) cover the path the secure one takes; the
secure source itself is checked structurally here (counts, grid, independence of
batches), since its draws cannot be seeded by design.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from dpevolve.privacy import noise as noise_module
from dpevolve.privacy.noise import GRID, SecureNoise, SeededNoise


def _spy(source: object, name: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the size of every call of primitive ``name`` on ``source``."""
    sizes: list[int] = []
    inner = getattr(source, name)

    def recording(scale: float, size: int) -> np.ndarray:
        sizes.append(size)
        return inner(scale, size)

    monkeypatch.setattr(source, name, recording)
    return sizes


@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_seeded_draws_come_in_batches_and_keep_their_law(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(noise_module, "_BATCH", 1000)
    source = SeededNoise(7)
    sizes = _spy(source, f"_discrete_{kind}", monkeypatch)
    scale = 3.0
    values = np.zeros(20_500)
    out = getattr(source, kind)(values, scale)
    assert sizes == [1000] * 20 + [500]
    assert out.shape == values.shape
    units = out / GRID
    np.testing.assert_array_equal(units, np.round(units))  # on the grid
    # The law of the whole vector, batches included: right scale, no batch structure.
    target = scale**2 if kind == "gaussian" else 2 * scale**2
    assert np.var(out) == pytest.approx(target, rel=0.05)
    means = out.reshape(-1, 500).mean(axis=1)  # batch means are i.i.d. around 0
    assert stats.ttest_1samp(means, 0.0).pvalue > 1e-3


def test_secure_draws_come_in_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(noise_module, "_BATCH", 300)
    source = SecureNoise()
    sizes = _spy(source, "_discrete_gaussian", monkeypatch)
    out = source.gaussian(np.full(700, 5.0), 2.0)
    assert sizes == [300, 300, 100]
    assert out.shape == (700,)
    np.testing.assert_array_equal(out / GRID, np.round(out / GRID))
    # Fresh noise in every batch (equal batches would mean a reused draw): with 300
    # draws of scale 2 / GRID grid units, a repeat has probability ~0.
    assert len({tuple(out[:300]), tuple(out[300:600])}) == 2
    assert source.gaussian(np.zeros(0), 2.0).shape == (0,)


def test_secure_argmax_takes_a_float_array() -> None:
    source = SecureNoise()
    scores = np.array([0.0, 0.0, 1e6])  # a huge margin: the top score wins
    assert source.noisy_argmax(scores, 1.0) == 2
