"""A numeric column's bin counts as every release shows them.

Post-processing of released values: per bin of a numeric column, its count as the
releases show it and that count's noise scale (:func:`released_counts`), combining by
generalised least squares every marginal holding the column, summed over its other
attributes (a marginal grouping the column's bins counts their groups, which the bins
of a group share: :func:`group_design`), and the fine histogram summed over each bin's
cells. Which bins hold data (:func:`held_bins`; a known value's own bin,
:func:`known_atom_bins`, :func:`declared_atom_bins`), whether a column shows any
(:func:`shows_data`) or its present rows stand out (:func:`faint`), and which decoding
weights its bins back (:func:`counted_weights`) are read from them; the folds and reaches of
:mod:`~dpevolve.engine.tails` and the decoding weights of
:mod:`~dpevolve.engine.model` use them. See docs/engine.md, end bins decoded inward.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import numpy as np

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.engine.cells import FineCells
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.mass import KNOWN_THRESHOLD
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT
from dpevolve.measurements import MarginalQuery, Measurement


def group_design(query: MarginalQuery, axis: int, size: int) -> np.ndarray | None:
    """How ``query`` counts its attribute ``axis`` (``size`` cells): the 0/1 matrix
    from the attribute's cells to the query's groups of them (the identity where it
    counts cell by cell), or ``None`` for a coarse query of another shape (an
    extension's parity of two codes, docs/architecture.md), which answers something
    else."""
    groups = query.groups
    if groups is None:
        return None if query.coarse else np.eye(size)
    grouping = groups[axis]
    if grouping is None:
        return np.eye(size)
    return np.eye(max(grouping) + 1)[:, list(grouping)]


def released_counts(
    discretiser: Discretiser,
    name: str,
    measurements: Iterable[Measurement],
    fine: Measurement | None = None,
    missing: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per value bin of numeric column ``name`` (and its missing cell last, where
    ``missing``), its count as every release shows it and that count's noise scale:
    each marginal query holding the column summed over its other attributes (a query
    grouping the column's bins counts their groups), and the fine histogram summed over
    each bin's cells, combined by generalised least squares (post-processing; a bin no
    release measures: count 0, scale infinite)."""
    size = discretiser.bins + int(discretiser.fine[name].nullable)
    information = np.zeros((size, size))
    total = np.zeros(size)
    for m in measurements:
        if not (isinstance(m.query, MarginalQuery) and name in m.clique and np.isfinite(m.sigma)):
            continue
        axis = m.clique.index(name)
        design = group_design(m.query, axis, size)
        if design is None:
            continue
        noisy = np.moveaxis(np.asarray(m.noisy, dtype=np.float64), axis, 0)
        cells = noisy[0].size  # per group: the cells of the other attributes summed
        weight = 1.0 / (float(m.sigma) ** 2 * cells)
        information += weight * design.T @ design
        total += weight * design.T @ noisy.reshape(noisy.shape[0], -1).sum(axis=1)
    if fine is not None and np.isfinite(fine.sigma):
        coarse = discretiser.fine[name].coarse
        width = np.bincount(coarse, minlength=size)[:size]
        sums = np.bincount(coarse, weights=np.ravel(fine.noisy), minlength=size)[:size]
        split = width > 0  # a bin holding fine cells
        weight = np.zeros(size)
        weight[split] = 1.0 / (float(fine.sigma) ** 2 * width[split])
        information += np.diag(weight)
        total += weight * sums
    count, sd = np.zeros(size), np.full(size, np.inf)
    measured = np.flatnonzero(np.diag(information) > 0)
    if measured.size:
        covariance = np.linalg.pinv(information[np.ix_(measured, measured)], hermitian=True)
        count[measured] = covariance @ total[measured]
        sd[measured] = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    if missing and size == discretiser.bins:  # a column that cannot be missing
        return np.append(count, 0.0), np.append(sd, np.inf)
    return count[: discretiser.bins + int(missing)], sd[: discretiser.bins + int(missing)]


def held_bins(count: np.ndarray, sd: np.ndarray) -> tuple[int, ...]:
    """The value bins whose released count (every release of the column combined:
    :func:`released_counts`) stands :data:`~dpevolve.engine.smoothing.SUPPORT` noise
    scales above zero: data the releases show, though a wide bin's rows may be spread
    too thin for any one fine cell to show them (restaurant inspections' chains of
    219-650 locations: 394 of 10,871 rows, each fine cell's count under its noise)."""
    count = np.asarray(count, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    return tuple(int(b) for b in np.flatnonzero(np.isfinite(sd) & (count > SUPPORT * sd)))


def known_atom_bins(cells: FineCells, count: np.ndarray, sd: np.ndarray) -> set[int]:
    """The bins of their own of the values the data are known to hold (declared, or
    found by the atom release) whose count, every release combined, stands
    :data:`~dpevolve.engine.mass.KNOWN_THRESHOLD` noise scales out: they hold data, as
    the bins did that placed them (:func:`~dpevolve.engine.bins.known_weights`).
    NIST's household weights of 0 (6% of the Massachusetts rows, declared) had their
    own bin at 3.9 scales folded with the empty bins beside it into the data's body."""
    if cells.grid:
        return set()
    own = _own_bins(cells, cells.known_cells, count.size)
    return {b for b in own if count[b] > KNOWN_THRESHOLD * sd[b]}


def declared_atom_bins(
    cells: FineCells, atoms: Collection[float], count: np.ndarray, sd: np.ndarray, present: float
) -> set[int]:
    """The bins of their own of a column's declared ``atoms`` (public: each known to
    hold :data:`~dpevolve.data.atoms.ATOM_SHARE` of the ``present`` rows) whose count,
    every release combined, the releases cannot rule below that share at
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales: a small table's noise
    is no sign such a value holds nothing (driving's share of a year under a 55 mph
    limit, 1 in a third of 480 rows, its bin released at 81 +- 45, had folded into 0
    with the fractions below it: every row drawn at 0). An atom a release found is no
    such prior: its own noise found it. The folds keep such a bin but anchor none on it
    (:func:`~dpevolve.engine.tails.released_inward`)."""
    values = np.array(sorted(float(a) for a in atoms), dtype=np.float64)
    declared = (np.arange(cells.size) < cells.atoms) & np.isin(cells.lo, values)
    own = _own_bins(cells, declared, count.size)
    return {b for b in own if count[b] + DECODE_FLOOR * sd[b] >= ATOM_SHARE * present}


def _own_bins(cells: FineCells, chosen: np.ndarray, bins: int) -> list[int]:
    """The bins of the ``chosen`` single-value cells that hold no other cell."""
    per_bin = np.bincount(cells.coarse[: cells.values], minlength=bins)
    own = (int(cells.coarse[a]) for a in np.flatnonzero(chosen))
    return [b for b in own if per_bin[b] == 1]


def shows_data(count: np.ndarray, sd: np.ndarray) -> bool:
    """Whether the releases show a column's data (``count``, ``sd``: per bin, every
    release combined, :func:`released_counts`): a bin holds data (:func:`held_bins`),
    or all its bins together stand :data:`~dpevolve.engine.smoothing.SUPPORT` noise
    scales above zero. A small table's column spread evenly over 20 bins (cps91's
    ages: 2,253 rows, each bin's count 2 noise scales of 88 out) shows no bin, yet its
    body stands 7.2 scales out; a column of 400 values among 4,000 rows, the rest
    missing, shows neither."""
    count = np.asarray(count, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    if held_bins(count, sd):
        return True
    measured = np.isfinite(sd)
    return bool(count[measured].sum() > SUPPORT * np.sqrt(np.sum(sd[measured] ** 2)))


def faint(present: float, sd: float) -> bool:
    """Whether a column's rows holding a value (``present``: ``n`` less its missing
    cell's count across the releases, of noise scale ``sd``) stand at most
    :data:`~dpevolve.engine.smoothing.SUPPORT` scales above zero, the bar of a pooled
    run of cells: with values the noise hides too (:func:`shows_data`), the column
    decodes missing (:func:`~dpevolve.engine.tails.released_inward`; docs/engine.md:
    NIST's disability ratings, 1.2% of the rows, had been drawn past them)."""
    return present <= SUPPORT * sd


def counted_weights(
    weights: np.ndarray, cells: FineCells, count: np.ndarray, sd: np.ndarray
) -> np.ndarray:
    """The decoding ``weights`` of a column's fine cells where the releases of its bins
    (``count``, ``sd``: :func:`released_counts`) can back them. All are zeroed where the
    releases show no data (:func:`shows_data`): a fine cell holds fewer rows than its
    bin under about the same noise, so what stands out among the cells of a column whose
    bins show nothing is noise the smoothing kept (a column of 400 values among 4,000
    rows: runs of cells weighing 500-660 rows, more than the column holds, drew every
    value into them: :meth:`Discretiser.decode`, the span the weights show). A bin's are
    zeroed where its count stands within :data:`~dpevolve.engine.smoothing.DECODE_FLOOR`
    noise scales of zero and its cells weigh :data:`~dpevolve.engine.smoothing.SUPPORT`
    scales more. Post-processing of released values."""
    out = np.array(weights, dtype=np.float64)
    count, sd = np.asarray(count, dtype=np.float64), np.asarray(sd, dtype=np.float64)
    if not shows_data(count, sd):
        out[: cells.values] = 0.0
        return out
    coarse = cells.coarse[: cells.values]
    weighed = cells.bin_sums(out, count.size)
    # a bin the releases show data in keeps its cells' shape: smoothing lifts a bin of
    # many cells well above a precise count (Adult's weekly hours 11-21: 1,340 against
    # 1,187 +- 18)
    over = (count <= DECODE_FLOOR * sd) & (weighed > count + SUPPORT * sd)
    out[: cells.values][np.isin(coarse, np.flatnonzero(over))] = 0.0
    return out


__all__ = [
    "counted_weights",
    "declared_atom_bins",
    "faint",
    "group_design",
    "held_bins",
    "known_atom_bins",
    "released_counts",
    "shows_data",
]
