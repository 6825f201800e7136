"""How far an end bin's rows reach: past the data's body a tail thins out.

Post-processing of released values (docs/engine.md, Decoding values within a bin): an
end bin of the data whose fine cells show nothing decodes under a density falling from
that of the bins next to it to zero, or held at that density where a tail thinning
out would not fit within the declared range (:func:`end_reach`); one whose cells show a run from
its inner edge, the rest of its rows past that run (:func:`shown_reach`). The decoding
draws under that density (:func:`~dpevolve.engine.cells.thinning`);
:func:`~dpevolve.engine.tails.released_inward` says which bins are ends.

A tail's length counts the rows of the bin's count that its noise does not explain
(:func:`reaching`): at the folds' bar (:data:`~dpevolve.engine.smoothing.DECODE_FLOOR`
noise scales) a bin is no end of the data and its rows stay by the bins next to it, so
just past the bar the reach starts from nothing rather than from twice the noise. An
end bin holding no row, released 2.0-2.3 scales up, had drawn 1.0-1.4% of a run's rows
beyond the data by more than a tenth of their range (twoyear's university credits,
black_politicians' median household incomes, cps91's husbands' earnings with
``--public``). An even reach keeps the whole count: it is taken where the count is too
large for a tail within the declared range, data the releases show plainly.
"""

from __future__ import annotations

import numpy as np

from dpevolve.engine.cells import FineCells, outer_density
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT

#: An end bin's density falls linearly from that of the bins next to it to zero:
#: its rows reach this many times as far as they would at an even density
#: (:func:`end_reach`). Not a free choice: a triangle of that height holding the same
#: rows has twice the even spread's base.
FALL = 2.0

#: A reach's shape, the density at its foot as a share of that at its apex: 0 where
#: the rows thin out to nothing (a triangle), 1 where they lie at the density of the
#: bins next to them (:func:`end_reach`).
THINNING, EVEN = 0.0, 1.0


def reaching(count: float, sd: float) -> float:
    """The rows of an end bin's ``count`` (noise scale ``sd``) that reach past its
    inner edge: ``count (1 - (b / count)^2)``, ``b`` the bar
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` ``* sd`` of the folds (module
    docstring): none at the bar, where a bin is no end of the data, a growing share of
    the count past it (half at 2.8 scales, 84% at 5), as the share of a count standing
    that far out that its noise does not explain (a Wiener factor, the bar's square as
    the noise's energy)."""
    bar = DECODE_FLOOR * sd
    return max(0.0, count - bar * bar / count) if count > 0 else 0.0


def end_reach(
    edges: np.ndarray,
    count: np.ndarray,
    sd: np.ndarray,
    end: int,
    top: bool,
    atom_width: float = 0.0,
) -> tuple[float, float, float] | None:
    """Where an end bin's rows lie, ``(apex, foot, level)``: from its inner edge (the
    apex) outwards, holding the bin's count (``count``, ``sd``: every release combined,
    :func:`~dpevolve.engine.counts.released_counts`), its part the noise does not
    explain reaching out (:func:`reaching`), under the density of the bins next
    to it further in (rows per unit of value, :func:`inner_densities`) falling linearly
    to zero at the foot (``level`` :data:`THINNING`): :data:`FALL` times as far as that
    density held even would reach. A tail thins out past the data's body, so the even
    spread is the shortest its rows can reach; the fine histogram, whose cells each
    hold a few of them under the noise, cannot say more (alcohol's beer taxes: 19% of
    the rows in the last bin, [0.56, 2.8], had been drawn within 0.03 of its inner
    edge). Where the bin's whole count thinning out so would pass the column's declared end,
    it holds more rows than a tail thinning out from that density fits in: unless the bins
    further in are denser than those next to it by
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales of the difference (a
    density falling towards the end), its rows, all of the count, lie at that density, held
    even to the foot (``level`` :data:`EVEN`), and the data stop there: cps91's wives' ages,
    even from 20 to 59 and none past, had their last bin's 603 rows, [46.5, 65], drawn
    thinning out to 65, 1.0% of all rows past 63.
    ``top``: the column's upper end (else its lower); an atom's own bin (no wider than
    ``atom_width``) shows no density. ``None`` where the end bin's count stands at most
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales out (the bar of
    :func:`~dpevolve.engine.tails.noise`; black_politicians' last bin of squire
    indices, 17% of the rows, 3.1 scales out, had been drawn at its inner edge) or the
    bins next to it never stand out."""
    count = np.asarray(count, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    if not (np.isfinite(sd[end]) and count[end] > DECODE_FLOOR * sd[end]):
        return None
    densities = inner_densities(edges, count, sd, end, top, atom_width)
    if not densities:
        return None
    (near, near_sd), *further = densities
    edge = float(edges[end] if top else edges[end + 1])
    room = abs(float(edges[-1] if top else edges[0]) - edge)  # to the declared end
    thins = bool(further) and further[0][0] - near > DECODE_FLOOR * np.hypot(near_sd, further[0][1])
    level = EVEN if FALL * float(count[end]) / near > room and not thins else THINNING
    # an even reach is taken where the count is too large for a tail: its rows are data
    rows = float(count[end]) if level == EVEN else reaching(float(count[end]), float(sd[end]))
    extent = FALL * rows / (near * (1.0 + level))
    return edge, edge + extent if top else edge - extent, level


def inner_densities(
    edges: np.ndarray,
    count: np.ndarray,
    sd: np.ndarray,
    end: int,
    top: bool,
    atom_width: float = 0.0,
) -> list[tuple[float, float]]:
    """The densities (rows per unit of value) and their noise scales of the first two
    runs of bins inwards from the end bin ``end``, each pooled until its count stands
    :data:`~dpevolve.engine.smoothing.SUPPORT` noise scales above zero (fewer where
    the bins run out first); an atom's own bin (no wider than ``atom_width``) and a bin
    no release counts are passed over."""
    width = np.diff(edges)
    inner = range(end - 1, -1, -1) if top else range(end + 1, count.size)
    out: list[tuple[float, float]] = []
    rows = spread = variance = 0.0
    for b in inner:
        if width[b] <= atom_width or not np.isfinite(sd[b]):
            continue
        rows, spread, variance = rows + count[b], spread + width[b], variance + sd[b] ** 2
        if rows > SUPPORT * np.sqrt(variance):
            out.append((rows / spread, float(np.sqrt(variance)) / spread))
            if len(out) == 2:
                break
            rows = spread = variance = 0.0
    return out


def shown_reach(
    cells: FineCells,
    weights: np.ndarray,
    count: np.ndarray,
    sd: np.ndarray,
    end: int,
    top: bool,
) -> tuple[float, float, float] | None:
    """Where the rest of an end bin's rows lie, ``(apex, foot, level)``, past the cells
    the decoding ``weights`` show, when those are one run from the bin's inner edge
    outwards: the bin's count as the releases show it (``count``, ``sd``:
    :func:`~dpevolve.engine.counts.released_counts`) less what its cells weigh, where
    that stands :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales out (its
    part the noise does not explain reaching out: :func:`reaching`),
    thinning out from the run's outer cell's density
    (:func:`~dpevolve.engine.cells.outer_density`) to zero (``level``
    :data:`THINNING`). The fine cells past the run
    each hold a few rows under the noise and are floored; the bin's count, across the
    releases, still holds them (twoyear's test scores: 10% of the rows below -1.12,
    spread to -3.3, had been drawn at -1.12 and above). ``None`` otherwise: where the
    weighted cells leave a gap, the rows they miss may lie in it (injury's ages past
    34.5: the densest values, 35-39, floored)."""
    inside = np.flatnonzero(cells.coarse[: cells.values] == end)
    points = inside if cells.grid else inside[inside >= cells.atoms]  # an atom is no point
    shown = np.asarray(weights)[points[np.argsort(cells.lo[points])]] > 0
    outward = shown if top else shown[::-1]
    run = int(np.argmin(outward)) if not outward.all() else outward.size
    edge = outer_density(cells, weights, inside, top)
    rest = float(count[end]) - float(np.asarray(weights)[inside].sum())
    if edge is None or outward[run:].any() or not rest > DECODE_FLOOR * sd[end]:
        return None
    apex, density = edge
    extent = FALL * reaching(rest, float(sd[end])) / density
    return apex, apex + extent if top else apex - extent, THINNING


__all__ = ["EVEN", "FALL", "THINNING", "end_reach", "inner_densities", "reaching", "shown_reach"]
