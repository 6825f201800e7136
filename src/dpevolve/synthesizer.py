"""The scikit-learn style entry point: ``Synthesizer(...).fit(private).sample(n)``."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dpevolve.backends import Backend, make_backend
from dpevolve.core.canonical import soft_quantisation_slack
from dpevolve.core.distance import Distance, make_distance
from dpevolve.core.evolution import Evolution
from dpevolve.core.invalid_rows import calibrate as calibrate_invalid
from dpevolve.core.variation import Variation
from dpevolve.core.votes import SoftVote, Vote, make_vote
from dpevolve.data.encoding import Layout, Records, decode, encode
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams
from dpevolve.presets import Preset, default_preset, get_preset
from dpevolve.privacy import Budget, Ledger, ZeroCostEvent, calibrate_gaussian, default_delta
from dpevolve.release.base import Release, Selection
from dpevolve.release.gaussian import GaussianRelease
from dpevolve.release.noise import NoiseSource, make_noise

if TYPE_CHECKING:
    from dpevolve.core.hybrid import WeightedSupport


def package_version() -> str:
    try:
        return version("dpevolve")
    except PackageNotFoundError:
        return "0+unknown"


class Synthesizer(EstimatorParams):
    """Differentially private synthetic tables by Private Evolution.

    Parameters
    ----------
    schema
        A :class:`~dpevolve.data.schema.Schema` or the path of its YAML file. Declared
        ranges and categories come from here, never from the private table.
    epsilon, delta
        The (epsilon, delta) guarantee of the whole run. ``delta`` defaults to
        ``min(1e-5, 1 / (n ln n))``: ``n``, the private row count, is public under replace-one
        adjacency.
    rho
        Alternatively, a zCDP budget (``epsilon`` then reports the guarantee at ``delta``,
        default 1e-5).
    preset
        ``hybrid`` (the whole budget on one release of low-order marginals, rows drawn
        from a pool weighted to match them: the best measured default), ``tabpe``
        (Tab-PE's Adult setting: 1000 records, 29 rounds, one-hot/L2) or ``bfsoft`` (the
        BF-Soft study's 512 records, 8 rounds, Gower). ``None`` (default): ``hybrid``,
        or ``tabpe`` when a policy, a soft or automatic vote or PubMix is asked for (they
        act on the PE rounds).
    vote
        ``hard`` (nearest candidate), ``soft`` (softmax at ``temperature``) or ``auto``:
        a public pilot (needs ``public``) picks hard or a soft configuration
        (temperature, sharpening, debiasing) without spending private budget and says
        why. Default (``None``): ``auto`` when a ``policy`` and ``public`` data are given
        with the Gaussian mechanism, bound calibration and no ``temperature``,
        ``sharpen`` or ``debias``; otherwise the preset's vote (hard).
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
    sharpen
        Multiply the Gower weights of attributes the policy leaves unprotected by this
        factor (1: off). The reach, hence the soft vote's noise, is unchanged, and a
        soft vote then blurs only along protected attributes.
    debias
        Richardson-Lucy steps undoing the soft vote's blur on the released histogram
        (0: off; post-processing, no privacy cost).
    calibration
        ``bound`` (the closed-form sensitivity) or ``exact``: with a hard vote under a
        policy, each round searches the protected edges of the schema's domain for an
        argmin change (public population: no budget spent). Every round is still
        charged at the bound (the guarantee); the ledger reports apart, as
        ``ex_post_epsilon`` (not a guarantee), the loss had rounds where no argmin
        changes been free. Needs a domain small enough to enumerate.
    population_size, rounds, distance, threshold
        Override the preset.
    random_state
        Seed of the run. ``None`` draws one and records it in the ledger.
    on_invalid
        ``error``, ``drop`` or ``clip`` for private cells outside the schema. With
        ``drop``/``clip`` an invalid row casts an empty vote and ``n`` stays ``len(X)``.
    backend
        Where votes are computed (:mod:`dpevolve.backends`); default: the fused numba
        kernels when numba is installed, else the numpy reference. The same seed gives
        the same output on the same backend.
    noise_seed
        ``None`` (default): every draw that protects privacy comes from the operating
        system's secure source, so two runs differ even with the same ``random_state``.
        An integer makes the noise reproducible bit for bit, for research only: anyone
        who holds it can remove the noise. It never enters the ledger or a report (the
        ledger says ``"noise": "seeded"``).
    secure_noise
        Deprecated: secure noise is the default; ``noise_seed`` opts out.
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
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        preset: str | None = None,
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
        noise_seed: int | None = None,
        secure_noise: bool | None = None,
        progress: bool = False,
        sharpen: float = 1.0,
        debias: int = 0,
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
        self.noise_seed = noise_seed
        self.secure_noise = secure_noise
        self.progress = progress
        self.sharpen = sharpen
        self.debias = debias
        self.marginals = marginals
        self.marginal_options = marginal_options

    # ------------------------------------------------------------ configuration
    def _schema(self) -> Schema:
        return Schema.of(self.schema)

    def resolved_preset(self) -> str:
        """The preset this model runs: ``preset``, or the default for its settings."""
        if self.preset is not None:
            return self.preset
        return default_preset(
            policy=self.policy is not None,
            soft_vote=self.vote in ("soft", "auto") or self.temperature is not None,
            pubmix=self.mechanism != "gaussian",
        )

    def _preset(self) -> Preset:
        return get_preset(self.resolved_preset()).with_overrides(self.population_size, self.rounds)

    def _budget(self, n: int) -> Budget:
        delta = default_delta(n) if self.delta is None else self.delta
        return Budget.from_args(epsilon=self.epsilon, delta=delta, rho=self.rho)

    def _noise(self) -> NoiseSource:
        if self.secure_noise is not None:
            warnings.warn(
                "secure_noise is deprecated: secure noise is the default (noise_seed opts out)",
                DeprecationWarning,
                stacklevel=3,
            )
            if self.secure_noise and self.noise_seed is not None:
                raise InputError("secure_noise=True contradicts noise_seed")
        return make_noise(self.noise_seed)

    def _policy(self, schema: Schema) -> Any:
        if self.policy is None:
            return None
        from dpevolve.core.policy import Policy

        if isinstance(self.policy, Policy):
            return self.policy
        return Policy.load(self.policy, schema)

    def _vote(self, preset: Preset, schema: Schema, budget: Budget, n: int) -> tuple[Vote, Any]:
        """The vote; ``temperature="auto"`` asks the public pilot (no private budget)."""
        from dpevolve.core.vote_choice import default_vote

        name = self.vote or default_vote(self, preset.vote)
        self._arm = (self.sharpen, self.debias)
        if name == "auto":
            return self._auto_vote(schema, budget, n)
        if self.temperature != "auto":
            if name == "soft" and self.temperature is None:
                raise InputError("a soft vote needs a temperature (temperature=TAU)")
            return make_vote(name, self.temperature), None
        if self.public is None:
            raise InputError("temperature 'auto' needs public data (--public) for the pilot")
        from dpevolve.core.pilot import run_pilot

        result = run_pilot(
            schema,
            self.public,
            n,
            budget,
            public_init=True,
            preset=self.resolved_preset(),
            policy=self.policy,
            population_size=self.population_size,
            rounds=self.rounds,
            distance=self.distance,
            threshold=self.threshold,
            backend=self.backend,
        )
        vote = make_vote("soft", result.best_temperature) if result.soft_wins else make_vote("hard")
        return vote, result

    def _auto_vote(self, schema: Schema, budget: Budget, n: int) -> tuple[Vote, Any]:
        """``vote="auto"``: the public pilot of :mod:`dpevolve.core.vote_choice`."""
        if self.public is None:
            raise InputError("vote 'auto' needs public data (--public) for the pilot")
        from dpevolve.core.vote_choice import choose_vote

        choice = choose_vote(
            schema,
            self.public,
            n,
            budget,
            preset=self.resolved_preset(),
            policy=self._policy(schema),
            population_size=self.population_size,
            rounds=self.rounds,
            distance=self.distance,
            threshold=self.threshold,
            backend=self.backend,
        )
        arm = choice.chosen
        self._arm = (arm.sharpen, arm.debias)
        # One line on stderr (stdout may carry a table or JSON): what was chosen and why;
        # said when asked for by name or with progress on (the ledger always has it).
        if self.vote == "auto" or self.progress:
            print(choice.reason(), file=sys.stderr)
        return make_vote(arm.vote, arm.temperature), choice

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any = None) -> Synthesizer:
        """Run Private Evolution on the private table ``X`` (``y`` is ignored)."""
        del y
        schema = self._schema()
        return self.fit_source(FrameSource(X, schema, on_invalid=self.on_invalid))

    def fit_file(self, path: str | Path, batch_rows: int = 250_000) -> Synthesizer:
        """Fit on a CSV or Parquet file read in batches, never whole (bounded memory).

        With the same seeds the result equals ``fit(read_table(path))``.
        """
        from dpevolve.data.streaming import StreamedTable

        source = StreamedTable(
            path, self._schema(), batch_rows=batch_rows, on_invalid=self.on_invalid
        )
        return self.fit_source(source)

    def fit_source(self, source: PrivateSource) -> Synthesizer:
        """Fit on any :class:`~dpevolve.data.sources.PrivateSource` (the one door for
        private records: a table in memory, a file stream, Dask partitions)."""
        schema = self._schema()
        report = source.report
        n = source.n
        fit_number = getattr(self, "fits_", 0) + 1
        if fit_number > 1:
            warnings.warn(
                f"fit() called again (fit {fit_number} of this model): the budget is spent "
                "again on top of the earlier fits, and ledger_ describes this fit only",
                UserWarning,
                stacklevel=2,
            )
        preset = self._preset()
        if n < 1:
            raise InputError("the private table is empty (0 rows)")
        budget = self._budget(n)
        run_budget, marginal_rho = budget, None
        share = self.marginals if self.marginals is not None else preset.marginals
        options = self.marginal_options
        if options is None:
            options = dict(preset.marginal_options)
        if share is not None:
            from dpevolve.core.hybrid import split_budget

            if self.mechanism != "gaussian":
                raise InputError("the marginal release composes with the gaussian mechanism only")
            pe_budget, marginal_rho = split_budget(budget, share)
            run_budget = budget if pe_budget is None else pe_budget
        distance: Distance = make_distance(self.distance or preset.distance, schema)
        vote, pilot = self._vote(preset, schema, budget, n)
        policy = self._policy(schema)
        sharpen, debias = self._arm
        if sharpen != 1.0:
            from dpevolve.core.sharpen import sharpen_unprotected

            if policy is None:
                raise InputError("sharpening needs a Blowfish policy (--policy)")
            distance = sharpen_unprotected(distance, policy, float(sharpen))
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

        invalid = calibrate_invalid(self.on_invalid, vote.l2_sensitivity(reach))
        sensitivity = invalid.sensitivity  # also covers a valid row replaced by an invalid one
        if invalid.warning() is not None:
            warnings.warn(str(invalid.warning()), UserWarning, stacklevel=3)
        noise_source = self._noise()
        release, calibration = self._release(
            noise_source,
            preset,
            run_budget,
            sensitivity,
            vote,
            distance,
            backend,
            public,
            n,
            invalid.exact(self._exact_sensitivity(vote, policy, distance, backend)),
            debias,
        )
        ledger = Ledger(
            budget.delta if budget.delta is not None else 1e-5,
            metadata={
                "dpevolve_version": package_version(),
                "seed": seed.entropy,
                "noise": noise_source.name,
                "adjacency": "replace-one (bounded DP): the private row count n is public",
                "private_rows": n,
                "fit_number": fit_number,
                "budget": {"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
                "preset": preset.name,
                "schedule": {
                    "population": preset.schedule.population,
                    "rounds": preset.schedule.rounds,
                    "stages": [vars(s) for s in preset.schedule.stages],
                },
                "distance": distance.name,
                "backend": type(backend).__name__,
                "vote": {
                    "name": vote.name,
                    "temperature": getattr(vote, "temperature", None),
                    "sharpen": sharpen,
                    "debias": debias,
                },
                "policy": None if policy is None else policy.to_dict(),
                "reach": reach,
                "l2_sensitivity": sensitivity,
                "invalid_rows": invalid.to_dict(),
                "mechanism": self.mechanism,
                **calibration,
                "schema": schema.to_dict(),
                "validation": None if report is None else report.to_dict(),
            },
        )
        for warning in policy_warnings:
            ledger.note(f"policy: {warning}")
        if pilot is not None and not hasattr(pilot, "soft_wins"):  # vote="auto"
            ledger.add_metadata(vote_choice=pilot.to_dict())
            ledger.record(ZeroCostEvent("public_pilot", pilot.reason()), round=0)
        elif pilot is not None:
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
                f"on_invalid={report.mode} changed the private table: {report.rows_in} rows, "
                f"{report.rows_in - report.rows_out} invalid (empty votes), clipped cells "
                f"{dict(report.clipped)}. These counts come from the private data and are not "
                "privatised: keep this ledger with the data."
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

        with _progress(self.progress, preset.schedule.rounds) as advance:

            def on_round(t: int, selection: Selection, population: Records) -> None:
                ledger.record(
                    selection.event, round=t, population=len(population), **selection.info
                )
                spent = ledger.spent()
                history.append(
                    {
                        "round": t,
                        "population": len(population),
                        "epsilon_spent": spent,
                        **selection.info,
                    }
                )
                advance(t, spent)

            skip_pe = marginal_rho is not None and share == 1.0
            final = initial if skip_pe else engine.run(source, initial, rng, on_round)

        self.support_: WeightedSupport | None = None
        if marginal_rho is not None:
            from dpevolve.core.hybrid import fit_and_record

            self.support_ = fit_and_record(
                source.batches(), schema, final, marginal_rho, share, options, ledger, rng, n,
                noise_source,
            )  # fmt: skip
            final = self.support_.pool

        self.fits_ = fit_number
        self.population_ = final
        self.synthetic_ = decode(final, schema)
        self.ledger_ = ledger
        self.history_ = history
        self.schema_ = schema
        self.n_private_ = n
        self.warnings_ = policy_warnings
        return self

    def _exact_sensitivity(
        self, vote: Vote, policy: Any, distance: Distance, backend: Any = None
    ) -> Callable[[Records], float] | None:
        if self.calibration == "bound":
            return None
        if self.calibration != "exact":
            raise InputError(f"calibration must be bound or exact, got '{self.calibration}'")
        if vote.name != "hard" or policy is None or self.mechanism != "gaussian":
            raise InputError("exact calibration is for hard votes under a policy (Gaussian)")
        if getattr(backend, "exact", True) is False:
            # The search assumes the canonical vote arithmetic; a BLAS argmin is another.
            raise InputError("exact calibration needs a backend with exact=True")
        from dpevolve.core.sensitivity import enumerate_domain, per_round_hard_sensitivity

        domain = enumerate_domain(distance.layout, None, 1_000_000)
        return lambda population: per_round_hard_sensitivity(policy, distance, population, domain)

    def _release(
        self,
        noise: NoiseSource,
        preset: Preset,
        budget: Budget,
        sensitivity: float,
        vote: Vote,
        distance: Distance,
        backend: Backend,
        public: Records | None,
        n: int,
        sensitivity_of: Callable[[Records], float] | None = None,
        debias: int = 0,
    ) -> tuple[Release, dict[str, Any]]:
        """The selection step and what the ledger should say about its calibration."""
        rounds = preset.schedule.rounds
        if self.mechanism == "gaussian":
            multiplier = calibrate_gaussian(rounds, budget, discrete=True)
            source = noise
            largest = max(
                preset.schedule.population * ((1 + s.mutations) if s.keep_selected else 1)
                for s in preset.schedule.stages
            )
            # Soft votes are quantised per record (bit-identical sums on every backend)
            # and real-valued histograms rounded to the noise grid: both can add to the
            # sensitivity, so the noise is calibrated for the sum.
            slack = 0.0
            if vote.name != "hard":
                slack = soft_quantisation_slack(largest) + source.rounding_slack(largest)
            sigma = multiplier * (sensitivity + slack)
            threshold = preset.threshold if self.threshold is None else self.threshold
            postprocess = None
            if debias and isinstance(vote, SoftVote):
                from dpevolve.core.debias import SoftDebias

                postprocess = SoftDebias(distance, vote.temperature, int(debias))
            gaussian = GaussianRelease(
                sigma,
                sensitivity,
                threshold,
                noise=source,
                sensitivity_of=sensitivity_of,
                rounding_slack=slack,
                postprocess=postprocess,
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
            fill=self.pubmix_noise,
            noise=noise,
            gamma=self.gamma,
            max_candidates=largest,
        )
        gamma = self.gamma if self.gamma is not None else "public folds (k=5, quantile 0.95)"
        return release, {
            "pubmix": {
                "accounting": self.pubmix_accounting,
                "noise": self.pubmix_noise,
                "gamma": gamma,
            }
        }

    # ----------------------------------------------------------- conveniences
    @classmethod
    def create(cls, preset: str = "hybrid", **params: Any) -> Synthesizer:
        """A synthesizer from a named preset (``Synthesizer.create("bfsoft", schema=...,
        epsilon=1)``), the way SDV and smartnoise-synth users construct one."""
        get_preset(preset)  # a clear error for an unknown name, before anything runs
        return cls(preset=preset, **params)

    def fit_sample(self, X: pd.DataFrame, num_rows: int | None = None) -> pd.DataFrame:
        """``fit(X)`` then ``sample(num_rows)``."""
        return self.fit(X).sample(num_rows)

    def save(self, path: str | Path, *, force: bool = False) -> None:
        """Save the fitted model: parameters and released values only, no private record."""
        from dpevolve.model_io import save_model

        save_model(self, path, force=force)

    @classmethod
    def load(cls, path: str | Path) -> Synthesizer:
        """A model saved by :meth:`save`, ready to :meth:`sample` (no privacy cost)."""
        from dpevolve.model_io import load_model

        return load_model(path)

    # ------------------------------------------------------------------ sample
    def sample(self, num_rows: int | None = None) -> pd.DataFrame:
        """``num_rows`` synthetic rows drawn from what the fit released (post-processing:
        no privacy cost), as in SDV; default: the private row count ``n`` (public under
        replace-one).

        With marginals (the ``hybrid`` preset), rows are drawn from the weighted support;
        with PE alone, from the final population (without replacement while ``num_rows``
        does not exceed it). ``synthetic_`` keeps the population itself.
        """
        if not hasattr(self, "synthetic_"):
            raise InputError("call fit() before sample()")
        rows = self.n_private_ if num_rows is None else num_rows
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
            raise InputError(f"num_rows must be a whole number >= 0, got {num_rows!r}")
        support: WeightedSupport | None = getattr(self, "support_", None)
        if support is not None:
            return decode(support.draw(int(rows), self._sample_rng), self.schema_)
        size = len(self.synthetic_)
        index = self._sample_rng.choice(size, size=int(rows), replace=rows > size)
        return self.synthetic_.iloc[index].reset_index(drop=True)


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
