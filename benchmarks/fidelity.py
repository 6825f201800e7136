"""Fidelity of PE alone against PE plus a marginal release, on Adult-9 and XOR-3.

For each data set, epsilon and seed: the default ``tabpe`` preset as before (its 1000
released records) and the hybrids of ``HYBRIDS`` (``Synthesizer(marginals=share)``: PE
rounds, if any, plus one Gaussian release of low-order marginals, then a grown pool
weighted to match them; ``sample()`` draws the private row count n), and real rows
(1000 sampled, and a bootstrap of n). Metrics: mean 1-way and 2-way marginal TV
(numerics in 20 bins over the declared range), ``tv_all`` (the mean over all 1- and
2-way sets), TSTR accuracy (histogram gradient boosting trained on the synthetic table,
tested on the real held-out split), wall time of fit + sample and peak Python memory
(tracemalloc). AIM, MST and Tab-PE numbers measured earlier are stored beside ours,
labelled "recorded, not rerun".

    DPEVOLVE_DATA=... python benchmarks/fidelity.py [--quick] [--seeds 3]
        [--epsilons 1 0.3 3 10] [--datasets adult xor3] [--hybrids JSON] [--out PATH]

Writes benchmarks/results/fidelity.json and a PNG beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpevolve import Synthesizer, datasets
from dpevolve.config import MarginalSpec
from dpevolve.presets import get_preset
from dpevolve.reporting.evaluation import marginal_tv, tstr

RESULTS = Path(__file__).resolve().parent / "results"
COLUMNS = {"adult": "adult-tabpe", "xor3": None, "bank": "bank5"}
RECORDED = {  # measured earlier on this machine (issue), epsilon 1, delta 1e-5
    "adult": {
        "AIM": {"tv_all": 0.0185, "accuracy": 0.831, "seconds": 553.0},
        "MST": {"accuracy": 0.755, "seconds": 34.0},
    },
    "xor3": {"Tab-PE": {"accuracy_low": 0.913, "accuracy_high": 0.929}},
}
HYBRIDS: dict[str, dict[str, Any]] = {
    # Best tv_all on Adult: the whole budget on pairs + label triples (20 bins); no PE.
    "hybrid_marginals": {"share": 1.0, "options": {"label_order": 3}},
    # Pairs + every label 4-way set with numerics in 2 bins; no PE. Holds XOR's parity
    # because the declared-range midpoint (0) is where XOR's features change sign.
    "hybrid_coarse4": {"share": 1.0, "options": {"coarse_order": 4, "coarse_bins": 2}},
    # PE kept: 5 rounds with 3/4 of rho, light multiplicative reweighting.
    "hybrid_parity": {
        "share": 0.25,
        "rounds": 5,
        "options": {"solver": "mw", "iterations": 30, "grow_rounds": 3, "rate": 0.03},
    },
}


def scores(
    train: pd.DataFrame, test: pd.DataFrame, synth: pd.DataFrame, schema: Any, label: str
) -> dict[str, float]:
    k = len(schema.names)
    tv1 = marginal_tv(train, synth, schema, 1).mean
    tv2 = marginal_tv(train, synth, schema, 2).mean
    pairs = k * (k - 1) / 2
    return {
        "tv1": tv1,
        "tv2": tv2,
        "tv_all": (k * tv1 + pairs * tv2) / (k + pairs),
        "accuracy": tstr(synth, test, schema, label).accuracy,
        "rows": len(synth),
    }


def timed_fit(model: Synthesizer, frame: pd.DataFrame) -> tuple[pd.DataFrame, float, float, float]:
    """Fit and sample: output, wall seconds, CPU seconds (robust to a shared machine), MiB."""
    tracemalloc.start()
    start, cpu = time.perf_counter(), time.process_time()
    model.fit(frame)
    synth = model.sample()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return synth, seconds, cpu, peak / 2**20


def load_split(name: str) -> tuple[Any, Any]:
    """(train, held-out test): the data set's own splits where it has them, else a fixed
    80/20 split of its default table (Bank) or persons A's holdout (Person Activity)."""
    if name == "person_activity":
        return datasets.person_activity_holdout(seed=0)
    if "train" in datasets.splits(name):
        columns = COLUMNS.get(name)
        return (
            datasets.load(name, split="train", columns=columns),
            datasets.load(name, split="test", columns=columns),
        )
    full = datasets.load(name, columns=COLUMNS.get(name))
    order = np.random.default_rng(0).permutation(len(full.frame))
    cut = int(0.8 * len(order))
    frame = full.frame.reset_index(drop=True)
    return (
        replace(full, frame=frame.iloc[order[:cut]].reset_index(drop=True)),
        replace(full, frame=frame.iloc[order[cut:]].reset_index(drop=True)),
    )


def run(
    name: str,
    epsilon: float,
    seeds: int,
    hybrids: dict[str, dict[str, Any]],
    rounds: int | None,
) -> dict[str, Any]:
    train, test = load_split(name)
    schema, label = train.schema, train.label
    assert label is not None
    systems: dict[str, list[dict[str, Any]]] = {"tabpe": [], **{h: [] for h in hybrids}}
    for seed in range(seeds):
        for system in systems:
            config = hybrids.get(system)
            extra = (
                {
                    "marginals": MarginalSpec(share=config["share"], options=config["options"]),
                }
                if config is not None
                else {}
            )
            pe_rounds = rounds if rounds is not None else (config or {}).get("rounds")
            # Every system names its preset: PE alone for tabpe, PE rounds or none plus
            # the marginal release for the hybrids (the library default is "hybrid").
            model = Synthesizer(
                schema,
                epsilon=epsilon,
                delta=1e-5,
                random_state=seed,
                preset=get_preset("tabpe", rounds=pe_rounds),
                **extra,
            )
            synth, seconds, cpu, peak = timed_fit(model, train.frame)
            row = {
                "seed": seed,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "peak_python_mb": peak,
                "epsilon_spent": model.ledger_.result().epsilon,
                **scores(train.frame, test.frame, synth, schema, label),
            }
            print(f"{name} eps={epsilon} {system} {json.dumps(row)}", flush=True)
            systems[system].append(row)
    real = {
        "real_sample_1000": [
            scores(train.frame, test.frame, train.frame.sample(1000, random_state=s), schema, label)
            for s in range(seeds)
        ],
        "real_bootstrap_n": [
            scores(
                train.frame,
                test.frame,
                train.frame.sample(len(train.frame), replace=True, random_state=s),
                schema,
                label,
            )
            for s in range(seeds)
        ],
    }
    return {
        "dataset": name,
        "epsilon": epsilon,
        "n_train": len(train.frame),
        "n_test": len(test.frame),
        "runs": {**systems, **real},
        "summary": {k: summarise(v) for k, v in {**systems, **real}.items()},
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for key in ("tv1", "tv2", "tv_all", "accuracy", "seconds", "cpu_seconds", "peak_python_mb"):
        values = [r[key] for r in rows if key in r]
        if values:
            sd = statistics.stdev(values) if len(values) > 1 else math.nan
            out[key] = {"mean": statistics.fmean(values), "sd": sd}
    return out


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    at_one = [r for r in results if r["epsilon"] == 1.0] or results
    fig, axes = plt.subplots(1, 2 * len(at_one), figsize=(5.5 * len(at_one) * 2, 3.8))
    axes = list(axes) if len(at_one) * 2 > 1 else [axes]
    for i, res in enumerate(at_one):
        names = list(res["summary"])
        for j, metric in enumerate(("tv_all", "accuracy")):
            ax = axes[2 * i + j]
            values = [res["summary"][s].get(metric, {}).get("mean", math.nan) for s in names]
            labels = list(names)
            for ref, rec in RECORDED.get(res["dataset"], {}).items():
                value = rec.get(metric, rec.get(f"{metric}_high"))
                if value is not None:
                    values.append(value)
                    labels.append(f"{ref}\n(recorded)")
            ax.bar(range(len(values)), values, color="tab:blue")
            ax.set_xticks(range(len(values)), labels, rotation=30, ha="right", fontsize=8)
            ax.set_title(f"{res['dataset']} eps={res['epsilon']:g}: {metric}")
            if metric == "accuracy":
                ax.set_ylim(0.5, 1.0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--datasets", nargs="+", default=["adult", "xor3"])
    parser.add_argument("--hybrids", default=json.dumps(HYBRIDS), help="JSON name -> config")
    parser.add_argument("--quick", action="store_true", help="1 seed, 6 PE rounds, adult")
    parser.add_argument("--out", default=str(RESULTS / "fidelity.json"))
    args = parser.parse_args()
    hybrids = json.loads(args.hybrids)
    seeds, rounds = (1, 6) if args.quick else (args.seeds, None)
    names = ["adult"] if args.quick else args.datasets
    results = [run(n, e, seeds, hybrids, rounds) for n in names for e in args.epsilons]
    out = {
        "delta": 1e-5,
        "quick": args.quick,
        "hybrids": hybrids,
        "results": results,
        "recorded_not_rerun": RECORDED,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    path = Path(args.out)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=2))
    plot(results, path.with_suffix(".png"))
    for res in results:
        print(res["dataset"], res["epsilon"], json.dumps(res["summary"], indent=1))


if __name__ == "__main__":
    main()
