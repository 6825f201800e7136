"""Person Activity TSTR of the default preset (tabpe) against hybrid, epsilon 1/2/4.

    python benchmarks/person_activity_default.py

Writes benchmarks/results/person_activity_default.json (one row per fit). Checks the
fidelity issue's rule that nothing gets worse on Person Activity.
"""

import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from experiments.pubmix_studies import person_activity

from dpevolve import Synthesizer
from dpevolve.reporting.evaluation import tstr

train, test, public = person_activity()
schema, label = train.schema, train.label
n = len(train.frame)
delta = 1 / (n * math.log(n))
out = []
for eps in (1.0, 2.0, 4.0):
    for seed in (0, 1):
        for preset in ("tabpe", None):
            t = time.perf_counter()
            m = Synthesizer(schema, epsilon=eps, delta=delta, preset=preset, random_state=seed).fit(
                train.frame
            )
            synth = m.synthetic_ if preset == "tabpe" else m.sample()
            acc = tstr(synth, test.frame, schema, label).accuracy
            row = {
                "eps": eps,
                "seed": seed,
                "preset": m.resolved_preset(),
                "tstr": acc,
                "s": time.perf_counter() - t,
            }
            print(json.dumps(row), flush=True)
            out.append(row)
(Path(__file__).resolve().parent / "results" / "person_activity_default.json").write_text(
    json.dumps(out, indent=1) + "\n"
)
