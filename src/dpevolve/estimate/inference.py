"""Sum-product belief propagation on a junction tree, in log space, and marginals of
cliques the tree does not hold.

Two passes (leaves to root, root to leaves) calibrate the clique beliefs: afterwards
every clique's belief is the model's marginal on it and neighbours agree on their
separator (Koller & Friedman 2009, sec. 10.2; McKenna, Sheldon & Miklau 2019, sec. 4).
The downward message divides the parent's belief by the child's upward message, which
in log space is a subtraction and never divides by zero.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from dpevolve.estimate.factor import broadcast_shape, logsumexp, positions, sum_to
from dpevolve.estimate.junction import JunctionTree
from dpevolve.measurements import Clique


def calibrate(tree: JunctionTree, potentials: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Log beliefs of the tree's cliques, each normalised to total probability 1.

    ``potentials[i]`` is the log potential on ``tree.cliques[i]``.
    """
    kids = tree.children()
    upward: list[np.ndarray | None] = [None] * len(tree.cliques)
    inner: list[np.ndarray] = [np.asarray(p) for p in potentials]
    for i in reversed(tree.order):
        clique = tree.cliques[i]
        for c in kids[i]:
            inner[i] = inner[i] + broadcast_shape(upward[c], tree.separator[c], clique)  # type: ignore[arg-type]
        if tree.parent[i] >= 0:
            drop = tuple(k for k, a in enumerate(clique) if a not in tree.separator[i])
            upward[i] = logsumexp(inner[i], drop)
    beliefs: list[np.ndarray] = list(inner)
    for i in tree.order:
        p = tree.parent[i]
        if p >= 0:
            parent = tree.cliques[p]
            sep = tree.separator[i]
            rest = beliefs[p] - broadcast_shape(upward[i], sep, parent)  # type: ignore[arg-type]
            drop = tuple(k for k, a in enumerate(parent) if a not in sep)
            down = logsumexp(rest, drop)
            beliefs[i] = inner[i] + broadcast_shape(down, sep, tree.cliques[i])
    for i, b in enumerate(beliefs):
        beliefs[i] = b - logsumexp(b, tuple(range(b.ndim)))
    return beliefs


def clique_marginal(tree: JunctionTree, probs: Sequence[np.ndarray], clique: Clique) -> np.ndarray:
    """The model's probabilities on ``clique`` (domain order) from calibrated ``probs``.

    Inside one tree clique this is a sum over the others; otherwise the smallest subtree
    whose cliques cover ``clique`` is contracted leaves-first, each clique entering as its
    conditional given the separator to its subtree parent, and only the queried and
    separator attributes kept along the way (the junction-tree factorisation
    ``p = prod p_C / prod p_S``, Koller & Friedman 2009, sec. 10.4).
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
        factors: list[tuple[Clique, np.ndarray]] = [(attrs, probs[i])]
        if i != top:
            sep = tree.separator[i]
            sep_mass = sum_to(probs[i], attrs, sep)
            factors.append((sep, _reciprocal(sep_mass)))
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


def _reciprocal(values: np.ndarray) -> np.ndarray:
    out = np.zeros_like(values)
    np.divide(1.0, values, out=out, where=values > 0)
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
    return np.einsum(f"{spec}->{out}", *(v for _, v in factors), optimize=True)


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
    while left:
        best = max(
            range(len(tree.cliques)),
            key=lambda k: (len(left & set(tree.cliques[k])), -len(tree.cliques[k])),
        )
        chosen.add(best)
        left -= set(tree.cliques[best])
    depth = {tree.order[0]: 0}
    for i in tree.order[1:]:
        depth[i] = depth.get(tree.parent[i], 0) + 1
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
