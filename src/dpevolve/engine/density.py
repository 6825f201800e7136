"""Smooth bin masses: a numeric column's 1-way, as every release shows it, smoothed
for the last fit.

On a small table each bin's count carries noise of the order of the count itself
(black_politicians: 2,237 rows, about 50 rows of noise on bins of about 110), and the
model, fitted to every release, keeps that noise in its 1-ways: a bin of 181 rows held
at 8, another of 28 at 111. A numeric column's density rarely jumps between
neighbouring bins, so before the last fit each numeric column's bin counts, every
release combined (:func:`~dpevolve.engine.counts.released_counts`: count ``c_b`` and
noise scale ``s_b`` per bin), are smoothed (a Whittaker smoother, Eilers 2003, "A
perfect smoother", Analytical Chemistry 75(14)):

    x = argmin  sum_b (c_b - x_b)^2 / s_b^2  +  lambda sum_b (d_{b+1} - d_b)^2 / g_b

with ``d_b = x_b / w_b`` the density of bin ``b`` (``w_b`` its width in units of the
mean width) and ``g_b`` the distance between the two
bins' centres: the squared slope of the density, integrated. ``lambda`` is the one of
:data:`LAMBDAS` (0 among them: the counts as they are) with the least Stein unbiased
risk estimate (Stein 1981, "Estimation of the mean of a multivariate normal
distribution", Annals of Statistics 9(6)), which the known noise scales make exact in
expectation: where the counts stand clear of their noise the smoother leaves them. A
column on a grid (one fine cell per value) of no more values than bins is not
smoothed: its values are point masses; one of more values is, a known value's own bin
apart (:func:`density_bins`, :func:`density_widths`). An atom's own bin (its cells
single values) and the missing cell keep their combined counts; a column whose other
bins the releases do not show holding data
(:func:`~dpevolve.engine.counts.shows_data`: fair's ages and years married, every value
an atom's own bin, the bins between them noise) is left as released.

The smoothed counts enter the last fit as one more measurement of the column's 1-way
(:func:`density_measurements`; the smoothed bins one by one, the other cells as one
group: :func:`smoothed_query`), its noise scale the root mean square of the smoothed
counts' noise: a pseudo-measurement, as a public prior's, of sensitivity 0. Where the
risk estimate picks ``lambda = 0`` there is none: a copy of the counts would count the
releases twice (cps91's husbands' earnings with a public table, seed 2: a last bin of
71 rows at 2.7 noise scales, held at 57, drew 2.2% of the rows past the data). It is
post-processing of released values: no release, nothing charged, the ledger's spend
unchanged (the ledger's ``engine.density`` names each smoothed column and its
``lambda``). See docs/engine.md, Smooth bin masses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dpevolve.engine.counts import released_counts, shows_data
from dpevolve.engine.discretise import Discretiser
from dpevolve.measurements import MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

#: The smoothing weights tried (0: none), per unit of the bins' mean width.
LAMBDAS = np.concatenate([[0.0], np.logspace(-8, 4, 49)])

#: A column with fewer bins to smooth than this keeps its counts.
MIN_BINS = 5

#: Ledger label prefix of a smoothed 1-way (a pseudo-measurement, never charged).
DENSITY = "density:"


def roughness(width: np.ndarray) -> np.ndarray:
    """The matrix ``D`` with ``||D x||^2`` the integrated squared slope of the density
    of bin masses ``x`` over bins of ``width`` (module docstring)."""
    gap = 0.5 * (width[1:] + width[:-1])
    slope = np.diff(np.eye(width.size), axis=0) / width[None, :]
    return slope / np.sqrt(gap)[:, None]


def smoothed(
    count: np.ndarray, sd: np.ndarray, width: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    """Bin counts ``count`` (noise scales ``sd``) smoothed at the ``lambda`` of least
    Stein unbiased risk; returns the smoothed counts, their noise scales and ``lambda``.

    For the linear smoother ``x = S c`` the risk estimate is
    ``||c - S c||^2 + 2 sum_b s_b^2 S_bb - sum_b s_b^2``, unbiased for
    ``E ||x - truth||^2`` under independent Gaussian noise of known scales.
    """
    count = np.asarray(count, dtype=np.float64)
    variance = np.asarray(sd, dtype=np.float64) ** 2
    precision = np.diag(1.0 / variance)
    slope = roughness(np.asarray(width, dtype=np.float64) / float(np.mean(width)))
    penalty = slope.T @ slope
    best: tuple[float, np.ndarray, float] | None = None
    for lam in LAMBDAS:
        smoother = np.linalg.solve(precision + lam * penalty, precision)
        fitted = smoother @ count
        risk = float(np.sum((count - fitted) ** 2) + 2 * np.sum(variance * np.diag(smoother)))
        if best is None or risk < best[0]:
            best = (risk, smoother, float(lam))
    assert best is not None
    _, smoother, lam = best
    spread = (smoother * variance[None, :]) @ smoother.T
    return smoother @ count, np.sqrt(np.clip(np.diag(spread), 0.0, None)), lam


def density_bins(discretiser: Discretiser, name: str) -> np.ndarray:
    """Per value bin of numeric column ``name``, whether its mass is smoothed (public:
    from the fine partition alone): every bin of an interval partition but an atom's own
    (its cells single values); on a grid (one cell per value) of more values than bins,
    every bin but a known value's own. A grid of fewer values is a few point masses
    whose shares need not vary smoothly (teens in a household, 85% of them 0, smoothed,
    spread to values the data never hold); one of more is a density read in whole
    numbers, as an interval partition's (years of experience 0-30, ages in years:
    cps78_85's 434 rows, each bin's count under noise of 60, had been drawn at ages
    55-57 in 35% of the rows)."""
    cells = discretiser.fine[name]
    bins = discretiser.bins
    inside = _per_bin(discretiser, name, np.ones(cells.values, dtype=bool))
    if cells.grid:
        if cells.values <= bins:
            return np.zeros(bins, dtype=bool)
        known = _per_bin(discretiser, name, cells.known_cells[: cells.values])
        return (inside > 0) & (known < inside)
    atoms = _per_bin(discretiser, name, np.arange(cells.values) < cells.atoms)
    return (inside > 0) & (atoms < inside)


def density_widths(discretiser: Discretiser, name: str) -> np.ndarray:
    """Each value bin's width for the density: its span, on a grid its number of values
    (an edge may lie on a value or half-way between two)."""
    cells = discretiser.fine[name]
    if cells.grid:
        return _per_bin(discretiser, name, np.ones(cells.values, dtype=bool)).astype(float)
    return np.diff(discretiser.edges(name))


def _per_bin(discretiser: Discretiser, name: str, which: np.ndarray) -> np.ndarray:
    """Per value bin of ``name``, how many of its value cells ``which`` marks."""
    coarse = discretiser.fine[name].coarse[: which.size]
    return np.bincount(coarse[which], minlength=discretiser.bins)[: discretiser.bins]


def density_measurements(
    discretiser: Discretiser,
    marginals: Sequence[Measurement],
    fine: Mapping[str, Measurement],
) -> tuple[list[Measurement], dict[str, float]]:
    """Each numeric column's smoothed 1-way as a pseudo-measurement (module docstring),
    and the ``lambda`` chosen per column smoothed (``lambda > 0``).

    Post-processing: a function of the released ``marginals`` and ``fine`` histograms
    and of the public discretiser alone.
    """
    out: list[Measurement] = []
    chosen: dict[str, float] = {}
    for column in discretiser.numeric:
        name = column.name
        smooth = density_bins(discretiser, name)
        if int(smooth.sum()) < MIN_BINS:
            continue  # a grid, or atoms' bins alone
        nullable = discretiser.fine[name].nullable
        count, sd = released_counts(discretiser, name, marginals, fine.get(name), nullable)
        if not np.all(np.isfinite(sd)):
            continue  # a bin no release measures: nothing to smooth it against
        at = np.flatnonzero(smooth)
        width = density_widths(discretiser, name)
        if not shows_data(count[at], sd[at]):
            continue  # the values between the atoms: noise alone, nothing to smooth
        target, scale, lam = smoothed(count[at], sd[at], width[at])
        if lam == 0.0:
            continue  # the counts stand clear of their noise: the releases as they are
        if at.size < count.size:  # the other cells' total, as the releases show it
            target = np.append(target, float(np.delete(count, at).sum()))
        target = np.clip(target, 0.0, None)
        chosen[name] = lam
        sigma = float(np.sqrt(np.mean(scale**2)))
        event = GaussianEvent(0.0, sigma, label=DENSITY + name)
        out.append(Measurement(smoothed_query(name, at, count.size), target, sigma, event))
    return out, chosen


def smoothed_query(name: str, at: np.ndarray, cells: int) -> MarginalQuery:
    """The 1-way of ``name`` (``cells`` cells) whose groups are the smoothed bins ``at``,
    one each, and the other cells (atoms' own bins, the missing cell) together, last."""
    if at.size == cells:
        return MarginalQuery((name,))
    grouping = np.full(cells, at.size)
    grouping[at] = np.arange(at.size)
    return MarginalQuery((name,), (tuple(int(g) for g in grouping),))


__all__ = [
    "DENSITY",
    "LAMBDAS",
    "MIN_BINS",
    "density_bins",
    "density_measurements",
    "density_widths",
    "roughness",
    "smoothed",
    "smoothed_query",
]
