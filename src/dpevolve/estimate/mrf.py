"""A Markov random field fitted to noisy marginals by entropic mirror descent.

The model is ``p(x) proportional to exp(sum_C theta_C(x_C))`` with one log potential
per measured clique; inference runs on the junction tree of those cliques. The fit
minimises the weighted squared L2 loss between the model's marginals and the noisy
measurements over the marginal polytope by mirror descent with the entropy as mirror
map, which updates the potentials by the loss gradient in marginal space:
``theta <- theta - eta * dL/dmu`` (McKenna, Sheldon & Miklau 2019, sec. 4, Alg. 1; the
estimator inside AIM, McKenna et al. 2022), with Armijo steps and heavy-ball momentum
(:mod:`dpevolve.estimate.optimize`). A first fit starts from the independent model of
the pooled one-way estimates; a second ``fit`` with a longer list starts from the
previous potentials and step (new cliques at zero). A measurement's ``tilt`` is a fixed
log potential over its clique's cells added to the fitted one: the steps of a coarse
query's potential are constant within each group, so the fit keeps the groups' totals
and the tilt keeps its shape inside them. Sampling is forward sampling along the
junction tree (:mod:`dpevolve.estimate.sampling`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpevolve.errors import InputError
from dpevolve.estimate.factor import combine_into
from dpevolve.estimate.flat import FlatTree, Incidence
from dpevolve.estimate.inference import clique_marginal, conditionals
from dpevolve.estimate.junction import JunctionTree, junction_tree
from dpevolve.estimate.objective import Stacked, Target, attribute_estimates, targets
from dpevolve.estimate.optimize import Evaluation, Trace, minimise
from dpevolve.estimate.sampling import forward_sample
from dpevolve.measurements import Clique, Domain, MarginalQuery, Measurement

ITERATIONS = 1000
# Stop once ten steps improve the loss by under 0.1%: on noisy measurements the distance
# to the truth stops improving well before (a 10-column table, 20,000 rows, sigma 20:
# mean 2-way tv to the truth 0.0214 at tol 1e-2, 0.0214 at 1e-3, 0.0216 at 1e-4).
TOL = 1e-3


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
    momentum : bool
        Heavy-ball extrapolation with restarts on top of the mirror steps
        (:func:`dpevolve.estimate.optimize.minimise`).
    """

    # A model pickled before the conditionals were kept reads this default (made anew).
    _conditionals: list[np.ndarray] | None = None

    def __init__(
        self,
        domain: Domain,
        total: float,
        *,
        iterations: int = ITERATIONS,
        tol: float = TOL,
        patience: int = 10,
        momentum: bool = True,
    ) -> None:
        self.domain = domain
        self.total = float(total)
        self.iterations = int(iterations)
        self.tol = float(tol)
        self.patience = int(patience)
        self.momentum = bool(momentum)
        self.potentials: dict[MarginalQuery, np.ndarray] = {}
        self.tree: JunctionTree | None = None
        self.stats = Trace()
        self._step: float | None = None
        self._probs: list[np.ndarray] | None = None
        self._conditionals: list[np.ndarray] | None = None

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
        tree = junction_tree(self.domain, [g.clique for g in goals])
        if self.potentials:
            theta = {g.query: self.potentials.get(g.query, np.zeros(g.mean.shape)) for g in goals}
        else:
            theta = self._independent_start(goals)
        state = _State(self.domain, tree, goals, self.total)
        step = self._step if self._step is not None else state.initial_step()
        flat, last, trace = minimise(
            state.evaluate,
            state.stacked.stack(theta),
            step,
            self.iterations if goals else 0,
            self._stalled,
            momentum=self.momentum,
        )
        self.stats = trace
        self._step = trace.step if trace.step > 0 else None
        self.potentials = state.stacked.unstack(flat)
        self.tree = tree
        self._probs = last.payload
        self._conditionals = None
        return self

    def _independent_start(self, goals: list[Target]) -> dict[MarginalQuery, np.ndarray]:
        """Potentials of the independent model of the pooled one-way estimates, each
        attribute's placed on the smallest fine measured clique that holds it."""
        theta = {g.query: np.zeros(g.mean.shape) for g in goals}
        fine = [g.query for g in goals if not g.query.coarse]
        for name, probs in attribute_estimates(self.domain, goals).items():
            home = min((q for q in fine if name in q.clique), key=lambda q: theta[q].size)
            combine_into(np.add, theta[home], home.clique, np.log(probs), (name,))
        return theta

    def _stalled(self, history: list[float]) -> bool:
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
        if self._conditionals is None:  # made on the first query of a fit
            self._conditionals = conditionals(tree, probs)
        return self.total * clique_marginal(tree, probs, self._conditionals, clique)

    def sample(self, rows: int, rng: np.random.Generator) -> np.ndarray:
        """``rows`` fresh records drawn from the model, ``(rows, d)`` int64 cell codes."""
        if int(rows) < 0:
            raise InputError("the number of rows to sample must be >= 0")
        tree, probs = self._model()
        return forward_sample(self.domain, tree, probs, int(rows), rng)


class _State:
    """The fixed parts of one fit: the tree laid out flat, the targets, and the map
    between the targets' stacked cells and the tree's (:mod:`dpevolve.estimate.flat`)."""

    def __init__(self, domain: Domain, tree: JunctionTree, goals: list[Target], total: float):
        self.goals = goals
        homes = [tree.containing(g.clique) for g in goals]
        if any(h is None for h in homes):
            raise AssertionError("every measured clique lies inside a junction-tree clique")
        self.homes: list[int] = [h for h in homes if h is not None]
        self.total = total
        self.stacked = Stacked(goals)
        self.flat = FlatTree(domain, tree)
        self.incidence = Incidence(
            self.flat,
            [g.query for g in goals],
            [g.mean.shape for g in goals],
            [part.start for part in self.stacked.slices],
            self.homes,
            self.stacked.size,
        )
        self.work = np.empty(self.flat.size)  # the log potentials of the step at hand
        # fixed log potentials beside the fitted ones: a coarse target's shape within
        # its groups, which the fit's steps (constant within each group) never change
        self.tilts = [
            (h, g.clique, g.tilt)
            for g, h in zip(goals, self.homes, strict=True)
            if g.tilt is not None
        ]

    def initial_step(self) -> float:
        """A step under the loss's curvature in the potentials (about total * precision)."""
        per_home: dict[int, float] = {}
        for g, h in zip(self.goals, self.homes, strict=True):
            per_home[h] = per_home.get(h, 0.0) + g.precision
        worst = max(per_home.values(), default=1.0)
        return 1.0 / (2.0 * self.total * worst)

    def evaluate(self, theta: np.ndarray) -> Evaluation[list[np.ndarray]]:
        """Loss, gradient and marginals of the model with potentials ``theta``."""
        log_potentials = self.incidence.potentials(theta, out=self.work)
        for home, clique, tilt in self.tilts:
            combine_into(
                np.add,
                self.flat.view(log_potentials, home),
                self.flat.tree.cliques[home],
                tilt,
                clique,
            )
        beliefs = self.flat.calibrate(log_potentials)
        mus = self.incidence.marginals(beliefs)
        mus *= self.total
        loss, gradient = self.stacked.loss(mus), self.stacked.gradient(mus)
        return Evaluation(loss, gradient, mus, self.flat.views(beliefs))
