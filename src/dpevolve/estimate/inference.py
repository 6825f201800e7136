"""Marginals of any clique from a junction tree's calibrated beliefs.

The beliefs (:meth:`dpevolve.estimate.flat.FlatTree.calibrate`: two passes of
sum-product, leaves to root and back) are each tree clique's marginal, and neighbours
agree on their separator (Koller & Friedman 2009, sec. 10.2; McKenna, Sheldon & Miklau
2019, sec. 4); a clique inside one tree clique is a sum of its belief, any other a
contraction of the smallest subtree covering it.
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Sequence
from itertools import chain

import numpy as np

from dpevolve.estimate.factor import positions, sum_to
from dpevolve.estimate.junction import JunctionTree
from dpevolve.measurements import Clique


def conditionals(tree: JunctionTree, probs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each tree clique's conditional given its separator to its parent (its calibrated
    belief divided by the separator's marginal, 0 where that is 0); a root's is its
    belief. Made once per fitted model: every out-of-tree marginal reads them."""
    out = []
    for i, (clique, belief) in enumerate(zip(tree.cliques, probs, strict=True)):
        sep = tree.separator[i]
        if tree.parent[i] < 0:
            out.append(belief)
            continue
        mass = sum_to(belief, clique, sep, keepdims=True)
        out.append(_ratio(belief, mass))
    return out


def clique_marginal(
    tree: JunctionTree,
    probs: Sequence[np.ndarray],
    conditional: Sequence[np.ndarray],
    clique: Clique,
) -> np.ndarray:
    """The model's probabilities on ``clique`` (domain order) from calibrated ``probs``
    and their :func:`conditionals`.

    Inside one tree clique this is a sum over the others; otherwise the smallest subtree
    whose cliques cover ``clique`` is contracted leaves-first, each clique entering as its
    conditional given the separator to its subtree parent (its top as its marginal), and
    only the queried and separator attributes kept along the way (the junction-tree
    factorisation ``p = prod p_C / prod p_S``, Koller & Friedman 2009, sec. 10.4).
    """
    home = tree.containing(clique)
    if home is not None:
        return sum_to(probs[home], tree.cliques[home], clique)
    nodes, top = _covering_subtree(tree, clique)
    wanted = set(clique)
    kids: dict[int, list[int]] = {i: [] for i in nodes}
    for i in nodes:
        if i != top:
            kids[tree.parent[i]].append(i)
    messages: dict[int, tuple[Clique, np.ndarray]] = {}
    for i in _post_order(top, kids):
        attrs = tree.cliques[i]
        factors = [(attrs, probs[i] if i == top else conditional[i])]
        everything = set(attrs)
        for c in kids[i]:
            factors.append(messages.pop(c))
            everything.update(factors[-1][0])
        keep_set = (wanted & everything) | set(tree.separator[i] if i != top else ())
        keep = tuple(a for a in _ordered(everything, factors) if a in keep_set)
        messages[i] = (keep, _contract(factors, keep))
    attrs, values = messages[top]
    order = positions(attrs, clique)
    return np.transpose(values, order)


def _ratio(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``part / whole`` where ``whole`` is positive, else 0. A belief over its separator's
    mass is at most 1; the reciprocal of a subnormal mass overflows to infinity, and
    times a belief of 0 made NaN (a 20-row table: every later marginal NaN)."""
    out = np.zeros(np.broadcast_shapes(part.shape, whole.shape))
    np.divide(part, whole, out=out, where=whole > 0)
    return out


def _ordered(attrs: set[str], factors: list[tuple[Clique, np.ndarray]]) -> list[str]:
    """``attrs`` in a fixed order (first appearance among the factors)."""
    seen: list[str] = []
    for names, _ in factors:
        seen.extend(a for a in names if a in attrs and a not in seen)
    return seen


def _contract(factors: list[tuple[Clique, np.ndarray]], keep: Clique) -> np.ndarray:
    """Product of linear-space factors summed down to ``keep`` (einsum, one letter per
    attribute)."""
    letters: dict[str, str] = {}
    for names, _ in factors:
        for a in names:
            letters.setdefault(a, string.ascii_letters[len(letters)])
    spec = ",".join("".join(letters[a] for a in names) for names, _ in factors)
    out = "".join(letters[a] for a in keep)
    operands = [v for _, v in factors]
    sizes: dict[str, int] = {}
    for names, v in factors:
        sizes.update(zip(names, v.shape, strict=True))
    if math.prod(sizes.values()) <= DIRECT_CELLS:
        # numpy's own loop over every index combination: for a few small factors the
        # planned pairwise contractions cost more in calls than this loop in arithmetic
        return np.einsum(f"{spec}->{out}", *operands)
    key = (f"{spec}->{out}", tuple(v.shape for v in operands))
    path = _PATHS.get(key)
    if path is None:
        # numpy's greedy path, found once per equation and shapes (finding it costs more
        # than the contraction of a few small factors); the same path, the same sums.
        path = np.einsum_path(key[0], *operands, optimize="greedy")[0]
        if len(_PATHS) >= _PATH_CACHE:
            _PATHS.clear()
        _PATHS[key] = path
    return np.einsum(key[0], *operands, optimize=path)


#: At most this many index combinations, :func:`_contract` runs einsum's direct loop.
DIRECT_CELLS = 4096

#: Contraction paths of :func:`_contract` by equation and operand shapes.
_PATHS: dict[tuple[str, tuple[tuple[int, ...], ...]], list] = {}
_PATH_CACHE = 65536


def _post_order(top: int, kids: dict[int, list[int]]) -> list[int]:
    out: list[int] = []
    stack = [(top, False)]
    while stack:
        node, done = stack.pop()
        if done:
            out.append(node)
            continue
        stack.append((node, True))
        stack.extend((c, False) for c in kids[node])
    return out


def _covering_subtree(tree: JunctionTree, clique: Clique) -> tuple[set[int], int]:
    """Tree cliques covering ``clique`` with the paths between them, and the subtree's top."""
    chosen: set[int] = set()
    left = set(clique)
    members = tree.members
    while left:
        # only cliques holding an attribute still left can cover any: the one covering
        # most, then the smallest, then the first (as a scan of all would choose)
        hits = Counter(chain.from_iterable(tree.holding.get(a, ()) for a in left))
        most = max(hits.values())
        best = min((k for k, h in hits.items() if h == most), key=lambda k: (len(members[k]), k))
        chosen.add(best)
        left -= members[best]
    depth = tree.depth
    nodes = set(chosen)
    frontier = set(chosen)
    # Walk the deepest node up until every chosen clique has met one common ancestor.
    while len(frontier) > 1:
        deepest = max(frontier, key=lambda k: (depth[k], k))
        frontier.discard(deepest)
        up = tree.parent[deepest]
        nodes.add(up)
        frontier.add(up)
    return nodes, frontier.pop()
