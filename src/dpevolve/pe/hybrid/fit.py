"""Fit a weighted candidate pool to released marginals (post-processing only).

Given candidates ``c_1 .. c_P`` (encoded records that are already public: the released
PE population and mutations of it) and released noisy marginals ``y`` (counts divided
by the public row count ``n``), find weights on the probability simplex

``w* = argmin_{w >= 0, sum w = 1} 1/2 ||A w - y||^2``,

where column ``j`` of ``A`` is the 0/1 indicator of the cells candidate ``j`` falls in
(one cell per measured marginal), so ``A w`` is the weighted pool's marginals. The
solver is FISTA (accelerated projected gradient) with an exact projection onto the
simplex and adaptive restart; the step is ``1 / L`` with ``L`` the largest eigenvalue of
``A^T A`` from power iteration.

A fixed pool can only mix the rows it has, so :meth:`MarginalFit.grow` enlarges it:
fit, draw parents by weight, mutate them with the project's :class:`Variation`, refit on
the survivors plus the children. :func:`draw_rows` then draws the output rows from the
weighted support. None of this reads private data: its randomness may come from the
run's seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dpevolve.data.encoding import Records
from dpevolve.errors import InputError
from dpevolve.measurements import Measurement, WorkloadQuery
from dpevolve.pe.hybrid.marginals import CellIndex
from dpevolve.pe.variation import Variation

NumericMode = Literal["keep", "jitter"]
Solver = Literal["fista", "mw"]


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{w >= 0, sum w = 1}`` (sort-based, exact)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    k = np.arange(1, len(v) + 1)
    positive = u - css / k > 0
    r = int(k[positive][-1])
    theta = css[r - 1] / r
    return np.maximum(v - theta, 0.0)


@dataclass
class FitResult:
    """Weights on the pool and how well they match the released marginals."""

    weights: np.ndarray
    loss: float
    iterations: int
    info: dict[str, float] = field(default_factory=dict)


class MarginalFit:
    """Weights a candidate pool so its marginals match the released ones.

    Parameters
    ----------
    index
        The workload's cell index (same workload as ``released``).
    released
        The noisy marginals (:func:`~dpevolve.pe.hybrid.marginals.measure_marginals`).
    rows
        The private row count ``n``, public under replace-one (invalid rows included:
        they count in no cell, an empty vote): the fit matches ``released / rows``.
    iterations
        Solver iterations per fit.
    solver
        ``fista`` (accelerated projected gradient; sparse weights) or ``mw``
        (multiplicative weights / entropic mirror descent from uniform, with a
        backtracking step: early stopping keeps it near the maximum-entropy mix).
    tol
        Stop when the relative decrease of the loss over 10 iterations is below this.
    progress
        Called as ``progress(fits_done, iteration)`` after every solver iteration (for a
        progress bar; it sees counts only, no weight or marginal).
    """

    def __init__(
        self,
        index: CellIndex,
        released: Measurement[WorkloadQuery],
        rows: int,
        iterations: int = 400,
        tol: float = 1e-7,
        solver: Solver = "fista",
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        if index.total_cells != len(released.noisy):
            raise InputError("the cell index and the released marginals disagree in size")
        self.index = index
        self.target = np.asarray(released.noisy, dtype=np.float64) / rows
        self.iterations = int(iterations)
        self.tol = float(tol)
        if solver not in ("fista", "mw"):
            raise InputError(f"solver must be fista or mw, got '{solver}'")
        self.solver = solver
        self.progress = progress
        self._fits = 0

    def _tick(self, iteration: int) -> None:
        if self.progress is not None:
            self.progress(self._fits, iteration)

    # ------------------------------------------------------------------ operators
    def _forward(self, idx: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``A w``: the pool's stacked marginals under weights ``w``."""
        sets = idx.shape[0]
        return np.bincount(idx.ravel(), weights=np.tile(w, sets), minlength=self.index.total_cells)

    @staticmethod
    def _adjoint(idx: np.ndarray, r: np.ndarray) -> np.ndarray:
        """``A^T r``: each candidate's sum of residuals over its cells."""
        out: np.ndarray = r[idx].sum(axis=0)
        return out

    def _lipschitz(self, idx: np.ndarray, rng: np.random.Generator) -> float:
        """Largest eigenvalue of ``A^T A`` by power iteration, with a safety margin."""
        start = rng.random(idx.shape[1]) + 0.5
        v = np.asarray(start / float(np.linalg.norm(start)))
        value = 1.0
        for _ in range(30):
            u = self._adjoint(idx, self._forward(idx, v))
            value = float(np.linalg.norm(u))
            if value == 0.0:
                return 1.0
            v = u / value
        return 1.05 * value

    def loss(self, pool: Records, weights: np.ndarray) -> float:
        """``1/2 ||A w - y||^2`` of ``weights`` on ``pool``."""
        idx = self.index.index(pool)
        r = self._forward(idx, weights) - self.target
        return 0.5 * float(r @ r)

    # ------------------------------------------------------------------------ fit
    def fit(
        self,
        pool: Records,
        rng: np.random.Generator,
        start: np.ndarray | None = None,
    ) -> FitResult:
        """Simplex weights on ``pool`` minimising the squared marginal error.

        ``start`` warm-starts the solver (projected onto the simplex); default uniform.
        """
        size = len(pool)
        if size < 1:
            raise InputError("the candidate pool is empty")
        idx = self.index.index(pool)
        if self.solver == "mw":
            return self._fit_mw(idx, start)
        step = 1.0 / self._lipschitz(idx, rng)
        w = np.full(size, 1.0 / size) if start is None else project_simplex(start)
        z, t = w.copy(), 1.0
        previous = math.inf
        history: list[float] = []
        done = 0
        for done in range(1, self.iterations + 1):
            self._tick(done)
            residual = self._forward(idx, z) - self.target
            w_next = project_simplex(z - step * self._adjoint(idx, residual))
            r_next = self._forward(idx, w_next) - self.target
            value = 0.5 * float(r_next @ r_next)
            if value > previous:  # adaptive restart: drop the momentum
                z, t = w.copy(), 1.0
                continue
            t_next = (1.0 + math.sqrt(1.0 + 4.0 * t * t)) / 2.0
            z = w_next + ((t - 1.0) / t_next) * (w_next - w)
            w, t, previous = w_next, t_next, value
            history.append(value)
            if len(history) > 10 and history[-11] - value <= self.tol * max(value, 1e-300):
                break
        return FitResult(w, previous, done, {"support": float(np.count_nonzero(w))})

    def _fit_mw(self, idx: np.ndarray, start: np.ndarray | None) -> FitResult:
        """Entropic mirror descent: ``w <- w exp(-eta g) / Z`` with Armijo backtracking."""
        size = idx.shape[1]
        w = np.full(size, 1.0 / size) if start is None else _normalise(start)
        residual = self._forward(idx, w) - self.target
        value = 0.5 * float(residual @ residual)
        eta = math.nan
        done = 0
        for done in range(1, self.iterations + 1):
            self._tick(done)
            grad = self._adjoint(idx, residual)
            if math.isnan(eta):
                eta = 1.0 / max(float(np.abs(grad).max()), 1e-300)
            while True:
                logits = np.log(np.maximum(w, 1e-300)) - eta * (grad - grad.min())
                trial = np.exp(logits - logits.max())
                trial /= trial.sum()
                r_trial = self._forward(idx, trial) - self.target
                v_trial = 0.5 * float(r_trial @ r_trial)
                if v_trial <= value - 0.5 * float(grad @ (w - trial)) or eta < 1e-12:
                    break
                eta /= 2.0
            improved = value - v_trial
            w, residual, value = trial, r_trial, v_trial
            eta *= 1.5  # let the step grow back after a cut
            if improved <= self.tol * max(value, 1e-300):
                break
        return FitResult(w, value, done, {"support": float(np.count_nonzero(w > 1e-12))})

    def grow(
        self,
        pool: Records,
        variation: Variation,
        rng: np.random.Generator,
        rounds: int = 6,
        children: int = 5000,
        rate: float = 0.1,
    ) -> tuple[Records, FitResult]:
        """Fit, draw parents by weight, mutate, refit on survivors + children; repeat.

        Candidates with zero weight are dropped before each refit, so the pool stays
        near ``support + children`` rows.

        Parameters
        ----------
        pool
            Initial candidates (public).
        variation
            Mutation operator of the schema's domain.
        rng
            Post-processing randomness.
        rounds
            Growth rounds (0: fit the initial pool only).
        children
            Mutated children added per round.
        rate
            Mutation rate of the children.
        """
        result = self.fit(pool, rng)
        self._fits += 1
        for _ in range(rounds):
            keep = result.weights > (0.0 if self.solver == "fista" else 1e-9 / len(pool))
            survivors = pool.take(np.flatnonzero(keep))
            parents = survivors.take(
                rng.choice(len(survivors), size=children, p=_normalise(result.weights[keep]))
            )
            pool = Records.concat([survivors, variation.mutate(parents, rate, rng)])
            # MW cannot move a zero weight: children start at the survivors' mean weight.
            fill = 0.0 if self.solver == "fista" else 1.0 / len(survivors)
            start = np.concatenate([result.weights[keep], np.full(children, fill)])
            result = self.fit(pool, rng, start=start)
            self._fits += 1
        return pool, result


def _normalise(w: np.ndarray) -> np.ndarray:
    w = np.maximum(w, 0.0)
    total = w.sum()
    return w / total if total > 0 else np.full(len(w), 1.0 / len(w))


def allocate(weights: np.ndarray, num_rows: int, rng: np.random.Generator) -> np.ndarray:
    """How many rows each candidate gets: ``floor(w N)`` plus a multinomial remainder.

    Residual resampling keeps every count within one of ``w N`` in expectation and
    adds less sampling noise than ``num_rows`` independent draws.
    """
    if num_rows < 0:
        raise InputError(f"num_rows must be non-negative, got {num_rows}")
    w = _normalise(np.asarray(weights, dtype=np.float64))
    base = np.floor(w * num_rows).astype(np.int64)
    left = num_rows - int(base.sum())
    if left > 0:
        residual = w * num_rows - base
        base += rng.multinomial(left, _normalise(residual))
    return base


def draw_rows(
    pool: Records,
    weights: np.ndarray,
    num_rows: int,
    rng: np.random.Generator,
    index: CellIndex,
    numeric: NumericMode = "keep",
) -> Records:
    """``num_rows`` rows from the weighted pool, shuffled.

    ``numeric="keep"`` copies candidates' numeric values (point masses such as 40 hours
    survive); ``"jitter"`` redraws each numeric value uniformly within its measured bin
    (integers among the integers of the bin), which keeps every marginal cell.
    Categorical values are always copied.
    """
    if numeric not in ("keep", "jitter"):
        raise InputError(f"numeric handling must be keep or jitter, got '{numeric}'")
    counts = allocate(weights, num_rows, rng)
    rows = np.repeat(np.arange(len(pool)), counts)
    rng.shuffle(rows)
    out = pool.take(rows)
    if numeric == "keep" or out.numeric.shape[1] == 0:
        return out
    values = out.numeric.copy()
    binning = index.binning
    for k, col in enumerate(binning.layout.numeric):
        missing = np.isnan(out.numeric[:, k])  # stays missing: its own measured cell
        cell = np.minimum(binning.codes(out, col.name), binning.bins - 1)
        edges = np.linspace(col.lo, col.hi, binning.bins + 1)
        lo, hi = edges[cell], edges[cell + 1]
        u = rng.random(len(out))
        if col.integer:
            first = np.ceil(lo)
            last = np.where(cell == binning.bins - 1, np.floor(hi), np.ceil(hi) - 1.0)
            size = last - first + 1.0
            raw = np.where(size >= 1.0, first + np.floor(u * np.maximum(size, 1.0)), np.nan)
            current = binning.raw(out, k)
            raw = np.where(np.isnan(raw), current, raw)
        else:
            raw = lo + u * (hi - lo)
        values[:, k] = np.where(missing, np.nan, np.clip((raw - col.lo) / col.range, 0.0, 1.0))
    return Records(values, out.codes)


__all__ = ["FitResult", "MarginalFit", "allocate", "draw_rows", "project_simplex"]
