"""The PE stage's cells: each row's nearest candidate, as the vote assigns it (docs/engine.md).

The vote of :mod:`~dpevolve.engine.refine` puts each private record in the cell of its
nearest candidate by the canonical arithmetic of :mod:`dpevolve.backends.canonical`
(Tab-PE's squared embedding distance summed term by term, ties to the lowest index). The
stage then needs the same cells for hundreds of thousands of model draws: the model's
expected count per cell, and the weight of every draw it resamples. A brute-force
``rows x candidates`` block per call made those assignments most of a small table's fit.

On the plain embedding of a low-dimensional table a k-d tree finds a few nearest
candidates per row; their canonical distances are recomputed exactly as the vote computes
them, and a row is settled when the closest of them is clearly nearer than the farthest
one the tree returned (no candidate left out can then tie or win). The rare unsettled
rows (many candidates equally near) go to the brute-force canonical block. The result is
the vote's own assignment, bit for bit, whatever the path; a wide embedding or the
missing-aware distance takes the block path directly. Post-processing only: the rows are
model draws or the released candidates, or, in :func:`hard_votes`, the private records
whose histogram the stage releases (the same function of each record as the block path,
so the vote's sensitivity is unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from scipy.spatial import cKDTree

from dpevolve.backends.canonical import hard_nearest
from dpevolve.data.encoding import Records
from dpevolve.pe.distance import Distance, TabPEEmbedding

#: Widest embedding searched with the tree (beyond it a k-d tree's pruning fades).
TREE_MAX_DIM = 32

#: Candidates the tree returns per row (the exact check needs a margin beyond the nearest).
TREE_K = 4

#: Relative margin between the tree's distance and the canonical sum (both round within
#: a few ulps of the same real number; this leaves room by orders of magnitude).
MARGIN = 1e-9

#: Rows per block (bounds memory at ``BLOCK x candidates`` on the block path).
BLOCK = 8192

#: Rows per block on the tree path (memory ``TREE_BLOCK x TREE_K``; every block pays a
#: query per combination of categories, so fewer, longer blocks cost less).
TREE_BLOCK = 1 << 16


def _uses_tree(distance: Distance) -> bool:
    """The exact plain embedding (not the missing-aware one), narrow enough for a tree."""
    if type(distance) is not TabPEEmbedding:
        return False
    width = len(distance.layout.numeric) + sum(int(s) for s in distance.layout.cardinalities)
    return width <= TREE_MAX_DIM


def _block_nearest(rows: Records, candidates: Records, distance: Distance) -> np.ndarray:
    """The vote's rule on a brute-force block: canonical distances, first minimum."""
    out = np.empty(len(rows), dtype=np.int64)
    for start in range(0, len(rows), BLOCK):
        block = rows.take(slice(start, start + BLOCK))
        out[start : start + len(block)] = hard_nearest(distance.pairwise(block, candidates))
    return out


class _Tree:
    """A k-d tree over some distinct candidates (``index``: their positions) in some
    coordinates; :meth:`search` settles the rows it can."""

    def __init__(self, points: np.ndarray, index: np.ndarray) -> None:
        self.tree = cKDTree(points)
        self.index = index
        self.k = min(TREE_K, len(index))

    def search(
        self,
        coords: np.ndarray,
        rows: Records,
        exact: Callable[[Records, np.ndarray], np.ndarray],
        bound: float,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each row's nearest among the tree's ``k`` nearest by the ``exact`` distances
        (ties to the lowest index), and whether that is the nearest of all: clearly
        nearer than the ``k``-th (the tree's own distance) and than ``bound`` (how near
        any candidate outside the tree can be)."""
        found, where = self.tree.query(coords, k=self.k)
        found, where = found.reshape(len(coords), -1), where.reshape(len(coords), -1)
        near = self.index[where]
        distances = exact(rows, near)
        best = distances.min(axis=1)
        pick = np.where(distances == best[:, None], near, np.iinfo(np.int64).max).min(axis=1)
        limit = found[:, -1] if self.k < len(self.index) else np.full(len(coords), np.inf)
        return pick, best < np.minimum(limit, bound) * (1.0 - MARGIN)


class CandidateTree:
    """K-d trees over ``candidates``' distinct embeddings; :meth:`nearest` per row.

    Duplicate candidates share one point, which stands for the lowest index among them
    (the tie rule picks it). With categorical columns, one tree per combination of
    categories over the numeric coordinates first: a candidate of another combination
    is at least ``sqrt(2/9)`` away, farther than most rows' nearest of their own. The
    rows it cannot settle go to one tree over the whole embedding, then to the block.
    """

    def __init__(self, candidates: Records, distance: TabPEEmbedding) -> None:
        self.candidates = candidates
        self.distance = distance
        points = distance.embed(candidates)
        _, first = np.unique(points, axis=0, return_index=True)
        self.first = np.sort(first)
        self.whole = _Tree(points[self.first], self.first)
        sizes = [int(c) for c in distance.layout.cardinalities]
        # One integer per combination of categories (mixed radix), where it fits.
        self.radix = np.cumprod([1, *sizes[:0:-1]])[::-1].astype(np.int64)
        self.keys = np.zeros(0, dtype=np.int64)
        self.groups: list[_Tree] = []
        if sizes and candidates.numeric.shape[1] and math.prod(sizes) < 2**62:
            self.keys, group = np.unique(
                self._key(candidates.take(self.first)), return_inverse=True
            )
            members = [self.first[group.ravel() == g] for g in range(len(self.keys))]
            self.groups = [_Tree(candidates.numeric[m], m) for m in members]
        mismatch = 2.0 * TabPEEmbedding.CATEGORY_WEIGHT**2
        self.bound = math.sqrt(mismatch) if len(self.groups) > 1 else math.inf

    def nearest(self, rows: Records) -> np.ndarray:
        """Index of each row's nearest candidate (canonical distance, lowest index on ties)."""
        out = np.empty(len(rows), dtype=np.int64)
        for start in range(0, len(rows), TREE_BLOCK):
            block = rows.take(slice(start, start + TREE_BLOCK))
            out[start : start + len(block)] = self._block(block)
        return out

    def _block(self, rows: Records) -> np.ndarray:
        pick = np.zeros(len(rows), dtype=np.int64)
        settled = np.zeros(len(rows), dtype=bool)
        for g, members in self._by_group(rows):
            part = rows.take(members)
            pick[members], settled[members] = self.groups[g].search(
                part.numeric, part, self._exact, self.bound
            )
        rest = np.flatnonzero(~settled)
        if len(rest):
            part = rows.take(rest)
            pick[rest], done = self.whole.search(
                self.distance.embed(part), part, self._exact, math.inf
            )
            left = rest[~done]
            if len(left):
                pick[left] = _block_nearest(rows.take(left), self.candidates, self.distance)
        return pick

    def _key(self, rows: Records) -> np.ndarray:
        """Each row's combination of categories as one integer."""
        return np.asarray(rows.codes, dtype=np.int64) @ self.radix

    def _by_group(self, rows: Records) -> list[tuple[int, np.ndarray]]:
        """The rows of each candidate combination of categories (rows of a combination
        no candidate holds are left out)."""
        if not self.groups:
            return []
        key = self._key(rows)
        group = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        group[self.keys[group] != key] = -1
        order = np.argsort(group, kind="stable")
        cuts = np.searchsorted(group[order], np.arange(len(self.keys) + 1))
        return [
            (g, order[cuts[g] : cuts[g + 1]])
            for g in range(len(self.keys))
            if cuts[g + 1] > cuts[g]
        ]

    def _exact(self, rows: Records, near: np.ndarray) -> np.ndarray:
        """The vote's distances (square root of the canonical sum) per (row, candidate)."""
        return np.sqrt(self._canonical(rows, near))

    def _canonical(self, rows: Records, near: np.ndarray) -> np.ndarray:
        """:func:`~dpevolve.backends.canonical.tabpe_squared` per (row, found candidate),
        term by term in the same order (the same bits; the mismatch as the distance's)."""
        out = np.zeros(near.shape, dtype=np.float64)
        for k in range(rows.numeric.shape[1]):
            diff = rows.numeric[:, k, None] - self.candidates.numeric[near, k]
            np.multiply(diff, diff, out=diff)
            out += diff
        if rows.codes.shape[1]:
            count = np.zeros(near.shape, dtype=np.float64)
            for k in range(rows.codes.shape[1]):
                count += rows.codes[:, k, None] != self.candidates.codes[near, k]
            count *= 2.0 * TabPEEmbedding.CATEGORY_WEIGHT**2
            out += count
        return out


def nearest(rows: Records, candidates: Records, distance: Distance) -> np.ndarray:
    """Index of each row's nearest candidate by the vote's rule (see the module)."""
    if len(candidates) and _uses_tree(distance):
        assert isinstance(distance, TabPEEmbedding)
        return CandidateTree(candidates, distance).nearest(rows)
    return _block_nearest(rows, candidates, distance)


def hard_votes(
    private: Records | Iterable[Records], candidates: Records, distance: Distance
) -> np.ndarray:
    """The hard vote's histogram over ``candidates`` (each record one vote for its nearest
    candidate): what :meth:`~dpevolve.backends.local.LocalBackend.vote` sums for the hard
    vote, assigned by :func:`nearest`."""
    histogram = np.zeros(len(candidates), dtype=np.float64)
    tree = (
        CandidateTree(candidates, distance)
        if len(candidates) and isinstance(distance, TabPEEmbedding) and _uses_tree(distance)
        else None
    )
    for batch in [private] if isinstance(private, Records) else private:
        cells = tree.nearest(batch) if tree is not None else nearest(batch, candidates, distance)
        histogram += np.bincount(cells, minlength=len(candidates))
    return histogram


__all__ = [
    "BLOCK",
    "TREE_BLOCK",
    "TREE_K",
    "TREE_MAX_DIM",
    "CandidateTree",
    "hard_votes",
    "nearest",
]
