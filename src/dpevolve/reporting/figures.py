"""Figures of a run: matplotlib drawings for the HTML report and for users (docs/math.md §7).

Numbers come from :mod:`dpevolve.reporting.evaluation` and the ledger; this module only
draws them. Every figure is a :class:`matplotlib.figure.Figure` with its own Agg canvas,
never pyplot: no global state, no GUI backend.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.reporting.marginals import NUMERIC_BINS, bin_codes, bin_count, marginal_columns

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["pairs_figure", "plot_marginals", "running_epsilon_figure"]


def plot_marginals(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    path: str | Path,
    columns: Sequence[str] | None = None,
    max_categories: int = 25,
) -> Path:
    """Draw the 1-way marginals of real vs synthetic as a PNG grid (docs/math.md §7).

    One panel per column with the real and synthetic shares ``p(cell)`` and ``q(cell)``
    side by side: numeric columns over the 20 declared-range bins, categorical columns
    over declared values (the ``max_categories`` most common ones when there are more).
    The title gives the column's ``TV = 1/2 sum |p - q|``. The file is written atomically.

    Returns
    -------
    pathlib.Path
        Where the PNG was written.
    """
    # Figure + its own Agg canvas, not pyplot: no global state, no GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    names = marginal_columns(schema, columns)
    path = Path(path)

    ncols = min(3, len(names))
    nrows = math.ceil(len(names) / ncols)
    fig = Figure(figsize=(4.2 * ncols, 3.0 * nrows), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, name in zip(axes.flat, names, strict=False):
        col = schema[name]
        size = bin_count(col)
        p = np.bincount(bin_codes(real_frame, col), minlength=size) / len(real_frame)
        q = np.bincount(bin_codes(synth_frame, col), minlength=size) / len(synth_frame)
        tv = 0.5 * float(np.abs(p - q).sum())
        if isinstance(col, NumericColumn):
            edges = np.linspace(col.lo, col.hi, NUMERIC_BINS + 1)
            ax.stairs(p, edges, fill=True, alpha=0.45, color="C0", label="real")
            ax.stairs(q, edges, linewidth=1.5, color="C1", label="synthetic")
            title = name
        else:
            order = np.arange(size)
            title = name
            if size > max_categories:
                order = np.argsort(-(p + q), kind="stable")[:max_categories]
                title = f"{name} (top {max_categories} of {size})"
            x = np.arange(len(order))
            ax.bar(x - 0.2, p[order], width=0.4, color="C0", label="real")
            ax.bar(x + 0.2, q[order], width=0.4, color="C1", label="synthetic")
            ax.set_xticks(x)
            # Many or long labels overlap at 60 degrees: stand them upright and smaller.
            crowded = len(order) > 10
            ax.set_xticklabels(
                [_short(col.keys[i], 12 if crowded else 14) for i in order],
                rotation=90 if crowded else 60,
                ha="center" if crowded else "right",
                fontsize=6 if crowded else 7,
            )
        ax.set_title(f"{title}  TV={tv:.3f}", fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)

    path.parent.mkdir(parents=True, exist_ok=True)
    # Save beside the target then rename, so a reader never sees a half-written PNG.
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            fig.savefig(handle, format="png", dpi=100)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _short(text: str, limit: int = 14) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------------ figures
def running_epsilon_figure(points: Sequence[tuple[Any, float]], target: Any) -> Figure:
    fig, ax = _new_figure(6.4, 3.0)
    xs = [p[0] if isinstance(p[0], (int, float)) else i + 1 for i, p in enumerate(points)]
    ys = [p[1] for p in points]
    ax.step(xs, ys, where="post", color="C0", linewidth=1.5)
    ax.plot(xs, ys, "o", color="C0", markersize=4, label="running ε")
    if isinstance(target, (int, float)):
        ax.axhline(target, color="C3", linestyle="--", linewidth=1, label=f"budget ε = {target:g}")
    ax.set_xlabel("round")
    ax.set_ylabel("ε spent")
    ax.set_ylim(bottom=0)
    from matplotlib.ticker import MaxNLocator

    # At most ~10 whole-round ticks: one per round overlaps beyond a dozen rounds.
    ax.xaxis.set_major_locator(MaxNLocator(nbins=10, integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    return fig


def pairs_figure(worst: Sequence[tuple[tuple[str, ...], float]]) -> Figure:
    fig, ax = _new_figure(6.4, 0.8 + 0.28 * len(worst))
    labels = [" × ".join(pair) for pair, _ in worst][::-1]
    values = [tv for _, tv in worst][::-1]
    ax.barh(range(len(values)), values, color="C1")
    ax.set_yticks(range(len(values)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("2-way marginal TV (0 = identical, 1 = disjoint)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _new_figure(width: float, height: float) -> tuple[Figure, Any]:
    # A Figure with its own Agg canvas, not pyplot: no global state, no GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()
