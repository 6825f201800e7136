"""The scikit-learn style entry point: ``Synthesizer(...).fit(private).sample(n)``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from dpevolve.accounting import Accountant, Budget, Ledger, ZeroCostEvent, calibrate_gaussian
from dpevolve.backends import Backend, make_backend
from dpevolve.distance import Distance, make_distance
from dpevolve.encoding import Layout, Records, decode, encode
from dpevolve.errors import InputError, PrivacyError
from dpevolve.evolution import Evolution
from dpevolve.presets import Preset, get_preset
from dpevolve.release.base import Release, Selection
from dpevolve.release.gaussian import GaussianRelease, SystemNoise
from dpevolve.schema import Schema, ValidationReport
from dpevolve.variation import Variation
from dpevolve.votes import Vote, make_vote

if TYPE_CHECKING:
    from dpevolve.core.hybrid import WeightedSupport


def package_version() -> str:
    try:
        return version("dpevolve")
    except PackageNotFoundError:
        return "0+unknown"


class Synthesizer(BaseEstimator):
    """Differentially private synthetic tables by Private Evolution.

    Parameters
    ----------
    schema
        A :class:`~dpevolve.schema.Schema` or the path of its YAML file. Declared
        ranges and categories come from here, never from the private table.
    epsilon, delta
        The (epsilon, delta) guarantee of the whole run. ``delta`` defaults to
        ``1 / (n ln n)``: ``n``, the private row count, is public under replace-one
        adjacency.
    rho
        Alternatively, a zCDP budget (``epsilon`` then reports the guarantee at ``delta``,
        default 1e-5).
    preset
        ``tabpe`` (default: Tab-PE's Adult setting, 1000 records, 29 rounds, one-hot/L2)
        or ``bfsoft`` (the BF-Soft study's 512 records, 8 rounds, Gower).
    vote
        ``hard`` (nearest candidate) or ``soft`` (softmax at ``temperature``).
    temperature
        The soft vote's ``tau``, or ``"auto"``: a pilot on the public data picks the
        temperature (or the hard vote, if it forecasts that hard wins) without spending
        private budget; the ledger records the forecast.
    policy
        A Blowfish policy (object or YAML path); ``None`` protects whole records.
    public
        Public records from the same domain: the initial population is drawn from them.
    mechanism
        ``gaussian`` (noisy vote histogram) or ``pubmix`` (parents sampled from a
        public/private mixture; needs ``public``, hard votes and an (epsilon, delta)
        budget).
    pubmix_accounting, pubmix_noise, gamma
        PubMix's per-round accounting (``tight``, the default: one worst-case pair's
        PLD composed over the rounds; or ``basic``: an even split of the budget), its
        noise distribution (``wf``/``mifr`` floor-raised public votes, or ``linmix``
        uniform) and the bound on ``TV(P_pub, P_prv)`` (``None``: from public folds).
    calibration
        ``bound`` (the closed-form sensitivity) or ``exact``: with a hard vote under a
        policy, each round searches the protected edges of the schema's domain for an
        argmin change (public population: no budget spent); rounds where none changes
        cost nothing. Needs a domain small enough to enumerate.
    population_size, rounds, distance, threshold
        Override the preset.
    random_state
        Seed of the run. ``None`` draws one and records it in the ledger.
    on_invalid
        ``error``, ``drop`` or ``clip`` for private cells outside the schema.
    backend
        Where votes are computed (:mod:`dpevolve.backends`); default: the fused numba
        kernels when numba is installed, else the numpy reference. The same seed gives
        the same output on the same backend.
    secure_noise
        Draw release noise from the operating system's secure source (runs are then not
        reproducible).
    progress
        Show a progress bar with the privacy spent so far.
    marginals
        Share of the budget (in zCDP ``rho``, ``0 < share <= 1``) for one Gaussian release
        of low-order marginals after the PE rounds; ``None`` (default) runs PE alone. The
        rounds get the rest of ``rho``; both are Gaussian, so the run composes exactly
        to the target (see :mod:`dpevolve.core.hybrid`). The released population is then
        grown and weighted to match the noisy marginals (post-processing) and
        :meth:`sample` draws rows from that weighted support.
    marginal_options
        :class:`~dpevolve.core.hybrid.MarginalOptions` or a dict of its fields
        (workload order, numeric bins, pool growth, numeric output handling).

    Attributes
    ----------
    population_ : Records
        The final released population (encoded).
    synthetic_ : pandas.DataFrame
        The final population as a table.
    ledger_ : Ledger
        Every release and the guarantee of the run.
    history_ : list of dict
        Per-round facts derived from released quantities only.
    support_ : WeightedSupport or None
        With ``marginals``: the released marginals, the fitted pool (then also
        ``population_`` and, unweighted, ``synthetic_``) and its weights.
    """

    def __init__(
        self,
        schema: Schema | str | Path,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        preset: str = "tabpe",
        vote: str | None = None,
        temperature: float | Literal["auto"] | None = None,
        policy: Any = None,
        public: pd.DataFrame | None = None,
        mechanism: Literal["gaussian", "pubmix"] = "gaussian",
        pubmix_accounting: Literal["basic", "tight"] = "tight",
        pubmix_noise: Literal["wf", "mifr", "linmix"] = "wf",
        gamma: float | None = None,
        calibration: Literal["bound", "exact"] = "bound",
        population_size: int | None = None,
        rounds: int | None = None,
        distance: str | None = None,
        threshold: float | None = None,
        random_state: int | None = None,
        on_invalid: Literal["error", "drop", "clip"] = "error",
        backend: Backend | None = None,
        secure_noise: bool = False,
        progress: bool = False,
        marginals: float | None = None,
        marginal_options: Any = None,
    ) -> None:
        self.schema = schema
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.preset = preset
        self.vote = vote
        self.temperature = temperature
        self.policy = policy
        self.public = public
        self.mechanism = mechanism
        self.pubmix_accounting = pubmix_accounting
        self.pubmix_noise = pubmix_noise
        self.gamma = gamma
        self.calibration = calibration
        self.population_size = population_size
        self.rounds = rounds
        self.distance = distance
        self.threshold = threshold
        self.random_state = random_state
        self.on_invalid = on_invalid
        self.backend = backend
        self.secure_noise = secure_noise
        self.progress = progress
        self.marginals = marginals
        self.marginal_options = marginal_options

    # ------------------------------------------------------------ configuration
    def _schema(self) -> Schema:
        if isinstance(self.schema, Schema):
            return self.schema
        return Schema.load(self.schema)

    def _preset(self) -> Preset:
        return get_preset(self.preset).with_overrides(self.population_size, self.rounds)

    def _budget(self, n: int) -> Budget:
        delta = self.delta
        if delta is None:
            delta = 1e-5 if self.rho is not None else 1.0 / (n * math.log(n)) if n > 2 else 1e-5
        return Budget.from_args(epsilon=self.epsilon, delta=delta, rho=self.rho)

    def _policy(self, schema: Schema) -> Any:
        if self.policy is None:
            return None
        from dpevolve.policy import Policy

        if isinstance(self.policy, Policy):
            return self.policy
        return Policy.load(self.policy, schema)

    def _vote(self, preset: Preset, schema: Schema, budget: Budget, n: int) -> tuple[Vote, Any]:
        """The vote; ``temperature="auto"`` asks the public pilot (no private budget)."""
        name = self.vote or preset.vote
        if self.temperature != "auto":
            if name == "soft" and self.temperature is None:
                raise InputError("a soft vote needs a temperature (temperature=TAU)")
            return make_vote(name, self.temperature), None
        if self.public is None:
            raise InputError("temperature 'auto' needs public data (--public) for the pilot")
        from dpevolve.pilot import run_pilot

        result = run_pilot(
            schema,
            self.public,
            n,
            budget,
            public_init=True,
            preset=self.preset,
            policy=self.policy,
            population_size=self.population_size,
            rounds=self.rounds,
            distance=self.distance,
            threshold=self.threshold,
            backend=self.backend,
        )
        vote = make_vote("soft", result.best_temperature) if result.soft_wins else make_vote("hard")
        return vote, result

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any = None) -> Synthesizer:
        """Run Private Evolution on the private table ``X`` (``y`` is ignored)."""
        del y
        schema = self._schema()
        frame, report = schema.validate(X, on_invalid=self.on_invalid, what="private table")
        private = encode(frame, schema)
        return self._fit_records(private, schema, report)

    def fit_file(self, path: str | Path, batch_rows: int = 250_000) -> Synthesizer:
        """Fit on a CSV or Parquet file read in batches, never whole (bounded memory).

        With the same seed the result equals ``fit(read_table(path))``.
        """
        from dpevolve.streaming import fit_file

        return fit_file(self, path, batch_rows)

    def _fit_records(
        self,
        private: Records | Callable[[], Any],
        schema: Schema,
        report: ValidationReport | None,
        n: int | None = None,
    ) -> Synthesizer:
        preset = self._preset()
        n = len(private) if isinstance(private, Records) else n
        if n is None or n < 1:
            raise InputError("the private table is empty (0 rows)")
        budget = self._budget(n)
        run_budget, marginal_rho = budget, None
        if self.marginals is not None:
            from dpevolve.core.hybrid import split_budget

            if self.mechanism != "gaussian":
                raise InputError("the marginal release composes with the gaussian mechanism only")
            pe_budget, marginal_rho = split_budget(budget, self.marginals)
            run_budget = budget if pe_budget is None else pe_budget
        distance: Distance = make_distance(self.distance or preset.distance, schema)
        vote, pilot = self._vote(preset, schema, budget, n)
        policy = self._policy(schema)
        reach = distance.diameter() if policy is None else policy.reach(distance)
        if not reach > 0:
            raise InputError(
                "the policy protects no substitution (reach 0): votes would be "
                "released without noise; protect at least one attribute"
            )
        policy_warnings = [] if policy is None else policy.warnings(distance)
        for warning in policy_warnings:  # said before any budget is spent
            warnings.warn(f"policy: {warning}", UserWarning, stacklevel=3)

        seed = np.random.SeedSequence(self.random_state)
        fit_seed, sample_seed = seed.spawn(2)
        rng = np.random.default_rng(fit_seed)
        self._sample_rng = np.random.default_rng(sample_seed)
        backend = self.backend if self.backend is not None else make_backend("auto")
        public = None
        if self.public is not None:
            public_frame, _ = schema.validate(self.public, on_invalid="error", what="public table")
            public = encode(public_frame, schema)

        sensitivity = vote.l2_sensitivity(reach)
        release, noise = self._release(
            preset,
            run_budget,
            sensitivity,
            vote,
            distance,
            backend,
            public,
            n,
            rng,
            self._exact_sensitivity(vote, policy, distance),
        )
        ledger = Ledger(
            budget.delta if budget.delta is not None else 1e-5,
            metadata={
                "dpevolve_version": package_version(),
                "seed": seed.entropy,
                "seed_note": (
                    "the seed regenerates the release noise: share the shareable ledger "
                    "(--share-ledger, Ledger.shareable_dict) or run with secure_noise"
                ),
                "reproducible": not self.secure_noise,
                "adjacency": "replace-one (bounded DP): the private row count n is public",
                "private_rows": n,
                "budget": {"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
                "preset": preset.name,
                "schedule": {
                    "population": preset.schedule.population,
                    "rounds": preset.schedule.rounds,
                    "stages": [vars(s) for s in preset.schedule.stages],
                },
                "distance": distance.name,
                "backend": type(backend).__name__,
                "vote": {"name": vote.name, "temperature": getattr(vote, "temperature", None)},
                "policy": None if policy is None else policy.to_dict(),
                "reach": reach,
                "l2_sensitivity": sensitivity,
                "mechanism": self.mechanism,
                **noise,
                "schema": schema.to_dict(),
                "validation": None if report is None else report.to_dict(),
            },
        )
        for warning in policy_warnings:
            ledger.note(f"policy: {warning}")
        if pilot is not None:
            ledger.add_metadata(pilot=pilot.to_dict())
            chosen = f" at tau={pilot.best_temperature}" if pilot.soft_wins else ""
            ledger.record(
                ZeroCostEvent(
                    "public_pilot",
                    f"temperature chosen on public data only: {vote.name} vote{chosen}; "
                    "no private budget spent",
                ),
                round=0,
            )
        if report is not None and report.changed:
            ledger.note(
                f"on_invalid={report.mode} changed the private table: {report.rows_in} rows in, "
                f"{report.rows_out} rows out, clipped cells {dict(report.clipped)}. These counts "
                "come from the private data and are not privatised: keep this ledger with the data."
            )

        variation = Variation(Layout.of(schema))
        size = preset.schedule.population
        initial = (
            variation.random(size, rng)
            if public is None
            else variation.from_public(public, size, rng)
        )
        engine = Evolution(distance, vote, release, preset.schedule, variation, backend)
        history: list[dict[str, Any]] = []
        events: list[Any] = []

        with _progress(self.progress, preset.schedule.rounds) as advance:

            def on_round(t: int, selection: Selection, population: Records) -> None:
                events.append(selection.event)
                spent = _epsilon_so_far(events, ledger.delta)
                ledger.record(
                    selection.event, round=t, population=len(population), **selection.info
                )
                history.append(
                    {
                        "round": t,
                        "population": len(population),
                        "epsilon_spent": spent,
                        **selection.info,
                    }
                )
                advance(t, spent)

            skip_pe = marginal_rho is not None and self.marginals == 1.0
            final = initial if skip_pe else engine.run(private, initial, rng, on_round)

        self.support_: WeightedSupport | None = None
        if marginal_rho is not None:
            from dpevolve.core.hybrid import fit_and_record

            self.support_ = fit_and_record(
                private, schema, final, marginal_rho, self.marginals, self.marginal_options,
                ledger, rng, n, self.secure_noise,
            )  # fmt: skip
            final = self.support_.pool

        self.population_ = final
        self.synthetic_ = decode(final, schema)
        self.ledger_ = ledger
        self.history_ = history
        self.schema_ = schema
        self.n_private_ = n
        self.warnings_ = policy_warnings
        return self

    def _exact_sensitivity(
        self, vote: Vote, policy: Any, distance: Distance
    ) -> Callable[[Records], float] | None:
        if self.calibration == "bound":
            return None
        if self.calibration != "exact":
            raise InputError(f"calibration must be bound or exact, got '{self.calibration}'")
        if vote.name != "hard" or policy is None or self.mechanism != "gaussian":
            raise InputError("exact calibration is for hard votes under a policy (Gaussian)")
        from dpevolve.sensitivity import enumerate_domain, per_round_hard_sensitivity

        domain = enumerate_domain(distance.layout, None, 1_000_000)
        return lambda population: per_round_hard_sensitivity(policy, distance, population, domain)

    def _release(
        self,
        preset: Preset,
        budget: Budget,
        sensitivity: float,
        vote: Vote,
        distance: Distance,
        backend: Backend,
        public: Records | None,
        n: int,
        rng: np.random.Generator,
        sensitivity_of: Callable[[Records], float] | None = None,
    ) -> tuple[Release, dict[str, Any]]:
        """The selection step and what the ledger should say about its calibration."""
        rounds = preset.schedule.rounds
        if self.mechanism == "gaussian":
            multiplier = calibrate_gaussian(rounds, budget)
            sigma = multiplier * sensitivity
            threshold = preset.threshold if self.threshold is None else self.threshold
            noise = SystemNoise() if self.secure_noise else None
            gaussian = GaussianRelease(
                sigma, sensitivity, threshold, noise=noise, sensitivity_of=sensitivity_of
            )
            return gaussian, {"noise_multiplier": multiplier, "sigma": sigma}
        if self.mechanism != "pubmix":
            raise InputError(f"unknown mechanism '{self.mechanism}' (choose gaussian or pubmix)")
        from dpevolve.release.pubmix import PubMixRelease

        if public is None:
            raise InputError("mechanism 'pubmix' needs public data (--public)")
        if vote.name != "hard":
            raise InputError(
                "PubMix needs hard votes: soft votes break the two-bin structure its privacy "
                "analysis rests on (use --vote hard)"
            )
        if budget.rho is not None:
            raise InputError("PubMix needs an (epsilon, delta) budget, not --rho")
        largest = max(
            preset.schedule.population * ((1 + s.mutations) if s.keep_selected else 1)
            for s in preset.schedule.stages
        )
        release = PubMixRelease(
            public,
            distance,
            backend,
            n,
            rounds,
            budget,
            accounting=self.pubmix_accounting,
            noise=self.pubmix_noise,
            gamma=self.gamma,
            max_candidates=largest,
            seed=int(rng.integers(2**32)),
        )
        gamma = self.gamma if self.gamma is not None else "public folds (k=5, quantile 0.95)"
        return release, {
            "pubmix": {
                "accounting": self.pubmix_accounting,
                "noise": self.pubmix_noise,
                "gamma": gamma,
            }
        }

    # ------------------------------------------------------------------ sample
    def sample(self, n: int | None = None) -> pd.DataFrame:
        """Rows of the released population (post-processing: no privacy cost).

        ``None`` returns the whole final population; otherwise ``n`` rows drawn from it,
        without replacement when ``n`` does not exceed the population. With
        ``marginals``, rows are drawn from the weighted support instead and ``None``
        means the private row count (public under replace-one).
        """
        if not hasattr(self, "synthetic_"):
            raise InputError("call fit() before sample()")
        support: WeightedSupport | None = getattr(self, "support_", None)
        if support is not None:
            rows = self.n_private_ if n is None else n
            if rows < 0:
                raise InputError(f"n must be non-negative, got {rows}")
            return decode(support.draw(rows, self._sample_rng), self.schema_)
        if n is None:
            return self.synthetic_.copy()
        if n < 0:
            raise InputError(f"n must be non-negative, got {n}")
        size = len(self.synthetic_)
        index = self._sample_rng.choice(size, size=n, replace=n > size)
        return self.synthetic_.iloc[index].reset_index(drop=True)


def _epsilon_so_far(events: list[Any], delta: float) -> float:
    """The running epsilon for the progress bar: the exact closed form when it applies
    (all Gaussian), else the full accountant."""
    try:
        return Accountant(delta, methods=("gaussian_exact",)).epsilon(events).epsilon
    except PrivacyError:
        return Accountant(delta).epsilon(events).epsilon


@contextmanager
def _progress(enabled: bool, rounds: int) -> Iterator[Callable[[int, float], None]]:
    if not enabled:
        yield lambda t, spent: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]round"),
        MofNCompleteColumn(),
        BarColumn(),
        TextColumn("ε spent {task.fields[spent]:.4g}"),
        TimeElapsedColumn(),
        transient=False,
    ) as bar:
        task = bar.add_task("evolve", total=rounds, spent=0.0)
        yield lambda t, spent: bar.update(task, completed=t, spent=spent)
