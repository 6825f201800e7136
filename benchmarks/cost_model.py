"""The constants of the cost model in docs/scale.md, measured on one fit.

Fits the default (adaptive) engine on a generated table (:func:`scale_memory.generate`,
``d`` features and a label, streamed from Parquet) with its backend wrapped so that
every pass over the private records is timed (``time.process_time``: CPU of every
thread, DuckDB's included). Reports the passes, the cliques and cells each counted, the
CPU of the passes per row per pass, and the rest of the fit per round (model fitting,
selection: independent of ``n``) and the slope of a pass's CPU on the cliques it counts
(per row per clique). Run for the local backend and for DuckDB (the first
DuckDB pass writes the codes table; it is reported apart).

Writes ``benchmarks/results/cost_model.json`` (``--out``); seeded noise (a benchmark only).

    nice python benchmarks/cost_model.py [--rows 1e6] [--d 9] [--backend local duckdb]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from scale_memory import RESULTS, table

from dpevolve import Synthesizer
from dpevolve.backends import make_backend
from dpevolve.data.schema import Schema


class Timed:
    """A backend whose every count (one pass over the records) is timed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.passes: list[dict[str, Any]] = []

    def vote(self, *args: Any) -> Any:
        return self.inner.vote(*args)

    def count(self, private: Any, query: Any) -> Any:
        start = time.process_time()
        out = self.inner.count(private, query)
        self.passes.append(
            {
                "cpu_s": time.process_time() - start,
                "cliques": len(getattr(query, "cliques", ())),
                "fine": len(getattr(query, "fine", ())),
                "cells": int(query.size),
            }
        )
        return out


def per_clique(passes: list[dict[str, Any]], rows: int) -> float | None:
    """The slope of a pass's CPU on the cliques it counts, in us per row per clique."""
    import numpy as np

    if len(passes) < 3:
        return None
    cliques = np.array([p["cliques"] + p["fine"] for p in passes], dtype=float)
    cpu = np.array([p["cpu_s"] for p in passes])
    slope = np.polyfit(cliques, cpu, 1)[0]
    return round(1e6 * float(slope) / rows, 4)


def fit(d: int, rows: int, backend: str) -> dict[str, Any]:
    path = table(d, rows)
    schema = Schema.load(path.with_suffix(".yaml"))
    timed = Timed(make_backend(backend))
    model = Synthesizer(schema, epsilon=1.0, random_state=0, noise_seed=0, backend=timed)
    start = time.process_time()
    model.fit_file(path)
    total = time.process_time() - start
    passes = timed.passes
    counted = sum(p["cpu_s"] for p in passes)
    rounds = max((h.get("round", 0) for h in model.history_), default=0)
    steady = passes[1:] if backend == "duckdb" else passes  # the first writes the codes
    per_pass = sum(p["cpu_s"] for p in steady) / max(1, len(steady)) / rows
    return {
        "backend": backend,
        "rows": rows,
        "d": d,
        "fit_cpu_s": round(total, 2),
        "passes": len(passes),
        "rounds": rounds,
        "count_cpu_s": round(counted, 2),
        "first_pass_cpu_s": round(passes[0]["cpu_s"], 2) if passes else None,
        "us_per_row_per_pass": round(1e6 * per_pass, 4),
        "other_cpu_s_per_round": round((total - counted) / max(1, rounds), 3),
        "cliques_per_pass": [p["cliques"] + p["fine"] for p in passes],
        "cpu_s_per_pass": [round(p["cpu_s"], 4) for p in passes],
        # Least squares of a pass's CPU on its cliques (the first DuckDB pass apart):
        # CPU per pass = a + b x cliques; b / rows is the cost per row per clique.
        "us_per_row_per_clique": per_clique(steady, rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--d", type=int, default=9)
    parser.add_argument("--backend", nargs="*", default=["local", "duckdb"])
    parser.add_argument("--out", type=Path, default=RESULTS / "cost_model.json")
    args = parser.parse_args()
    runs = []
    for backend in args.backend:
        runs.append(fit(args.d, int(args.rows), backend))
        print(json.dumps(runs[-1]), flush=True)
    result = {
        "benchmark": "cost_model.py",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "runs": runs,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
