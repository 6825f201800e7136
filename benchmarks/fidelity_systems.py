"""The systems of the fidelity benchmark, each a function ``(split, epsilon, delta, seed)
-> (n synthetic rows, facts)``.

* ``engine``: :func:`dpevolve.engine.synthesize` (the select-measure-estimate-generate
  engine), public data passed where the benchmark table has some; :class:`NotAvailable`
  while the package is not importable.
* ``engine_pe``: the engine with its PE stage on (:data:`PE_VARIANT`, engine/refine.py);
  ``engine_nope``: with it off (``pe_share = 0``), whatever the default.
* ``engine_nopublic``: the engine with the public table withheld (what public data adds).
* ``engine_declared_bins``: the engine with ``adaptive_bins`` off (equal-width bins over
  the declared ranges unless a public table places them); ``engine_released_bins``:
  with ``public_bins`` off (bins from the released histograms even with public data).
* ``tabpe``, ``hybrid``: :class:`dpevolve.Synthesizer` with that preset; with public
  data, ``tabpe`` runs PubMix (the PubMix study's setting) and ``hybrid`` draws its
  initial population from it. ``sample(n)`` gives the n output rows.
* ``aim``, ``mst``: our ports on private-pgm's ``mbi`` (``experiments/mbi_baselines.py``;
  replace-one adjacency like dpevolve's) at the ``rho`` whose CKS conversion is
  ``(epsilon, delta)``; AIM's rounds are capped at :data:`AIM_CAP_S` seconds (the
  unspent budget is not used); they ignore public data.
* ``bootstrap``: ``n`` real rows drawn with replacement (not private; the ceiling);
  ``real``: the real training rows themselves (their TSTR is "the real table's").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from fidelity_data import Split
from fidelity_metrics import bootstrap

ROOT = Path(__file__).resolve().parents[1]
AIM_CAP_S = 300.0  # experiments' AIM_SETTINGS cap: AIM on Adult-9 ran ~550 s uncapped
EXTRA_ENV = "EXPERIMENTS_EXTRA_PATH"  # where mbi and jax live (a pip --target folder)


class NotAvailable(Exception):
    """A system that cannot run here (a missing package); the row says why."""


def _tabpe(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    from dpevolve import Synthesizer
    from dpevolve.presets import get_method

    pubmix = {} if split.public is None else {"mechanism": "pubmix"}
    method = get_method("tabpe", **pubmix)
    model = Synthesizer(
        split.schema, epsilon=epsilon, delta=delta, random_state=seed, public=split.public,
        method=method,
    ).fit(split.train)  # fmt: skip
    facts = {"epsilon_spent": model.ledger_.result().epsilon, "released": len(model.synthetic_)}
    return model.sample(len(split.train)), facts


def _hybrid(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    from dpevolve import Synthesizer

    model = Synthesizer(
        split.schema,
        epsilon=epsilon,
        delta=delta,
        method="hybrid",
        random_state=seed,
        public=split.public,
    ).fit(split.train)
    facts = {"epsilon_spent": model.ledger_.result().epsilon}
    return model.sample(len(split.train)), facts


def import_engine() -> Callable[..., pd.DataFrame]:
    """``dpevolve.engine.synthesize``, or :class:`NotAvailable`."""
    try:
        from dpevolve.engine import synthesize
    except ImportError as exc:
        raise NotAvailable(f"dpevolve.engine not importable ({exc})") from None
    return synthesize


#: The PE stage's settings of the ``engine_pe`` system (EngineSpec fields).
PE_VARIANT: dict[str, Any] = {"pe_share": 0.25, "pe_rounds": 4, "pe_rake": 1}


def _engine(
    split: Split, epsilon: float, delta: float, seed: int, **options: Any
) -> tuple[pd.DataFrame, dict]:
    synthesize = import_engine()
    synth = synthesize(
        split.train,
        split.schema,
        epsilon=epsilon,
        delta=delta,
        rows=len(split.train),
        seed=seed,
        public=split.public,
        spec=_spec(options),
    )
    return synth, dict(options)


def _spec(options: dict[str, Any]) -> Any:
    """An engine spec of the defaults with ``options`` laid over them (``None``: none)."""
    if not options:
        return None
    from dpevolve.engine import EngineSpec

    return EngineSpec.from_any(options)


def _engine_declared_bins(
    split: Split, epsilon: float, delta: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    """The engine with equal-width bins over the declared ranges unless a public table
    places them (``adaptive_bins`` off)."""
    return _engine(split, epsilon, delta, seed, adaptive_bins="off")


def _engine_released_bins(
    split: Split, epsilon: float, delta: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    """The engine with bins from the released histograms even where a public table is
    given (``public_bins`` off)."""
    return _engine(split, epsilon, delta, seed, public_bins="off")


def _engine_with(fields: dict[str, Any]) -> Callable[[Split, float, float, int], tuple]:
    def run(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
        return _engine(split, epsilon, delta, seed, **fields)

    return run


def _engine_nopublic(
    split: Split, epsilon: float, delta: float, seed: int
) -> tuple[pd.DataFrame, dict]:
    """The engine on the same private rows with the public table withheld."""
    synth, _ = _engine(
        Split(split.key, split.train, split.test, split.schema, split.label), epsilon, delta, seed
    )
    return synth, {"public": False}


def import_mbi() -> Any:
    """The experiments' mbi module (``EXPERIMENTS_EXTRA_PATH`` appended to the path)."""
    for entry in os.environ.get(EXTRA_ENV, "").split(os.pathsep):
        if entry and entry not in sys.path:
            sys.path.append(entry)  # after the venv: its numpy and scipy win
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from experiments import mbi_baselines
    from experiments.runner import Unavailable

    try:
        mbi_baselines.import_mbi()
    except Unavailable as exc:
        raise NotAvailable(str(exc)) from None
    return mbi_baselines


def _rho(epsilon: float, delta: float) -> float:
    from dpevolve.privacy import rho_for_epsilon

    return float(rho_for_epsilon(epsilon, delta, "cks"))


def _aim(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    baselines = import_mbi()
    rho = _rho(epsilon, delta)
    info: dict[str, Any] = {"aim_cap_s": AIM_CAP_S, "aim_rho": rho}
    synth = baselines.aim(
        split.train,
        split.schema,
        rho,
        seed,
        rows=len(split.train),
        info=info,
        degree=3,
        max_model_size=80.0,
        round_iters=250,
        final_iters=1000,
        time_limit=AIM_CAP_S,
    )
    return synth, info


def _mst(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    baselines = import_mbi()
    synth = baselines.mst(split.train, split.schema, _rho(epsilon, delta), seed, len(split.train))
    return synth, {}


def _bootstrap(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    # another draw than the evaluator's reference bootstrap (seed offset), same size
    return bootstrap(split.train, len(split.train), 1000 + seed), {"private": False}


def _real(split: Split, epsilon: float, delta: float, seed: int) -> tuple[pd.DataFrame, dict]:
    return split.train.reset_index(drop=True), {"private": False}


SYSTEMS: dict[str, Callable[[Split, float, float, int], tuple[pd.DataFrame, dict]]] = {
    "engine": _engine,
    "engine_pe": _engine_with(PE_VARIANT),
    "engine_nope": _engine_with({"pe_share": 0.0}),
    "engine_nopublic": _engine_nopublic,
    "engine_declared_bins": _engine_declared_bins,
    "engine_released_bins": _engine_released_bins,
    "tabpe": _tabpe,
    "hybrid": _hybrid,
    "aim": _aim,
    "mst": _mst,
    "bootstrap": _bootstrap,
    "real": _real,
}
"""System name -> runner, in the order of the report."""

PREPARE: dict[str, Callable[[], Any]] = {
    "engine": import_engine,
    "engine_pe": import_engine,
    "engine_nope": import_engine,
    "engine_nopublic": import_engine,
    "engine_declared_bins": import_engine,
    "engine_released_bins": import_engine,
    "aim": import_mbi,
    "mst": import_mbi,
}
"""Imports done before the clock and the memory baseline start (their cost is not the fit's)."""

USES_PUBLIC = {
    "engine", "engine_pe", "engine_nope", "engine_declared_bins", "engine_released_bins",
    "tabpe", "hybrid",
}  # fmt: skip
"""Systems that read a public table; the others run once per private table."""

DETERMINISTIC = {"real"}
"""Systems whose output does not depend on the seed: one row (seed 0)."""
