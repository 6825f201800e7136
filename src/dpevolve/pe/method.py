"""Private Evolution as a method (:mod:`dpevolve.method`).

A thin adapter over the PE fit path: the plan from public facts
(:func:`~dpevolve.pe.fit_plan.plan_fit`), one calibrated release, the rounds
(:func:`~dpevolve.pe.evolve.evolve`) and, with a marginal share, the hybrid tail
(:func:`~dpevolve.pe.hybrid.tail.fit_and_record`). Its settings are a preset (schedule,
distance, defaults), a vote (hard, soft or a public pilot's choice), a mechanism (the
Gaussian vote histogram or PubMix) and the optional marginal release; it takes a
Blowfish policy and public data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from dpevolve.config import Preset, get_preset
from dpevolve.errors import InputError
from dpevolve.method import FitContext, config_words
from dpevolve.pe.specs import (
    GaussianSpec,
    MarginalSpec,
    MechanismSpec,
    PubMixSpec,
    VoteSpec,
    default_vote,
    marginal_spec,
    mechanism_spec,
    vote_spec,
)
from dpevolve.privacy.noise import NoiseSource, SeededNoise, make_noise

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from dpevolve.backends import Backend
    from dpevolve.data.encoding import Records
    from dpevolve.data.schema import Schema
    from dpevolve.data.sources import PrivateSource
    from dpevolve.pe.hybrid.tail import WeightedSupport
    from dpevolve.pe.pilot.run import PilotFit, PilotRun
    from dpevolve.privacy import Budget


@dataclass(frozen=True)
class PEMethod:
    """Private Evolution with ``preset``'s schedule and distance, the ``vote``, the
    ``mechanism`` and the optional ``marginals`` release (docs/guide.md, "Presets").

    Settings left open (a vote kind, a threshold, a marginal share) are decided from the
    preset and the run's inputs by :meth:`resolved` when a fit starts.
    """

    preset: Preset
    vote: VoteSpec = field(default_factory=VoteSpec)
    mechanism: MechanismSpec = field(default_factory=GaussianSpec)
    marginals: MarginalSpec | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.preset, Preset) or not self.preset.runs_pe:
            raise InputError("a Private Evolution method needs a PE preset (tabpe, hybrid, bfsoft)")
        object.__setattr__(self, "vote", vote_spec(self.vote))
        object.__setattr__(self, "mechanism", mechanism_spec(self.mechanism))
        object.__setattr__(self, "marginals", marginal_spec(self.marginals))
        if self.marginals is not None and not isinstance(self.mechanism, GaussianSpec):
            raise InputError("the marginal release composes with the gaussian mechanism only")
        if isinstance(self.mechanism, PubMixSpec) and self.vote.kind in ("soft", "auto"):
            raise InputError(f"mechanism pubmix needs hard votes: drop vote {self.vote.kind}")

    @property
    def name(self) -> str:
        return self.preset.name

    @classmethod
    def named(cls, name: str, **settings: Any) -> PEMethod:
        """The PE preset ``name`` with ``settings`` (``vote``, ``mechanism``,
        ``marginals``, and ``population``, ``rounds``, ``distance`` overriding it)."""
        overrides = {k: settings.pop(k) for k in ("population", "rounds", "distance")
                     if k in settings}  # fmt: skip
        return cls(get_preset(name, **overrides), **settings)

    def resolved(self, *, public: bool, policy: bool) -> PEMethod:
        """Every open setting decided: the vote (``auto`` where the public pilot can run
        and pays, else the preset's), the threshold and the marginal share and options
        (the preset's under the given ones). Without public data an automatic vote fails
        here, before any record is read."""
        preset, vote, mechanism = self.preset, self.vote, self.mechanism
        if vote.kind is None:
            vote = replace(vote, kind=default_vote(vote, mechanism, public, policy) or preset.vote)
        if isinstance(mechanism, GaussianSpec) and mechanism.threshold is None:
            mechanism = replace(mechanism, threshold=preset.threshold)
        marginals = self.marginals
        if marginals is not None or preset.marginals is not None:
            given = marginals or MarginalSpec()
            share = preset.marginals if given.share is None else given.share
            if share is None:
                raise InputError("a marginal release needs its share (0 < share <= 1)")
            options = {**preset.marginal_options, **given.options}
            marginals = MarginalSpec(share=share, options=options)
        if not public and vote.kind == "auto":
            raise InputError("vote 'auto' needs public data (--public) for the pilot")
        if not public and vote.temperature == "auto":
            raise InputError("temperature 'auto' needs public data (--public) for the pilot")
        return PEMethod(preset, vote, mechanism, marginals)

    def check_inputs(self, *, policy: bool, public: bool) -> None:
        """Every setting decidable from the inputs, decided (:meth:`resolved`)."""
        self.resolved(public=public, policy=policy)

    def to_dict(self) -> dict[str, Any]:
        """The run-file words (a ledger's ``config`` block)."""
        return {
            "preset": self.preset.to_dict(),
            "vote": self.vote.to_dict(),
            "mechanism": self.mechanism.to_dict(),
            "marginals": None if self.marginals is None else self.marginals.to_dict(),
        }

    def fit(
        self, source: PrivateSource, schema: Schema, budget: Budget, context: FitContext
    ) -> PEGenerator:
        """The PE rounds (and the marginal tail) on ``source`` within ``budget``."""
        from dpevolve.data.encoding import decode
        from dpevolve.pe.evolve import evolve
        from dpevolve.pe.fit_plan import open_ledger, plan_fit, release_inputs, split_budget

        config = self.resolved(public=context.public is not None,
                               policy=context.policy is not None)  # fmt: skip
        n = source.n
        # 1. Everything decided from public facts, before a private record is read.
        policy = load_policy(context.policy, schema)
        backend = backend_of(context.backend)
        rounds_budget, marginal_rho = split_budget(config, budget)
        plan = plan_fit(
            config, schema, n, budget, marginal_rho=marginal_rho, policy=policy,
            public=context.public, on_invalid=context.on_invalid, backend=backend,
            fit=pilot_fit(schema, config, policy, context.backend, context.noise),
            announce=context.progress or self.vote.kind == "auto",
        )  # fmt: skip
        # 2. The release, calibrated once, and the ledger that records it.
        inputs = release_inputs(plan, rounds_budget, context.noise, backend, n)
        release, calibration = config.mechanism.build(inputs)
        ledger = context.open(open_ledger(
            plan, budget, schema, calibration=calibration, run=context.run,
            backend=type(backend).__name__, report=source.report,
            config=config_words(config, context),
        ))  # fmt: skip
        # 3. The rounds, then the optional marginal release (both spend the budget).
        from dpevolve.measurements import MeasurementList

        measurements = MeasurementList()
        final, history = evolve(
            plan, schema, source, release, backend, ledger, measurements, context.rng,
            context.progress,
        )  # fmt: skip
        support = None
        if plan.marginal_rho is not None and config.marginals is not None:
            from dpevolve.pe.hybrid.tail import fit_and_record

            support = fit_and_record(
                source.batches(), schema, final, plan.marginal_rho, plan.marginal_share,
                config.marginals.build(), ledger, measurements, context.rng, n, context.noise,
                progress=context.progress, backend=backend,
            )  # fmt: skip
            final = support.pool
        context.history.extend(history)
        context.warnings.extend(plan.warnings)
        context.measurements = measurements
        return PEGenerator(final, decode(final, schema), support, schema)


@dataclass(frozen=True)
class PEGenerator:
    """The released population (and, with a marginal release, its weighted support).

    ``table`` is the population decoded: the fit's own table (the fit's releases go to
    its context's measurement list: a model file keeps the released population, not
    the releases).
    """

    population: Records
    table: pd.DataFrame
    support: WeightedSupport | None
    schema: Schema

    #: A model file holds its parts under their own names (``population_``,
    #: ``synthetic_``, ``support_``), not the generator: loading builds it again.
    saved_as_parts: ClassVar[bool] = True

    def sample(self, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` rows: the blocks of :meth:`blocks`, joined."""
        import pandas as pd

        parts = list(self.blocks(rows, rng))
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def blocks(self, rows: int, rng: np.random.Generator) -> Iterator[pd.DataFrame]:
        """With a support, rows drawn from it; else from the population, without
        replacement while ``rows`` does not exceed it."""
        from dpevolve.data.encoding import decode
        from dpevolve.engine.refine import SAMPLE_ROWS, block_sizes

        size = len(self.table)
        if self.support is None and rows <= size:
            index = rng.choice(size, size=rows, replace=False)
            yield self.table.iloc[index].reset_index(drop=True)
            return
        for block in block_sizes(rows, SAMPLE_ROWS):
            if self.support is not None:
                yield decode(self.support.draw(block, rng), self.schema)
            else:
                index = rng.choice(size, size=block, replace=True)
                yield self.table.iloc[index].reset_index(drop=True)


def load_policy(policy: Any, schema: Schema) -> Any:
    """A Blowfish policy from its object or YAML path (``None``: whole records)."""
    if policy is None:
        return None
    from dpevolve.pe.policy.blowfish import Policy

    return policy if isinstance(policy, Policy) else Policy.load(policy, schema)


def backend_of(backend: Backend | str | None) -> Backend:
    """The backend object (a name, or ``None`` for ``auto``, made here)."""
    from dpevolve.backends import make_backend

    if backend is None or isinstance(backend, str):
        return make_backend(backend or "auto")
    return backend


def pilot_fit(
    schema: Schema,
    method: PEMethod,
    policy: Any,
    backend: Backend | str | None,
    noise: NoiseSource | None = None,
) -> PilotFit:
    """A public pilot's ``fit`` callback (:data:`~dpevolve.pe.pilot.run.PilotFit`): each
    call runs ``method`` (its preset and threshold; the preset's marginal release) with
    the run's vote arm, budget, public seed and random state on its public table, and
    returns the fit's own table.

    The pilot reads public records only, so its simulated noise protects nothing; it is
    fresh secure noise, except under a run's reproduction seed (``noise``, a
    :class:`~dpevolve.privacy.noise.SeededNoise`), where each pilot fit draws from a seed
    derived from it and the fit's public seed, so a seeded run is reproduced bit for bit.
    """
    threshold = getattr(method.mechanism, "threshold", None)
    noise_seed = noise.noise_seed if isinstance(noise, SeededNoise) else None

    def fit(run: PilotRun) -> pd.DataFrame:
        import numpy as np

        from dpevolve.data.sources import FrameSource
        from dpevolve.privacy import Budget, default_delta

        arm = run.arm
        vote = VoteSpec(kind=arm.vote, temperature=arm.temperature, sharpen=arm.sharpen,
                        debias=arm.debias)  # fmt: skip
        pilot = PEMethod(method.preset, vote, GaussianSpec(threshold=threshold))
        source = FrameSource(run.table, schema, on_invalid="error")
        fit_seed = np.random.SeedSequence(run.seed).spawn(1)[0]
        pilot_seed = None
        if noise_seed is not None:
            pilot_seed = int(np.random.SeedSequence([noise_seed, run.seed]).generate_state(1)[0])
        context = FitContext(
            run={}, noise=make_noise(pilot_seed), rng=np.random.default_rng(fit_seed),
            public=run.public, policy=policy, backend=backend,
        )  # fmt: skip
        budget = Budget(rho=run.rho, delta=default_delta(source.n))
        return pilot.fit(source, schema, budget, context).table

    return fit


def pe_method(preset: Preset | str, settings: Mapping[str, Any]) -> PEMethod:
    """A :class:`PEMethod` from a preset (or its name) and the settings ``vote``,
    ``mechanism``, ``marginals`` (each a spec, a name or a share, or absent)."""
    chosen = get_preset(preset) if isinstance(preset, str) else preset
    return PEMethod(chosen, **{k: v for k, v in settings.items() if v is not None})


__all__ = ["PEGenerator", "PEMethod", "backend_of", "load_policy", "pe_method", "pilot_fit"]
