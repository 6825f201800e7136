"""A junction tree laid out flat: belief propagation as a few vector operations per level.

Every tree clique's cells lie end to end in one vector. The small cliques (up to
:data:`BATCH_CELLS` cells) come first, ordered by their depth in the tree, so the small
cliques of one level are one contiguous stretch; each one's cells are grouped by its
separator's cell (one group, a *segment*, per separator value; a root's cells are one
segment). Calibration (:meth:`FlatTree.calibrate`) runs one level at a time, deepest
first and back, with the arithmetic of the two-pass sum-product (Koller & Friedman 2009,
sec. 10.2): summing the level's small cliques to their separators is one ``bincount``
over the segments, and the messages between a small clique and its children a gather
and a ``bincount`` over a fixed list of (parent cell, child segment) pairs. The large
cliques come after and are calibrated one at a time: the children's messages enter by
broadcasts (:func:`~dpevolve.estimate.factor.add_all_into`, nested separators merged
first) and the separator marginals leave by sums
(:func:`~dpevolve.estimate.factor.marginals`), where a pair list would cost a gathered
read per cell and child. Either way the conditionals are computed in
place in the output vector.

On a d = 200 model of 193 cliques of at most 240 cells a calibration took 7.7-9.4 ms
clique by clique (numpy's per-call overhead, not arithmetic) and 0.6-0.9 ms here; on
models with cliques of 32,000-115,000 cells 2.9-6.4 ms before and 1.2-4.1 ms here.

:class:`Incidence` is the fixed linear map between the measured cliques' potentials (one
stacked vector) and the tree's cells: ``potentials`` adds each measured cell's value into
every tree cell it covers, ``marginals`` is its adjoint (each measured cell's sum over the
tree cells it covers), a coarse query's groups included; small tree cliques by pairs,
large ones by broadcasts and sums, nested queries merged first
(:func:`~dpevolve.estimate.factor.add_all_into`, :func:`~dpevolve.estimate.factor.marginals`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpevolve.estimate.factor import add_all_into, broadcast_shape, combine_into, marginals, sum_to
from dpevolve.estimate.junction import JunctionTree
from dpevolve.measurements import Clique, Domain, MarginalQuery

# A separator value whose mass after the clique-wide shift falls below this may have lost
# precision to underflow; the clique (or the level's small cliques) is then redone with
# one shift per separator value.
FRAGILE_MASS = 1e-250

#: Tree cliques of up to this many cells exchange values through pair lists (a gather
#: and a bincount, about 12 ns a pair); larger ones through one broadcast or sum per
#: neighbour (a few microseconds a call, under a nanosecond a cell).
BATCH_CELLS = 512


def cell_index(shape: Sequence[int], attrs: Clique, part: Clique) -> np.ndarray:
    """For each cell of an array on ``attrs`` (C order), the index of its cell on
    ``part`` (a subset of ``attrs``; C order in ``attrs``' order)."""
    part = tuple(a for a in attrs if a in part)
    sub = tuple(s for s, a in zip(shape, attrs, strict=True) if a in part)
    index = np.arange(math.prod(sub), dtype=np.intp).reshape(sub)
    return np.broadcast_to(broadcast_shape(index, part, attrs), tuple(shape)).ravel()


def _sums(index: np.ndarray, weights: np.ndarray, length: int) -> np.ndarray:
    """``out[k]`` the sum of ``weights`` where ``index`` is ``k`` (float64)."""
    if not index.size:  # bincount would give integers
        return np.zeros(length)
    return np.bincount(index, weights=weights, minlength=length)


def _group_index(query: MarginalQuery, shape: tuple[int, ...]) -> np.ndarray:
    """Per fine cell of ``query``'s clique (row-major), the index of its measured cell
    (its group's, on a coarse query) among the ``shape`` cells."""
    groups = query.expand(np.arange(math.prod(shape), dtype=float).reshape(shape))
    return np.asarray(groups, dtype=np.intp).ravel()


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


class _Level:
    """One depth of the tree. Its small cliques' cells ``[start, stop)`` and segments
    ``[seg_start, seg_stop)``: their first cells (level-local) and sizes, each cell's
    segment (global) and each segment's clique (level-local), and the (parent cell,
    child segment) pairs of their children (level-local cells, global segments). Its
    large cliques are listed in ``large``."""

    def __init__(self, start: int, seg_start: int) -> None:
        self.start = self.stop = start
        self.seg_start = self.seg_stop = seg_start
        self.large: list[int] = []
        self.firsts: list[int] = []
        self.segment: list[np.ndarray] = []
        self.owner: list[np.ndarray] = []
        self.pair_cell: list[np.ndarray] = []
        self.pair_segment: list[np.ndarray] = []

    def add_small(self, size: int, segments: np.ndarray, count: int) -> None:
        self.firsts.append(self.stop - self.start)
        self.segment.append(segments + self.seg_stop)
        self.owner.append(np.full(count, len(self.firsts) - 1, dtype=np.intp))
        self.stop += size
        self.seg_stop += count

    def freeze(self) -> None:
        """Index arrays from the lists."""
        self.first = np.asarray(self.firsts, dtype=np.intp)
        self.sizes = np.diff(np.append(self.first, self.stop - self.start))
        self.cell_segment = _joined(self.segment)
        self.local_segment = self.cell_segment - self.seg_start
        self.segment_clique = _joined(self.owner)
        self.up_cell = _joined(self.pair_cell) - self.start
        self.up_segment = _joined(self.pair_segment)


class FlatTree:
    """A junction tree's cells in one vector (see the module). The small cliques come
    first, by depth, up to ``small``; cliques of more than ``batch_cells`` cells follow,
    calibrated one at a time by broadcasts and sums (and so are the measured cliques
    inside them, by :class:`Incidence`). Their segments are laid out the same way.

    ``offset[i]`` is where tree clique ``i``'s cells start, ``seg_offset[i]`` where its
    segments start; ``views(flat)`` cuts a flat vector into the cliques' arrays (views,
    in the tree's clique order).
    """

    def __init__(self, domain: Domain, tree: JunctionTree, batch_cells: int = BATCH_CELLS) -> None:
        self.tree = tree
        self.batch_cells = int(batch_cells)
        self.shapes = [tuple(domain.shape(c)) for c in tree.cliques]
        self.sep_shapes = [tuple(domain.shape(s)) for s in tree.separator]
        rank = {i: k for k, i in enumerate(tree.order)}
        placed = sorted(
            range(len(tree.cliques)), key=lambda i: (self.large(i), tree.depth[i], rank[i])
        )
        self.offset = [0] * len(tree.cliques)
        self.seg_offset = [0] * len(tree.cliques)
        self.levels = [_Level(0, 0) for _ in range(max(tree.depth, default=-1) + 1)]
        cells = segments = 0
        for i in placed:
            level = self.levels[tree.depth[i]]
            size, count = math.prod(self.shapes[i]), math.prod(self.sep_shapes[i])
            if self.large(i):
                level.large.append(i)
            else:
                if level.stop == level.start:  # the level's first small clique
                    level.start = level.stop = cells
                    level.seg_start = level.seg_stop = segments
                own = cell_index(self.shapes[i], tree.cliques[i], tree.separator[i])
                level.add_small(size, own, count)
            self.offset[i], self.seg_offset[i] = cells, segments
            cells, segments = cells + size, segments + count
        self.small = sum(math.prod(self.shapes[i]) for i in placed if not self.large(i))
        for i in placed:
            p = tree.parent[i]
            if p >= 0 and not self.large(p):
                into = cell_index(self.shapes[p], tree.cliques[p], tree.separator[i])
                cells_of_p = self.offset[p] + np.arange(into.size, dtype=np.intp)
                self.levels[tree.depth[p]].pair_cell.append(cells_of_p)
                self.levels[tree.depth[p]].pair_segment.append(self.seg_offset[i] + into)
        for level in self.levels:
            level.freeze()
        self.size = cells
        self.segments = segments

    def large(self, i: int) -> bool:
        """Whether tree clique ``i`` is calibrated on its own (more than ``batch_cells``)."""
        return math.prod(self.shapes[i]) > self.batch_cells

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each tree clique's part of ``flat`` in its cell shape (tree clique order)."""
        return [self.view(flat, i) for i in range(len(self.shapes))]

    def view(self, flat: np.ndarray, i: int) -> np.ndarray:
        """Tree clique ``i``'s part of ``flat`` in its cell shape."""
        shape = self.shapes[i]
        return flat[self.offset[i] : self.offset[i] + math.prod(shape)].reshape(shape)

    def segment_view(self, segments: np.ndarray, i: int) -> np.ndarray:
        """Tree clique ``i``'s separator values in ``segments`` in its separator's shape."""
        start = self.seg_offset[i]
        shape = self.sep_shapes[i]
        return segments[start : start + math.prod(shape)].reshape(shape)

    def flatten(self, arrays: Sequence[np.ndarray]) -> np.ndarray:
        """One flat vector from per-clique arrays (tree clique order)."""
        out = np.empty(self.size)
        for o, a in zip(self.offset, arrays, strict=True):
            out[o : o + a.size] = np.ravel(a)
        return out

    def beliefs(self, log_potentials: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Calibrated beliefs per clique (tree clique order) from per-clique log
        potentials: :meth:`calibrate` on their flat vector."""
        return self.views(self.calibrate(self.flatten(log_potentials)))

    def calibrate(self, log_potentials: np.ndarray) -> np.ndarray:
        """Calibrated beliefs (flat): each clique's marginal probabilities, summing to 1.

        Upward, deepest level first, each clique adds its children's log messages, leaves
        log space once shifted by its largest value and becomes its conditional given
        its separator; where a separator value's mass underflows (under
        :data:`FRAGILE_MASS`) it is redone with one shift per separator value (the whole
        level's small cliques at once). Downward, a clique's belief is that conditional
        times its parent's separator marginal (Hugin's update), so no cell is divided by
        another.
        """
        beliefs = np.empty(self.size)  # each clique's conditional, then its belief
        log_up = np.zeros(self.segments)
        for level in reversed(self.levels):
            self._upward_small(level, log_potentials, log_up, beliefs)
            for i in level.large:
                self._upward_large(i, log_potentials, log_up, beliefs)
        for parent, level in zip(self.levels, self.levels[1:], strict=False):
            separator = self._separators(parent, beliefs)
            beliefs[level.start : level.stop] *= separator[level.cell_segment]
            for i in level.large:
                local = self.segment_view(separator, i)
                combine_into(np.multiply, self.view(beliefs, i), self.tree.cliques[i], local,
                             self.tree.separator[i])  # fmt: skip
        return beliefs

    def _upward_small(
        self, level: _Level, log_potentials: np.ndarray, log_up: np.ndarray, out: np.ndarray
    ) -> None:
        """The level's small cliques, all at once: conditionals into ``out`` (computed in
        place there), log messages into ``log_up``."""
        if level.stop == level.start:
            return
        values = out[level.start : level.stop]
        self._log_values_small(level, log_potentials, log_up, values)
        top = np.maximum.reduceat(values, level.first)
        shift = top[level.segment_clique]
        values -= np.repeat(top, level.sizes)
        np.exp(values, out=values)
        local = level.local_segment
        mass = _sums(local, values, shift.size)
        if np.min(mass) < FRAGILE_MASS:
            self._log_values_small(level, log_potentials, log_up, values)
            shift = np.full(shift.size, -np.inf)
            np.maximum.at(shift, local, values)
            values -= shift[local]
            np.exp(values, out=values)
            mass = _sums(local, values, shift.size)
        values /= mass[local]
        log_up[level.seg_start : level.seg_stop] = np.log(mass) + shift

    def _log_values_small(
        self, level: _Level, log_potentials: np.ndarray, log_up: np.ndarray, out: np.ndarray
    ) -> None:
        """The small cliques' log potentials plus their children's log messages."""
        np.copyto(out, log_potentials[level.start : level.stop])
        if level.up_cell.size:
            out += _sums(level.up_cell, log_up[level.up_segment], level.stop - level.start)

    def _upward_large(
        self, i: int, log_potentials: np.ndarray, log_up: np.ndarray, out: np.ndarray
    ) -> None:
        """One large clique: its conditional into ``out`` (computed in place there), its
        log message into ``log_up``."""
        clique, sep = self.tree.cliques[i], self.tree.separator[i]
        values = self.view(out, i)
        self._log_values_large(i, log_potentials, log_up, values)
        top = float(np.max(values))
        values -= top
        np.exp(values, out=values)
        mass = sum_to(values, clique, sep, keepdims=True)
        shift = np.full(mass.shape, top)
        if np.min(mass) < FRAGILE_MASS:
            self._log_values_large(i, log_potentials, log_up, values)
            rest = tuple(k for k, a in enumerate(clique) if a not in sep)
            shift = np.max(values, axis=rest, keepdims=True)
            values -= shift
            np.exp(values, out=values)
            mass = np.sum(values, axis=rest, keepdims=True)
        values /= mass
        self.segment_view(log_up, i)[...] = (np.log(mass) + shift).reshape(self.sep_shapes[i])

    def _log_values_large(
        self, i: int, log_potentials: np.ndarray, log_up: np.ndarray, out: np.ndarray
    ) -> None:
        """Large clique ``i``'s log potential plus its children's log messages."""
        np.copyto(out, self.view(log_potentials, i))
        messages = [
            (self.tree.separator[c], self.segment_view(log_up, c)) for c in self.tree.children[i]
        ]
        add_all_into(out, self.tree.cliques[i], messages)

    def _separators(self, parent: _Level, beliefs: np.ndarray) -> np.ndarray:
        """The marginal of each of the parent level's cliques on its children's separators
        (a vector over all segments; the other entries 0)."""
        parent_beliefs = beliefs[parent.start : parent.stop][parent.up_cell]
        out = _sums(parent.up_segment, parent_beliefs, self.segments)
        for p in parent.large:
            kids = self.tree.children[p]
            seps = [self.tree.separator[c] for c in kids]
            found = marginals(self.view(beliefs, p), self.tree.cliques[p], seps)
            for c, summed in zip(kids, found, strict=True):
                self.segment_view(out, c)[...] = summed
        return out


class Incidence:
    """The measured cells each tree cell covers (see the module).

    ``potentials(theta)`` is the tree's flat log potentials from the stacked measured
    potentials (a coarse query's group value added into every fine cell of the group);
    ``marginals(beliefs)`` the adjoint: each stacked cell's sum over its tree cells.
    """

    def __init__(
        self,
        flat: FlatTree,
        queries: Sequence[MarginalQuery],
        shapes: Sequence[tuple[int, ...]],
        starts: Sequence[int],
        homes: Sequence[int],
        size: int,
    ) -> None:
        self.flat = flat
        cells: list[np.ndarray] = []
        measured: list[np.ndarray] = []
        # per large tree clique, its measured queries, shapes and stacked slices; and the
        # first query on the whole clique, as a stacked index per cell (gathered straight
        # into the clique: a fit's every step would otherwise expand it into fresh pages)
        self.wide: dict[int, list[tuple[MarginalQuery, tuple[int, ...], slice]]] = {}
        self.whole: dict[int, tuple[MarginalQuery, slice, np.ndarray]] = {}
        for query, shape, start, home in zip(queries, shapes, starts, homes, strict=True):
            clique, home_shape = flat.tree.cliques[home], flat.shapes[home]
            if flat.large(home):
                part = slice(start, start + math.prod(shape))
                if query.clique == clique and home not in self.whole:
                    self.whole[home] = (query, part, start + _group_index(query, shape))
                else:
                    self.wide.setdefault(home, []).append((query, shape, part))
                continue
            index = cell_index(home_shape, clique, query.clique)
            if query.coarse:
                fine = tuple(
                    s for s, a in zip(home_shape, clique, strict=True) if a in query.clique
                )
                index = _group_index(query, shape).reshape(fine).ravel()[index]
            cells.append(flat.offset[home] + np.arange(index.size, dtype=np.intp))
            measured.append(start + index)
        self.cell = _joined(cells)
        self.measured = _joined(measured)
        self.size = int(size)

    def potentials(self, theta: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The tree's flat log potentials from the stacked ``theta``, written into
        ``out`` where given (a work vector the caller reuses: a fit's steps would
        otherwise take fresh pages from the system for every step's copy)."""
        out = np.empty(self.flat.size) if out is None else out
        small = self.flat.small
        out[:small] = _sums(self.cell, theta[self.measured], small)
        out[small:] = 0.0
        for home, (_, _, index) in self.whole.items():
            np.take(theta, index, out=self.flat.view(out, home).reshape(-1))
        for home, items in self.wide.items():
            values = [(q.clique, q.expand(theta[part].reshape(shape))) for q, shape, part in items]
            add_all_into(self.flat.view(out, home), self.flat.tree.cliques[home], values)
        return out

    def marginals(self, beliefs: np.ndarray) -> np.ndarray:
        """Each stacked cell's sum of the flat ``beliefs`` over the tree cells it covers."""
        out = _sums(self.measured, beliefs[self.cell], self.size)
        for home, (query, part, _) in self.whole.items():
            out[part] = query.project(self.flat.view(beliefs, home)).ravel()
        for home, items in self.wide.items():
            view, clique = self.flat.view(beliefs, home), self.flat.tree.cliques[home]
            found = marginals(view, clique, [q.clique for q, _, _ in items])
            for (query, _, part), summed in zip(items, found, strict=True):
                out[part] = query.project(summed).ravel()
        return out
