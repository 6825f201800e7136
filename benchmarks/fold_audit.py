"""Every end stretch the decoding folds inward, and whether the real data lay there.

For each table, seed and numeric column of the suite, runs the engine as
``suite.py --seeded-noise`` does (:func:`beyond_diagnose.fit`) and, per end of the
column whose bins decode as a bin further in (:class:`dpevolve.engine.tails.Fold`),
records: the bins folded, the rule that folded them (``in``: :func:`~dpevolve.engine.
tails.inward`; ``bs``: :func:`~dpevolve.engine.tails.beyond_span`), the model's mass
there, their count across the releases and its noise scale
(:func:`~dpevolve.engine.tails.released_counts`), both in scales (``zm``, ``z``), and
the private rows that lie in them (a benchmark reads the private part; no release).

A stretch holding no real row is noise folded as it should be; one holding a share of
the rows is a tail cut off (the suite's ``unreached_range``). Their ``z`` tell how far
the releases could have told them apart (benchmarks/SUITE.md, session 47: on the code
before, the 113 empty folds stood at most 2.85 scales out, 7 of the 117 tails holding
1% or more of their column's rows 3.0-3.9, most well under the noise).

    DPEVOLVE_DATA=... python benchmarks/fold_audit.py --tables alcohol cps91 --seeds 3
        [--public] --out benchmarks/results/folds.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import beyond_diagnose
import suite
import suite_data

from dpevolve.engine.cells import shown_span
from dpevolve.engine.result import EngineResult
from dpevolve.engine.tails import beyond_span, held_bins, inward, released_counts


def stretches(result: EngineResult, private: Any) -> list[dict[str, Any]]:
    """One record per folded end of every numeric column (module docstring)."""
    released, disc = result.released(), result.discretiser
    marginals = result.measurements.marginals()
    bins = disc.bins
    out: list[dict[str, Any]] = []
    for column in disc.numeric:
        name = column.name
        fold = released.inward.get(name)
        if fold is None:
            continue
        edges = disc.edges(name)
        mass = np.asarray(result.model.answer((name,)), dtype=np.float64)[:bins]
        count, sd = released_counts(disc, name, marginals, result.fine.get(name))
        real = private[name].to_numpy(dtype=np.float64)
        real = real[~np.isnan(real)]
        truth = np.bincount(np.searchsorted(edges[1:-1], real, side="right"), minlength=bins)
        sigma = min(float(m.sigma) for m in marginals if m.clique == (name,))
        by_inward = inward(mass, count, sd)
        span = shown_span(disc.fine[name], np.asarray(released.fine[name]))
        by_span = np.arange(bins)
        if span is not None:
            by_span = beyond_span(edges, span, mass, sigma, held_bins(count, sd), sd)
        target = np.asarray(fold.target)[:bins]
        for side, order in (("low", np.arange(bins)), ("high", np.arange(bins)[::-1])):
            k = 0
            while k < bins and target[order[k]] != order[k]:
                k += 1
            if k == 0:
                continue
            part = order[:k]
            scale = float(np.sqrt(np.sum(sd[part] ** 2)))
            rule = "in" if (by_inward[part] != part).all() else ""
            rule += "bs" if (by_span[part] != part).all() else ""
            rows = int(truth[part].sum())
            held, shown = float(mass[part].sum()), float(count[part].sum())
            out.append({
                "column": name, "side": side, "bins": k, "rule": rule,
                "real": rows, "real_share": rows / max(1, real.size), "mass": held,
                "count": shown, "scale": scale, "z": shown / scale, "zm": held / scale,
            })  # fmt: skip
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tables", nargs="+", default=list(suite.SUITE), choices=list(suite.SUITE))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--public", action="store_true", help="as the suite's engine_public")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for table in args.tables:
        parts = suite_data.load(table)
        for seed in range(args.seeds):
            result, _ = beyond_diagnose.fit(parts, seed, args.public, 1.0, 1e-5)
            for record in stretches(result, parts.private):
                rows.append({"table": table, "seed": seed, **record})
                print(json.dumps(rows[-1]), flush=True)
    held = [r for r in rows if r["real_share"] >= 0.01]
    empty = [r for r in rows if r["real"] == 0]
    summary = {
        "folds": len(rows),
        "empty": len(empty),
        "empty_z_max": max((r["z"] for r in empty), default=None),
        "held_1pct": len(held),
        "held_1pct_z_ge_3": sum(r["z"] >= 3.0 for r in held),
    }
    print(json.dumps(summary))
    record = {"public": args.public, "summary": summary, "rows": rows}
    Path(args.out).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
