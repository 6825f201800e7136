"""Triangulation, maximal cliques and the junction tree of a set of marginal cliques.

The interaction graph joins every two attributes measured together. A greedy
elimination order (each step removes the attribute whose elimination clique has the
fewest cells, ties broken by the fill edges it adds) triangulates it; the elimination
cliques that no other contains are the maximal cliques of the chordal graph, and a
maximum spanning tree on separator size joins them into a junction tree with the
running-intersection property (Koller & Friedman 2009, sec. 10.4; Jensen & Jensen
1994). Every attribute of the domain is in the tree, measured or not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from dpevolve.errors import InputError
from dpevolve.measurements import Clique, Domain

BYTES_PER_CELL = 8


@dataclass(frozen=True)
class JunctionTree:
    """Maximal cliques joined in a tree (a forest's components joined by empty separators).

    ``order`` lists clique indices root first, every parent before its children;
    ``parent[i]`` is -1 for the root; ``separator[i]`` is ``cliques[i] & cliques[parent[i]]``
    (empty for the root).
    """

    cliques: tuple[Clique, ...]
    parent: tuple[int, ...]
    order: tuple[int, ...]
    separator: tuple[Clique, ...]

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """Each clique's children, in ``order``."""
        kids: list[list[int]] = [[] for _ in self.cliques]
        for i in self.order:
            if self.parent[i] >= 0:
                kids[self.parent[i]].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def members(self) -> tuple[frozenset[str], ...]:
        """Each clique's attributes as a set (made once: every query looks them up)."""
        return tuple(frozenset(c) for c in self.cliques)

    @cached_property
    def depth(self) -> tuple[int, ...]:
        """Each clique's distance from its component's root."""
        out = [0] * len(self.cliques)
        for i in self.order:
            if self.parent[i] >= 0:
                out[i] = out[self.parent[i]] + 1
        return tuple(out)

    @cached_property
    def holding(self) -> dict[str, tuple[int, ...]]:
        """Per attribute, the cliques holding it, in index order (a query looks among
        these alone: at d = 200 a scan of every clique per query cost 2 s a fit)."""
        out: dict[str, list[int]] = {}
        for i, clique in enumerate(self.cliques):
            for a in clique:
                out.setdefault(a, []).append(i)
        return {a: tuple(ks) for a, ks in out.items()}

    def containing(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique holding all of ``attrs`` (None if none does;
        the first such on ties)."""
        wanted = set(attrs)
        if not wanted:
            return min(range(len(self.cliques)), key=lambda i: len(self.cliques[i]), default=None)
        some = min(wanted, key=lambda a: len(self.holding.get(a, ())))
        best: int | None = None
        for i in self.holding.get(some, ()):
            if wanted <= self.members[i] and (
                best is None or len(self.cliques[i]) < len(self.cliques[best])
            ):
                best = i
        return best


def _bits(mask: int) -> list[int]:
    """Positions of the set bits of ``mask``."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


def _elimination_cliques(domain: Domain, cliques: Iterable[Clique]) -> list[int]:
    """The cliques formed by greedy elimination on the interaction graph, as bit masks
    over the domain's attribute positions.

    Each step eliminates the vertex whose elimination clique has the fewest cells
    (min-weight), ties broken by the fill edges it adds, then by domain position. The
    cells are kept up to date as neighbourhoods grow; fill is counted only for ties.
    """
    log_size = [math.log(s) for s in domain.sizes]
    position = {name: i for i, name in enumerate(domain.names)}
    adjacent = [0] * len(domain.names)
    for clique in cliques:
        unknown = [a for a in clique if a not in position]
        if unknown:
            raise InputError(f"unknown attributes {sorted(set(unknown))}")
        mask = sum(1 << position[a] for a in set(clique))
        for a in _bits(mask):
            adjacent[a] |= mask & ~(1 << a)
    cells = {
        v: log_size[v] + sum(log_size[u] for u in _bits(adjacent[v])) for v in range(len(adjacent))
    }

    def fill(v: int) -> int:
        nbrs = adjacent[v]
        return sum((nbrs & ~adjacent[u]).bit_count() - 1 for u in _bits(nbrs)) // 2

    formed: list[int] = []
    while cells:
        least = min(cells.values())
        ties = [v for v, c in cells.items() if c <= least + 1e-9]
        v = min(ties, key=lambda u: (fill(u), u)) if len(ties) > 1 else ties[0]
        del cells[v]
        nbrs = adjacent[v]
        formed.append(nbrs | (1 << v))
        for u in _bits(nbrs):
            grown = (adjacent[u] | nbrs) & ~(1 << u) & ~(1 << v)
            cells[u] += sum(log_size[w] for w in _bits(grown & ~adjacent[u])) - log_size[v]
            adjacent[u] = grown
    return formed


def _maximal(masks: list[int]) -> list[int]:
    """The masks no other contains (duplicates kept once)."""
    kept: list[int] = []
    for m in sorted(set(masks), key=lambda m: -m.bit_count()):
        if not any(m & k == m for k in kept):
            kept.append(m)
    return kept


def _maximal_cliques(domain: Domain, cliques: Iterable[Clique]) -> list[Clique]:
    """The maximal cliques of the triangulated interaction graph, in domain order."""
    masks = _maximal(_elimination_cliques(domain, cliques))
    return [tuple(domain.names[i] for i in _bits(m)) for m in masks]


def junction_tree(domain: Domain, cliques: Iterable[Clique]) -> JunctionTree:
    """The junction tree of the model whose potentials live on ``cliques``."""
    nodes = _maximal_cliques(domain, cliques)
    # Largest clique first: the root; Prim's maximum spanning tree on separator size.
    nodes.sort(key=lambda c: (-domain.cells(c), c))
    sets = [set(c) for c in nodes]
    m = len(nodes)
    parent = [-1] * m
    order = [0]
    best = [(-1, 0)] * m  # (separator size, attaching node) for nodes not yet in the tree
    in_tree = [False] * m
    in_tree[0] = True
    for j in range(1, m):
        best[j] = (len(sets[0] & sets[j]), 0)
    for _ in range(1, m):
        j = max((k for k in range(m) if not in_tree[k]), key=lambda k: (best[k][0], -k))
        in_tree[j] = True
        parent[j] = best[j][1]
        order.append(j)
        for k in range(m):
            if not in_tree[k]:
                shared = len(sets[j] & sets[k])
                if shared > best[k][0]:
                    best[k] = (shared, j)
    separator = tuple(
        tuple(a for a in nodes[i] if parent[i] >= 0 and a in sets[parent[i]]) for i in range(m)
    )
    return JunctionTree(tuple(nodes), tuple(parent), tuple(order), separator)


def tree_cells(domain: Domain, tree: JunctionTree) -> int:
    """Cells of all the tree's cliques together: what one set of potentials holds."""
    return sum(domain.cells(c) for c in tree.cliques)


def model_size_mb(domain: Domain, cliques: Iterable[Clique]) -> float:
    """Memory in MiB of one array of potentials on the junction tree of ``cliques``.

    AIM's model-size limit (McKenna et al. 2022, sec. 4): a candidate clique is only
    selectable while the model with it stays under the limit.
    """
    nodes = _maximal_cliques(domain, cliques)
    return sum(domain.cells(c) for c in nodes) * BYTES_PER_CELL / 2**20
