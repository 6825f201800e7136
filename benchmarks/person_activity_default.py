"""Person Activity TSTR of the default preset (tabpe) against hybrid, epsilon 1/2/4.

    python benchmarks/person_activity_default.py [--seeds 2]

Persons A (80% train, stratified), TSTR on A's held-out rows, as in the PubMix study.
Writes benchmarks/results/person_activity_default.json (one row per fit): the check of
the fidelity issue's rule that nothing may get worse on Person Activity.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from experiments.pubmix_studies import person_activity

    from dpevolve import Synthesizer
    from dpevolve.reporting.evaluation import tstr

    train, test, _ = person_activity()
    schema, label = train.schema, train.label
    n = len(train.frame)
    delta = 1 / (n * math.log(n))
    out: list[dict[str, Any]] = []
    for eps in (1.0, 2.0, 4.0):
        for seed in range(args.seeds):
            for preset in ("tabpe", "hybrid"):
                start = time.perf_counter()
                model = Synthesizer(
                    schema, epsilon=eps, delta=delta, method=preset, random_state=seed
                ).fit(train.frame)
                synth = model.synthetic_ if preset == "tabpe" else model.sample()
                row = {
                    "eps": eps,
                    "seed": seed,
                    "preset": preset,
                    "tstr": tstr(synth, test.frame, schema, label).accuracy,
                    "s": time.perf_counter() - start,
                }
                print(json.dumps(row), flush=True)
                out.append(row)
    (RESULTS / "person_activity_default.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
