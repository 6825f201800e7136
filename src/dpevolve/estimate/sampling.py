"""Forward sampling along a calibrated junction tree: fresh rows from the model.

The root clique's attributes are drawn from its marginal; every other clique's new
attributes are drawn from their conditional given the separator values already drawn
(Koller & Friedman 2009, sec. 12.1; the junction-tree factorisation makes this an
exact draw from the model). The randomness is public post-processing (a user seed),
not privacy noise: it reads only the model. Each step is an inverse-CDF lookup for all
rows at once in one sorted array of per-row cumulative sums, so memory is the model's
cells plus a few numbers per row, never rows x cells.

With ``stratified`` the uniforms of the rows that share a separator value are
systematic (Cochran 1977, ch. 8): the ``m`` rows of a group, in random order, take
``(k + U) / m`` for ``k = 0 .. m - 1`` and one uniform ``U`` per group. Each row's draw
still follows the model exactly; the group's counts then match ``m`` times the
conditional up to rounding, so the rows carry less sampling noise than independent
draws (the table's marginals stay closer to the model's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpevolve.estimate.junction import JunctionTree
from dpevolve.measurements import Domain


def _conditional_table(probs: np.ndarray, given: tuple[int, ...]) -> np.ndarray:
    """``probs`` as (cells of the ``given`` axes, cells of the rest), rows normalised and
    accumulated, each row's last entry exactly 1."""
    rest = tuple(k for k in range(probs.ndim) if k not in given)
    moved = np.transpose(probs, given + rest)
    n_given = int(np.prod([probs.shape[k] for k in given], dtype=np.int64))
    table = moved.reshape(n_given, -1)
    mass = table.sum(axis=1, keepdims=True)
    # A separator value the model gives no mass is never drawn; keep its row uniform.
    table = np.where(mass > 0, table / np.where(mass > 0, mass, 1.0), 1.0 / table.shape[1])
    cdf = np.cumsum(table, axis=1)
    cdf[:, -1] = 1.0
    return cdf


def _draw(cdf: np.ndarray, rows_given: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draw per row from row ``rows_given`` of ``cdf`` (uniforms ``u``)."""
    offsets = np.arange(cdf.shape[0], dtype=float)[:, None]
    flat = (cdf + offsets).ravel()
    pos = np.searchsorted(flat, rows_given + u, side="right")
    pos = np.minimum(pos, (rows_given + 1) * cdf.shape[1] - 1)
    return pos - rows_given * cdf.shape[1]


def _uniforms(groups: np.ndarray, rng: np.random.Generator, stratified: bool) -> np.ndarray:
    """One uniform per row: independent, or systematic within each group of rows."""
    rows = groups.size
    if not stratified or rows == 0:
        return rng.random(rows)
    perm = rng.permutation(rows)
    order = perm[np.argsort(groups[perm], kind="stable")]
    sorted_groups = groups[order]
    starts = np.flatnonzero(np.diff(sorted_groups, prepend=-1))
    sizes = np.diff(np.append(starts, rows))
    which = np.repeat(np.arange(starts.size), sizes)
    rank = np.arange(rows) - starts[which]
    out = np.empty(rows)
    out[order] = (rank + rng.random(starts.size)[which]) / sizes[which]
    return out


def forward_sample(
    domain: Domain,
    tree: JunctionTree,
    probs: Sequence[np.ndarray],
    rows: int,
    rng: np.random.Generator,
    *,
    stratified: bool = True,
) -> np.ndarray:
    """``rows`` draws from the model (each exact; systematic within separator values
    when ``stratified``), as int64 cell codes per attribute."""
    out = np.zeros((rows, len(domain.names)), dtype=np.int64)
    for i in tree.order:
        clique = tree.cliques[i]
        sep = tree.separator[i]
        given = tuple(clique.index(a) for a in sep)
        new = tuple(a for a in clique if a not in sep)
        cdf = _conditional_table(probs[i], given)
        if sep:
            columns = tuple(out[:, domain.index(a)] for a in sep)
            rows_given = np.ravel_multi_index(columns, domain.shape(sep))
        else:
            rows_given = np.zeros(rows, dtype=np.int64)
        codes = _draw(cdf, rows_given, _uniforms(rows_given, rng, stratified))
        for a, column in zip(new, np.unravel_index(codes, domain.shape(new)), strict=True):
            out[:, domain.index(a)] = column
    return out
