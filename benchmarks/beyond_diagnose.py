"""Where the rows beyond the private range come from (issue 25), one table and seed.

Reruns the suite's engine on one table exactly as ``suite.py --seeded-noise`` does (the
same split, schema, noise seed and post-processing seed, so the output is the suite's
row), keeps the fitted result and prints, for every numeric column holding output rows
beyond the private range by more than 10% of its width:

* the private range, the declared one, whether the bins were moved, the support and zoom;
* per bin holding such rows: its edges, the model's mass there (the fitted 1-way), the
  bin's released count and its noise scale (every release combined,
  :func:`dpevolve.engine.tails.released_counts`), the bins decoded into it
  (:func:`dpevolve.engine.tails.released_inward`), the share of the decoding weights it
  holds, and the rule that drew the values: the decoding weights of the cells the rows
  lie in (raw released count in noise scales), or the fallback of a bin whose cells
  weigh nothing.

The private part is read here to say where the rows fall (a benchmark, not a release).

    DPEVOLVE_DATA=... python benchmarks/beyond_diagnose.py alcohol 1 [--public]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import suite
import suite_data

from dpevolve.data.schema import NumericColumn
from dpevolve.data.sources import FrameSource
from dpevolve.engine.cells import shown_span
from dpevolve.engine.method import fit_engine
from dpevolve.engine.result import EngineResult
from dpevolve.engine.tails import released_counts
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import make_noise
from dpevolve.reporting import numeric_fidelity as nf

TOLERANCE = 0.1  # the suite's: beyond by more than a tenth of the private range's width


def fit(
    parts: suite_data.Parts, seed: int, public: bool, eps: float, delta: float
) -> tuple[EngineResult, pd.DataFrame]:
    """The suite's engine run (``suite.run_system`` with ``--seeded-noise``, as
    :func:`dpevolve.engine.synthesize` makes it), its fitted result kept."""
    source = FrameSource(parts.private, parts.schema, on_invalid="error")
    rng = np.random.default_rng(seed)
    result = fit_engine(
        source, parts.schema, Budget(epsilon=eps, delta=delta),
        noise=make_noise(suite.NOISE_SEED_BASE + seed), rng=rng,
        public=parts.public if public else None,
    )  # fmt: skip
    return result, result.sample(len(parts.private), rng)


def column_report(
    result: EngineResult, column: NumericColumn, real: np.ndarray, fake: np.ndarray
) -> list[str]:
    """The lines on one column (module docstring)."""
    name, disc = column.name, result.discretiser
    lo, hi = float(np.nanmin(real)), float(np.nanmax(real))
    slack = TOLERANCE * (hi - lo)
    out_low, out_high = fake < lo - slack, fake > hi + slack
    released = result.released()
    cells = disc.fine[name]
    weights = np.asarray(released.fine[name])
    fine = result.fine[name]
    sigma = float(fine.sigma)
    noisy = np.asarray(fine.noisy, dtype=np.float64)
    edges = disc.edges(name)
    mass = np.asarray(result.model.answer((name,)), dtype=np.float64)[: disc.bins]
    marginals = result.measurements.marginals()
    count, sd = released_counts(disc, name, marginals, fine)
    fold = released.inward.get(name)
    target = np.arange(disc.bins) if fold is None else np.asarray(fold.target)[: disc.bins]
    stop = cells.size - int(cells.nullable)
    present = real[~np.isnan(real)]
    truth = np.bincount(np.searchsorted(edges[1:-1], present, side="right"), minlength=disc.bins)
    lines = [
        f"== {name}: {int(out_low.sum())} below {lo - slack:.4g}, {int(out_high.sum())} above "
        f"{hi + slack:.4g} (private [{lo:.4g}, {hi:.4g}], declared [{column.lo:.4g}, "
        f"{column.hi:.4g}]); moved {name in disc.moved}, support {disc.support.get(name)}, "
        f"zoom {disc.zoom.get(name)}; fine sigma {sigma:.1f}, weights hold "
        f"{weights[:stop].sum():.0f} of {result.rows}; shown span {shown_span(cells, weights)}",
        f"   inward targets {target.tolist()}, end bins {None if fold is None else fold.ends}",
        f"   edges {np.round(edges, 4).tolist()}",
        f"   model mass {mass.round(1).tolist()}",
        f"   released   {count.round(1).tolist()}",
        f"   noise sd   {sd.round(1).tolist()}",
        f"   true count {truth.tolist()}",
    ]
    values = fake[out_low | out_high]
    bins = np.searchsorted(edges[1:-1], values, side="right")
    for b in np.unique(bins):
        these = values[bins == b]
        inside = np.flatnonzero(cells.coarse[:stop] == b)
        lines.append(
            f"  bin {b} [{edges[b]:.4g}, {edges[b + 1]:.4g}): {these.size} rows beyond "
            f"({these.min():.4g} .. {these.max():.4g}); model {mass[b]:.1f}, released "
            f"{count[b]:.1f} +- {sd[b]:.1f}; decoded from bins "
            f"{np.flatnonzero(target == b).tolist()} (model "
            f"{mass[target == b].round(1).tolist()}); weight in bin {weights[inside].sum():.1f}"
        )
        for c in inside:
            held = (these >= cells.lo[c]) & (these <= cells.hi[c])
            if held.any() or weights[c] > 0:
                lines.append(
                    f"     cell {c} [{cells.lo[c]:.4g}, {cells.hi[c]:.4g}]: {int(held.sum())} "
                    f"rows, weight {weights[c]:.1f}, raw {noisy[c]:.1f} "
                    f"({noisy[c] / sigma:.2f} sigma)"
                )
        if weights[inside].sum() <= 0:
            lines.append(
                "     the bin's cells weigh nothing: the fallback (span, nearest) drew them"
            )
    positive = np.flatnonzero(weights[:stop] > 0)
    if positive.size:
        low, high = cells.lo[positive].min(), cells.hi[positive].max()
        lines.append(f"   weighted cells span [{low:.4g}, {high:.4g}]")
    return lines


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("table")
    parser.add_argument("seed", type=int)
    parser.add_argument("--public", action="store_true", help="as the suite's engine_public")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-5)
    args = parser.parse_args(argv)
    parts = suite_data.load(args.table)
    result, synth = fit(parts, args.seed, args.public, args.epsilon, args.delta)
    fake, _ = parts.schema.validate(synth, on_invalid="error", what="synthetic table")
    numeric = nf.numeric_names(parts.schema)
    share = nf.beyond_range_share(parts.private, fake, numeric)
    print(f"{args.table} seed {args.seed}: beyond_range {100 * share:.2f}%")
    for column in parts.schema.columns:
        if column.name not in numeric:
            continue
        assert isinstance(column, NumericColumn)
        real = parts.private[column.name].to_numpy(dtype=np.float64)
        values = fake[column.name].to_numpy(dtype=np.float64)
        lo, hi = float(np.nanmin(real)), float(np.nanmax(real))
        slack = TOLERANCE * (hi - lo)
        with np.errstate(invalid="ignore"):
            if np.any((values < lo - slack) | (values > hi + slack)):
                print("\n".join(column_report(result, column, real, values)))


if __name__ == "__main__":
    main(sys.argv[1:])
