"""A finer fine histogram over where the first shows a column's values: a zoom.

A numeric column's fine histogram is released on ``fine_cells`` equal intervals of its
declared range (:mod:`~dpevolve.engine.discretise`). Where that range is far wider than
the data (a feature in ``[0, 1]`` declared on ``[-5, 4000]``), the values fall into one
or two cells: the bins placed from the histogram (:mod:`~dpevolve.engine.bins`) cannot
split them, and a relation between two such columns, or a parity cut inside the cell,
is lost to the model whatever the rounds measure. See docs/engine.md, Zoom.

**Span** (:func:`zoom_spans`, post-processing of the last release). Where the column's
values lie as the released histogram shows them
(:func:`~dpevolve.engine.bins.released_support`: the cells holding mass, widened by
half their span on each side), out to the boundaries of the cells there. The zoom puts
``c`` equal cells over it (:func:`zoom_cells`): at most ``fine_cells``, and no more
than hold :data:`ROWS` noise scales of the ``n`` rows each, spread evenly, so that on
a small table the finer cells are not lost in the noise; none narrower than the value
step. A column zooms where its partition had at most :data:`ZOOM` times ``c`` cells
in the span: the zoom is at least four times finer. Columns on a grid (one cell per
value) or placed from a public table never zoom.

**Release** (:func:`release_zoom`). The column's fine partition is refined inside the
span (``Discretiser(..., zoom=...)``: the ``c`` cells there, the cells outside kept)
and its histogram on that
partition is released: one pass, each row in one cell, so under replace-one a column's
counts move by at most ``sqrt(2)`` in L2 and each zoomed column is one discrete
Gaussian (``zoom:<column>`` in the ledger, its ``level``), charged to the run's
:class:`~dpevolve.engine.plan.Spend` and appended to the measurement list. The plan's
``zoom`` share (``EngineSpec.zoom_share``, public) is split over at most
:data:`LEVELS` levels (:data:`LEVEL_SHARES`: two fifths to each of the first two),
and a level's part evenly over the columns zooming at it; a level no column needs is
not spent (the adaptive rounds' last round spends it). The refined
histogram then stands for the column's fine histogram: the bins are placed from it and
values decoded with it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping

import numpy as np

from dpevolve.backends.base import Backend
from dpevolve.data.sources import PrivateSource
from dpevolve.engine.bins import released_support
from dpevolve.engine.boundaries import cell_count
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.measure import count_marginals, marginal_event, release, sigma_for
from dpevolve.engine.plan import Spend
from dpevolve.measurements import HistogramQuery, Measurement, MeasurementList
from dpevolve.privacy import Ledger
from dpevolve.privacy.noise import NoiseSource

#: A column zooms where the cells of its span were at most this share of the zoom's
#: cells there (the zoom is at least this many times finer).
ZOOM = 0.25

#: A zoom's cells hold on average at least this many noise scales of the rows, spread
#: evenly over its span (the span is the data's widened twofold: their cells, about
#: :data:`~dpevolve.engine.mass.THRESHOLD`, the level a single cell is read at).
ROWS = 2.0

#: At most this many zoom levels (a feature in ``[0, 1]`` declared on ``[-5, 4000]``
#: sits in one of 128 cells, then in about 2 of the first zoom's 128; a body 10 wide
#: in a range widened to 2,000,000 by a few huge values needs the third).
#: The zoom's ``rho`` per level: the first two alike, the third, which few columns need
#: (a body 10 wide in a range widened to 2,000,000 by a few huge values), half as much.
LEVEL_SHARES = (0.4, 0.4, 0.2)

LEVELS = len(LEVEL_SHARES)

ZOOMED = "zoom:"
"""Prefix of the ledger label of a zoom release."""

Span = tuple[float, float, int]
"""A zoom's span ``(a, b)`` and its cell count."""

#: The zoom spans of a Discretiser's columns -> that Discretiser (public inputs alike).
Refine = Callable[[Mapping[str, list[Span]]], Discretiser]


def zoomable(discretiser: Discretiser) -> int:
    """How many numeric columns may zoom: those whose fine partition is not one cell per
    value (a public fact of the schema; the plan states the zoom's share only where one
    is, and none with a public table: its bins already sit where the data are)."""
    return sum(not cells.grid for cells in discretiser.fine.values())


def zoom_cells(n: int, sigma: float, most: int) -> int:
    """How many cells a zoom puts over its span: at most ``most``, and as many as hold
    :data:`ROWS` noise scales of the ``n`` rows each, spread evenly (public: ``n`` and
    the release's ``sigma``)."""
    return max(1, min(int(most), math.floor(n / (ROWS * sigma))))


def zoom_spans(
    discretiser: Discretiser,
    fine: Mapping[str, Measurement],
    n: int,
    columns: Collection[str],
    cells: int,
) -> dict[str, Span]:
    """The columns of ``columns`` that zoom to ``cells`` cells, and their spans
    ``(a, b, cells)`` (module docstring).

    Post-processing: a function of the released histograms ``fine``, the public schema
    and ``n`` (public under replace-one) alone.
    """
    out: dict[str, Span] = {}
    shown = released_support(discretiser, fine, n, [c for c in columns if c in fine])
    for name, (low, high) in shown.items():
        partition = discretiser.fine[name]
        bounds = partition.boundaries
        if partition.grid or bounds.size < 2:
            continue  # one cell per value: nothing finer to see
        # out to the boundaries of the cells the span meets
        below = int(np.searchsorted(bounds, low, side="right")) - 1
        above = int(np.searchsorted(bounds, high, side="left"))
        a, b = float(bounds[max(0, below)]), float(bounds[min(bounds.size - 1, above)])
        before = int(np.count_nonzero((bounds >= a) & (bounds <= b))) - 1
        count = cell_count(a, b, cells, partition.step)
        if b > a and before <= ZOOM * count:
            out[name] = (a, b, count)
    return out


def release_zoom(
    source: PrivateSource,
    discretiser: Discretiser,
    fine: dict[str, Measurement],
    refine: Refine,
    rho: float,
    spend: Spend,
    noise: NoiseSource,
    ledger: Ledger,
    measurements: MeasurementList,
    most: int,
    backend: Backend | None = None,
    skip: Collection[str] = (),
) -> tuple[Discretiser, dict[str, Measurement]]:
    """Zoom where the released fine histograms ``fine`` show a column's values in a
    small part of its range; return the refined discretiser (from ``refine``) and the
    fine histograms with the zoomed columns' last release in place of their first.

    ``rho`` (the plan's zoom share) goes to at most :data:`LEVELS` levels
    (:data:`LEVEL_SHARES`), each level's part to its zoomed columns in equal shares
    (module docstring); columns in ``skip`` (placed from a public table) do not zoom.
    A level's cells (:func:`zoom_cells`, at most ``most``: ``fine_cells``) are set at
    the noise of its part split over the columns that would zoom at ``most`` cells;
    those that still gain :data:`ZOOM` zoom.
    """
    if rho <= 0 or not fine:
        return discretiser, fine
    n = int(source.n)
    fine = dict(fine)
    columns = [name for name in fine if name not in skip]
    spans: dict[str, list[Span]] = {}
    for level in range(1, LEVELS + 1):
        wanted = zoom_spans(discretiser, fine, n, columns, most)
        if not wanted:
            break
        part = LEVEL_SHARES[level - 1] * rho
        cells = zoom_cells(n, sigma_for(part / len(wanted)), most)
        found = zoom_spans(discretiser, fine, n, list(wanted), cells)
        if not found:
            break
        for name, span in found.items():
            spans.setdefault(name, []).append(span)
        columns = list(found)
        discretiser = refine(spans)
        sigma = sigma_for(part / len(columns))
        _, exact = count_marginals(source, discretiser, [], columns, backend=backend)
        for name in columns:
            event = marginal_event(sigma, ZOOMED + name)
            spend.charge(event)
            counts = release(exact[name], (name,), event, noise)
            query = HistogramQuery(name, int(exact[name].size))
            fine[name] = Measurement(query, counts.noisy, counts.sigma, event)
            measurements.append(fine[name])
            size = int(exact[name].size)
            ledger.record(event, round=0, clique=[name], cells=size, level=level)
    return discretiser, fine


__all__ = [
    "LEVELS",
    "LEVEL_SHARES",
    "ROWS",
    "ZOOM",
    "ZOOMED",
    "Refine",
    "Span",
    "release_zoom",
    "zoom_cells",
    "zoom_spans",
    "zoomable",
]
