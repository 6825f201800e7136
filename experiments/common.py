"""Shared pieces of the studies: data sets, policies, backend, one fit and its scores.

Everything here runs inside worker processes; loaded tables are cached per process.

The error measure
-----------------
"Mean error" is :func:`dpevolve.pe.pilot.run.pilot_error`: the mean over ``k = 1, 2, 3`` of
the mean ``k``-way marginal total variation distance between the private training table
and the released synthetic table (spec §7: numeric columns in 20 equal-width bins over
the declared range, ``TV = 1/2 ||p - q||_1`` per ``k``-set of columns, averaged over all
``k``-sets). Lower is better; 0 means every 1-, 2- and 3-way marginal matches.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np
import pandas as pd

from dpevolve.pe.specs import VoteSpec

TEMPERATURES = (0.015, 0.03, 0.06)
"""The BF-Soft study's fixed temperatures (spec §3)."""

DELTA = 1e-5
"""delta of every BF-Soft conversion rho -> (eps, delta) (spec §6)."""

XOR_THETA = 1.5
"""Threshold (raw units, range [-10, 10]) of the XOR-3 policy on each feature."""

# Policies per data set, in the YAML form of dpevolve.pe.policy.blowfish (spec §2). The first one
# of each data set is its default in the budget and temperature studies.
POLICIES: dict[str, dict[str, dict[str, Any]]] = {
    "adult5": {
        "age": {"attributes": {"age": {"threshold": 7}}},
        "hours-per-week": {"attributes": {"hours-per-week": {"threshold": 8}}},
        "age+workclass": {
            "attributes": {"age": {"threshold": 7}, "workclass": {"partition": "WORKCLASS"}}
        },
        "age+income": {"attributes": {"age": {"threshold": 7}, "income": "complete"}},
        "all-five": {
            "attributes": {
                "age": {"threshold": 7},
                "workclass": {"partition": "WORKCLASS"},
                "sex": "complete",
                "hours-per-week": {"threshold": 8},
                "income": "complete",
            }
        },
    },
    "bank5": {"age": {"attributes": {"age": {"threshold": 7}}}},
    "xor3": {
        "features": {"attributes": {f"num_feat_{i}": {"threshold": XOR_THETA} for i in range(3)}}
    },
}


def default_policy(dataset: str) -> str:
    """The default policy name of a data set (``xor3-48000`` uses ``xor3``'s)."""
    return next(iter(POLICIES[base_dataset(dataset)]))


def base_dataset(dataset: str) -> str:
    """``xor3-48000`` -> ``xor3``; other names unchanged."""
    return dataset.split("-")[0] if dataset.startswith("xor") else dataset


def rho_grid(profile: str) -> list[float]:
    """Budgets of the BF-Soft budget study: log-spaced from 1e-5 to 1e-1.

    quick: 5 points (one per decade); full: 13 points (three per decade).
    """
    points = 5 if profile == "quick" else 13
    return [float(f"{r:.4g}") for r in np.logspace(-5, -1, points)]


# ---------------------------------------------------------------------- data
@functools.lru_cache(maxsize=16)
def load_table(dataset: str, split: str = "train") -> Any:
    """A :class:`dpevolve.datasets.Dataset` of the studies.

    * ``adult5``: UCI Adult, five columns; ``train`` (private), ``test`` (public / TSTR).
    * ``bank5``: UCI Bank Marketing ``full``, five columns (``test``: none).
    * ``xor3``: XOR-3, 12,000 training rows (seed 0) and 3,000 test rows (seed 1);
      ``xor3-N``: N training rows (seed 0), the same test rows.
    """
    from dpevolve import datasets

    if dataset == "adult5":
        return datasets.load("adult", split=split, columns="adult5")
    if dataset == "bank5":
        if split != "train":
            raise KeyError("bank5 has no test split")
        return datasets.load("bank", split="full", columns="bank5")
    if dataset.startswith("xor3"):
        if split == "test":
            return datasets.load("xor3", split="test")
        if dataset == "xor3":
            return datasets.load("xor3", split="train")
        return datasets.make_xor(3, int(dataset.split("-")[1]), seed=0)
    raise KeyError(f"unknown study data set {dataset!r}")


def has_test(dataset: str) -> bool:
    return not dataset.startswith("bank")


@functools.lru_cache(maxsize=64)
def policy(dataset: str, name: str) -> Any:
    """The :class:`dpevolve.pe.policy.blowfish.Policy` named ``name`` of ``dataset``."""
    from dpevolve.datasets import WORKCLASS_BLOCKS
    from dpevolve.pe.policy.blowfish import Policy

    spec = POLICIES[base_dataset(dataset)][name]
    attributes = {}
    for attr, graph in spec["attributes"].items():
        if isinstance(graph, dict) and graph.get("partition") == "WORKCLASS":
            graph = {"partition": [list(block) for block in WORKCLASS_BLOCKS.values()]}
        attributes[attr] = graph
    return Policy.from_dict({"attributes": attributes}, load_table(dataset).schema)


@functools.lru_cache(maxsize=1)
def backend() -> Any:
    """The fused numba backend (one thread) when numba is there, else the local one.

    Kernels compile on first use (no warm-up: a worker compiles only what it runs).
    """
    try:
        from dpevolve.backends.fused import FusedBackend, fused_available

        if fused_available():
            return FusedBackend(threads=1)
    except ImportError:
        pass
    from dpevolve.backends import LocalBackend

    return LocalBackend()


def backend_name() -> str:
    return type(backend()).__name__


# ------------------------------------------------------------------- scoring
def marginal_errors(real: pd.DataFrame, synth: pd.DataFrame, schema: Any) -> dict[str, float]:
    """``tv1``, ``tv2``, ``tv3`` (mean k-way TV) and ``mean_error`` (their mean)."""
    from dpevolve.reporting.evaluation import marginal_tv

    out: dict[str, float] = {}
    ks = [k for k in (1, 2, 3) if k <= len(schema)]
    for k in ks:
        out[f"tv{k}"] = float(marginal_tv(real, synth, schema, k).mean)
    out["mean_error"] = float(np.mean([out[f"tv{k}"] for k in ks]))
    return out


def tstr_scores(synth: pd.DataFrame, test: pd.DataFrame, schema: Any, label: str) -> dict:
    """TSTR accuracy, macro-F1 and AUC (one-thread gradient boosting)."""
    from dpevolve.reporting.evaluation import tstr

    report = tstr(synth, test, schema, label, n_threads=1)
    return {
        "tstr_accuracy": report.accuracy,
        "tstr_macro_f1": report.macro_f1,
        "tstr_auc": report.auc,
    }


def ledger_totals(model: Any) -> dict[str, Any]:
    """epsilon and delta of the run's ledger, and rho (sum over its Gaussian releases)."""
    result = model.ledger_.result()
    rho = 0.0
    for event in model.ledger_.events:
        value = getattr(event, "rho", None)
        if value is not None:
            rho += float(value)
        else:
            rho = math.nan
            break
    return {
        "epsilon": float(result.epsilon),
        "delta": float(result.delta),
        "rho": rho,
        "method": result.method,
        "releases": len(model.ledger_.events),
    }


def fit_synthesizer(
    dataset: str,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = DELTA,
    vote: str | VoteSpec = "hard",
    tau: float | None = None,
    policy_name: str | None = None,
    method: str = "bfsoft",
    seed: int = 0,
    private: pd.DataFrame | None = None,
    schema: Any = None,
    **options: Any,
) -> tuple[Any, float]:
    """Fit dpevolve's Synthesizer on a study table; returns ``(model, fit seconds)``.
    ``options``: Private Evolution's ``mechanism`` and ``marginals``, or the
    Synthesizer's own parameters (``public``)."""
    from dpevolve.presets import get_method
    from dpevolve.synthesizer import Synthesizer

    if private is None:
        table = load_table(dataset)
        private, schema = table.frame, table.schema
    begin = time.perf_counter()
    vote = vote if isinstance(vote, VoteSpec) else VoteSpec(kind=vote, temperature=tau)
    pe = {k: options.pop(k) for k in ("mechanism", "marginals") if k in options}
    model = Synthesizer(
        schema,
        rho=rho,
        epsilon=epsilon,
        delta=delta,
        method=get_method(method, vote=vote, **pe),
        policy=None if policy_name is None else policy(dataset, policy_name),
        random_state=seed,
        backend=backend(),
        **options,
    )
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # policy floors are expected in the policy study
        model.fit(private)
    return model, time.perf_counter() - begin


def score_release(
    dataset: str, synth: pd.DataFrame, tstr: bool = False, real: pd.DataFrame | None = None
) -> dict[str, float]:
    """Mean error against the private training table (and TSTR on the test split)."""
    table = load_table(dataset)
    metrics = marginal_errors(table.frame if real is None else real, synth, table.schema)
    if tstr and has_test(dataset):
        test = load_table(dataset, "test")
        metrics.update(tstr_scores(synth, test.frame, table.schema, table.label))
    return metrics
