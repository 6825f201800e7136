"""End bins decoded inward: model mass at a column's end that the releases show as noise.

On a small table at a modest budget a released 1-way marginal of a numeric column
carries noise of the order of a bin's count (``sigma`` 112 for 2,700 rows in 20 bins).
Where a range is wider than the data, the noise in its empty end bins survives the
estimator's non-negativity: decoded there, a hundred rows land far beyond the data.

Post-processing of released values: per numeric column, the model's own 1-way answer
(fitted to the releases) and each bin's count as the releases show it, every release
that counts the bin combined by generalised least squares
(:func:`~dpevolve.engine.counts.released_counts`: the 1-way marginals, the other
marginals holding the column summed over their other attributes, by the groups of its
bins where they group them, the fine histogram summed over the bin's cells). From each
end, the longest stretch of bins that is *noise* (:func:`noise`) decodes as the nearest
bin inside it the model holds mass in (:class:`~dpevolve.engine.model.EngineModel`):
every part of the stretch next to that bin is given by the model at most
:data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales of the part (what its noise
can leave), and its released count stands at most as many above zero, or, where the
stretch lies past a bin the model gives nothing (a gap), at most
:data:`~dpevolve.engine.smoothing.SUPPORT`; into a bin the releases show no data in,
where another bin holds data and the fold adds more than that bin's noise, at most
:data:`EMPTY` (:func:`unanchored`). Values stay where the releases show data, and rows
move only from a column's ends inwards.

Further, the bins wholly beyond the span of the fine cells the decoding
weights show data in, widened by :data:`~dpevolve.engine.cells.MARGIN` of it
(:func:`~dpevolve.engine.cells.shown_span`), decode as the nearest bin that is not,
when the model gives them together at most
:data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales
(:func:`beyond_span`): the real tail that can go with them is one the releases cannot
tell from noise, and it moves in by no more than the margin.

The other way round, a bin whose combined count stands
:data:`~dpevolve.engine.smoothing.SUPPORT` noise scales out holds data
(:func:`~dpevolve.engine.counts.held_bins`): it is never folded as beyond that span; no
end stretch takes the bins beside it the decoding weights show data in. A
bin not folded decodes within its own cells; one at either end of the data whose cells
show nothing, its count :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` scales out,
under a density falling from that of the bins next to it to zero, holding its count
(:func:`~dpevolve.engine.reach.end_reach`). At either end of the data, rows a bin's
count holds past the run of cells its weights show thin out past that run
(:func:`~dpevolve.engine.reach.shown_reach`). See docs/engine.md, decoding.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from dpevolve.engine.cells import FineCells, shown_span, weighed_beside
from dpevolve.engine.counts import (
    declared_atom_bins,
    faint,
    held_bins,
    known_atom_bins,
    released_counts,
    shows_data,
)
from dpevolve.engine.discretise import Discretiser, atom_tolerance
from dpevolve.engine.reach import end_reach, shown_reach
from dpevolve.engine.smoothing import DECODE_FLOOR, SUPPORT, shown_known
from dpevolve.engine.vacant import vacant_bins
from dpevolve.measurements import Estimator, Measurement

#: A bin the model gives less than this many rows holds nothing (its fitted answer is
#: rarely exactly zero).
HELD = 0.5

#: An end bin holding at least this share of a public table's rows is no thin tail: it
#: holds data as the bins inside it do (:func:`released_inward`). black_politicians'
#: lowest state legislature index, 0.027 (4.6% of the public rows, 5.4% of the
#: private), sat alone in the first bin, released at 31 +- 62, and was folded away on
#: two of three seeds.
PUBLIC_END = 0.03

#: Noise scales at or below which a stretch's released count shows it empty: the bar
#: every part of a stretch must meet to fold into a bin the releases show no data in
#: where some other bin holds data, when the fold moves more than that bin's noise
#: (:func:`unanchored`).
EMPTY = 1.0


def unanchored(moved: float, into: int, sd: np.ndarray, kept: Collection[int]) -> bool:
    """Whether a fold of ``moved`` model rows into bin ``into`` must find its stretch
    empty (:data:`EMPTY`), not only within the noise: the releases show data in some
    bin (``kept``) but not in ``into``, and the fold adds to it more than
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` of its noise scales ``sd[into]``.
    Nothing then marks where the data end: a thin real tail, each part of it within 2
    scales, had folded whole onto one value (fertil2's husbands' schooling past 4
    years, 400 rows over 16 bins at 1.4 scales, all drawn at 4; NIST's Massachusetts
    industry codes below 6,500, 19% of the rows at 1.5 scales, all at 6,875-6,967)."""
    return bool(kept) and into not in kept and moved > DECODE_FLOOR * float(sd[into])


def inward(
    mass: np.ndarray,
    count: np.ndarray,
    sd: np.ndarray,
    kept: Collection[int] = (),
    absent: Collection[int] = (),
    vacant: Collection[int] = (),
    valued: Collection[int] = (),
    certain: bool = False,
) -> np.ndarray:
    """The bin each value bin decodes as (itself unless inward; module docstring).

    Per end, the longest stretch of end bins that is noise (:func:`noise`), holds none
    of the ``kept`` bins and leaves a bin the model holds mass in further in decodes as
    the nearest such bin; in a column the releases show no data in
    (:func:`~dpevolve.engine.counts.shows_data`), only while the model gives each end's
    stretch at most :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales of one
    bin, the rows of the ``k``-th bin from the end counted ``k`` times (folding more
    would draw every value into the bins where the noise stood highest, and the body
    with it), or, in a column whose every row holds a value (``certain``), where the
    bin it folds into can hold the stretch (:func:`holds_stretch`).

    Parameters
    ----------
    mass
        The model's mass per value bin, in value order (rows).
    count, sd
        Per bin, the released count (every release of the column combined:
        :func:`~dpevolve.engine.counts.released_counts`) and its noise scale.
    kept
        Bins known to hold data, never folded nor folded across: those whose releases
        stand out (:func:`~dpevolve.engine.counts.held_bins`) and a public table's
        (:func:`released_inward`).
    absent
        Bins a public table shows no data in: a stretch of them is tested as one past
        a gap (docs/engine.md, end bins decoded inward).
    vacant
        Bins holding no value the column can take (:mod:`~dpevolve.engine.vacant`):
        no gap in the data, so a stretch begins with a gap where its innermost bin
        that is not vacant holds nothing (wagepan's years of experience past 9, 241
        rows beside the empty sliver 9's own bin leaves, had folded onto 9 as an
        island past a gap).
    valued
        Those of the ``kept`` bins kept for what the fine release alone shows, a known
        value (:func:`shown_values`) or the decoding weights beside a held bin
        (:func:`~dpevolve.engine.cells.weighed_beside`): never folded, but no anchor,
        since they say little of the bins past them: a fold into one must find its
        stretch empty (:func:`unanchored`), and a column the releases show no data in
        otherwise stays hidden.
    certain
        The column cannot be missing (the schema's, public): its ``n`` values lie
        somewhere, so a bin that can hold a stretch is a place for it.
    """
    mass = np.asarray(mass, dtype=np.float64)
    count = np.asarray(count, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    target = np.arange(mass.size)
    # where the releases show the column's data nowhere (a column of 400 values among
    # 4,000 rows, the rest missing), its ends are no more noise than its middle: each
    # end's fold moves at most one bin's noise, a bin k bins from the end counting k
    # times (the further in, the likelier it holds the data: a stretch reaching the
    # noisy body five bins in is no end)
    anchors = set(kept) - set(valued)
    hidden = not anchors and not shows_data(count, sd)
    held = mass >= HELD
    for order in (np.arange(mass.size), np.arange(mass.size)[::-1]):
        depth = np.arange(1, order.size + 1, dtype=np.float64)
        for k in range(order.size - 1, 0, -1):
            outer, rest = order[:k], order[k:]
            if not held[rest].any() or np.isin(outer, list(kept)).any():
                continue
            # the stretch's innermost bin that can hold a value: empty, it is a gap
            first = next((b for b in outer[::-1] if b not in vacant), order[k - 1])
            gap = not held[first] or bool(np.isin(outer, list(absent)).all())
            inner = outer[::-1]  # from the bins further in, outwards
            into = int(rest[int(np.flatnonzero(held[rest])[0])])
            moved = float(mass[outer].sum())
            if (
                hidden
                and float(mass[outer] @ depth[:k]) > DECODE_FLOOR * sd[into]
                and not (certain and holds_stretch(moved, into, mass, count, sd))
            ):
                continue
            empty = unanchored(moved, into, sd, anchors)
            if noise(mass[inner], count[inner], sd[inner], gap, empty):
                target[outer] = into
                held[outer] = False  # the other end's stretches are sought among the rest
                break
    return target


def holds_stretch(
    moved: float, into: int, mass: np.ndarray, count: np.ndarray, sd: np.ndarray
) -> bool:
    """Whether bin ``into`` can hold a stretch's ``moved`` model rows in a column the
    releases show no data in (:func:`inward`): its count stands
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales out and, with the
    rows the model gives it, stays within that many of them. Such a column's bins all
    lie within the noise, and the folds could not tell its ends from its body; but
    where every row holds a value (the column cannot be missing), a bin the releases
    show and can take them in says where a stretch's rows may go. driving's weekend
    fatality rates (480 rows, every bin under 3.1 noise scales of 62-81): 80 rows drawn
    at 14-16 where the data stop at 13.8, 7.5% of a run beyond the range, now folded
    into 4-6 (released at 191 +- 62, the model's 206 there); its states, every bin
    under 3 scales, are not folded whole into one bin (470 rows against a bin released
    at 217 +- 77)."""
    room = count[into] + DECODE_FLOOR * sd[into] - mass[into]
    return bool(count[into] > DECODE_FLOOR * sd[into] and moved <= room)


def noise(
    mass: np.ndarray, count: np.ndarray, sd: np.ndarray, gap: bool, empty: bool = False
) -> bool:
    """Whether a stretch of end bins (ordered outwards from the inside) holds what the
    noise of an empty stretch leaves: every part of it next to the bins further in
    (its first ``j`` bins) is given by the model at most
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales (the released counts'
    combined over the part, ``sqrt(sum sd^2)``); past a bin the model gives nothing
    (``gap``), no such part's released count stands
    :data:`~dpevolve.engine.smoothing.SUPPORT` scales above zero; without a gap, none
    stands ``DECODE_FLOOR`` scales (a thin tail the releases cannot tell from noise
    moves in to the bins they show: it lands within the data, where noise decoded in
    place lands beyond them). ``empty`` (:func:`unanchored`): gap or not, none stands
    :data:`EMPTY` scales."""
    scale = np.sqrt(np.cumsum(np.asarray(sd, dtype=np.float64) ** 2))
    held, shown = np.cumsum(mass), np.cumsum(count)
    floor = DECODE_FLOOR * scale
    if not np.all(held <= floor):
        return False
    bar = EMPTY if empty else SUPPORT if gap else DECODE_FLOOR
    return bool(np.all(shown <= bar * scale))


def beyond_span(
    edges: np.ndarray,
    span: tuple[float, float],
    mass: np.ndarray,
    sigma: float,
    held: Collection[int] = (),
    sd: np.ndarray | None = None,
    count: np.ndarray | None = None,
    vacant: Collection[int] = (),
    valued: Collection[int] = (),
) -> np.ndarray:
    """The bin each value bin decodes as: on each side, the bins wholly beyond ``span``
    and past every bin the releases show data in (``held``:
    :func:`~dpevolve.engine.counts.held_bins`) decode as the nearest bin that is not,
    where the model gives them together at most
    :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise scales (what the noise of an
    empty stretch can leave; module docstring): ``sigma``, the 1-way's, or where ``sd``
    (each bin's count across the releases:
    :func:`~dpevolve.engine.counts.released_counts`) knows the stretch better,
    ``sqrt(sum sd^2)``. cps91's husbands' earnings past 1,100 (5% of the rows, the first
    such bin 4.3 noise scales out) had been drawn in the bin below it; its wives' 18
    years of schooling (6% of the rows, 3.9 scales of its count across the
    releases, 1.6 of the 1-way's) had never been drawn at all. With ``count`` (the
    bins' counts across the releases), a fold :func:`unanchored` needs the stretch's
    count at most :data:`EMPTY` of its scales above zero, and no part of the stretch next
    to the bins further in may stand :data:`~dpevolve.engine.smoothing.DECODE_FLOOR`
    of its scales out (wagepan's years of experience 10 and 11, 165 rows past the
    span a fine histogram at noise 57 showed, released at 222 +- 75, had folded onto
    9). The stretch folds into the nearest bin that is not ``vacant`` (one holding no
    value the column takes: :mod:`~dpevolve.engine.vacant`); ``valued``, the ``held``
    bins held for a shown known value alone, no anchor (:func:`inward`)."""
    mass = np.asarray(mass, dtype=np.float64)
    target = np.arange(mass.size)
    kept = sorted(int(b) for b in held)
    anchors = set(kept) - set(valued)  # as in :func:`inward`
    below = np.flatnonzero(edges[1:] <= span[0])
    below = below[below < (kept[0] if kept else mass.size)]
    above = np.flatnonzero(edges[:-1] >= span[1])
    above = above[above > (kept[-1] if kept else -1)]

    def empty(stretch: np.ndarray, into: int) -> bool:
        if stretch.size == 0 or stretch.size >= mass.size:
            return False
        moved = float(mass[stretch].sum())
        if sd is None:
            return moved <= DECODE_FLOOR * sigma
        own = float(np.sqrt(np.sum(sd[stretch] ** 2)))
        if count is not None:
            inner = stretch if stretch[0] > into else stretch[::-1]  # from the inside out
            parts = np.sqrt(np.cumsum(sd[inner] ** 2))
            if np.any(np.cumsum(count[inner]) > DECODE_FLOOR * parts):
                return False
            if unanchored(moved, into, sd, anchors) and float(count[stretch].sum()) > EMPTY * own:
                return False
        return moved <= DECODE_FLOOR * min(sigma, own)

    # bins below are a prefix, above a suffix: the next bin in is not beyond, nor vacant
    into = below.size
    while into in vacant and into < mass.size - 1:
        into += 1
    if empty(below, into):
        target[below] = into
    into = mass.size - above.size - 1
    while into in vacant and into > 0:
        into -= 1
    if empty(above, into):
        target[above] = into
    return target


@dataclass(frozen=True)
class Fold:
    """How one numeric column's cells decode: ``target[c]``, the bin cell ``c``
    decodes as (a missing cell stays itself); ``ends``, the bins that decode as the
    column's end bins, and ``thin``, those of them the model gives no more than noise;
    ``held``, the bins the releases show data in
    (:func:`~dpevolve.engine.counts.held_bins`), which decode within their own cells
    whatever the fine histogram shows of them; ``reach``, per bin at either end of the
    data (an end bin, or the bin an end folds into) whose rows thin out, ``(bin, apex,
    foot, level)`` (:func:`~dpevolve.engine.reach.end_reach`,
    :func:`~dpevolve.engine.reach.shown_reach`; :func:`~dpevolve.engine.cells.thinning`).
    ``values``: the cells of :func:`shown_values`, where a bin whose cells weigh nothing
    decodes."""

    target: np.ndarray
    ends: tuple[int, ...]
    thin: tuple[int, ...]
    held: tuple[int, ...] = ()
    reach: tuple[tuple[int, float, float, float], ...] = ()
    values: tuple[int, ...] = ()


def shown_values(cells: FineCells, fine: Measurement | None) -> tuple[int, ...]:
    """The cells of the values the data are known to hold (declared in the schema's
    ``atoms`` or found by the atom release: each 5% or more of the column) whose
    released fine count stands :data:`~dpevolve.engine.smoothing.DECODE_FLOOR` noise
    scales out. A bin whose cells all weigh nothing and that holds one of them decodes
    at its known values (:meth:`~dpevolve.engine.discretise.Discretiser.decode`):
    nothing else the releases show says where its rows lie, and such a value holds a
    large share of a bin of twenty. mathpnl's ``psa``, 0 in 92% of 1,536 rows, released
    2.3 scales up beside intervals the noise floored (the lone-point rule weighs it
    nothing below 3), was drawn at 0 in 17% of the rows, evenly over its bin's seven
    cells. At 2 scales, the value of a bin the releases show nothing of is not drawn
    alone (loanapp's debt ratio of 36, 5% of 786 rows, whose column the noise folded
    into one bin); all of a bin's known values are drawn (catholic's two lowest income
    brackets, 7% of the rows each, share a bin: the one shown had taken all its rows)."""
    if fine is None:
        return ()
    return tuple(int(c) for c in np.flatnonzero(shown_known(cells, fine.noisy, fine.sigma)))


def folded_ends(
    target: np.ndarray, mass: np.ndarray, sd: np.ndarray
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The end bins of a column whose value bins decode as ``target``, and the thin
    ones: those the model gives at most :data:`~dpevolve.engine.smoothing.DECODE_FLOOR`
    noise scales ``sd`` of the bin (what the noise of an empty bin leaves). At an end
    that decodes as itself, that end; where the end folds into a thin bin (itself
    noise, set apart from the data: twoyear's fold target past the data, held by 0.6
    rows, took the 66 rows of the noise beyond it), that bin; a fold into a bin
    holding data leaves that side without an end bin (its rows are the data's)."""
    ends: list[int] = []
    thin: list[int] = []
    for end in (0, target.size - 1):
        into = int(target[end])
        noise = bool(mass[into] <= DECODE_FLOOR * sd[into])
        if into == end or noise:
            ends.append(into)
        if noise:
            thin.append(into)
    return tuple(ends), tuple(thin)


def public_ends(cells: FineCells, counts: np.ndarray, bins: int) -> tuple[int, ...]:
    """The end bins (of ``bins``) holding at least :data:`PUBLIC_END` of a public
    table's rows holding a value (``counts`` over the fine ``cells``; public facts)."""
    values = np.asarray(counts, dtype=np.float64)[: cells.values]
    total = float(values.sum())
    if total <= 0:
        return ()
    per_bin = cells.bin_sums(values, bins)
    return tuple(b for b in (0, bins - 1) if per_bin[b] >= PUBLIC_END * total)


def released_inward(
    discretiser: Discretiser,
    model: Estimator,
    measurements: Iterable[Measurement],
    weights: Mapping[str, np.ndarray],
    fine: Mapping[str, Measurement] | None = None,
    public: Mapping[str, Collection[int]] | None = None,
    counts: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
    rows: int | None = None,
    held_ends: Mapping[str, Collection[int]] | None = None,
) -> dict[str, Fold]:
    """Per numeric column with a released 1-way marginal and fine histogram, the bin
    each of its cells decodes as (:func:`inward`, :func:`beyond_span`) and its end bins
    (:func:`folded_ends`); ``fine``: the released fine histograms, counted with the
    marginals (:func:`~dpevolve.engine.counts.released_counts`); ``public``: per column,
    the bins a public table shows data in (public facts: free), which, but for the two
    end bins, hold data as the releases' held bins do
    (:func:`~dpevolve.engine.counts.held_bins`) and are never folded; ``counts``: per
    column, :func:`~dpevolve.engine.counts.released_counts` where the caller has them;
    ``held_ends``: per column, the end bins holding at least :data:`PUBLIC_END` of a public
    table's rows (:func:`public_ends`), held as its inner bins are;
    ``rows``: the private row count (public), with which a nullable column whose values
    the releases show nowhere and whose present rows are :func:`faint` decodes
    every cell as missing."""
    measurements = list(measurements)
    sigma: dict[str, float] = {}
    for m in (m for m in measurements if len(m.clique) == 1):
        sigma[m.clique[0]] = min(sigma.get(m.clique[0], np.inf), float(m.sigma))
    out: dict[str, Fold] = {}
    bins = discretiser.bins
    for column in discretiser.numeric:
        name = column.name
        if name not in sigma or name not in weights:
            continue
        cells = discretiser.fine[name]
        w = np.asarray(weights[name])
        mass = np.array(model.answer((name,)), dtype=np.float64)
        vacant = vacant_bins(discretiser, name)
        mass[:bins][vacant] = 0.0  # no value there: its mass is noise
        if counts is not None and name in counts:
            count, sd = counts[name]
        else:
            count, sd = released_counts(discretiser, name, measurements, (fine or {}).get(name))
        # a public table's thin tails reach past the private data as often as not: its
        # end bins keep the end bins' own rules unless they hold a share of its rows
        shown = set((public or {}).get(name, ())) - {0, bins - 1}
        shown |= set((held_ends or {}).get(name, ()))
        present = None if rows is None else float(rows)
        if rows is not None and column.nullable:
            both = released_counts(discretiser, name, measurements, (fine or {}).get(name), True)
            present = rows - float(both[0][-1])
            if not shown and not shows_data(count, sd) and faint(present, float(both[1][-1])):
                out[name] = Fold(np.full(mass.size, bins), (), ())
                continue
        edges = discretiser.edges(name)
        known = known_atom_bins(cells, count, sd)
        values = shown_values(cells, (fine or {}).get(name))
        # a value known to hold 5% (declared or found) whose own release stands out is
        # data however the noise hides its bin's other cells: no stretch folds it away
        anchors = set(held_bins(count, sd)) | shown | known
        # nor one declared that the releases cannot rule below that share; it anchors
        # no fold, as a value only the fine release shows
        declared = set()
        if present is not None:
            declared = declared_atom_bins(cells, column.atoms, count, sd, present)
        valued = ({int(cells.coarse[c]) for c in values} | declared) - anchors
        held = tuple(sorted(anchors | valued))
        absent = set(range(bins)) - set(public[name]) if public and name in public else ()
        no_value = {int(b) for b in np.flatnonzero(vacant)}
        # held, no anchor, as ``valued``; a public table's bins (its weights overreach)
        empty = np.flatnonzero(count[:bins] <= 0.0).tolist()
        beside = set() if name in (public or {}) else weighed_beside(cells, w, held, bins, empty)
        kept = {*held, *beside}
        target = inward(
            mass[:bins], count, sd, kept, absent, no_value, valued | beside, not column.nullable
        )
        span = shown_span(cells, w)
        if span is not None:
            far = beyond_span(
                edges, span, mass[:bins], sigma[name], held, sd, count, no_value, valued
            )
            target = far[target]
        ends, thin = folded_ends(target, mass[:bins], sd)
        whole = np.append(target, np.arange(bins, mass.size))
        # each side's outermost bin as decoded (an end folded into a bin holding data
        # makes that bin the data's end)
        sides = [(int(target[0]), False), (int(target[bins - 1]), True)]
        if sides[0][0] == sides[1][0]:
            sides = []  # one bin holds both ends: no side to reach out from
        atom = 4.0 * atom_tolerance(column)
        spans = [
            (e, shown_reach(cells, w, count, sd, e, top))
            if w[: cells.values][cells.coarse[: cells.values] == e].any()
            else (e, end_reach(edges, count, sd, e, top, atom))
            for e, top in sides
        ]
        reach = tuple((e, *span) for e, span in spans if span is not None)
        out[name] = Fold(whole, ends, thin, held, reach, values)
    return out


__all__ = [
    "EMPTY",
    "HELD",
    "PUBLIC_END",
    "Fold",
    "beyond_span",
    "folded_ends",
    "holds_stretch",
    "inward",
    "noise",
    "released_inward",
    "shown_values",
    "unanchored",
]
