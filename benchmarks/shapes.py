"""Column shapes from other generators: does each numeric column look like the input?

Issue 25: results are checked on tables and generators the project does not have. This
script builds one table of the shapes real columns take (:data:`SHAPES`): a lognormal
income, a zero-inflated spend, a Poisson count, a bimodal mix, a normal body with 0.3%
of huge values, a column 90% missing, a share on [0, 1] heaped at its ends, a negative
lognormal, years, a float32 column, a category and a label that is an XOR of three of
them. The public half gives the schema (``dpevolve schema infer``, the steward's flow);
the default engine runs on the private half at epsilon 1, delta 1e-5, with and without
the public half. Per column: the Kolmogorov-Smirnov distance between the private and the
synthetic values (numbers; TV for categories), the missing rates, the share of synthetic
values past the private range by more than a tenth of its width, and the share of the
largest atom (a value holding at least 5% of the rows).

    DPEVOLVE_DATA=... nice -n 10 python benchmarks/shapes.py [--seeds 4]
        [--systems engine engine_public] [--out benchmarks/results/shapes.json]

``--seeded-noise`` (research only) draws the engine's noise from a fixed seed per run,
so two versions of the engine are compared on the same noise. Writes the JSON (rows per
system, seed and column, rewritten after each run) and a PNG beside it.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from suite import NOISE_SEED_BASE

from dpevolve.data.infer import infer_schema
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

HERE = Path(__file__).resolve().parent
ROWS = 8_000  # 4,000 public, 4,000 private
LABEL = "label"
ATOM = 0.05

Shape = Callable[[np.random.Generator, int], np.ndarray]

SHAPES: dict[str, Shape] = {
    "lognormal": lambda r, n: np.round(np.exp(r.normal(3, 1.2, n)), 2),
    "zero_inflated": lambda r, n: np.where(
        r.random(n) < 0.35, 0.0, np.round(np.exp(r.normal(5, 1, n)), 0)
    ),
    "poisson": lambda r, n: r.poisson(2.5, n).astype(float),
    "bimodal": lambda r, n: np.round(
        np.where(r.random(n) < 0.5, r.normal(-20, 3, n), r.normal(40, 5, n)), 3
    ),
    "outliers": lambda r, n: np.round(
        np.where(r.random(n) < 0.003, r.uniform(1e5, 1e6, n), r.normal(100, 10, n)), 1
    ),
    "mostly_missing": lambda r, n: np.where(r.random(n) < 0.9, np.nan, r.normal(0, 1, n)),
    "share": lambda r, n: np.clip(np.round(r.beta(0.5, 0.5, n), 4), 0, 1),
    "negative": lambda r, n: np.round(-np.exp(r.normal(2, 1, n)), 2),
    "year": lambda r, n: r.integers(1990, 2021, n).astype(float),
    "float32": lambda r, n: np.round(r.uniform(0, 3, n), 2).astype(np.float32).astype(float),
}


def table(seed: int, rows: int = ROWS) -> pd.DataFrame:
    """``rows`` rows of every shape, a category and the label (seeded)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({name: make(rng, rows) for name, make in SHAPES.items()})
    frame["category"] = rng.choice(["a", "b", "c", "d"], rows, p=[0.5, 0.3, 0.15, 0.05])
    parity = (frame["lognormal"] > 20) ^ (frame["zero_inflated"] == 0) ^ (frame["category"] == "a")
    frame[LABEL] = np.where(parity, "yes", "no")
    return frame


def column_rows(real: pd.DataFrame, synth: pd.DataFrame, schema: Schema) -> list[dict[str, Any]]:
    """Per column, how the synthetic values compare with the private ones."""
    from scipy.stats import ks_2samp

    out: list[dict[str, Any]] = []
    for column in schema.columns:
        name = column.name
        row: dict[str, Any] = {"column": name}
        if isinstance(column, NumericColumn):
            r = pd.to_numeric(real[name], errors="coerce").to_numpy(float)
            s = pd.to_numeric(synth[name], errors="coerce").to_numpy(float)
            rv, sv = r[~np.isnan(r)], s[~np.isnan(s)]
            slack = 0.1 * float(np.ptp(rv))
            top = pd.Series(rv).value_counts(normalize=True)
            atom = float(top.index[0]) if top.iloc[0] >= ATOM else None
            row.update(
                distance=float(ks_2samp(rv, sv).statistic) if sv.size else 1.0,
                missing=float(np.isnan(r).mean()),
                synth_missing=float(np.isnan(s).mean()),
                beyond=float(((sv < rv.min() - slack) | (sv > rv.max() + slack)).mean())
                if sv.size
                else 0.0,
                atom=atom,
                atom_share=None if atom is None else float(top.iloc[0]),
                synth_atom_share=None if atom is None else float((sv == atom).mean()),
            )
        elif isinstance(column, CategoricalColumn):
            rt = real[name].astype(str).value_counts(normalize=True)
            st = synth[name].astype(str).value_counts(normalize=True)
            row["distance"] = float(0.5 * rt.sub(st, fill_value=0.0).abs().sum())
        out.append(row)
    return out


def run_one(seed: int, system: str, seeded: bool) -> list[dict[str, Any]]:
    from dpevolve.engine import synthesize

    frame = table(seed)
    public, private = frame.iloc[: ROWS // 2], frame.iloc[ROWS // 2 :].reset_index(drop=True)
    schema = infer_schema(public, label=LABEL).schema
    private, _ = schema.validate(private, on_invalid="drop", what="private")
    synth = synthesize(
        private, schema, epsilon=1.0, delta=1e-5, rows=len(private), seed=seed,
        public=public if system == "engine_public" else None,
        noise_seed=NOISE_SEED_BASE + seed if seeded else None,
    )  # fmt: skip
    rows = column_rows(private, synth, schema)
    for row in rows:
        row.update(system=system, seed=seed)
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = sorted({r["system"] for r in rows})
    columns = list(dict.fromkeys(r["column"] for r in rows))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(columns)), 4.0))
    for k, system in enumerate(systems):
        for j, name in enumerate(columns):
            d = [r["distance"] for r in rows if r["system"] == system and r["column"] == name]
            x = j + 0.25 * (k - 0.5 * (len(systems) - 1))
            ax.scatter([x] * len(d), d, s=12, color=f"C{k}", label=system if j == 0 else None)
    ax.set_xticks(np.arange(len(columns)), columns, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("KS distance (numbers), TV (categories)")
    ax.set_title("Column shapes, private vs synthetic, epsilon 1 (one dot per seed)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--systems", nargs="+", default=["engine", "engine_public"])
    parser.add_argument("--seeded-noise", action="store_true")
    parser.add_argument("--out", default=str(HERE / "results" / "shapes.json"))
    args = parser.parse_args()
    path = Path(args.out)
    rows: list[dict[str, Any]] = []
    for system in args.systems:
        for seed in range(args.seeds):
            rows.extend(run_one(seed, system, args.seeded_noise))
            doc = {"benchmark": "column shapes (issue 25)", "epsilon": 1.0, "delta": 1e-5,
                   "rows": rows}  # fmt: skip
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, path)
            worst = max((r for r in rows if r["seed"] == seed and r["system"] == system),
                        key=lambda r: r["distance"])  # fmt: skip
            print(system, seed, "worst", worst["column"], round(worst["distance"], 3), flush=True)
    plot(rows, path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
