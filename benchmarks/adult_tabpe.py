"""The tabpe preset on UCI Adult and on XOR-3, against baselines run in the same process.

For each seed: wall time and peak memory of one fit, mean 1- and 2-way marginal TV
against the training split, and TSTR accuracy on the held-out test split. Baselines in
the same run: the real training data (non-private), uniform random records over the
schema, and the majority class. AIM and MST references were measured earlier on this
machine with the same columns (given in the issue) and are reported beside ours; the
experiments/ harness runs them live.

    python benchmarks/adult_tabpe.py [--seeds 3] [--epsilon 1] [--quick]

Writes benchmarks/results/adult_tabpe.json and benchmarks/results/adult_tabpe.png.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from dpevolve import Synthesizer, datasets
from dpevolve.backends import make_backend
from dpevolve.data.encoding import Layout, decode
from dpevolve.pe.variation import Variation
from dpevolve.presets import get_method
from dpevolve.reporting.evaluation import marginal_tv, tstr

RESULTS = Path(__file__).resolve().parent / "results"
REFERENCE = {  # measured on this machine with the same 9 columns (issue 2)
    "AIM": {"seconds": 553.0, "tv": 0.0185, "accuracy": 0.831},
    "MST": {"seconds": 34.0, "tv": 0.043, "accuracy": 0.755},
}


def scores(train, test, synthetic, schema, label) -> dict[str, float]:
    tv1 = marginal_tv(train, synthetic, schema, 1).mean
    tv2 = marginal_tv(train, synthetic, schema, 2).mean
    accuracy = tstr(synthetic, test, schema, label).accuracy
    return {"tv1": tv1, "tv2": tv2, "tv_mean_1_2": (tv1 + tv2) / 2, "accuracy": accuracy}


def run_dataset(
    name: str,
    columns: Any,
    seeds: int,
    epsilon: float,
    delta: float,
    backend: str,
    rounds: int | None,
) -> dict[str, Any]:
    train = datasets.load(name, split="train", columns=columns)
    test = datasets.load(name, split="test", columns=columns)
    schema, label = train.schema, train.label
    runs = []
    for seed in range(seeds):
        tracemalloc.start()
        start = time.perf_counter()
        model = Synthesizer(
            schema,
            epsilon=epsilon,
            delta=delta,
            method=get_method("tabpe", rounds=rounds),
            random_state=seed,
            backend=make_backend(backend),
        )
        model.fit(train.frame)
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        row = {
            "seed": seed,
            "seconds": seconds,
            "peak_python_mb": peak / 2**20,
            "epsilon": model.ledger_.result().epsilon,
            **scores(train.frame, test.frame, model.synthetic_, schema, label),
        }
        print(f"{name} seed {seed}: {row}", flush=True)
        runs.append(row)

    rng = np.random.default_rng(0)
    uniform = decode(Variation(Layout.of(schema)).random(1000, rng), schema)
    real_sample = train.frame.sample(n=min(1000, len(train.frame)), random_state=0)
    baselines = {
        "real_train_1000_rows": scores(train.frame, test.frame, real_sample, schema, label),
        "real_train_all_rows": {"accuracy": tstr(train.frame, test.frame, schema, label).accuracy},
        "uniform_random": scores(train.frame, test.frame, uniform, schema, label),
        "majority_class": {
            "accuracy": float((test.frame[label] == train.frame[label].mode()[0]).mean())
        },
    }

    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in runs)

    def half_width(key: str) -> float:
        if len(runs) < 2:
            return float("nan")
        from scipy import stats

        return float(
            stats.t.ppf(0.975, len(runs) - 1)
            * statistics.stdev(r[key] for r in runs)
            / len(runs) ** 0.5
        )

    summary = {
        k: {"mean": mean(k), "ci95_half_width": half_width(k)}
        for k in ("seconds", "peak_python_mb", "tv1", "tv2", "tv_mean_1_2", "accuracy")
    }
    return {
        "dataset": name,
        "columns": schema.names,
        "n_train": len(train.frame),
        "n_test": len(test.frame),
        "runs": runs,
        "summary": summary,
        "baselines": baselines,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument("--backend", default="fused", choices=["fused", "local"])
    parser.add_argument("--quick", action="store_true", help="1 seed, 6 rounds (smoke test)")
    args = parser.parse_args()
    seeds, rounds = (1, 6) if args.quick else (args.seeds, None)

    adult = run_dataset(
        "adult", "adult-tabpe", seeds, args.epsilon, args.delta, args.backend, rounds
    )
    xor = run_dataset("xor3", None, seeds, args.epsilon, args.delta, args.backend, rounds)
    ours = adult["summary"]
    comparison = {
        ref: {
            "time_ratio_ours_over_ref": ours["seconds"]["mean"] / v["seconds"],
            "accuracy_gap_ours_minus_ref": ours["accuracy"]["mean"] - v["accuracy"],
            "tv_ours_vs_ref": [ours["tv_mean_1_2"]["mean"], v["tv"]],
        }
        for ref, v in REFERENCE.items()
    }
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {
        "epsilon": args.epsilon,
        "delta": args.delta,
        "backend": args.backend,
        "quick": args.quick,
        "adult": adult,
        "xor3": xor,
        "reference": REFERENCE,
        "comparison": comparison,
        "peak_rss_mb": peak_rss_mb,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "adult_tabpe.json").write_text(json.dumps(out, indent=2))
    plot(out, RESULTS / "adult_tabpe.png")
    print(
        json.dumps(
            {
                "adult": ours,
                "xor3": xor["summary"],
                "comparison": comparison,
                "peak_rss_mb": peak_rss_mb,
            },
            indent=2,
        )
    )


def plot(out: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    adult = out["adult"]
    names = ["dpevolve tabpe", "AIM (ref)", "MST (ref)", "uniform", "real 1000 rows"]
    acc = [
        adult["summary"]["accuracy"]["mean"],
        REFERENCE["AIM"]["accuracy"],
        REFERENCE["MST"]["accuracy"],
        adult["baselines"]["uniform_random"]["accuracy"],
        adult["baselines"]["real_train_1000_rows"]["accuracy"],
    ]
    tv = [
        adult["summary"]["tv_mean_1_2"]["mean"],
        REFERENCE["AIM"]["tv"],
        REFERENCE["MST"]["tv"],
        adult["baselines"]["uniform_random"]["tv_mean_1_2"],
        adult["baselines"]["real_train_1000_rows"]["tv_mean_1_2"],
    ]
    secs = [
        adult["summary"]["seconds"]["mean"],
        REFERENCE["AIM"]["seconds"],
        REFERENCE["MST"]["seconds"],
    ]
    axes[0].bar(names, acc, color="C0")
    axes[0].axhline(
        adult["baselines"]["majority_class"]["accuracy"], color="k", ls="--", label="majority class"
    )
    axes[0].set_ylim(0.5, 0.9)
    axes[0].set_title("Adult TSTR accuracy")
    axes[0].legend()
    axes[1].bar(names, tv, color="C1")
    axes[1].set_title("mean 1- and 2-way TV vs train")
    axes[2].bar(names[:3], secs, color="C2")
    axes[2].set_yscale("log")
    axes[2].set_title("wall time (s)")
    for ax in axes:
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(f"eps={out['epsilon']}, delta={out['delta']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
