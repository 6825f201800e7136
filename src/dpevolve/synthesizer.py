"""The scikit-learn style entry point: ``Synthesizer(...).fit(private).sample(n)``."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dpevolve.backends import Backend, make_backend
from dpevolve.backends.duckdb import counts_in_duckdb
from dpevolve.config import GaussianSpec, MarginalSpec, MechanismSpec, RunSpec, VoteSpec, resolve
from dpevolve.data.encoding import Records, decode
from dpevolve.data.identifiers import check_private_id_file, check_private_ids, with_identifiers
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.engine import EngineModel, fit_engine
from dpevolve.engine.refine import SAMPLE_ROWS, block_sizes
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams
from dpevolve.fit_plan import FitPlan, open_ledger, plan_fit
from dpevolve.pe.evolve import evolve
from dpevolve.pe.pilot.run import PilotFit, PilotRun
from dpevolve.pe.release.build import ReleaseInputs
from dpevolve.presets import Preset, get_preset
from dpevolve.privacy import Ledger, default_delta
from dpevolve.privacy.interrupt import Interrupted, Spending, spending
from dpevolve.privacy.noise import NoiseSource, make_noise

if TYPE_CHECKING:
    from dpevolve.pe.hybrid.tail import WeightedSupport


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
        A name or a :class:`~dpevolve.presets.Preset`: ``tabpe`` (the default; Tab-PE's
        Adult setting: 1000 records, 29 rounds, one-hot/L2), ``bfsoft`` (the BF-Soft
        study's 512 records, 8 rounds, Gower) or ``hybrid`` (the whole budget on one
        release of low-order marginals, rows drawn from a pool weighted to match them: far
        closer marginals on census-like tables, worse TSTR on Person Activity; see
        benchmarks/FIDELITY.md). ``get_preset("tabpe", population=40, rounds=3,
        distance="gower")`` overrides N, the rounds or the distance.
    vote
        ``hard`` (nearest candidate), ``soft`` or ``auto`` (a public pilot, which needs
        ``public``, picks hard or a soft configuration without spending private budget and
        says why), or a :class:`~dpevolve.config.VoteSpec` (``temperature``, a number or
        ``"auto"``; ``sharpen``; ``debias``). ``None``: ``auto`` with a policy and public
        data, else the preset's.
    mechanism
        ``gaussian`` (noisy vote histogram) or ``pubmix`` (parents sampled from a
        public/private mixture; needs ``public``, hard votes and an (epsilon, delta)
        budget), or a spec: :class:`~dpevolve.config.GaussianSpec` (``threshold``,
        ``calibration``) or :class:`~dpevolve.config.PubMixSpec` (``accounting``,
        ``fill``, ``gamma``).
    marginals
        A share of the budget (zCDP ``rho``, ``0 < share <= 1``) for one Gaussian release
        of low-order marginals after the PE rounds, or a
        :class:`~dpevolve.config.MarginalSpec` (``share``, ``options`` laid over the
        preset's); ``None``: the preset's (PE alone but for ``hybrid``). The rounds get
        the rest of ``rho``; both are Gaussian, so the run composes exactly to the target
        (see :mod:`dpevolve.pe.hybrid.tail`). The released population is then grown and
        weighted to match the noisy marginals (post-processing) and :meth:`sample` draws
        rows from that weighted support.
    policy
        A Blowfish policy (object or YAML path); ``None`` protects whole records.
    public
        Public records from the same domain: the initial population is drawn from them.
    random_state
        Seed of the run. ``None`` draws one and records it in the ledger.
    on_invalid
        ``error``, ``drop`` or ``clip`` for private cells outside the schema. With
        ``drop``/``clip`` an invalid row casts an empty vote and ``n`` stays ``len(X)``.
    backend
        Where votes and counts are computed: a name (``auto``, ``local``, ``fused``,
        ``gpu``, ``dask``, ``duckdb``) or a backend object (:mod:`dpevolve.backends`);
        default ``auto``: the fused numba kernels when numba is installed, else the numpy
        reference, and the engine's counts of a table read from disk each pass in DuckDB
        when it is installed (docs/scale.md). The same seed gives the same output on the
        same backend.
    noise_seed
        ``None`` (default): every draw that protects privacy comes from the operating
        system's secure source, so two runs differ even with the same ``random_state``.
        An integer makes the noise reproducible bit for bit, for research only: anyone
        who holds it can remove the noise. It never enters the ledger or a report (the
        ledger says ``"noise": "seeded"``).
    progress
        Show a progress bar with the privacy spent so far.

    Attributes
    ----------
    population_ : Records
        The final released population (encoded).
    synthetic_ : pandas.DataFrame
        The fit's own table: with Private Evolution the final population; with the
        adaptive engine ``n`` rows drawn, on first access only (never inside ``fit``:
        memory stays bounded in rows), from ``synthetic_seed_``.
    synthetic_seed_ : numpy.random.SeedSequence or None
        The adaptive engine's seed for ``synthetic_`` (spawned from ``random_state``).
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
        preset: str | Preset | None = None,
        vote: str | VoteSpec | None = None,
        mechanism: str | MechanismSpec = "gaussian",
        marginals: float | MarginalSpec | None = None,
        policy: Any = None,
        public: pd.DataFrame | None = None,
        random_state: int | None = None,
        on_invalid: Literal["error", "drop", "clip"] = "error",
        backend: Backend | str | None = None,
        noise_seed: int | None = None,
        progress: bool = False,
    ) -> None:
        self.schema = schema
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.preset = preset
        self.vote = vote
        self.mechanism = mechanism
        self.marginals = marginals
        self.policy = policy
        self.public = public
        self.random_state = random_state
        self.on_invalid = on_invalid
        self.backend = backend
        self.noise_seed = noise_seed
        self.progress = progress

    @classmethod
    def from_spec(cls, schema: Schema | str | Path, spec: RunSpec, **inputs: Any) -> Synthesizer:
        """The model that runs ``spec`` (e.g. ``RunSpec.from_dict(ledger["config"])``);
        ``inputs``: the policy, the public table, seeds, progress, a backend object."""
        return cls(schema, **{**spec.params(), **inputs})

    # ------------------------------------------------------------ configuration
    def _schema(self) -> Schema:
        return Schema.of(self.schema)

    def config(self) -> RunSpec:
        """The parameters resolved and checked (:func:`dpevolve.config.resolve`)."""
        return resolve(self.get_params())

    def resolved_preset(self) -> str:
        """The preset this model runs: ``preset``, or the default."""
        return self.config().preset.name

    def _noise(self) -> NoiseSource:
        return make_noise(self.noise_seed)

    def _policy(self, schema: Schema) -> Any:
        if self.policy is None:
            return None
        from dpevolve.pe.policy.blowfish import Policy

        if isinstance(self.policy, Policy):
            return self.policy
        return Policy.load(self.policy, schema)

    @classmethod
    def pilot_fit(cls, schema: Schema | str | Path, **params: Any) -> PilotFit:
        """A public pilot's ``fit`` callback (:data:`~dpevolve.pe.pilot.run.PilotFit`): each
        call fits ``Synthesizer(schema, **params)`` with the run's vote arm, budget,
        public seed and random state on its table, and returns the synthetic table."""
        base = {k: v for k, v in params.items() if k not in ("epsilon", "delta", "rho")}

        def fit(run: PilotRun) -> pd.DataFrame:
            arm = run.arm
            vote = VoteSpec(kind=arm.vote, temperature=arm.temperature, sharpen=arm.sharpen,
                            debias=arm.debias)  # fmt: skip
            model = cls(schema, **base, vote=vote, rho=run.rho, public=run.public,
                        random_state=run.seed)  # fmt: skip
            return model.fit(run.table).synthetic_

        return fit

    def _own_pilot(self, config: RunSpec, policy: Any) -> PilotFit:
        """The pilot model: this run's preset, policy, threshold and backend."""
        threshold = getattr(config.mechanism, "threshold", None)
        return self.pilot_fit(
            self.schema,
            preset=config.preset,
            policy=policy,
            mechanism=GaussianSpec(threshold=threshold),
            backend=self.backend,
        )

    def _backend(self) -> Backend:
        if self.backend is None or isinstance(self.backend, str):
            return make_backend(self.backend or "auto")
        return self.backend

    def _announce(self) -> bool:
        """Say an automatic vote choice on stderr: asked for by name, or progress shown."""
        return bool(self.progress) or self.vote == "auto"

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any = None) -> Synthesizer:
        """Run Private Evolution on the private table ``X`` (``y`` is ignored)."""
        del y
        schema = self._schema()
        check_private_ids(X, schema.identifiers)  # before anything is spent
        return self.fit_source(FrameSource(X, schema, on_invalid=self.on_invalid))

    def fit_file(self, path: str | Path, batch_rows: int = DEFAULT_BATCH_ROWS) -> Synthesizer:
        """Fit on a CSV or Parquet file read in batches, never whole (bounded memory).

        With the same seeds the result equals ``fit(read_table(path))``.
        """
        from dpevolve.data.streaming import StreamedTable

        check_private_id_file(Path(path), self._schema().identifiers)
        source = StreamedTable(
            path, self._schema(), batch_rows=batch_rows, on_invalid=self.on_invalid
        )
        return self.fit_source(source)

    def fit_source(self, source: PrivateSource) -> Synthesizer:
        """Fit on any :class:`~dpevolve.data.sources.PrivateSource` (the one door for
        private records: a table in memory, a file stream, Dask partitions).

        Interrupted (Ctrl-C), it raises :class:`~dpevolve.privacy.interrupt.Interrupted`,
        a ``KeyboardInterrupt`` whose ``ledger`` holds every release made so far
        (docs/privacy.md, "An interrupted run"); it sets no fitted attribute, but once it
        has spent, ``fits_`` counts it (a later fit warns that it spends again).
        """
        fit_number = self._next_fit_number()
        try:
            with spending() as spend:
                return self._fit_source(source, fit_number, spend)
        except Interrupted as stop:
            if stop.releases:
                self.fits_ = fit_number
            raise

    def _fit_source(self, source: PrivateSource, fit_number: int, spend: Spending) -> Synthesizer:
        """:meth:`fit_source`'s run; ``spend`` follows its ledger from the moment it opens."""
        config, schema, n = self.config(), self._schema(), source.n
        if n < 1:
            raise InputError("the private table is empty (0 rows)")
        if not config.preset.runs_pe:
            return self._fit_adaptive(config, schema, source, fit_number, spend)
        # 1. Everything decided from public facts, before a private record is read.
        policy = self._policy(schema)
        backend = self._backend()
        plan = plan_fit(
            config, schema, n, policy=policy, public=self.public, on_invalid=config.on_invalid,
            backend=backend, fit=self._own_pilot(config, policy), announce=self._announce(),
        )  # fmt: skip
        # 2. Seeds (post-processing) and the noise source (privacy).
        seed = np.random.SeedSequence(self.random_state)
        fit_seed, sample_seed = seed.spawn(2)
        rng = np.random.default_rng(fit_seed)
        self._sample_rng = np.random.default_rng(sample_seed)
        noise = self._noise()
        # 3. The release, calibrated once, and the ledger that records it.
        release, calibration = config.mechanism.build(self._release_inputs(plan, noise, backend, n))
        run = self._run_facts(seed, noise, n, fit_number)
        ledger = open_ledger(
            plan, schema, calibration=calibration, run=run, backend=type(backend).__name__,
            report=source.report,
        )  # fmt: skip
        spend.ledger = ledger
        # 4. The rounds, then the optional marginal release (both spend the budget).
        final, history = evolve(plan, schema, source, release, backend, ledger, rng, self.progress)
        self.support_: WeightedSupport | None = None
        if plan.marginal_rho is not None and config.marginals is not None:
            from dpevolve.pe.hybrid.tail import fit_and_record

            self.support_ = fit_and_record(
                source.batches(), schema, final, plan.marginal_rho, plan.marginal_share,
                config.marginals.build(), ledger, rng, n, noise, progress=self.progress,
                backend=backend,
            )  # fmt: skip
            final = self.support_.pool
        self._store(fit_number, final, ledger, history, schema, n, plan.warnings)
        return self

    def _fit_adaptive(
        self,
        config: RunSpec,
        schema: Schema,
        source: PrivateSource,
        fit_number: int,
        spend: Spending,
    ) -> Synthesizer:
        """The adaptive engine (:mod:`dpevolve.engine`): marginals chosen where the model
        is most wrong, one graphical model, fresh rows. Every release is in the ledger."""
        n = source.n
        seed = np.random.SeedSequence(self.random_state)
        fit_seed, sample_seed, table_seed = seed.spawn(3)
        rng = np.random.default_rng(fit_seed)
        self._sample_rng = np.random.default_rng(sample_seed)
        noise = self._noise()
        budget = config.budget.build(n)
        ledger = Ledger(
            budget.delta if budget.delta is not None else default_delta(n),
            metadata={
                **self._run_facts(seed, noise, n, fit_number),
                "budget": {"epsilon": budget.epsilon, "delta": budget.delta, "rho": budget.rho},
                "preset": config.preset.name,
                "config": config.to_dict(),
                "schema": schema.to_dict(),
                "validation": None if source.report is None else source.report.to_dict(),
            },
        )
        spend.ledger = ledger
        # The backend counts the private records (``auto``: here without loading numba,
        # or in DuckDB for a table read from disk each pass).
        auto = self.backend in (None, "auto")
        result = fit_engine(
            source, schema, budget, config.preset.engine, noise=noise, rng=rng,
            ledger=ledger, public=self.public, progress=bool(self.progress),
            backend=counts_in_duckdb(source.batches()) if auto else self._backend(),
        )  # fmt: skip
        self.generator_: EngineModel | None = result.released()
        self.support_ = None
        self.fits_ = fit_number
        self.population_: Records | None = None
        # synthetic_ is drawn from this seed when first read, not here (docs/scale.md).
        self.__dict__.pop("synthetic_", None)  # an earlier fit's
        self.synthetic_seed_: np.random.SeedSequence | None = table_seed
        self.ledger_ = ledger
        self.history_ = result.history
        self.schema_ = schema
        self.n_private_ = n
        self.warnings_: list[str] = []
        return self

    @staticmethod
    def _run_facts(
        seed: np.random.SeedSequence, noise: NoiseSource, n: int, fit_number: int
    ) -> dict[str, Any]:
        """What the ledger says of the run itself (the noise seed never: only its kind)."""
        return {
            "dpevolve_version": package_version(),
            "seed": seed.entropy,
            "noise": noise.name,
            "adjacency": "replace-one (bounded DP): the private row count n is public",
            "private_rows": n,
            "fit_number": fit_number,
        }

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
        self.generator_ = None
        self.synthetic_seed_ = None
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

        return load_model(path, cls)

    # ------------------------------------------------------------------ sample
    @property
    def synthetic_(self) -> pd.DataFrame:
        """The fit's own table (see the class docstring), drawn on first access."""
        table: pd.DataFrame | None = self.__dict__.get("synthetic_")
        if table is not None:
            return table
        generator: EngineModel | None = self.__dict__.get("generator_")
        seed = self.__dict__.get("synthetic_seed_")
        if generator is None or seed is None:
            raise AttributeError("synthetic_: call fit() first")
        table = generator.sample(self.n_private_, np.random.default_rng(seed))
        self.__dict__["synthetic_"] = table
        return table

    @synthetic_.setter
    def synthetic_(self, table: pd.DataFrame) -> None:
        # Kept in the instance's own dict: a model file holds it only once it was drawn.
        self.__dict__["synthetic_"] = table

    def sample(self, num_rows: int | None = None) -> pd.DataFrame:
        """``num_rows`` synthetic rows drawn from what the fit released (post-processing:
        no privacy cost), as in SDV; default: the private row count ``n`` (public under
        replace-one). The blocks of :meth:`sample_blocks`, joined.
        """
        parts = list(self.sample_blocks(num_rows))
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def sample_blocks(self, num_rows: int | None = None) -> Iterator[pd.DataFrame]:
        """The rows of :meth:`sample` in blocks of at most
        :data:`~dpevolve.engine.refine.SAMPLE_ROWS`, drawn one at a time: memory is
        bounded by a block whatever ``num_rows`` (``dpevolve synth --rows`` writes them as
        they come, docs/scale.md). The rows depend on ``random_state`` alone.

        With marginals (the ``hybrid`` preset), rows are drawn from the weighted support;
        with PE alone, from the final population (without replacement while ``num_rows``
        does not exceed it). ``synthetic_`` keeps the population itself. Identifier
        columns (:mod:`dpevolve.data.identifiers`) get fresh ids, or are left out.
        """
        start = 0
        for block in self._draw_blocks(num_rows):
            total = self.n_private_ if num_rows is None else int(num_rows)
            yield with_identifiers(block, self.schema_.identifiers, start, total)
            start += len(block)

    def _draw_blocks(self, num_rows: int | None) -> Iterator[pd.DataFrame]:
        if not hasattr(self, "ledger_"):
            raise InputError("call fit() before sample()")
        rows = self.n_private_ if num_rows is None else num_rows
        if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
            raise InputError(f"num_rows must be a whole number >= 0, got {num_rows!r}")
        return self._blocks(int(rows))

    def _blocks(self, rows: int) -> Iterator[pd.DataFrame]:
        generator: EngineModel | None = getattr(self, "generator_", None)
        if generator is not None:
            yield from generator.blocks(rows, self._sample_rng)
            return
        support: WeightedSupport | None = getattr(self, "support_", None)
        population = self.__dict__["synthetic_"]
        size = len(population)
        if support is None and rows <= size:
            index = self._sample_rng.choice(size, size=rows, replace=False)
            yield population.iloc[index].reset_index(drop=True)
            return
        for block in block_sizes(rows, SAMPLE_ROWS):
            if support is not None:
                yield decode(support.draw(block, self._sample_rng), self.schema_)
            else:
                index = self._sample_rng.choice(size, size=block, replace=True)
                yield population.iloc[index].reset_index(drop=True)
