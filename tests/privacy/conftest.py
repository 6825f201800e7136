"""Shared pieces of the privacy audit: a tiny schema, a spying backend, noise drivers.

The audits compare two neighbouring private tables ``D`` and ``D'``. End to end, a
:class:`SpyBackend` records every histogram the Synthesizer computed (and the population
it was computed over), so the exact divergence of each round's release can be set
against the ledger's claim. One-round audits drive the release's own noise path many
times at once (:func:`noisy_trials`); the helpers in :mod:`dpevolve.privacy.audit` turn
counts into bounds.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.backends import make_backend
from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.pe.distance import Distance
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.pe.votes import Vote
from dpevolve.privacy.noise import SeededNoise

DELTA = 1e-5
BATCH = 50_000  # noisy cells per batch; each batch draws from a fresh seed

#: Names a mutant of ``test_mutants.py`` to patch in for the whole session: only
#: ``benchmarks/privacy_mutants.py`` sets it, to see which test catches the mutant first.
MUTANT_VARIABLE = "DPEVOLVE_TEST_MUTANT"


@pytest.fixture(scope="session", autouse=True)
def _session_mutant() -> Iterator[None]:
    name = os.environ.get(MUTANT_VARIABLE)
    if not name:
        yield
        return
    from .test_mutants import MUTANTS

    patch = pytest.MonkeyPatch()
    MUTANTS[name](patch)
    yield
    patch.undo()


@pytest.fixture(scope="session")
def age_sex() -> Schema:
    """Age 17..90 (integer) and sex: the domain of the known findings."""
    return Schema(
        (NumericColumn("age", 17, 90, integer=True), CategoricalColumn("sex", ("Female", "Male")))
    )


class SpyBackend:
    """A backend that records each round's population and histogram, then passes them on."""

    def __init__(self, inner: Any = None) -> None:
        self.inner = inner if inner is not None else make_backend("auto")
        self.populations: list[Records] = []
        self.histograms: list[np.ndarray] = []

    def vote(self, private: Any, population: Records, distance: Distance, vote: Vote) -> np.ndarray:
        histogram = self.inner.vote(private, population, distance, vote)
        self.populations.append(population)
        self.histograms.append(np.array(histogram, dtype=np.float64))
        return histogram


def fit_spied(
    schema: Schema, table: pd.DataFrame, inner: Any = None, **kwargs: Any
) -> tuple[Synthesizer, SpyBackend]:
    """Fit with a :class:`SpyBackend`; policy warnings are expected here and silenced."""
    spy = SpyBackend(inner)
    kwargs.setdefault("delta", DELTA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = Synthesizer(schema, backend=spy, **kwargs).fit(table)
    return model, spy


def noisy_trials(
    release: GaussianRelease, histogram: np.ndarray, trials: int, seed: int
) -> np.ndarray:
    """``trials`` independent noisy histograms from the release's own noise path.

    The histogram is tiled so one call draws many trials (the noise is per cell). The
    draws come from :class:`SeededNoise` (the secure source's distributions, vectorised),
    a fresh seed per batch spawned from ``seed``: the release is copied with that
    source and its own ``noisy`` is called, so the audit samples exactly what
    :meth:`GaussianRelease.noisy` adds, at the release's sigma.
    """
    h = np.asarray(histogram, dtype=np.float64).ravel()
    per_batch = max(1, BATCH // max(h.size, 1))
    sizes = [min(per_batch, trials - start) for start in range(0, trials, per_batch)]
    seeds = np.random.SeedSequence(seed).generate_state(len(sizes), dtype=np.uint64)
    out = []
    for size, batch_seed in zip(sizes, seeds, strict=True):
        batch = copy.copy(release)
        batch.noise = SeededNoise(int(batch_seed))
        out.append(np.asarray(batch.noisy(np.tile(h, size))).reshape(size, h.size))
    return np.concatenate(out)


def projection_event(
    noisy: np.ndarray, here: np.ndarray, there: np.ndarray, sigma: float, tail: float
) -> np.ndarray:
    """The most powerful test of ``N(here, s^2)`` against ``N(there, s^2)``: the projection
    on ``here - there`` above a cut that ``there`` passes with probability ``tail``."""
    v = np.asarray(here, dtype=np.float64) - np.asarray(there, dtype=np.float64)
    norm = float(np.linalg.norm(v))
    from scipy import stats

    cut = float(v @ there) / norm + sigma * float(stats.norm.isf(tail))
    return (noisy @ v) / norm > cut
