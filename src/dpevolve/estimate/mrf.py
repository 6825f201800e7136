"""A Markov random field fitted to noisy marginals by entropic mirror descent.

The model is ``p(x) proportional to exp(sum_C theta_C(x_C))`` with one log potential
per measured clique; inference runs on the junction tree of those cliques. The fit
minimises the weighted squared L2 loss between the model's marginals and the noisy
measurements over the marginal polytope by mirror descent with the entropy as mirror
map, which updates the potentials by the loss gradient in marginal space:
``theta <- theta - eta * dL/dmu`` (McKenna, Sheldon & Miklau 2019, sec. 4, Alg. 1; the
estimator inside AIM, McKenna et al. 2022). The step size follows an Armijo
backtracking rule and grows again after every accepted step. A second ``fit`` with a
longer list starts from the previous potentials (new cliques start at zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from dpevolve.errors import InputError
from dpevolve.estimate.factor import broadcast_shape, sum_to
from dpevolve.estimate.inference import calibrate, clique_marginal
from dpevolve.estimate.junction import JunctionTree, junction_tree
from dpevolve.estimate.objective import Target, targets
from dpevolve.estimate.sampling import forward_sample
from dpevolve.measurements import Clique, Domain, Measurement

ITERATIONS = 1000
GROWTH = 1.5
SHRINK = 0.5


@dataclass
class FitStats:
    """What the last fit did: losses per accepted step, steps, step size, convergence."""

    losses: list[float] = field(default_factory=list)
    iterations: int = 0
    evaluations: int = 0
    step: float = 0.0
    converged: bool = False


class MarkovRandomField:
    """Graphical-model estimator of a table from noisy marginals of any order.

    Parameters
    ----------
    domain : Domain
        The attributes and their numbers of cells (public).
    total : float
        The number of records the model describes (``answer`` sums to it).
    iterations : int
        Most mirror-descent steps per ``fit``.
    tol : float
        Stop once the loss improved by less than this fraction over the last
        ``patience`` accepted steps (0: run all ``iterations``).
    patience : int
        Window, in steps, of the ``tol`` rule.
    """

    def __init__(
        self,
        domain: Domain,
        total: float,
        *,
        iterations: int = ITERATIONS,
        tol: float = 0.0,
        patience: int = 10,
    ) -> None:
        self.domain = domain
        self.total = float(total)
        self.iterations = int(iterations)
        self.tol = float(tol)
        self.patience = int(patience)
        self.potentials: dict[Clique, np.ndarray] = {}
        self.tree: JunctionTree | None = None
        self.stats = FitStats()
        self._step: float | None = None
        self._probs: list[np.ndarray] | None = None

    # -- fitting -------------------------------------------------------------------------

    def fit(self, measurements: Sequence[Measurement]) -> MarkovRandomField:
        """Fit the potentials to ``measurements`` (warm start from the previous fit).

        Returns
        -------
        MarkovRandomField
            ``self``, fitted.
        """
        if not (np.isfinite(self.total) and self.total > 0):
            raise InputError("the model's total must be positive and finite")
        goals = targets(self.domain, measurements)
        cliques = [g.clique for g in goals]
        tree = junction_tree(self.domain, cliques)
        theta = {c: self.potentials.get(c, np.zeros(self.domain.shape(c))) for c in cliques}
        homes = [tree.containing(c) for c in cliques]
        state = _State(self.domain, tree, goals, homes, self.total)
        step = self._step if self._step is not None else state.initial_step()
        self.stats = FitStats()
        log_beliefs = state.beliefs(theta)
        mus = state.marginals(log_beliefs)
        loss, grads = state.loss(mus)
        self.stats.losses.append(loss)
        for _ in range(self.iterations if goals else 0):
            accepted = False
            while not accepted and step > 0:
                trial = {c: theta[c] - step * g for c, g in zip(cliques, grads, strict=True)}
                trial_beliefs = state.beliefs(trial)
                trial_mus = state.marginals(trial_beliefs)
                trial_loss, trial_grads = state.loss(trial_mus)
                self.stats.evaluations += 1
                decrease = sum(
                    float(np.sum(g * (m - t)))
                    for g, m, t in zip(grads, mus, trial_mus, strict=True)
                )
                if loss - trial_loss >= 0.5 * decrease and trial_loss <= loss:
                    accepted = True
                    theta, log_beliefs, mus = trial, trial_beliefs, trial_mus
                    loss, grads = trial_loss, trial_grads
                    step *= GROWTH
                else:
                    step *= SHRINK
                    if step < 1e-300:
                        step = 0.0
            if not accepted:
                self.stats.converged = True
                break
            self.stats.iterations += 1
            self.stats.losses.append(loss)
            if self._stalled():
                self.stats.converged = True
                break
        self.stats.step = step
        self._step = step if step > 0 else None
        self.potentials = theta
        self.tree = tree
        self._probs = [np.exp(b) for b in log_beliefs]
        return self

    def _stalled(self) -> bool:
        history = self.stats.losses
        if self.tol <= 0 or len(history) <= self.patience:
            return False
        before, now = history[-1 - self.patience], history[-1]
        return before - now <= self.tol * abs(before)

    # -- queries -------------------------------------------------------------------------

    def _model(self) -> tuple[JunctionTree, list[np.ndarray]]:
        if self.tree is None or self._probs is None:
            self.fit([])
        assert self.tree is not None and self._probs is not None
        return self.tree, self._probs

    def answer(self, clique: Clique) -> np.ndarray:
        """The model's counts on ``clique`` (shape ``domain.shape(clique)``, sum ``total``)."""
        clique = self.domain.canonical(clique)
        tree, probs = self._model()
        return self.total * clique_marginal(tree, probs, clique)

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """``rows`` fresh records drawn from the model, ``(rows, d)`` int64 cell codes."""
        if int(rows) < 0:
            raise InputError("the number of rows to sample must be >= 0")
        tree, probs = self._model()
        return forward_sample(self.domain, tree, probs, int(rows), rng)


class _State:
    """The fixed parts of one fit: the tree, the targets and where each one lives."""

    def __init__(
        self,
        domain: Domain,
        tree: JunctionTree,
        goals: list[Target],
        homes: list[int | None],
        total: float,
    ) -> None:
        self.shapes = [domain.shape(c) for c in tree.cliques]
        self.tree = tree
        self.goals = goals
        self.homes: list[int] = [h for h in homes if h is not None]
        if len(self.homes) != len(goals):
            raise AssertionError("every measured clique lies inside a junction-tree clique")
        self.total = total

    def initial_step(self) -> float:
        """A step under the loss's curvature in the potentials (about total * precision)."""
        per_home: dict[int, float] = {}
        for g, h in zip(self.goals, self.homes, strict=True):
            per_home[h] = per_home.get(h, 0.0) + g.precision
        worst = max(per_home.values(), default=1.0)
        return 1.0 / (2.0 * self.total * worst)

    def beliefs(self, theta: dict[Clique, np.ndarray]) -> list[np.ndarray]:
        potentials = [np.zeros(s) for s in self.shapes]
        for g, h in zip(self.goals, self.homes, strict=True):
            home = self.tree.cliques[h]
            potentials[h] = potentials[h] + broadcast_shape(theta[g.clique], g.clique, home)
        return calibrate(self.tree, potentials)

    def marginals(self, log_beliefs: list[np.ndarray]) -> list[np.ndarray]:
        probs = {h: np.exp(log_beliefs[h]) for h in set(self.homes)}
        return [
            self.total * sum_to(probs[h], self.tree.cliques[h], g.clique)
            for g, h in zip(self.goals, self.homes, strict=True)
        ]

    def loss(self, mus: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        total = sum(g.loss(m) for g, m in zip(self.goals, mus, strict=True))
        return float(total), [g.gradient(m) for g, m in zip(self.goals, mus, strict=True)]
