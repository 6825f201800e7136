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
from dpevolve.data.types import DateColumn
from dpevolve.metrics import NUMERIC_BINS, bin_codes, bin_count, marginal_columns

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["marginals_figure", "pairs_figure", "plot_marginals", "running_epsilon_figure"]


def plot_marginals(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    path: str | Path,
    columns: Sequence[str] | None = None,
    max_categories: int = 25,
) -> Path:
    """Draw the 1-way marginals of real vs synthetic as a PNG grid (docs/math.md §7).

    The tables are validated against ``schema`` first; see :func:`marginals_figure` for
    the drawing. The file is written atomically.

    Returns
    -------
    pathlib.Path
        Where the PNG was written.
    """
    real_frame, _ = schema.validate(real, on_invalid="error", what="real table")
    synth_frame, _ = schema.validate(synth, on_invalid="error", what="synthetic table")
    fig = marginals_figure(real_frame, synth_frame, schema, columns, max_categories)
    path = Path(path)
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


def marginals_figure(
    real: pd.DataFrame,
    synth: pd.DataFrame,
    schema: Schema,
    columns: Sequence[str] | None = None,
    max_categories: int = 25,
) -> Figure:
    """The 1-way marginals of two validated tables, one panel per column.

    Each panel shows the real and synthetic shares ``p(cell)`` and ``q(cell)``: numeric
    and date columns over the 20 declared-range bins (with a separate "missing" bar for
    a nullable column), categorical columns as horizontal bars over the declared values
    (the ``max_categories`` most common when there are more), so that every label reads
    in full. Every panel has its legend, axis labels and the column's ``TV``.
    """
    names = marginal_columns(schema, columns)
    ncols = min(2, len(names))
    nrows = math.ceil(len(names) / ncols)
    heights = []
    for r in range(nrows):
        row = [schema[n] for n in names[r * ncols : (r + 1) * ncols]]
        bars = max(
            min(bin_count(c), max_categories) if not isinstance(c, NumericColumn) else 0
            for c in row
        )
        heights.append(max(3.0, 1.2 + 0.22 * bars))
    fig, axes = _new_grid(6.2 * ncols, heights, ncols)
    for ax, name in zip(axes.flat, names, strict=False):
        col = schema[name]
        size = bin_count(col)
        p = np.bincount(bin_codes(real, col), minlength=size) / max(len(real), 1)
        q = np.bincount(bin_codes(synth, col), minlength=size) / max(len(synth), 1)
        tv = 0.5 * float(np.abs(p - q).sum())
        if isinstance(col, NumericColumn):
            title = _numeric_panel(ax, col, p, q)
        else:
            title = _categorical_panel(ax, col, p, q, max_categories)
        ax.set_title(f"{title}   TV = {tv:.3f}", fontsize=10)
        ax.tick_params(labelsize=8)
        ax.legend(fontsize=8, loc="best")
    for ax in list(axes.flat)[len(names) :]:
        ax.set_visible(False)
    return fig


def _numeric_panel(ax: Any, col: NumericColumn, p: np.ndarray, q: np.ndarray) -> str:
    edges = np.linspace(col.lo, col.hi, NUMERIC_BINS + 1)
    # p and q end with a "missing" cell when the column is nullable: drawn apart.
    ax.stairs(p[:NUMERIC_BINS], edges, fill=True, alpha=0.45, color="C0", label="real")
    ax.stairs(q[:NUMERIC_BINS], edges, linewidth=1.5, color="C1", label="synthetic")
    title = col.name
    if col.nullable:
        width = edges[1] - edges[0]
        at = col.hi + 1.5 * width
        ax.bar(at - width / 4, p[-1], width=width / 2, color="C0", alpha=0.45)
        ax.bar(at + width / 4, q[-1], width=width / 2, color="C1")
        ax.annotate("missing", (at, 0), xytext=(0, -2), textcoords="offset points",
                    ha="center", va="top", fontsize=8, annotation_clip=False)  # fmt: skip
        title += f" (missing: real {p[-1]:.1%}, synthetic {q[-1]:.1%})"
    if isinstance(col, DateColumn):  # ticks as dates, not day numbers
        from matplotlib.ticker import FuncFormatter, MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: col.text(v)))
    ax.set_ylabel("share of rows", fontsize=9)
    ax.set_xlabel(col.name, fontsize=9)
    return title


def _categorical_panel(ax: Any, col: Any, p: np.ndarray, q: np.ndarray, max_categories: int) -> str:
    size = len(p)
    order = np.arange(size)
    title = col.name
    if size > max_categories:
        order = np.argsort(-(p + q), kind="stable")[:max_categories]
        title = f"{col.name} (top {max_categories} of {size})"
    y = np.arange(len(order))
    ax.barh(y - 0.2, p[order], height=0.4, color="C0", alpha=0.8, label="real")
    ax.barh(y + 0.2, q[order], height=0.4, color="C1", label="synthetic")
    ax.set_yticks(y)
    ax.set_yticklabels([_short(col.keys[i], 28) for i in order], fontsize=8)
    ax.invert_yaxis()  # declared (or most common) first, at the top
    ax.set_xlabel("share of rows", fontsize=9)
    return title


def _short(text: str, limit: int = 28) -> str:
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
    ax.set_ylabel("column pair")
    ax.grid(axis="x", alpha=0.3)
    return fig


def _new_grid(width: float, heights: Sequence[float], ncols: int) -> tuple[Figure, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, sum(heights)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(heights), ncols, squeeze=False, height_ratios=list(heights))
    return fig, axes


def _new_figure(width: float, height: float) -> tuple[Figure, Any]:
    # A Figure with its own Agg canvas, not pyplot: no global state, no GUI backend.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()
