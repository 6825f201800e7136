"""A seeded run draws the same rows in any process (README, Noise: ``--seed`` and
``--noise-seed`` make a run reproducible).

Each run is a fresh interpreter with its own string-hash seed and its own heap: a
result that depended on the order a set of names iterates in, or on where numpy's
temporaries lie in memory, would differ between them. (The association fit of a pair
whose cells the noise sent below zero had stopped in a flat valley where the last bits
of its sums decided: two runs of one seed of the shapes benchmark drew different rows;
docs/engine.md, Noise and rank order.)
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Two numbers whose coarse pair is mostly noise at 600 rows (the relations phase
# releases it with cells below zero), a mostly missing one, a category and the label.
SCRIPT = """
import hashlib
import numpy as np
import pandas as pd
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine import synthesize

rng = np.random.default_rng(7)
n = 600
x = rng.normal(0.0, 1.0, n)
frame = pd.DataFrame({
    "x": np.round(x, 3),
    "z": np.round(0.3 * x + rng.normal(0.0, 1.0, n), 3),
    "m": np.where(rng.random(n) < 0.9, np.nan, np.round(rng.normal(0.0, 1.0, n), 3)),
    "c": rng.choice(["a", "b", "c"], n),
    "y": np.where(x + rng.normal(0.0, 1.0, n) > 0, "yes", "no"),
})
schema = Schema((
    NumericColumn("x", -5.0, 5.0), NumericColumn("z", -6.0, 6.0),
    NumericColumn("m", -5.0, 5.0, nullable=True),
    CategoricalColumn("c", ("a", "b", "c")), CategoricalColumn("y", ("no", "yes")),
), label="y")
out = synthesize(frame, schema, epsilon=1.0, delta=1e-5, seed=3, noise_seed=11)
print(hashlib.sha256(pd.util.hash_pandas_object(out).values.tobytes()).hexdigest())
"""


def _run(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONPATH": SRC, "PYTHONHASHSEED": hash_seed}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def test_a_seeded_run_draws_the_same_rows_in_any_process() -> None:
    first, second, third = _run("1"), _run("2"), _run("3")
    assert len(first) == len(hashlib.sha256().hexdigest())
    assert first == second == third
