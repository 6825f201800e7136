"""The default on tables the suite never tuned for: NIST's ACS excerpts, the steward's flow.

Issue 25 asks for tables in general, and results are also checked on tables the project
does not hold. This script runs the flow the README gives a steward on the three NIST
Diverse Communities excerpts (ACS 2019: Massachusetts, Texas, 20 areas across the US;
24 columns of census person records, ``N`` for not applicable), which no engine rule
was tuned on: the raw CSV read as text, cut 40% public / 40% private / 20% test by the
suite's seed (:func:`dpevolve.datasets.suite.split_rows`), the schema what
``dpevolve schema infer PUBLIC --label OWN_RENT --na-value N --nullable`` proposes, the
engine on the private part at epsilon 1, delta 1e-5, with (``engine_public``) and
without (``engine``) the public part, and the references of the suite (a bootstrap and
a 1,000-row sample of the private part). Every output is scored as the suite scores it
(:func:`suite.score`: SDMetrics, TSTR on ``OWN_RENT``, TV on public quantiles, Spearman,
rows beyond the private range, rules at atoms); the engine's noise is seeded
(``--seeded-noise`` as in the suite: research only).

    DPEVOLVE_DATA=... python benchmarks/unseen.py [--seeds 3] [--out results/unseen.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import pandas as pd
import suite
import suite_data

from dpevolve import datasets
from dpevolve.data.infer import infer_schema
from dpevolve.datasets.suite import split_rows

HERE = Path(__file__).resolve().parent
TABLES = ("ma2019", "tx2019", "national2019")
LABEL = "OWN_RENT"  # owned, rented or neither: the household's tenure
SYSTEMS = ("engine", "engine_public", "bootstrap", "sample1000")


def parts(stem: str) -> suite_data.Parts:
    """One excerpt as the steward's flow sees it (module docstring)."""
    (path,) = datasets.fetch(f"nist_{stem}")  # $DPEVOLVE_DATA or the cache
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    cut = split_rows(frame)
    schema = infer_schema(cut["public"], label=LABEL, na_values=["N"], nullable=True).schema
    clean, refused = {}, {}
    for split, rows in cut.items():
        clean[split], _ = schema.validate(
            rows.replace("N", np.nan), on_invalid="drop", what=f"{stem} ({split})"
        )
        refused[split] = len(rows) - len(clean[split])
    return suite_data.Parts(
        stem, clean["public"], clean["private"], clean["test"], schema, LABEL, refused
    )


def run(table: suite_data.Parts, system: str, seed: int) -> dict[str, Any]:
    """One output of ``system`` and its scores."""
    start = time.process_time()
    synth, facts = suite.run_system(table, system, 1.0, 1e-5, seed, seeded=True)
    cpu = time.process_time() - start
    scores = suite.score(table, synth)
    return {
        "table": table.key, "system": system, "seed": seed, "cpu_seconds": cpu,
        "n_private": len(table.private), **facts, **scores,
    }  # fmt: skip


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "unseen.json")
    args = parser.parse_args(argv)
    rows = []
    for stem in args.tables:
        table = parts(stem)
        for system in args.systems:
            for seed in range(args.seeds):
                row = run(table, system, seed)
                rows.append(row)
                print(
                    stem, system, seed, f"SDMetrics {row['sdmetrics_bins']['score']:.3f}",
                    f"TSTR {row['accuracy']:.3f}", f"beyond {row['beyond_range']:.4f}",
                    f"unreached {row['unreached_range']:.4f}", flush=True,
                )  # fmt: skip
                args.out.write_text(json.dumps({"benchmark": "unseen (issue 25)", "rows": rows},
                                               indent=1, default=str))  # fmt: skip
    print("wrote", args.out)


if __name__ == "__main__":
    main(sys.argv[1:])
