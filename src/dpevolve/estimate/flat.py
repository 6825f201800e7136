"""A junction tree laid out flat: belief propagation as a few vector operations per level.

Every tree clique's cells lie end to end in one vector, the cliques ordered by their
depth in the tree, so the cliques of one level are one contiguous stretch. Each clique's
cells are grouped by its separator's cell (one group, a *segment*, per separator value;
a root's cells are one segment). Calibration (:meth:`FlatTree.calibrate`) then runs one
level at a time, deepest first and back, with the arithmetic of the two-pass sum-product
(Koller & Friedman 2009, sec. 10.2): summing a clique's cells to its separator is a
``bincount`` over the segments, and the messages between a small clique and its children
are a gather and a ``bincount`` over a fixed list of (parent cell, child segment) pairs.
A clique of more than :data:`BATCH_CELLS` cells instead takes each child's message by
broadcasting (:func:`~dpevolve.estimate.factor.combine_into`) and gives each its
separator marginal by a sum (:func:`~dpevolve.estimate.factor.sum_to`): a pair list
would cost a gathered read per cell and child where a broadcast streams through.

On a d = 200 model of 193 cliques of at most 240 cells a calibration took 9.4 ms clique
by clique (numpy's per-call overhead, not arithmetic) and 1.5 ms level by level.

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
# precision to underflow; the level is then redone with one shift per separator value.
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
    """``out[k]`` the sum of ``weights`` where ``index`` is ``k`` (float64, also when
    there is nothing to sum, where ``bincount`` gives integers)."""
    return np.bincount(index, weights=weights, minlength=length).astype(np.float64, copy=False)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)


class _Level:
    """One depth of the tree: its cells ``[start, stop)``, its cliques' first cells
    (level-local) and sizes, its segments ``[seg_start, seg_stop)``, each cell's segment
    and each segment's clique (level-local); the (parent cell, child segment) pairs of
    its small cliques' children and the (parent, child) links of its large ones."""

    def __init__(self, start: int, seg_start: int) -> None:
        self.start = self.stop = start
        self.seg_start = self.seg_stop = seg_start
        self.firsts: list[int] = []
        self.segment: list[np.ndarray] = []
        self.owner: list[np.ndarray] = []
        self.pair_cell: list[np.ndarray] = []
        self.pair_segment: list[np.ndarray] = []
        self.wide: list[tuple[int, int]] = []

    def add(self, size: int, segments: np.ndarray, count: int) -> None:
        self.firsts.append(self.stop - self.start)
        self.segment.append(segments + (self.seg_stop - self.seg_start))
        self.owner.append(np.full(count, len(self.firsts) - 1, dtype=np.intp))
        self.stop += size
        self.seg_stop += count

    def freeze(self) -> None:
        """Index arrays from the lists; the pairs local to this level's cells and to the
        next level's segments (which start where this level's end)."""
        self.first = np.asarray(self.firsts, dtype=np.intp)
        self.sizes = np.diff(np.append(self.first, self.stop - self.start))
        self.cell_segment = np.concatenate(self.segment)
        self.segment_clique = np.concatenate(self.owner)
        self.up_cell = _joined(self.pair_cell) - self.start
        self.up_segment = _joined(self.pair_segment) - self.seg_stop


class FlatTree:
    """A junction tree's cells in one vector (see the module); cliques of more than
    ``batch_cells`` cells exchange messages by broadcasts and sums (so does
    :class:`Incidence` for measured cliques inside them).

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
        placed = sorted(range(len(tree.cliques)), key=lambda i: (tree.depth[i], rank[i]))
        self.offset = [0] * len(tree.cliques)
        self.seg_offset = [0] * len(tree.cliques)
        self.levels: list[_Level] = []
        cells = segments = 0
        for i in placed:
            if tree.depth[i] == len(self.levels):
                self.levels.append(_Level(cells, segments))
            size, count = math.prod(self.shapes[i]), math.prod(self.sep_shapes[i])
            own = cell_index(self.shapes[i], tree.cliques[i], tree.separator[i])
            self.levels[-1].add(size, own, count)
            self.offset[i], self.seg_offset[i] = cells, segments
            cells, segments = cells + size, segments + count
        for i in placed:
            p = tree.parent[i]
            if p < 0:
                continue
            parent_level = self.levels[tree.depth[p]]
            if math.prod(self.shapes[p]) > self.batch_cells:
                parent_level.wide.append((p, i))
                continue
            into = cell_index(self.shapes[p], tree.cliques[p], tree.separator[i])
            parent_level.pair_cell.append(self.offset[p] + np.arange(into.size, dtype=np.intp))
            parent_level.pair_segment.append(self.seg_offset[i] + into)
        for level in self.levels:
            level.freeze()
        self.size = cells
        self.segments = segments

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each tree clique's part of ``flat`` in its cell shape (tree clique order)."""
        return [self.view(flat, i) for i in range(len(self.shapes))]

    def view(self, flat: np.ndarray, i: int, start: int = 0) -> np.ndarray:
        """Tree clique ``i``'s part of ``flat`` (a vector of the cells from ``start``
        on) in its cell shape."""
        shape, first = self.shapes[i], self.offset[i] - start
        return flat[first : first + math.prod(shape)].reshape(shape)

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
        :data:`FRAGILE_MASS`) the level is redone with one shift per separator value.
        Downward, a clique's belief is that conditional times its parent's separator
        marginal (Hugin's update), so no cell is divided by another.
        """
        cond = np.empty(self.size)
        log_up = np.zeros(self.segments)
        for level in reversed(self.levels):
            log_values = np.array(log_potentials[level.start : level.stop], dtype=float)
            self._collect(level, log_values, log_up)
            top = np.maximum.reduceat(log_values, level.first)
            shift = top[level.segment_clique]
            values = np.exp(log_values - np.repeat(top, level.sizes))
            mass = _sums(level.cell_segment, values, shift.size)
            if np.min(mass) < FRAGILE_MASS:
                shift = np.full(shift.size, -np.inf)
                np.maximum.at(shift, level.cell_segment, log_values)
                values = np.exp(log_values - shift[level.cell_segment])
                mass = _sums(level.cell_segment, values, shift.size)
            cond[level.start : level.stop] = values / mass[level.cell_segment]
            log_up[level.seg_start : level.seg_stop] = np.log(mass) + shift
        beliefs = cond
        for parent, level in zip(self.levels, self.levels[1:], strict=False):
            separator = self._separators(parent, level, beliefs)
            beliefs[level.start : level.stop] *= separator[level.cell_segment]
        return beliefs

    def _collect(self, level: _Level, log_values: np.ndarray, log_up: np.ndarray) -> None:
        """Add the children's log messages into ``log_values`` (the level's cells)."""
        if level.up_cell.size:
            messages = log_up[level.seg_stop :][level.up_segment]
            log_values += _sums(level.up_cell, messages, level.stop - level.start)
        for p, c in level.wide:
            target = self.view(log_values, p, level.start)
            message = self._segments(log_up, c).reshape(self.sep_shapes[c])
            combine_into(np.add, target, self.tree.cliques[p], message, self.tree.separator[c])

    def _separators(self, parent: _Level, level: _Level, beliefs: np.ndarray) -> np.ndarray:
        """The parent's marginal on each segment of ``level`` (level-local)."""
        parent_beliefs = beliefs[parent.start : parent.stop][parent.up_cell]
        out = _sums(parent.up_segment, parent_beliefs, level.seg_stop - level.seg_start)
        for p, c in parent.wide:
            summed = sum_to(self.view(beliefs, p), self.tree.cliques[p], self.tree.separator[c])
            start = self.seg_offset[c] - level.seg_start
            out[start : start + summed.size] = summed.ravel()
        return out

    def _segments(self, flat_segments: np.ndarray, i: int) -> np.ndarray:
        start = self.seg_offset[i]
        return flat_segments[start : start + math.prod(self.sep_shapes[i])]


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
        # per large tree clique, its measured queries, shapes and stacked slices
        self.wide: dict[int, list[tuple[MarginalQuery, tuple[int, ...], slice]]] = {}
        for query, shape, start, home in zip(queries, shapes, starts, homes, strict=True):
            clique, home_shape = flat.tree.cliques[home], flat.shapes[home]
            if math.prod(home_shape) > flat.batch_cells:
                part = slice(start, start + math.prod(shape))
                self.wide.setdefault(home, []).append((query, shape, part))
                continue
            index = cell_index(home_shape, clique, query.clique)
            if query.coarse:
                fine = tuple(
                    s for s, a in zip(home_shape, clique, strict=True) if a in query.clique
                )
                groups = query.expand(np.arange(math.prod(shape), dtype=float).reshape(shape))
                index = np.asarray(groups, dtype=np.intp).reshape(fine).ravel()[index]
            cells.append(flat.offset[home] + np.arange(index.size, dtype=np.intp))
            measured.append(start + index)
        self.cell = _joined(cells)
        self.measured = _joined(measured)
        self.size = int(size)

    def potentials(self, theta: np.ndarray) -> np.ndarray:
        """The tree's flat log potentials from the stacked ``theta``."""
        out = _sums(self.cell, theta[self.measured], self.flat.size)
        for home, items in self.wide.items():
            values = [(q.clique, q.expand(theta[part].reshape(shape))) for q, shape, part in items]
            add_all_into(self.flat.view(out, home), self.flat.tree.cliques[home], values)
        return out

    def marginals(self, beliefs: np.ndarray) -> np.ndarray:
        """Each stacked cell's sum of the flat ``beliefs`` over the tree cells it covers."""
        out = _sums(self.measured, beliefs[self.cell], self.size)
        for home, items in self.wide.items():
            view, clique = self.flat.view(beliefs, home), self.flat.tree.cliques[home]
            found = marginals(view, clique, [q.clique for q, _, _ in items])
            for (query, _, part), summed in zip(items, found, strict=True):
                out[part] = query.project(summed).ravel()
        return out
