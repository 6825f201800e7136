"""Schema columns as discrete attributes, records as cell codes, and codes back to values.

The engine models a table on a public discrete :class:`~dpevolve.measurements.Domain`:

* a categorical column is one cell per declared value (a nullable column's reserved
  missing category is one of them);
* a numeric column is ``bins`` bins over its *declared* range at round values
  (:func:`~dpevolve.engine.boundaries.round_edges`), ``hi`` in the last bin, plus a
  missing cell if it is nullable; where the declared range is loose, given edges
  (public facts or post-processing of released histograms:
  :mod:`~dpevolve.engine.bins`) move them.

Decoding a bin to a value uses a finer public partition of the same column
(:class:`FineCells`): one cell per value for integer (or ``decimals``) columns with a
modest number of values, else sub-bins of each bin plus the declared end points, 0
inside the range and, in a ``decimals`` column whose range holds few, the whole
numbers as cells of their own (each also a boundary of the sub-bins), so that point
masses such as "exactly 40 hours" or "exactly 0 spent" survive (bins placed from the
released fine histograms keep the partition they were released on: ``nested``). Every fine cell
lies inside one bin, so drawing
a fine cell given the bin, from a noisy fine histogram, never moves a value to another
bin (post-processing of released counts).

Nothing here reads private data beyond turning given records into codes.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise
from typing import NamedTuple

import numpy as np
import pandas as pd

from dpevolve.data.columns import nearest
from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.engine.boundaries import (
    checked_edges,
    default_edges,
    own_bins,
    refined,
    round_edges,
    rounded,
    snapped,
    whole_numbers,
    with_point,
)
from dpevolve.engine.cells import (
    COVER,
    MARGIN,
    FineCells,
    cell_weights,
    cells_within,
    even_weights,
    known_floor,
    nearest_cells,
    nearest_weighted,
    overrules_support,
    shown_span,
    thinning,
    whole_atoms,
)
from dpevolve.engine.within import CellValues, draw_within
from dpevolve.measurements import Domain


def _round_to(values: np.ndarray, step: float | None) -> np.ndarray:
    if step is None:
        return values
    if step == 1.0:
        return np.round(values)
    digits = max(0, round(-math.log10(step)))
    return np.round(values, digits)


class BinRoles(NamedTuple):
    """What the releases say of one numeric column's bins, for decoding
    (:meth:`Discretiser.decode`; :class:`~dpevolve.engine.tails.Fold`): its end bins,
    the thin ones among them, the bins they show data in, for a bin at an end of
    the data whose rows thin out, ``(apex, foot, level)``: where their density falls from
    its height to ``level`` of it (:func:`~dpevolve.engine.cells.thinning`), and the cells of the
    values the data are known to hold that the fine histogram shows
    (:func:`~dpevolve.engine.tails.shown_values`)."""

    ends: tuple[int, ...]
    thin: tuple[int, ...]
    held: tuple[int, ...]
    reach: dict[int, tuple[float, float, float]]
    values: tuple[int, ...] = ()


class Discretiser:
    """Coarse cell codes of a schema's columns, their fine partitions, and decoding.

    Parameters
    ----------
    schema
        The declared domains.
    bins
        Bins per numeric column (at round values: the module docstring).
    fine_cells
        Most cells of a numeric column's fine partition (see the module docstring).
    edges
        Bin edges of some numeric columns (``bins + 1`` strictly increasing values from
        the declared ``lo`` to ``hi``; public facts only, such as a public table's range:
        :func:`dpevolve.engine.public.public_edges`); the others keep their default
        bins. The fine partition of such a column, or of one whose default bins are not
        equal-width, is ``per_bin`` equal sub-bins of each bin.
    nested
        Columns of ``edges`` whose fine partition stays the default one (the
        partition a fine histogram was released on before the edges were chosen:
        :func:`dpevolve.engine.bins.released_edges`); their edges must be boundaries of
        it, so that every fine cell lies inside one bin.
    atoms
        More single values of some numeric columns' fine partitions (public facts, such
        as a public table's heavy values: :func:`dpevolve.engine.public.public_edges`;
        a column's declared ``atoms`` are always among them),
        so that a value holding a large share decodes to itself, not to a point near it
        (ignored in a column whose fine partition is a grid: every value is a cell).
    support
        Where the values of some moved columns lie, ``(low, high)``, read from released
        values (:func:`dpevolve.engine.bins.released_support`): their end bins, which
        reach out to the declared ends, decode within it.
    zoom
        Spans ``(a, b, cells)`` of some columns, each inside the one before, read from
        released values (:func:`dpevolve.engine.zoom.zoom_spans`), where their fine
        partition is refined in turn: the intervals inside ``[a, b]`` give way to
        ``cells`` equal ones (none narrower than the value step), those outside stay
        (docs/engine.md, Zoom).
    """

    def __init__(
        self,
        schema: Schema,
        bins: int = 20,
        fine_cells: int = 128,
        edges: Mapping[str, np.ndarray] | None = None,
        nested: Collection[str] = (),
        atoms: Mapping[str, Collection[float]] | None = None,
        support: Mapping[str, tuple[float, float]] | None = None,
        zoom: Mapping[str, Sequence[tuple[float, float, int]]] | None = None,
    ) -> None:
        self.schema = schema
        self.bins = int(bins)
        self.layout = Layout.of(schema)
        self._num = {c.name: k for k, c in enumerate(self.layout.numeric)}
        self._cat = {c.name: k for k, c in enumerate(self.layout.categorical)}
        sizes = []
        for column in schema.columns:
            if isinstance(column, NumericColumn):
                sizes.append(self.bins + int(column.nullable))
            else:
                sizes.append(len(column.values))
        self.domain = Domain(tuple(schema.names), tuple(sizes))
        numeric = self.layout.numeric
        self._edges = {c.name: default_edges(c, self.bins) for c in numeric}
        #: Columns whose declared ``values`` each have a bin of their own.
        self.valued = frozenset(c.name for c in numeric if own_bins(c.values, self.bins))
        #: Round edges of columns whose default bins move onto them (:func:`snapped`).
        rounds = {c.name: round_edges(c.lo, c.hi, self.bins, c.step) for c in numeric}
        self._round = {
            k: e for k, e in rounds.items() if k not in self.valued and (e != self._edges[k]).any()
        }
        self._given = set(edges or {}) - set(nested)
        #: Columns whose bins were moved (given edges): their first and last bins are tails.
        self.moved = frozenset(edges or {})
        self.support = dict(support or {})
        #: Columns whose fine partition is refined over a released span (``zoom``).
        self.zoom = {name: list(spans) for name, spans in (zoom or {}).items()}
        for name, given in (edges or {}).items():
            self._edges[name] = checked_edges(self._edges[name], np.asarray(given, dtype=float))
        known = atoms or {}
        self._known = {c.name: frozenset({*known.get(c.name, ()), *c.atoms}) for c in numeric}
        self.fine = {c.name: self._fine_cells(c, int(fine_cells)) for c in numeric}
        for column in self.layout.numeric:
            if column.name in nested:
                edges_of, cells = self._edges[column.name], self.fine[column.name]
                _check_nested(edges_of, cells, atom_tolerance(column))

    @property
    def numeric(self) -> tuple[NumericColumn, ...]:
        return self.layout.numeric

    def edges(self, name: str) -> np.ndarray:
        """The ``bins + 1`` bin edges of numeric column ``name`` (a copy)."""
        return self._edges[name].copy()

    # ------------------------------------------------------------------ coarse
    def _raw(self, records: Records, k: int) -> np.ndarray:
        """Numeric column ``k`` on its declared scale, as the decoder writes it."""
        col = self.layout.numeric[k]
        raw = np.clip(col.lo + records.numeric[:, k] * col.range, col.lo, col.hi)
        return _round_to(raw, col.step)

    def _bin(self, name: str, raw: np.ndarray) -> np.ndarray:
        codes = np.searchsorted(self._edges[name][1:-1], raw, side="right").astype(np.int64)
        codes[np.isnan(raw)] = self.bins  # nullable: the missing cell
        return codes

    def codes(self, records: Records) -> np.ndarray:
        """``(rows, d)`` int64 coarse codes, columns in schema order."""
        out = np.empty((len(records), len(self.schema.columns)), dtype=np.int64)
        for j, column in enumerate(self.schema.columns):
            if isinstance(column, NumericColumn):
                out[:, j] = self._bin(column.name, self._raw(records, self._num[column.name]))
            else:
                out[:, j] = records.codes[:, self._cat[column.name]]
        return out

    # -------------------------------------------------------------------- fine
    def _fine_cells(self, column: NumericColumn, limit: int) -> FineCells:
        step = column.step
        if column.values:  # the values the column takes: a grid of them
            values = np.array(column.values, dtype=np.float64)
            return self._assemble(column, values, values, values.size, 0, step)
        if step is not None:
            first = math.ceil(column.lo / step - 1e-9)
            last = math.floor(column.hi / step + 1e-9)
            if last - first + 1 <= max(limit, self.bins):
                values = _round_to(np.arange(first, last + 1) * step, step)
                return self._assemble(column, values, values, values.size, 0, step)
        wholes = whole_numbers(column, step, limit)
        zero = {0.0} if column.lo < 0.0 < column.hi else set()
        zero |= {float(v) for v in self._known[column.name] if column.lo < float(v) < column.hi}
        atoms = np.array(sorted({float(column.lo), float(column.hi)} | zero | set(wholes)))
        per_bin = max(1, (limit - atoms.size - len(wholes)) // self.bins)
        edges = np.linspace(column.lo, column.hi, self.bins * per_bin + 1)
        if column.name in self._given:  # per_bin equal sub-bins of every given bin
            bounds = self._edges[column.name]
            parts = [np.linspace(a, b, per_bin + 1)[:-1] for a, b in pairwise(bounds)]
            edges = np.append(np.concatenate(parts), bounds[-1])
        else:
            edges = rounded(edges, step)
            for a, b, count in self.zoom.get(column.name, ()):
                edges = refined(edges, (a, b), count, step)
            for point in sorted(zero | set(wholes)):
                edges = with_point(edges, point, atom_tolerance(column))
            if column.name in self._round and column.name not in self.moved:
                self._edges[column.name] = snapped(
                    self._edges[column.name], self._round[column.name], edges
                )
        lo = np.concatenate([atoms, edges[:-1]])
        hi = np.concatenate([atoms, edges[1:]])
        return self._assemble(column, lo, hi, atoms.size, per_bin, step)

    def _assemble(
        self,
        column: NumericColumn,
        lo: np.ndarray,
        hi: np.ndarray,
        atoms: int,
        per_bin: int,
        step: float | None,
    ) -> FineCells:
        coarse = self._bin(column.name, lo[:atoms])
        if per_bin:
            middle = 0.5 * (lo[atoms:] + hi[atoms:])
            coarse = np.concatenate([coarse, self._bin(column.name, middle)])
        if column.nullable:
            lo, hi = np.append(lo, np.nan), np.append(hi, np.nan)
            coarse = np.append(coarse, self.bins)
        known = self._known[column.name]
        return FineCells(
            lo, hi, coarse.astype(np.int64), atoms, per_bin, step, column.nullable, known
        )

    def fine_codes(self, records: Records, name: str) -> np.ndarray:
        """int64 fine cell codes of numeric column ``name``; each inside its coarse bin."""
        cells = self.fine[name]
        raw = self._raw(records, self._num[name])
        missing = np.isnan(raw)
        safe = np.where(missing, cells.lo[0], raw)
        atoms = cells.lo[: cells.atoms]
        if cells.grid:  # values lie on the grid: the nearest grid value is their own
            codes = nearest(atoms, safe)
        else:
            coarse = self._bin(name, safe)
            edges = cells.boundaries
            sub = np.searchsorted(edges[1:-1], safe, side="right")
            inner = cells.coarse[cells.atoms : cells.atoms + edges.size - 1]
            first = np.searchsorted(inner, np.arange(self.bins), side="left")
            last = np.searchsorted(inner, np.arange(self.bins), side="right") - 1
            # the fine cell of the value's own bin (an edge's float may round across)
            codes = np.clip(sub, first[coarse], last[coarse]) + cells.atoms
            tolerance = atom_tolerance(self.layout.numeric[self._num[name]])
            for a, value in enumerate(atoms):
                codes[np.abs(safe - value) <= tolerance] = a
        codes = codes.astype(np.int64)
        if cells.nullable:
            codes[missing] = cells.size - 1
        return codes

    # ------------------------------------------------------------------ decode
    def decode(
        self,
        codes: np.ndarray,
        rng: np.random.Generator,
        fine: dict[str, np.ndarray] | None = None,
        rows: int | None = None,
        ends: Mapping[str, tuple[int, ...]] | None = None,
        thin: Mapping[str, tuple[int, ...]] | None = None,
        held: Mapping[str, tuple[int, ...]] | None = None,
        reach: Mapping[str, Mapping[int, tuple[float, float, float]]] | None = None,
        within: Mapping[str, CellValues] | None = None,
        values: Mapping[str, tuple[int, ...]] | None = None,
    ) -> pd.DataFrame:
        """Coarse codes ``(rows, d)`` back to a table in schema order, declared types.

        ``fine`` maps numeric columns to noisy fine histograms (released counts): a value
        is drawn among the fine cells of its bin in proportion to their clipped counts,
        then within the cell (an atom is its value; an interval is drawn uniformly and
        rounded to the column's integrality or ``decimals``). Without a histogram every
        fine cell of the bin is equally likely, weighted by its width. A bin whose cells
        all weigh nothing decodes at the values the data are known to hold, where the
        histogram shows one of them (``values``, per column their cells:
        :func:`~dpevolve.engine.tails.shown_values`), else evenly among its own cells
        (among the whole numbers where the weights lie on them): the model gives it
        rows, and the folds moved those of a stretch the releases show as noise
        (:func:`~dpevolve.engine.tails.released_inward`). An end bin (``ends``: by
        default a column's first and last) with a ``reach`` (per bin, ``(apex, foot, level)``:
        :func:`~dpevolve.engine.reach.end_reach`,
        :func:`~dpevolve.engine.reach.shown_reach`) decodes under a density thinning out
        to the foot (:func:`~dpevolve.engine.cells.thinning`); a held moved end bin
        whose weights lie mostly past the ``support``, in one run, among them
        (:func:`~dpevolve.engine.cells.overrules_support`). Otherwise, where ``rows``
        (the private row count, public) is given and the value cells' weights hold at
        least :data:`COVER` of the rows the missing cell's weight leaves, an end bin
        whose cells weigh nothing keeps to its cells within the weighted cells' span
        widened by :data:`MARGIN`; wholly past it, to its cells nearest it: a moved
        column's, those within the margin of the nearest (with a ``support``, within
        that first); any other, and a ``thin`` one (the model gives it no more than
        noise), where the weights hold less than :data:`COVER`, its one nearest cell
        (docs/engine.md, Decoding values within a bin: catholic's empty last bin of
        math scores drew 1.2% of the rows 5 points past the data across the bin;
        alcohol's thin first bin of unemployment rates, rows 1.8 below the data
        across the margin's reach; :func:`~dpevolve.engine.tails.folded_ends`).
        Within an interval cell, a value lands on a public table's repeated values
        there at their share of its public rows (``within``:
        :func:`~dpevolve.engine.within.draw_within`).
        """
        columns: dict[str, object] = {}
        for j, column in enumerate(self.schema.columns):
            c = np.asarray(codes[:, j], dtype=np.int64)
            if isinstance(column, NumericColumn):
                hist = None if fine is None else fine.get(column.name)
                roles = BinRoles(
                    (ends or {}).get(column.name, (0, self.bins - 1)),
                    (thin or {}).get(column.name, ()),
                    (held or {}).get(column.name, ()),
                    dict((reach or {}).get(column.name, {})),
                    (values or {}).get(column.name, ()),
                )
                shape = (within or {}).get(column.name)
                drawn = self._values(column, c, rng, hist, rows, roles, shape)
                columns[column.name] = column.format(drawn)
            else:
                columns[column.name] = _categorical(column, c)
        return pd.DataFrame(columns)

    def _values(
        self,
        column: NumericColumn,
        bins: np.ndarray,
        rng: np.random.Generator,
        hist: np.ndarray | None,
        total: int | None,
        roles: BinRoles,
        shape: CellValues | None,
    ) -> np.ndarray:
        cells = self.fine[column.name]
        weights = cell_weights(cells, hist)
        edges = self._edges[column.name]
        # per column, once: what the weights show, and whether they bound every bin
        whole = whole_atoms(cells, weights) if hist is not None else None
        # the rows holding a value: a column mostly missing has few, and its missing
        # cell's weight says nothing of where they lie
        weighed = float(weights[: cells.values].sum())
        valued = None if total is None else total - (float(weights.sum()) - weighed)
        span = valued is not None and hist is not None and weighed >= COVER * valued
        shown = shown_span(cells, weights)
        if total is None:  # without the row count, no end bins
            roles = BinRoles((), roles.thin, roles.held, {}, roles.values)
        out = np.full(bins.size, np.nan)
        valued_rows = max(1, int(np.sum(bins != self.bins)) if column.nullable else bins.size)
        for b in np.unique(bins):
            rows = np.flatnonzero(bins == b)
            if b == self.bins and column.nullable:
                continue  # the missing cell decodes to a missing value
            inside, p = self._bin_cells(column, int(b), weights, whole, shown, span, roles)
            p = p if p.sum() > 0 else even_weights(cells, inside)
            p = known_floor(cells, inside, p, rows.size / valued_rows)  # sums to 1
            picked = inside[rng.choice(inside.size, size=rows.size, p=p)]
            lo, hi = cells.lo[picked], cells.hi[picked]
            value = _round_to(lo + rng.random(rows.size) * (hi - lo), cells.step)
            if shape is not None:
                value = draw_within(shape, picked, value, rng)
            # rounding may cross the bin's edge: keep the value in its cells' bin (one
            # bin: the bin's own cells, or the one cell it borrows)
            low, high = _bin_bounds(edges, int(cells.coarse[picked[0]]), cells.step)
            out[rows] = value if high < low else np.clip(value, low, high)
        return np.clip(out, column.lo, column.hi)

    def _bin_cells(
        self,
        column: NumericColumn,
        b: int,
        weights: np.ndarray,
        whole: np.ndarray | None,
        shown: tuple[float, float] | None,
        span: bool,
        roles: BinRoles,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The cells bin ``b`` decodes in and their weights (zero: equal; :meth:`decode`);
        ``whole``, ``shown`` and ``span``: the column's whole-number atoms, the span its
        weights show and whether they bound every bin; ``roles``: what the releases say."""
        cells = self.fine[column.name]
        edges = self._edges[column.name]
        centre = 0.5 * (edges[b] + edges[b + 1])
        inside = np.flatnonzero(cells.coarse == b)
        if inside.size == 0:  # a bin holding no value of the grid: the nearest one
            inside = np.array([int(np.nanargmin(np.abs(cells.lo - centre)))])
        tail = b in roles.ends
        if b in roles.reach:
            inside, p = thinning(cells, inside, weights, *roles.reach[b], whole=whole)
            return inside, p
        moved_tail = tail and column.name in self.moved
        if moved_tail and column.name in self.support:
            within = cells_within(cells, inside, self.support[column.name])
            if b not in roles.held or not overrules_support(cells, weights, inside, within):
                inside = within
        if weights[inside].sum() > 0:
            return inside, weights[inside]
        if np.isin(inside, roles.values).any():  # a large share shown: the known values'
            known = inside[cells.known_cells[inside]]
            return known, np.ones(known.size)
        if whole is not None and np.isin(inside, whole).any():
            inside = inside[np.isin(inside, whole)]  # the data's whole numbers
        # a bin between the ends holds the rows the model gives it: the folds
        # (tails.released_inward) already moved those of a stretch that is noise
        if not tail or shown is None:
            return inside, weights[inside]
        near = (cells.hi[inside] >= shown[0]) & (cells.lo[inside] <= shown[1])
        if not near.any() and (moved_tail or not span):
            one = not span and (b in roles.thin or not moved_tail)
            near = nearest_cells(cells, inside, shown, reach=0.0 if one else MARGIN)
        if not (span or near.any()):
            return inside, weights[inside]
        # the released histogram shows no data here: the end bin's cells within the
        # margin of those it does show (its part near the data, whatever the cover;
        # wholly past them, a moved tail's cells as far as the margin reaches past the
        # nearest, else, where the cover cannot say more, its one nearest cell)
        inside = inside[near] if near.any() else inside[:0]
        if inside.size == 0:
            inside = np.array([nearest_weighted(cells, weights, centre)])
        return inside, even_weights(cells, inside)


def _check_nested(edges: np.ndarray, cells: FineCells, tolerance: float) -> None:
    """Nested bin edges must be boundaries of the fine partition's intervals, or the
    edges of an atom's own bin (within ``2 * tolerance`` of an atom: an interval holds
    no value there but the atom itself)."""
    if cells.grid:
        return
    atoms = cells.lo[: cells.atoms]
    near = np.abs(edges[:, None] - atoms[None, :]).min(axis=1) <= 2.0 * tolerance
    if not np.all(np.isin(edges, cells.boundaries) | near):
        raise ValueError("nested bin edges must lie on the fine partition's boundaries")


def atom_tolerance(column: NumericColumn) -> float:
    """How far a value may lie from an atom and still be it: float error of the
    ``[0, 1]`` encoding, far below any value step. An atom's own bin is
    ``[v - tolerance, v + tolerance)`` (:func:`dpevolve.engine.bins.atom_edges`)."""
    return 1e-9 * max(float(column.range), 1e-300)


def _bin_bounds(edges: np.ndarray, b: int, step: float | None) -> tuple[float, float]:
    """Smallest and largest value a bin holds (on the step grid when there is one)."""
    lo, hi = float(edges[b]), float(edges[b + 1])
    last = b == edges.size - 2
    if step is None:
        return lo, hi if last else float(np.nextafter(hi, -np.inf))
    first = math.ceil(lo / step - 1e-9) * step
    top = math.floor(hi / step + 1e-9) * step
    if not last and top >= hi - 1e-12 * max(1.0, abs(hi)):
        top -= step
    return first, top  # top < first: the bin holds no grid value


def _categorical(column: CategoricalColumn, codes: np.ndarray) -> np.ndarray:
    values = np.array(column.values, dtype=object)
    if column.nullable:
        values[-1] = None  # the reserved missing category decodes to a missing cell
    return pd.Series(values[codes]).infer_objects().to_numpy()


__all__ = ["Discretiser", "atom_tolerance"]
