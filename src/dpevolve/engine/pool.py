"""The rounds' candidate list, held as index arrays (docs/engine.md, selection).

Each round selects among the public candidates of :mod:`~dpevolve.engine.select`, in
this order: the fine cliques (:func:`~dpevolve.engine.select.candidates`), the coarse
pairs (:func:`~dpevolve.engine.select.coarse_pairs`), the coarse label cliques
(:func:`~dpevolve.engine.select.coarse_candidates`) and the parity cliques cut at
released quantiles (:func:`~dpevolve.engine.select.parity_candidates`: few, made once).
On a wide table the list is long (about ``3 C(d, 2)`` coarse label cliques) and a round
scores at most ``max_candidates`` of it: the 1-ways and the label's fine cliques, then a
public random draw of the rest. :class:`CandidatePool` keeps the list as arrays of column indices
(one row per base clique, one column per way of grouping it), built once per run for
the parts that never change and per round only for the cliques grown from the measured
ones, and makes :class:`~dpevolve.measurements.MarginalQuery` objects only for the
candidates a round keeps: a round costs ``O(d^2)`` array work plus the kept candidates,
not ``O(d^2)`` Python objects.

The list, its order and the random draw are those of the functions it replaces (the
tests compare them), so the selection is unchanged: the pool is a public function of
the domain, the label, the public groupings and the released cliques, and the draw is
post-processing randomness.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import combinations

import numpy as np

from dpevolve.engine.select import (
    numeric_grouping,
    parity_candidates,
    parity_neighbours,
    split_grouping,
)
from dpevolve.measurements import Clique, Domain, Grouping, MarginalQuery

#: A way of grouping one numeric column: ``(cells, bins) -> grouping or None``.
Way = Callable[[int, int], Grouping | None]


@dataclass(frozen=True)
class _Block:
    """Candidates ``(base, way)``: ``rows[i]`` a base clique's column indices, ascending,
    padded with ``d``; ``ways`` the grouping table (``-1``: kept fine), ``None`` for fine
    cliques; ``items`` the kept ``base * W + way`` in list order."""

    rows: np.ndarray
    ways: np.ndarray | None
    items: np.ndarray

    def __len__(self) -> int:
        return len(self.items)


def _even(cells: int, bins: int, groups: int) -> Grouping | None:
    return numeric_grouping(cells, bins, groups) if groups < bins else None


def _unique_first(rows: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of each distinct row, in row order."""
    if len(rows) == 0:
        return np.zeros(0, dtype=np.int64)
    _, first = np.unique(rows, axis=0, return_index=True)
    return np.sort(first)


def _grown(
    selected: Iterable[np.ndarray], d: int, width: int, allowed: np.ndarray, extra: Sequence[int]
) -> np.ndarray:
    """Every selected clique (index array) with one of ``allowed`` columns not in it
    added, plus the ``extra`` columns, each row ascending and padded to ``width``; in
    the order of the selected cliques, then of the added column."""
    blocks = []
    for clique in selected:
        add = allowed[~np.isin(allowed, clique)]
        fixed = np.broadcast_to(np.array([*clique, *extra]), (len(add), len(clique) + len(extra)))
        rows = np.sort(np.column_stack([fixed, add]), axis=1)
        blocks.append(np.pad(rows, ((0, 0), (0, width - rows.shape[1])), constant_values=d))
    if not blocks:
        return np.zeros((0, width), dtype=np.int64)
    return np.concatenate(blocks).astype(np.int64)


class CandidatePool:
    """The rounds' public candidates as arrays; :meth:`draw` makes the kept ones.

    Parameters
    ----------
    domain
        The model's domain (public).
    label
        The schema's label, or ``None``.
    numeric
        Each numeric column's name and number of bins (public).
    max_order, pair_groups, coarse_groups, coarse_order, coarse_all, coarse_splits
        As :class:`~dpevolve.engine.spec.EngineSpec`'s fields of those names.
    masses, parity_quantiles
        Each numeric column's mass in the model's answer to the released 1-ways
        (post-processing) and :class:`~dpevolve.engine.spec.EngineSpec`'s
        ``parity_quantiles``: the parity cliques' cuts. ``None``: no parity cliques.
    """

    def __init__(
        self,
        domain: Domain,
        label: str | None,
        numeric: Mapping[str, int],
        max_order: int,
        pair_groups: Sequence[int],
        coarse_groups: Sequence[int],
        coarse_order: int,
        coarse_all: int,
        coarse_splits: Sequence[float],
        masses: Mapping[str, np.ndarray] | None = None,
        parity_quantiles: Sequence[float] = (),
        parity_reach: int = 0,
    ) -> None:
        self.domain = domain
        self.numeric = dict(numeric)
        self.parity_reach = parity_reach
        self.names = domain.names
        self.d = d = len(domain.names)
        self.max_order = max_order
        self.coarse_order = coarse_order
        self.coarse_all = coarse_all
        self.label = -1 if label is None else domain.index(label)
        self.groupings: list[Grouping] = []
        self._ids: dict[Grouping, int] = {}
        first, second = np.triu_indices(d, 1)
        self.pairs = np.column_stack([first, second]).astype(np.int64)
        self.pair_label = (self.pairs == self.label).any(axis=1)
        pair_ways: list[Way] = [partial(_even, groups=g) for g in pair_groups]
        self.pair_block = self._block(self.pairs, self._table(pair_ways, numeric))
        coarse_ways: list[Way] = [
            *(partial(_even, groups=g) for g in coarse_groups),
            *(partial(split_grouping, at=at) for at in coarse_splits),
        ]
        self.coarse_ways = self._table(coarse_ways, numeric)
        self.others = np.array([i for i in range(d) if i != self.label], dtype=np.int64)
        self.coarse_on = label is not None and bool(coarse_ways) and coarse_order >= 3
        self.width = max(3, coarse_order)
        self.static = self._static_bases(numeric) if self.coarse_on else np.zeros((0, 3))
        self.parity = (
            parity_candidates(
                domain, label, numeric, masses, parity_quantiles, coarse_order, coarse_all
            )
            if masses is not None
            else []
        )

    def _table(self, ways: Sequence[Way], numeric: Mapping[str, int]) -> np.ndarray:
        """Grouping ids per way and column (``-1``: kept fine; column ``d``: padding)."""
        table = np.full((len(ways), self.d + 1), -1, dtype=np.int64)
        for w, way in enumerate(ways):
            for j, name in enumerate(self.names):
                if name not in numeric:
                    continue
                grouping = way(self.domain.sizes[j], numeric[name])
                if grouping is not None:
                    table[w, j] = self._ids.setdefault(grouping, len(self._ids))
                    if table[w, j] == len(self.groupings):
                        self.groupings.append(grouping)
        return table

    def _block(self, rows: np.ndarray, ways: np.ndarray) -> _Block:
        """The ``(base, way)`` candidates of ``rows``: those with a grouped column, a way
        giving the same groupings as an earlier one for the same base dropped."""
        ids = ways[:, rows]  # (W, m, k)
        valid = np.asarray((ids >= 0).any(axis=2))
        for w in range(1, len(ways)):
            for earlier in range(w):
                same = (ids[w] == ids[earlier]).all(axis=1) & valid[earlier]
                valid[w] &= ~same
        return _Block(rows, ways, np.flatnonzero(valid.T.ravel()))

    def _static_bases(self, numeric: Mapping[str, int]) -> np.ndarray:
        """The coarse label cliques' bases that never change: the label with every pair
        of other columns, and the label's all-numeric cliques when few."""
        i, j = np.triu_indices(len(self.others), 1)
        labels = np.full(len(i), self.label)
        rows = np.sort(np.column_stack([self.others[i], self.others[j], labels]), axis=1)
        rows = np.pad(rows, ((0, 0), (0, self.width - 3)), constant_values=self.d)
        numerics = [a for a in self.others if self.names[a] in numeric]
        size = self.coarse_order - 1
        if self.coarse_order > 3 and math.comb(len(numerics), size) <= self.coarse_all:
            combos = [[*c, self.label] for c in combinations(numerics, size)]
            if combos:
                rows = np.concatenate([rows, np.sort(np.array(combos), axis=1)])
        return rows.astype(np.int64)

    def draw(
        self,
        measured: Sequence[Clique],
        cap: int,
        rng: np.random.Generator,
        queries: Sequence[MarginalQuery] = (),
    ) -> list[MarginalQuery]:
        """The round's candidates: the whole list when it holds at most ``cap``, else
        the 1-ways and the label's fine cliques (at most ``cap`` of them, or the 1-ways),
        then a public random draw of the others (``rng``: post-processing)."""
        fine = self._fine(measured)
        blocks: list[_Block | list[MarginalQuery]] = [
            fine,
            self.pair_block,
            self._coarse(measured),
            self._parity(queries),
        ]
        ones = self.d
        first_mask = np.zeros(len(fine), dtype=bool)
        first_mask[:ones] = True
        if self.label >= 0:
            first_mask[ones:] = (fine.rows[ones:] == self.label).any(axis=1)
        total = sum(len(b) for b in blocks)
        if total <= cap:
            return [self._make(b, i) for b in blocks for i in range(len(b))]
        first = np.flatnonzero(first_mask)[: max(cap, ones)]
        rest_fine = np.flatnonzero(~first_mask)
        sizes = [len(rest_fine), *(len(b) for b in blocks[1:])]
        rest = sum(sizes)
        take = max(0, min(cap - len(first), rest))
        drawn = np.sort(rng.choice(rest, size=take, replace=False))
        out = [self._make(fine, int(i)) for i in first]
        bounds = np.cumsum([0, *sizes])
        for k, block in enumerate(blocks):
            part = drawn[(drawn >= bounds[k]) & (drawn < bounds[k + 1])] - bounds[k]
            index = rest_fine[part] if k == 0 else part
            out += [self._make(block, int(i)) for i in index]
        return out

    def _fine(self, measured: Sequence[Clique]) -> _Block:
        """1-ways, pairs, and every measured clique of 2 to ``max_order - 1`` columns
        grown by one column (first occurrences, in the order grown)."""
        d = self.d
        width = max(2, self.max_order)
        ones = np.pad(np.arange(d)[:, None], ((0, 0), (0, width - 1)), constant_values=d)
        pairs = np.pad(self.pairs, ((0, 0), (0, width - 2)), constant_values=d)
        grow = [self._indices(c) for c in measured if 2 <= len(c) < self.max_order]
        grown = _grown(grow, d, width, np.arange(d), ())
        grown = grown[_unique_first(grown)]
        rows = np.concatenate([ones, pairs, grown]).astype(np.int64)
        return _Block(rows, None, np.arange(len(rows)))

    def _coarse(self, measured: Sequence[Clique]) -> _Block:
        """The coarse label cliques: static bases, then each measured clique's other
        columns (two of them, at ``coarse_order`` 4) grown by one, with the label."""
        if not self.coarse_on:
            return _Block(np.zeros((0, self.width), dtype=np.int64), None, np.zeros(0, np.int64))
        grow = []
        for clique in measured:
            rest = [a for a in self._indices(clique) if a != self.label]
            if 2 <= len(rest) and len(rest) + 2 <= self.coarse_order:
                grow.append(np.array(rest))
        grown = _grown(grow, self.d, self.width, self.others, (self.label,))
        rows = np.concatenate([self.static, grown]).astype(np.int64)
        keep = _unique_first(rows) if len(grown) else np.arange(len(rows))
        return self._block(rows[keep], self.coarse_ways)

    def _parity(self, queries: Sequence[MarginalQuery]) -> list[MarginalQuery]:
        """The parity cliques, then the measured ones with a cut moved
        (:func:`~dpevolve.engine.select.parity_neighbours`)."""
        if not self.parity or self.parity_reach <= 0:
            return self.parity
        known = set(self.parity)
        moved = parity_neighbours(queries, self.numeric, self.parity_reach)
        return [*self.parity, *(q for q in moved if q not in known)]

    def _indices(self, clique: Clique) -> np.ndarray:
        return np.array([self.domain.index(a) for a in clique], dtype=np.int64)

    def _make(self, block: _Block | list[MarginalQuery], i: int) -> MarginalQuery:
        """The ``i``-th candidate of ``block`` as a query."""
        if isinstance(block, list):
            return block[i]
        item = int(block.items[i])
        if block.ways is None:
            row = block.rows[item]
            return MarginalQuery(tuple(self.names[j] for j in row if j < self.d))
        base, way = divmod(item, len(block.ways))
        cols = [int(j) for j in block.rows[base] if j < self.d]
        ids = block.ways[way, cols]
        groups = tuple(self.groupings[g] if g >= 0 else None for g in ids)
        return MarginalQuery(tuple(self.names[j] for j in cols), groups)


__all__ = ["CandidatePool"]
