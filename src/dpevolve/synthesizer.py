"""The scikit-learn style entry point: ``Synthesizer(...).fit(private).sample(n)``."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dpevolve.backends import Backend, make_backend
from dpevolve.config import RunConfig, resolve
from dpevolve.core.evolution import Evolution
from dpevolve.core.pilot import PilotFit
from dpevolve.core.variation import Variation
from dpevolve.data.encoding import Layout, Records, decode
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams
from dpevolve.fit_plan import FitPlan, open_ledger, plan_fit
from dpevolve.presets import get_preset
from dpevolve.privacy import Ledger
from dpevolve.release.base import Release, Selection
from dpevolve.release.build import ReleaseInputs, build_release
from dpevolve.release.noise import NoiseSource, make_noise

if TYPE_CHECKING:
    from dpevolve.config import MechanismSpec
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
        ``tabpe`` (the default; Tab-PE's Adult setting: 1000 records, 29 rounds,
        one-hot/L2), ``bfsoft`` (the BF-Soft study's 512 records, 8 rounds, Gower) or
        ``hybrid`` (the whole budget on one release of low-order marginals, rows drawn
        from a pool weighted to match them: far closer marginals on census-like tables,
        worse TSTR on Person Activity; see benchmarks/FIDELITY.md).
    vote
        ``hard`` (nearest candidate), ``soft`` (softmax at ``temperature``) or ``auto``:
        a public pilot (needs ``public``) picks hard or a soft configuration
        (temperature, sharpening) without spending private budget and says why.
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
        budget), or a typed spec: :class:`~dpevolve.config.GaussianSpec` (``threshold``,
        ``calibration``) or :class:`~dpevolve.config.PubMixSpec` (``accounting``,
        ``fill``, ``gamma``) in place of the flat arguments below.
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
        mechanism: Literal["gaussian", "pubmix"] | MechanismSpec = "gaussian",
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

    def config(self) -> RunConfig:
        """The parameters resolved and checked (:func:`dpevolve.config.resolve`)."""
        return resolve(self.get_params())

    def resolved_preset(self) -> str:
        """The preset this model runs: ``preset``, or the default."""
        return self.config().preset.name

    def _noise(self) -> NoiseSource:
        if self.secure_noise is not None:
            warnings.warn(
                "secure_noise is deprecated: secure noise is the default (noise_seed opts out)",
                DeprecationWarning,
                stacklevel=4,
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

    @classmethod
    def pilot_fit(cls, schema: Schema | str | Path, **params: Any) -> PilotFit:
        """A public pilot's ``fit`` callback (:data:`~dpevolve.core.pilot.PilotFit`):
        each call fits ``Synthesizer(schema, **params, **options)`` on ``options["X"]``
        and returns its synthetic table. The pilot sets the budget (``rho``) itself."""
        base = {k: v for k, v in params.items() if k not in ("epsilon", "delta", "rho")}

        def fit(options: dict[str, Any]) -> pd.DataFrame:
            run = {**base, **options}
            frame = run.pop("X")
            return cls(schema, **run).fit(frame).synthetic_

        return fit

    def _own_pilot(self, config: RunConfig, policy: Any) -> PilotFit:
        """The pilot model: this run's preset, policy, schedule, distance and backend."""
        threshold = getattr(config.mechanism, "threshold", None)
        return self.pilot_fit(
            self.schema,
            preset=config.preset.name,
            policy=policy,
            population_size=self.population_size,
            rounds=self.rounds,
            distance=self.distance,
            threshold=threshold,
            backend=self.backend,
        )

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
        config, schema, n = self.config(), self._schema(), source.n
        fit_number = self._next_fit_number()
        if n < 1:
            raise InputError("the private table is empty (0 rows)")
        # 1. Everything decided from public facts, before a private record is read.
        policy = self._policy(schema)
        backend = self.backend if self.backend is not None else make_backend("auto")
        plan = plan_fit(
            config, schema, n, policy=policy, public=self.public, on_invalid=self.on_invalid,
            backend=backend, fit=self._own_pilot(config, policy),
        )  # fmt: skip
        # 2. Seeds (post-processing) and the noise source (privacy).
        seed = np.random.SeedSequence(self.random_state)
        fit_seed, sample_seed = seed.spawn(2)
        rng = np.random.default_rng(fit_seed)
        self._sample_rng = np.random.default_rng(sample_seed)
        noise = self._noise()
        # 3. The release, calibrated once, and the ledger that records it.
        release, calibration = build_release(config.mechanism, self._release_inputs(
            plan, noise, backend, n
        ))  # fmt: skip
        run = {
            "dpevolve_version": package_version(),
            "seed": seed.entropy,
            "noise": noise.name,
            "adjacency": "replace-one (bounded DP): the private row count n is public",
            "private_rows": n,
            "fit_number": fit_number,
        }
        ledger = open_ledger(
            plan, schema, calibration=calibration, run=run, backend=type(backend).__name__,
            report=source.report,
        )  # fmt: skip
        # 4. The rounds, then the optional marginal release (both spend the budget).
        final, history = self._evolve(plan, schema, source, release, backend, ledger, rng)
        self.support_: WeightedSupport | None = None
        if plan.marginal_rho is not None and config.marginals is not None:
            from dpevolve.core.hybrid import fit_and_record

            self.support_ = fit_and_record(
                source.batches(), schema, final, plan.marginal_rho, config.marginals.share,
                config.marginals.options, ledger, rng, n, noise, progress=self.progress,
            )  # fmt: skip
            final = self.support_.pool
        self._store(fit_number, final, ledger, history, schema, n, plan.warnings)
        return self

    def _next_fit_number(self) -> int:
        fit_number = getattr(self, "fits_", 0) + 1
        if fit_number > 1:
            warnings.warn(
                f"fit() called again (fit {fit_number} of this model): the budget is spent "
                "again on top of the earlier fits, and ledger_ describes this fit only",
                UserWarning,
                stacklevel=4,
            )
        return fit_number

    def _release_inputs(
        self, plan: FitPlan, noise: NoiseSource, backend: Backend, n: int
    ) -> ReleaseInputs:
        return ReleaseInputs(
            noise=noise,
            schedule=plan.config.preset.schedule,
            budget=plan.run_budget,
            sensitivity=plan.sensitivity,
            vote=plan.pick.vote,
            distance=plan.distance,
            backend=backend,
            public=plan.public,
            n=n,
            sensitivity_of=plan.sensitivity_of,
            debias=plan.pick.debias,
        )

    def _evolve(
        self,
        plan: FitPlan,
        schema: Schema,
        source: PrivateSource,
        release: Release,
        backend: Backend,
        ledger: Ledger,
        rng: np.random.Generator,
    ) -> tuple[Records, list[dict[str, Any]]]:
        """The PE rounds from the initial population; each release goes to the ledger."""
        schedule = plan.config.preset.schedule
        variation = Variation(Layout.of(schema))
        initial = (
            variation.random(schedule.population, rng)
            if plan.public is None
            else variation.from_public(plan.public, schedule.population, rng)
        )
        history: list[dict[str, Any]] = []
        if plan.skip_rounds:
            return initial, history
        engine = Evolution(plan.distance, plan.pick.vote, release, schedule, variation, backend)
        with _progress(self.progress, schedule.rounds) as advance:

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

            return engine.run(source, initial, rng, on_round), history

    def _store(
        self,
        fit_number: int,
        final: Records,
        ledger: Ledger,
        history: list[dict[str, Any]],
        schema: Schema,
        n: int,
        policy_warnings: list[str],
    ) -> None:
        self.fits_ = fit_number
        self.population_ = final
        self.synthetic_ = decode(final, schema)
        self.ledger_ = ledger
        self.history_ = history
        self.schema_ = schema
        self.n_private_ = n
        self.warnings_ = policy_warnings

    # ----------------------------------------------------------- conveniences
    @classmethod
    def create(cls, preset: str = "tabpe", **params: Any) -> Synthesizer:
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
    from dpevolve.progress import phase, text_column

    spent = text_column("ε spent {task.fields[spent]:.4g}")
    with phase(True, "round", rounds, spent, spent=0.0) as advance:
        yield lambda t, spent: advance(t, spent=spent)
