"""What the secure noise source costs: Adult (9 columns, tabpe preset) fitted with secure
noise (OpenDP's discrete Gaussian on the OS CSPRNG, the default) and with seeded noise
(``noise_seed``: the same distribution from a numpy generator), same seeds, same run.

    python benchmarks/noise_cost.py [--seeds 3]

Writes benchmarks/results/noise_cost.json: per seed and source, the fit's wall time and
the time spent drawing noise, with the mean difference and a 95% t-interval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from scipy import stats

from dpevolve import Synthesizer, datasets
from dpevolve.privacy.noise import SecureNoise, SeededNoise

RESULTS = Path(__file__).resolve().parent / "results"


class Timed:
    """Wraps a noise source, adding up the seconds its Gaussian draws take."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds = inner, 0.0
        self.name = inner.name

    def gaussian(self, values: Any, sigma: float) -> Any:
        start = time.perf_counter()
        out = self.inner.gaussian(values, sigma)
        self.seconds += time.perf_counter() - start
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def fit(train: Any, seed: int, secure: bool) -> dict[str, float]:
    source = Timed(SecureNoise() if secure else SeededNoise(seed))
    model = Synthesizer(train.schema, epsilon=1.0, delta=1e-5, random_state=seed)
    model._noise = lambda: source  # type: ignore[method-assign]  # benchmark-only timing hook
    start = time.perf_counter()
    model.fit(train.frame)
    return {"fit_seconds": time.perf_counter() - start, "noise_seconds": source.seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    train = datasets.load("adult-tabpe", split="train")
    runs: dict[str, list[dict[str, float]]] = {"secure": [], "seeded": []}
    for seed in range(args.seeds):
        for secure in (True, False):
            runs["secure" if secure else "seeded"].append(fit(train, seed, secure))
    diff = [a["fit_seconds"] - b["fit_seconds"] for a, b in zip(*runs.values(), strict=True)]
    mean = statistics.fmean(diff)
    half = (
        stats.t.ppf(0.975, len(diff) - 1) * statistics.stdev(diff) / len(diff) ** 0.5
        if len(diff) > 1
        else float("nan")
    )
    out = {
        "dataset": "adult (9 columns), tabpe preset, epsilon 1, delta 1e-5",
        "runs": runs,
        "secure_minus_seeded_fit_seconds": {"mean": mean, "ci95": [mean - half, mean + half]},
        "noise_seconds_mean": {
            k: statistics.fmean(r["noise_seconds"] for r in v) for k, v in runs.items()
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "noise_cost.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
