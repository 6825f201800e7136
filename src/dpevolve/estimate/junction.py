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

    def children(self) -> tuple[tuple[int, ...], ...]:
        """Each clique's children, in ``order``."""
        kids: list[list[int]] = [[] for _ in self.cliques]
        for i in self.order:
            if self.parent[i] >= 0:
                kids[self.parent[i]].append(i)
        return tuple(tuple(k) for k in kids)

    def containing(self, attrs: Iterable[str]) -> int | None:
        """Index of the smallest clique holding all of ``attrs`` (None if none does)."""
        wanted = set(attrs)
        best: int | None = None
        for i, clique in enumerate(self.cliques):
            if wanted <= set(clique) and (best is None or len(clique) < len(self.cliques[best])):
                best = i
        return best


def _elimination_cliques(domain: Domain, cliques: Iterable[Clique]) -> list[frozenset[str]]:
    """The cliques formed by greedy elimination on the interaction graph."""
    size = dict(zip(domain.names, domain.sizes, strict=True))
    adjacent: dict[str, set[str]] = {name: set() for name in domain.names}
    for clique in cliques:
        for a in clique:
            adjacent[a].update(b for b in clique if b != a)
    formed: list[frozenset[str]] = []
    remaining = set(domain.names)
    while remaining:

        def cost(v: str) -> tuple[float, int, int]:
            nbrs = adjacent[v]
            cells = math.log(size[v]) + sum(math.log(size[u]) for u in nbrs)
            fill = sum(1 for u in nbrs for w in nbrs if u < w and w not in adjacent[u])
            return (round(cells, 9), fill, domain.index(v))

        v = min(remaining, key=cost)
        nbrs = adjacent.pop(v)
        formed.append(frozenset(nbrs | {v}))
        for u in nbrs:
            adjacent[u].discard(v)
            adjacent[u].update(w for w in nbrs if w != u)
        remaining.discard(v)
    return formed


def _maximal(sets: list[frozenset[str]]) -> list[frozenset[str]]:
    """The sets no other contains (duplicates kept once)."""
    distinct = sorted(set(sets), key=len, reverse=True)
    kept: list[frozenset[str]] = []
    for s in distinct:
        if not any(s <= k for k in kept):
            kept.append(s)
    return kept


def junction_tree(domain: Domain, cliques: Iterable[Clique]) -> JunctionTree:
    """The junction tree of the model whose potentials live on ``cliques``."""
    cliques = [domain.canonical(c) for c in cliques]
    nodes = [domain.canonical(s) for s in _maximal(_elimination_cliques(domain, cliques))]
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
    return tree_cells(domain, junction_tree(domain, cliques)) * BYTES_PER_CELL / 2**20
