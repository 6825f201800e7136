"""A tiny stand-in estimator (the full joint table) and small schemas for engine tests.

The stand-in keeps the engine's tests independent of :mod:`dpevolve.estimate`: it fits
the full joint distribution of a tiny domain to the measurements by mirror descent on
the weighted squared error, answers marginals exactly from it and samples from it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.result import EngineResult
from dpevolve.measurements import Clique, Domain, Measurement
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise


class JointModel:
    """The full joint table over a tiny domain (a few thousand cells at most)."""

    def __init__(self, domain: Domain, total: int, iterations: int = 200) -> None:
        self.domain = domain
        self.total = float(total)
        self.iterations = iterations
        self.p = np.full(domain.sizes, 1.0 / math.prod(domain.sizes))

    def _axes(self, clique: Clique) -> tuple[int, ...]:
        keep = {self.domain.index(a) for a in clique}
        return tuple(i for i in range(len(self.domain.names)) if i not in keep)

    def answer(self, clique: Clique) -> np.ndarray:
        return self.total * self.p.sum(axis=self._axes(clique))

    def fit(self, measurements: Sequence[Measurement]) -> JointModel:
        if not measurements:
            return self
        weights = [1.0 / m.sigma**2 for m in measurements]
        step = 1.0 / (self.total**2 * sum(weights))
        log_p = np.log(np.maximum(self.p, 1e-300))
        for _ in range(self.iterations):
            grad = np.zeros_like(self.p)
            for m, w in zip(measurements, weights, strict=True):
                axes = self._axes(m.clique)
                residual = m.query.expand(m.query.project(self.answer(m.clique)) - m.noisy)
                shape = [1 if i in axes else s for i, s in enumerate(self.domain.sizes)]
                grad += w * self.total * residual.reshape(shape)
            log_p = log_p - step * grad
            log_p -= log_p.max()
            self.p = np.exp(log_p)
            self.p /= self.p.sum()
        return self

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        flat = rng.choice(self.p.size, size=rows, p=self.p.ravel())
        return np.stack(np.unravel_index(flat, self.domain.sizes), axis=1).astype(np.int64)


class OneWayAnswers:
    """A fitted model's 1-way answers, nothing more (what the folds read)."""

    def __init__(self, mass: np.ndarray) -> None:
        self.mass = mass

    def answer(self, clique: tuple[str, ...]) -> np.ndarray:
        return self.mass


def joint_factory(domain: Domain, total: int, spec: object) -> JointModel:
    return JointModel(domain, total, iterations=60)


def joint_size(domain: Domain, cliques: Sequence[Clique]) -> float:
    """A stand-in size: 8 bytes per cell of every clique, in MB."""
    return sum(8.0 * domain.cells(tuple(c)) for c in cliques) / 2**20


@pytest.fixture
def nulls_schema() -> Schema:
    """Three columns with a label: an integer, a nullable float and a nullable category
    (the engine tests' table with missing cells; the root ``small_schema`` has none)."""
    return Schema(
        (
            NumericColumn("age", 17, 90, integer=True),
            NumericColumn("spend", 0.0, 100.0, nullable=True),
            CategoricalColumn("job", ("a", "b", "c"), nullable=True),
            CategoricalColumn("y", ("no", "yes")),
        ),
        label="y",
    )


@pytest.fixture
def standin() -> dict[str, object]:
    """``fit_engine`` keyword arguments that plug in the stand-in estimator."""
    return {"estimator": joint_factory, "model_size": joint_size}


def cut_rule_accuracy(rows, test, cut: float = 2.8) -> float:
    """Accuracy on ``test`` of the rule the synthetic ``rows`` teach: the majority of
    ``y == "yes"`` per cell of (``tag``, ``x > cut``), the loose-range tables' structure."""
    rule = (
        rows.assign(hi=rows["x"] > cut)
        .groupby(["tag", "hi"])["y"]
        .agg(lambda s: s.eq("yes").mean() > 0.5)
    )
    keys = list(zip(test["tag"], test["x"] > cut, strict=True))
    guess = np.array([rule.get(key, False) for key in keys])
    return float(np.mean(guess == test["y"].eq("yes").to_numpy()))


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov distance: the largest gap between the
    empirical distribution functions of ``a`` and ``b``."""
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    below_a = np.searchsorted(a, grid, "right") / a.size
    return float(np.abs(below_a - np.searchsorted(b, grid, "right") / b.size).max())


def with_fillers(
    frame: pd.DataFrame,
    columns: list[NumericColumn | CategoricalColumn],
    fillers: int,
    label: str,
    rng: np.random.Generator,
) -> tuple[pd.DataFrame, Schema]:
    """``frame`` and its ``columns`` with ``fillers`` more numbers, uniform on [0, 100]
    at one decimal, that spread the budget, and a binary ``label`` (no / yes)."""
    for k in range(fillers):
        frame[f"x{k}"] = rng.uniform(0.0, 100.0, len(frame)).round(1)
        columns.append(NumericColumn(f"x{k}", 0.0, 100.0, decimals=1))
    frame[label] = rng.choice(["no", "yes"], len(frame))
    columns.append(CategoricalColumn(label, ("no", "yes")))
    return frame, Schema(tuple(columns), label=label)


def seeded_fit(
    frame: pd.DataFrame,
    schema: Schema,
    noise_seed: int,
    seed: int,
    epsilon: float = 1.0,
    public: pd.DataFrame | None = None,
    spec: EngineSpec | None = None,
) -> EngineResult:
    """The engine (``spec``, else the default) on ``frame`` at ``(epsilon, 1e-5)``, its
    noise seeded (a seeded twin of the secure noise: tests only)."""
    return fit_engine(
        FrameSource(frame, schema),
        schema,
        Budget(epsilon=epsilon, delta=1e-5),
        spec or EngineSpec(),
        noise=make_noise(noise_seed),
        rng=np.random.default_rng(seed),
        public=public,
    )
