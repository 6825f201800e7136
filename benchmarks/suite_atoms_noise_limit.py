"""Which of the suite's rules at atoms a private release could keep at epsilon 1.

For every value holding >= 5% of a table's private rows (the suite's ``atoms``
measure), the rho that one replace-one release of its column's 2-way marginal with the
label (sensitivity sqrt(2), ``rho = 1 / sigma^2``) needs for an expected TV of
P(label | atom) of 0.05, sampling error of the output's rows included; per table, the
sum over its atom columns of their worst atom's need, as a share of the whole budget
(epsilon 1, delta 1e-5); and the worst atom's TV of a real bootstrap (seeds 0-2, the
suite's draws). A table whose atom pairs need half the budget or more, or whose
bootstrap misses 0.05, is noise-limited.

    python benchmarks/suite_atoms_noise_limit.py TABLE... [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import suite_data

from dpevolve.data.schema import NumericColumn
from dpevolve.privacy import Budget, zcdp_budget
from dpevolve.reporting import numeric_fidelity as nf

TARGET = 0.05


def expected_tv(shares: np.ndarray, count: int, sigma: float) -> float:
    """``E TV`` of the label shares at an atom of ``count`` rows, each cell's count with
    Gaussian noise ``sigma`` and the output's own sampling error (normal approximation)."""
    k = shares.size
    var = sigma**2 * (1 - 2 * shares + shares**2 * k) / count**2 + shares * (1 - shares) / count
    return float(0.5 * np.sqrt(2 / np.pi) * np.sqrt(var).sum())


def rho_needed(shares: np.ndarray, count: int) -> float:
    """The rho of one pair release whose noise keeps ``E TV`` at :data:`TARGET`."""
    if expected_tv(shares, count, 0.0) >= TARGET:
        return float("inf")
    lo, hi = 0.0, 1e5
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tv(shares, count, mid) < TARGET else (lo, mid)
    return 1.0 / lo**2


def table(key: str, total: float) -> dict[str, Any]:
    parts = suite_data.load(key)
    label, real = parts.label, parts.private
    numeric = [
        c.name for c in parts.schema.columns if isinstance(c, NumericColumn) and c.name != label
    ]
    boot = []
    for seed in range(3):
        rows = np.random.default_rng(1000 + seed).integers(0, len(real), len(real))
        drawn = real.iloc[rows].reset_index(drop=True)
        atoms = nf.atom_rules(real, drawn, numeric, label)
        boot.append(max((a["tv"] for a in atoms), default=float("nan")))
    need: dict[str, float] = defaultdict(float)
    labels = real[label].astype(str)
    for atom in nf.atom_rules(real, real, numeric, label):
        at = real[atom["column"]].to_numpy(float) == atom["value"]
        shares = labels[at].value_counts(normalize=True).to_numpy()
        need[atom["column"]] = max(need[atom["column"]], rho_needed(shares, int(at.sum())))
    summed = sum(need.values())
    return {
        "n": len(real),
        "bootstrap_atom_tv_max": boot,
        "rho_needed_by_column": dict(need),
        "rho_needed": summed,
        "budget_share": summed / total,
        "noise_limited": bool(summed / total >= 0.5 or np.mean(boot) > TARGET),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--out", default="benchmarks/results/suite_atoms_noise_limit.json")
    args = parser.parse_args(argv)
    total = zcdp_budget(Budget(epsilon=1.0, delta=1e-5))
    out = {key: table(key, total) for key in args.tables}
    for key, row in out.items():
        print(
            f"{key:24s} n={row['n']:6d} pairs need {row['budget_share']:.2f} x budget, "
            f"bootstrap worst {np.mean(row['bootstrap_atom_tv_max']):.3f}, "
            f"noise-limited {row['noise_limited']}"
        )
    Path(args.out).write_text(json.dumps({"rho_total": total, "tables": out}, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
