"""Where Adult-9's TV is lost: one engine run (seeded noise, research only) decomposed.

For each seed: the plan's split of rho; every release (stage, clique, sigma); the
per-marginal TV (evaluation bins) of

* ``synth``: the n output rows (what the fidelity benchmark scores);
* ``model``: the fitted model itself (10 n rows drawn, so little sampling noise);
* ``exact``: the same measured queries with their exact counts, refitted (no noise:
  what the selection and the estimator leave);
* ``noisy_refit``: the same noisy queries refitted from scratch (convergence check);
* ``boot``: a real bootstrap of n rows (the sampling floor).

    PYTHONPATH=src DPEVOLVE_DATA=... python benchmarks/adult9_decompose.py adult 0,1,2 \
        [OPTIONS_JSON] [benchmarks/results/adult9_decompose.json]
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fidelity_data
import fidelity_metrics

from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.atoms import atom_candidates
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals
from dpevolve.engine.plan import Plan
from dpevolve.estimate import MarkovRandomField
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.metrics import marginal_report
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise

MULT = 10


def per_set(split, synth) -> dict[str, dict[tuple[str, ...], float]]:
    schema = split.schema
    real, _ = schema.validate(split.train, on_invalid="error", what="real")
    fake, _ = schema.validate(synth, on_invalid="error", what="synth")
    rc, fc = fidelity_metrics.codes(real, schema), fidelity_metrics.codes(fake, schema)
    out = {}
    for k in (1, 2):
        out[k] = marginal_report(schema, schema.names, k, rc, fc).per_set
    return out


def summary(sets) -> dict[str, float]:
    one, two = list(sets[1].values()), list(sets[2].values())
    return {
        "tv1": float(np.mean(one)),
        "tv2": float(np.mean(two)),
        "tv_all": float((np.sum(one) + np.sum(two)) / (len(one) + len(two))),
    }


def refit(result, measurements, iters: int, rows: int, rng) -> Any:
    """``rows`` drawn from a fresh model fitted to ``measurements`` (decoded as the run)."""
    model = MarkovRandomField(result.discretiser.domain, result.rows, iterations=iters)
    model.fit(measurements)
    return replace(result.released(), model=model, refinement=None).sample(rows, rng)


def run(key: str, seed: int, options: dict[str, Any]) -> dict[str, Any]:
    split = fidelity_data.load(key)
    spec = EngineSpec(**options)
    budget = Budget(epsilon=1.0, delta=1e-5)
    source = FrameSource(split.train, split.schema)
    cpu = time.process_time()
    result = fit_engine(
        source,
        split.schema,
        budget,
        spec,
        noise=make_noise(seed + 1000),
        rng=np.random.default_rng(seed),
    )
    synth = result.sample(len(split.train), np.random.default_rng(seed))
    cpu = time.process_time() - cpu
    n = len(split.train)
    disc0 = Discretiser(split.schema, spec.bins, spec.fine_cells)
    plan = Plan.of(
        budget,
        spec,
        len(disc0.domain.names),
        len(disc0.numeric),
        len(atom_candidates(split.schema, spec)),
    )
    releases = []
    for m in result.measurements:
        q = m.query
        name = type(q).__name__
        releases.append(
            {
                "type": name,
                "clique": list(q.clique)
                if isinstance(q, MarginalQuery)
                else getattr(q, "column", None),
                "coarse": bool(getattr(q, "coarse", False)),
                "cells": int(np.asarray(m.noisy).size),
                "sigma": None if not np.isfinite(m.sigma) else float(m.sigma),
                "rho": float(m.event.rho),
            }
        )
    tvs = {"synth": per_set(split, synth)}
    rng = np.random.default_rng(seed + 7)
    big = result.released().sample(MULT * n, rng)
    tvs["model"] = per_set(split, big)
    # exact counts of the same marginal queries
    margs = result.measurements.marginals()
    cliques = list(dict.fromkeys(m.clique for m in margs))
    counts, _ = count_marginals(source, result.discretiser, cliques)
    exact = [
        Measurement(m.query, m.query.project(counts[m.clique]), m.sigma, m.event, m.weight)
        for m in margs
    ]
    tvs["exact"] = per_set(split, refit(result, exact, 1000, MULT * n, rng))
    tvs["noisy_refit"] = per_set(split, refit(result, margs, 1000, MULT * n, rng))
    boot = fidelity_metrics.bootstrap(split.train, n, 1000 + seed)
    tvs["boot"] = per_set(split, boot)
    m = fidelity_metrics.score(split.train, split.test, synth, split.schema, split.label, seed)
    return {
        "key": key,
        "seed": seed,
        "options": options,
        "cpu": cpu,
        "tstr": m["accuracy"],
        **{k: summary(v) for k, v in tvs.items()},
        "per_set": {
            k: {str(kk): {"|".join(s): t for s, t in v[kk].items()} for kk in v}
            for k, v in tvs.items()
        },
        "plan": {
            f: getattr(plan, f)
            for f in (
                "total",
                "fine",
                "atoms",
                "oneway",
                "rounds",
                "planned_rounds",
                "pe",
                "tree",
                "tree_edges",
                "relations",
                "relation_edges",
            )
        },
        "releases": releases,
        "history": [
            {
                k: (list(v) if isinstance(v, tuple) else v)
                for k, v in h.items()
                if k in ("round", "clique", "groups", "sigma", "moved")
            }
            for h in result.history
        ],
        "metadata_engine": {
            k: v for k, v in result.ledger.metadata.get("engine", {}).items() if k != "spec"
        },
    }


def main() -> None:
    key, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    options = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    out = Path(sys.argv[4]) if len(sys.argv) > 4 else None
    rows = []
    for seed in seeds:
        row = run(key, seed, options)
        rows.append(row)
        brief = {
            k: row[k]
            for k in ("seed", "cpu", "tstr", "synth", "model", "exact", "noisy_refit", "boot")
        }
        print(json.dumps(brief, default=float), flush=True)
        if out:
            out.write_text(json.dumps(rows, default=float, indent=1))


if __name__ == "__main__":
    main()
