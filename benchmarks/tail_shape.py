"""How real tails lie past an end bin's apex, against the shapes the decoding could draw.

Research only: reads the private parts directly to diagnose (issue 25); never shipped.
An end bin of the data whose fine cells show nothing decodes under a density falling
linearly from that of the bins next to it to zero (``reach.end_reach``, ``level`` 0: a
triangle twice as long as the even spread ``L = c / d0`` of its ``c`` rows at that
density ``d0``). For every such reach of a seeded run (the suite's real tables and the
scan's package tables, schema inferred, epsilon 1), this script measures the private
rows past the apex in units of ``L`` (``c`` and ``d0`` from the exact counts, pooled
as ``reach.inner_densities`` pools), and what each shape would make of them: the
column's rows past the private range by a tenth of its width (the suite's ``beyond``
measure), the Kolmogorov-Smirnov distance of the reach's rows and their Wasserstein
distance over the range, each times the reach's share of the column.

    DPEVOLVE_DATA=... python benchmarks/tail_shape.py [--seeds 0 1] [--out PATH]

Writes the per-reach records and the summary per shape (JSON) and a histogram of the
reaches' mean distance past the apex (PNG beside it).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pathologies
import suite_data
from suite import NOISE_SEED_BASE

from dpevolve.data.schema import Schema
from dpevolve.data.sources import FrameSource
from dpevolve.datasets.suite import inferred_schema, split_rows
from dpevolve.engine import fit_engine, reach, tails
from dpevolve.engine.smoothing import SUPPORT
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise

RESULTS = Path(__file__).resolve().parent / "results"
SUITE_TABLES = (
    "fair", "labsup", "happiness", "alcohol", "catholic", "injury", "twoyear", "cps91",
    "census2000", "restaurant_inspections", "black_politicians", "adult", "bank",
    "person_activity",
)  # fmt: skip
QUANTILES = np.linspace(0.0, 1.0, 201)
GRID = np.linspace(0.0, 60.0, 60001)


def tables() -> Iterator[tuple[str, Schema, pd.DataFrame]]:
    """The suite's real tables (private parts) and the scan's (schema inferred)."""
    for name in SUITE_TABLES:
        parts = suite_data.load(name)
        yield name, parts.schema, parts.private
    for name, frame in pathologies.scanned_tables().items():
        split = split_rows(frame)
        schema = inferred_schema(split["public"], pathologies.label_of(frame))
        private, _ = schema.validate(split["private"], on_invalid="drop", what=name)
        yield name, schema, private


def exact_density(edges: np.ndarray, x: np.ndarray, sd: np.ndarray, end: int, top: bool,
                  atom_width: float) -> float | None:  # fmt: skip
    """The exact rows per unit of the bins next to ``end``, pooled as the releases are."""
    width = np.diff(edges)
    codes = np.clip(np.searchsorted(edges[1:-1], x, side="right"), 0, width.size - 1)
    exact = np.bincount(codes, minlength=width.size).astype(float)
    rows = spread = variance = 0.0
    for b in range(end - 1, -1, -1) if top else range(end + 1, width.size):
        if width[b] <= atom_width or not np.isfinite(sd[b]):
            continue
        rows, spread, variance = rows + exact[b], spread + width[b], variance + sd[b] ** 2
        if rows > SUPPORT * np.sqrt(variance):
            return rows / spread
    return None


def reaches(name: str, schema: Schema, private: pd.DataFrame, seed: int) -> list[dict[str, Any]]:
    """Every thinning end reach of one seeded run, measured on the private rows."""
    calls: list[tuple[Any, ...]] = []
    plain = reach.end_reach

    def spy(edges, count, sd, end, top, atom_width=0.0):  # type: ignore[no-untyped-def]
        out = plain(edges, count, sd, end, top, atom_width)
        calls.append((np.asarray(edges).copy(), end, top, out, np.asarray(sd, float), atom_width))
        return out

    tails.end_reach = spy
    try:
        result = fit_engine(
            FrameSource(private, schema), schema, Budget(epsilon=1.0, delta=1e-5),
            noise=make_noise(NOISE_SEED_BASE + seed), rng=np.random.default_rng(seed),
        )  # fmt: skip
    finally:
        tails.end_reach = plain
    names = {result.discretiser.edges(c.name).tobytes(): c.name for c in result.discretiser.numeric}
    last = {(c[0].tobytes(), c[2]): c for c in calls}  # the decoding's own call per end
    out = []
    for edges, end, top, found, sd, atom_width in last.values():
        column = names.get(edges.tobytes())
        if found is None or column is None or found[2] != reach.THINNING:
            continue
        x = pd.to_numeric(private[column], errors="coerce").dropna().to_numpy(float)
        apex = found[0]
        past = (x - apex) if top else (apex - x)
        past = past[past > 0]
        d0 = exact_density(edges, x, sd, end, top, atom_width)
        if d0 is None or past.size == 0:
            continue
        even = past.size / d0
        room = abs(float(edges[-1] if top else edges[0]) - apex)
        out.append({
            "table": name, "column": column, "top": bool(top), "seed": seed,
            "share": past.size / x.size, "mean_t": float((past / even).mean()),
            "width_t": float((x.max() - x.min()) / even), "room_t": room / even,
            "t": np.quantile(past / even, QUANTILES).tolist(),
        })  # fmt: skip
    return out


def triangle(_: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
    """The decoding's shape: linear to zero at twice the even spread."""
    return lambda t: 1.0 - np.clip(1.0 - t / 2.0, 0.0, 1.0) ** 2


def exponential(stop: float) -> Callable[[dict[str, Any]], Callable[[np.ndarray], np.ndarray]]:
    """Exponential of scale ``L``, cut at ``stop`` scales or the declared end."""

    def shape(r: dict[str, Any]) -> Callable[[np.ndarray], np.ndarray]:
        end = min(r["room_t"], stop)
        return lambda t: (1.0 - np.exp(-np.minimum(t, end))) / (1.0 - np.exp(-end))

    return shape


SHAPES = {"triangle": triangle, **{f"exponential to {k}L": exponential(k) for k in (3, 4, 6)}}


def summary(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per shape: mean share of a column beyond its range by a tenth of its width,
    columns past 0.1%, and the mean KS and Wasserstein distance (share-weighted)."""
    out = {}
    for shape, make in SHAPES.items():
        beyond, ks, w1 = [], [], []
        for r in records:
            cdf, t = make(r), np.asarray(r["t"])
            limit = t[-1] + 0.1 * r["width_t"]
            beyond.append(r["share"] * (1.0 - float(cdf(np.array([limit]))[0])))
            gap = np.abs(cdf(GRID) - np.interp(GRID, t, QUANTILES, left=0.0, right=1.0))
            ks.append(r["share"] * float(gap.max()))
            w1.append(r["share"] * float(gap.sum()) * (GRID[1] - GRID[0]) / r["width_t"])
        out[shape] = {
            "beyond_mean": float(np.mean(beyond)),
            "columns_beyond": int(np.sum(np.array(beyond) > 0.001)),
            "ks_mean": float(np.mean(ks)),
            "wasserstein_mean": float(np.mean(w1)),
        }
    return out


def rounded(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its distances to 4 decimals (the JSON's size)."""
    return {**record, "t": [round(v, 4) for v in record["t"]]}


def plot(records: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.5))
    ax.hist(np.clip([r["mean_t"] for r in records], 0, 6), bins=48, color="grey")
    ax.axvline(2 / 3, color="red", ls="--", lw=0.8, label="triangle (the decoding)")
    ax.axvline(1.0, color="blue", ls=":", lw=0.8, label="exponential")
    ax.set_xlabel("mean distance of the real rows past the apex, in even spreads (clipped at 6)")
    ax.set_ylabel("end reaches")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--out", default=str(RESULTS / "tail_shape.json"))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    records: list[dict[str, Any]] = []
    for name, schema, private in tables():
        for seed in args.seeds:
            records += reaches(name, schema, private, seed)
        print(name, len(records), flush=True)
    path = Path(args.out)
    doc = {"benchmark": "tail shape past the end reach (issue 25)", "seeds": args.seeds,
           "summary": summary(records), "records": [rounded(r) for r in records]}  # fmt: skip
    path.write_text(json.dumps(doc) + "\n")
    plot(records, path.with_suffix(".png"))
    print(json.dumps(doc["summary"], indent=1))


if __name__ == "__main__":
    main()
