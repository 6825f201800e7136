"""Sum-product belief propagation on a junction tree and marginals of cliques the tree
does not hold.

Two passes (leaves to root, root to leaves) calibrate the clique beliefs: afterwards
every clique's belief is the model's marginal on it and neighbours agree on their
separator (Koller & Friedman 2009, sec. 10.2; McKenna, Sheldon & Miklau 2019, sec. 4).
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from dpevolve.estimate.factor import add_all_into, combine_into, marginals, positions, sum_to
from dpevolve.estimate.junction import JunctionTree
from dpevolve.measurements import Clique

# A separator value whose mass after the clique-wide shift falls below this may have lost
# precision to underflow; its conditional is recomputed with its own shift.
FRAGILE_MASS = 1e-250


def calibrate(tree: JunctionTree, potentials: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Calibrated beliefs: each tree clique's marginal probabilities (summing to 1).

    ``potentials[i]`` is the log potential on ``tree.cliques[i]``. Upward messages are
    log-sum-exps: each clique leaves log space once, shifted by its largest value, and
    becomes its conditional given the separator to its parent; a separator value far
    below the largest (mass under ``FRAGILE_MASS``) is redone with its own shift, so
    every conditional is exact to ``exp``'s precision. Downward, a clique's belief is
    that conditional times the parent's separator marginal (Hugin's update), so no cell
    is divided by another.
    """
    kids = tree.children
    log_up: list[np.ndarray] = [np.zeros(0)] * len(tree.cliques)
    beliefs: list[np.ndarray] = [np.zeros(0)] * len(tree.cliques)
    for i in reversed(tree.order):
        clique, sep = tree.cliques[i], tree.separator[i]
        log_values = np.array(potentials[i], dtype=float)
        add_all_into(log_values, clique, [(tree.separator[c], log_up[c]) for c in kids[i]])
        top = float(np.max(log_values))
        values = np.exp(log_values - top)
        mass = sum_to(values, clique, sep, keepdims=True)
        log_mass = np.log(mass, out=np.full(mass.shape, -np.inf), where=mass > 0) + top
        if np.min(mass) < FRAGILE_MASS:
            values, log_mass = _shifted_per_value(log_values, clique, sep)
        else:
            values /= mass
        beliefs[i] = values
        if tree.parent[i] >= 0:
            log_up[i] = log_mass.reshape(domain_shape(values.shape, clique, sep))
    for i in tree.order:
        seps = [tree.separator[c] for c in kids[i]]
        for c, marginal in zip(kids[i], marginals(beliefs[i], tree.cliques[i], seps), strict=True):
            combine_into(np.multiply, beliefs[c], tree.cliques[c], marginal, tree.separator[c])
    return beliefs


def domain_shape(shape: tuple[int, ...], clique: Clique, keep: Clique) -> list[int]:
    """The part of ``shape`` (on ``clique``) that ``keep`` spans."""
    return [n for n, a in zip(shape, clique, strict=True) if a in keep]


def _shifted_per_value(
    log_values: np.ndarray, clique: Clique, sep: Clique
) -> tuple[np.ndarray, np.ndarray]:
    """The conditional given ``sep`` and the log mass of each separator value, each value
    shifted by its own largest entry (exact where one clique-wide shift underflows)."""
    rest = tuple(k for k, a in enumerate(clique) if a not in sep)
    top = np.max(log_values, axis=rest, keepdims=True)
    values = np.exp(log_values - top)
    mass = np.sum(values, axis=rest, keepdims=True)
    return values / mass, np.log(mass) + top


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
    operands = [v for _, v in factors]
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
        # only cliques holding an attribute still left can cover any (index order kept,
        # so ties go to the same clique as a scan of all)
        near = sorted({k for a in left for k in tree.holding.get(a, ())})
        best = max(near, key=lambda k: (len(left & members[k]), -len(members[k])))
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
