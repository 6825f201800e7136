"""The engine in one call: a table in, a synthetic table out."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpevolve.backends.base import Backend
from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource
from dpevolve.data.validation import OnInvalid
from dpevolve.engine.method import fit_engine
from dpevolve.engine.spec import EngineSpec
from dpevolve.privacy import Budget, default_delta
from dpevolve.privacy.noise import make_noise


def synthesize(
    frame: pd.DataFrame,
    schema: Schema,
    *,
    epsilon: float,
    delta: float | None = None,
    rows: int | None = None,
    seed: int | None = None,
    noise_seed: int | None = None,
    public: pd.DataFrame | None = None,
    spec: EngineSpec | None = None,
    on_invalid: OnInvalid = "error",
    backend: Backend | None = None,
) -> pd.DataFrame:
    """An ``(epsilon, delta)``-DP synthetic table of ``frame`` (replace-one adjacency).

    Parameters
    ----------
    frame
        The private table; validated against ``schema`` before any budget is spent.
    schema
        The declared domains (public).
    epsilon, delta
        The budget; ``delta`` defaults to :func:`~dpevolve.privacy.default_delta` of the
        row count (public under replace-one).
    rows
        Rows to draw (default: as many as ``frame``); fresh draws from the model.
    seed
        Post-processing randomness (estimation, decoding); never the privacy noise.
    noise_seed
        Research only: seeded noise, which anyone holding the seed can remove.
    public
        Public rows (see :func:`~dpevolve.engine.fit_engine`).
    spec
        The engine's choices (default :class:`EngineSpec`).
    on_invalid
        What to do with rows outside the schema (``error``, ``drop``, ``clip``).
    backend
        Where the private records are counted (default: this process).
    """
    source = FrameSource(frame, schema, on_invalid=on_invalid)
    chosen = delta if delta is not None else default_delta(source.n)
    rng = np.random.default_rng(seed)
    result = fit_engine(
        source,
        schema,
        Budget(epsilon=epsilon, delta=chosen),
        spec,
        noise=make_noise(noise_seed),
        rng=rng,
        public=public,
        backend=backend,
    )
    return result.sample(rows, rng)


__all__ = ["synthesize"]
