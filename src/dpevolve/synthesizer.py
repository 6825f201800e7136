"""The scikit-learn style entry point: ``Synthesizer(...).fit(private).sample(n)``.

The facade knows one interface (:mod:`dpevolve.method`): it hands the private source, the
schema, the budget and a :class:`~dpevolve.method.FitContext` to the method's ``fit`` and
draws rows from the generator it returns. The adaptive engine is the default method.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from dpevolve.backends import Backend
from dpevolve.config import ON_INVALID
from dpevolve.data.identifiers import check_private_id_file, check_private_ids, with_identifiers
from dpevolve.data.io import DEFAULT_BATCH_ROWS
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource, PrivateSource
from dpevolve.engine.refine import SAMPLE_ROWS
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams
from dpevolve.method import FitContext, Generator, Method, blocks_of
from dpevolve.pe.method import PEGenerator, PEMethod, pilot_fit
from dpevolve.pe.pilot.run import PilotFit
from dpevolve.presets import get_method, method_of
from dpevolve.privacy import Budget
from dpevolve.privacy.interrupt import Interrupted, Spending, spending
from dpevolve.privacy.noise import NoiseSource, make_noise


def package_version() -> str:
    try:
        return version("dpevolve")
    except PackageNotFoundError:
        return "0+unknown"


class Synthesizer(EstimatorParams):
    """Differentially private synthetic tables: the adaptive engine by default, or
    another method (Private Evolution) by name.

    Parameters
    ----------
    schema
        A :class:`~dpevolve.data.schema.Schema` or the path of its YAML file. Declared
        ranges and categories come from here, never from the private table.
    method
        The algorithm and its settings (:mod:`dpevolve.presets`): a name, ``adaptive``
        (the default: marginals chosen round by round where the model is most wrong, one
        graphical model, fresh rows; docs/engine.md), ``tabpe``, ``bfsoft`` or ``hybrid``
        (Private Evolution; docs/guide.md, "Presets"), or a method object:
        ``get_method("adaptive", engine={"max_rounds": 60})``,
        ``get_method("bfsoft", vote=VoteSpec(kind="soft", temperature=0.05))``. A method
        that cannot use an input (the adaptive engine a policy) refuses it by name.
    epsilon, delta
        The (epsilon, delta) guarantee of the whole run. ``delta`` defaults to
        ``min(1e-5, 1 / (n ln n))``: ``n``, the private row count, is public under
        replace-one adjacency.
    rho
        Alternatively, a zCDP budget (``epsilon`` then reports the guarantee at ``delta``).
    policy
        A Blowfish policy (object or YAML path) for Private Evolution; ``None`` protects
        whole records.
    public
        Public records from the same domain: the engine's free prior, PE's initial
        population.
    random_state
        Seed of the run (post-processing only). ``None`` draws one and records it.
    on_invalid
        ``error``, ``drop`` or ``clip`` for private cells outside the schema.
    backend
        Where the private records are counted: a name (``auto``, ``local``, ``fused``,
        ``gpu``, ``dask``, ``duckdb``) or a backend object (:mod:`dpevolve.backends`);
        ``auto``: the engine's counts here, or in DuckDB for a table read from disk each
        pass; PE's votes in the fused numba kernels when installed (docs/scale.md).
    noise_seed
        ``None`` (default): every draw that protects privacy comes from the operating
        system's secure source. An integer makes the noise reproducible bit for bit, for
        research only: anyone who holds it can remove the noise. It never enters the
        ledger or a report (the ledger says ``"noise": "seeded"``).
    progress
        Show progress with the privacy spent so far.

    Attributes
    ----------
    generator_ : Generator
        What the fit released; :meth:`sample` draws from it (post-processing).
    synthetic_ : pandas.DataFrame
        The fit's own table: with Private Evolution the final population; with the
        adaptive engine ``n`` rows drawn, on first access only, from ``synthetic_seed_``.
    synthetic_seed_ : numpy.random.SeedSequence or None
        The adaptive engine's seed for ``synthetic_`` (spawned from ``random_state``).
    population_ : Records or None
        Private Evolution's final released population (encoded).
    support_ : WeightedSupport or None
        With a marginal release: the released marginals, the pool and its weights.
    measurements_ : MeasurementList or None
        Every release of the fit, one per ledger event, in ledger order (the engine's
        fine histograms, selections, marginals and PE-stage votes; Private Evolution's
        votes and marginal tail).
    ledger_ : Ledger
        Every release and the guarantee of the run.
    history_ : list of dict
        Per-round facts derived from released quantities only.
    """

    def __init__(
        self,
        schema: Schema | str | Path,
        *,
        method: Method | str | None = None,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        policy: Any = None,
        public: pd.DataFrame | None = None,
        random_state: int | None = None,
        on_invalid: Literal["error", "drop", "clip"] = "error",
        backend: Backend | str | None = None,
        noise_seed: int | None = None,
        progress: bool = False,
    ) -> None:
        self.schema = schema
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.policy = policy
        self.public = public
        self.random_state = random_state
        self.on_invalid = on_invalid
        self.backend = backend
        self.noise_seed = noise_seed
        self.progress = progress

    # ------------------------------------------------------------ configuration
    def _schema(self) -> Schema:
        return Schema.of(self.schema)

    def resolved_method(self) -> Method:
        """The method this model runs: ``method``, or the default (checked)."""
        return method_of(self.method)

    def budget(self) -> Budget:
        """The budget as given (checked; ``delta`` resolved when ``n`` is known)."""
        return Budget(epsilon=self.epsilon, delta=self.delta, rho=self.rho)

    @classmethod
    def pilot_fit(
        cls,
        schema: Schema | str | Path,
        method: Method | str,
        policy: Any = None,
        backend: Backend | str | None = None,
    ) -> PilotFit:
        """A public pilot's ``fit`` callback (:data:`~dpevolve.pe.pilot.run.PilotFit`) for
        the Private Evolution ``method`` (a name or a method object), under ``policy`` and
        on ``backend``: see :func:`dpevolve.pe.method.pilot_fit`."""
        chosen = method_of(method)
        if not isinstance(chosen, PEMethod):
            raise InputError(f"a pilot runs Private Evolution: the {chosen.name} method has none")
        return pilot_fit(Schema.of(schema), chosen, policy, backend)

    # --------------------------------------------------------------------- fit
    def fit(self, X: pd.DataFrame, y: Any = None) -> Synthesizer:
        """Fit the method on the private table ``X`` (``y`` is ignored)."""
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
                return self._fit(source, fit_number, spend)
        except Interrupted as stop:
            if stop.releases:
                self.fits_ = fit_number
            raise

    def _fit(self, source: PrivateSource, fit_number: int, spend: Spending) -> Synthesizer:
        """The one fit path: the method's ``fit``; ``spend`` follows its ledger."""
        method, schema, n = self.resolved_method(), self._schema(), source.n
        if self.on_invalid not in ON_INVALID:
            raise InputError(f"on_invalid must be error, drop or clip, got '{self.on_invalid}'")
        if n < 1:
            raise InputError("the private table is empty (0 rows)")
        budget = self.budget().for_rows(n)
        # Seeds (post-processing) and the noise source (privacy).
        seed = np.random.SeedSequence(self.random_state)
        fit_seed, sample_seed, table_seed = seed.spawn(3)
        noise = make_noise(self.noise_seed)

        def opened(ledger: Any) -> None:
            spend.ledger = ledger

        context = FitContext(
            run=self._run_facts(seed, noise, n, fit_number), noise=noise,
            rng=np.random.default_rng(fit_seed), public=self.public, policy=self.policy,
            backend=self.backend, on_invalid=self.on_invalid, progress=bool(self.progress),
            opened=opened,
        )  # fmt: skip
        generator = method.fit(source, schema, budget, context)
        assert context.ledger is not None, f"the {method.name} method opened no ledger"
        self._sample_rng = np.random.default_rng(sample_seed)
        self._store(fit_number, generator, context, schema, n, table_seed)
        # Counts from the private data (kept with it: never in a model file).
        self.validation_ = source.report
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

    def _store(
        self,
        fit_number: int,
        generator: Generator,
        context: FitContext,
        schema: Schema,
        n: int,
        table_seed: np.random.SeedSequence,
    ) -> None:
        self.fits_ = fit_number
        self.generator_: Generator = generator
        self.__dict__.pop("synthetic_", None)  # an earlier fit's
        pe = generator if isinstance(generator, PEGenerator) else None
        self.population_ = None if pe is None else pe.population
        self.support_ = None if pe is None else pe.support
        self.measurements_ = context.measurements
        if pe is not None:
            self.synthetic_ = pe.table
        # The engine's synthetic_ is drawn from this seed when first read, not here
        # (docs/scale.md): memory stays bounded in rows.
        self.synthetic_seed_: np.random.SeedSequence | None = None if pe else table_seed
        assert context.ledger is not None
        self.ledger_ = context.ledger
        self.history_ = context.history
        self.schema_ = schema
        self.n_private_ = n
        self.warnings_ = context.warnings

    # ----------------------------------------------------------- conveniences
    @classmethod
    def create(cls, method: str = "adaptive", **params: Any) -> Synthesizer:
        """A synthesizer from a named method (``Synthesizer.create("bfsoft", schema=...,
        epsilon=1)``), the way SDV and smartnoise-synth users construct one."""
        return cls(method=get_method(method), **params)

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

        model = load_model(path, cls)
        population = vars(model).get("population_")
        if "generator_" not in vars(model) and population is not None:
            # Private Evolution's generator is saved as its parts (model_io.RELEASED).
            model.generator_ = PEGenerator(
                population, vars(model)["synthetic_"], model.support_, model.schema_
            )
        return model

    # ------------------------------------------------------------------ sample
    @property
    def synthetic_(self) -> pd.DataFrame:
        """The fit's own table (see the class docstring), drawn on first access."""
        table: pd.DataFrame | None = self.__dict__.get("synthetic_")
        if table is not None:
            return table
        generator: Generator | None = self.__dict__.get("generator_")
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

        The generator draws them (:mod:`dpevolve.method`): the engine's model fresh
        rows; Private Evolution its population or weighted support. Identifier columns
        (:mod:`dpevolve.data.identifiers`) get fresh ids, or are left out.
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
        yield from blocks_of(self.generator_, rows, SAMPLE_ROWS, self._sample_rng)
