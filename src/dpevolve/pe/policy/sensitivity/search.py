"""Exact vote sensitivity search for audits (docs/math.md §3); closed forms are in ``bounds``.

The exact search computes, for a fixed (public) population ``C``::

    S = max over records x, protected neighbours x' of x of ||vote(x') - vote(x)||

where ``x`` ranges over the full product domain (numeric columns on a grid: their integer
values by default) or a supplied record set, and ``x'`` over the protected substitutions
of ``x`` (docs/math.md §2). It is meant for audits on small or moderate domains; the population
is public, so running it costs no privacy budget.

Validity of an exact value as a *calibration* needs every record the private table can
hold to be in the searched set: the full domain of integer/categorical columns is, a
grid over a continuous column or a sample of records is not. It also needs the search
to evaluate the very vote the backends evaluate: distances come from
``distance.pairwise``, which for the built-in distances is the canonical per-pair
arithmetic of :mod:`dpevolve.backends.canonical` that every backend follows bit for bit,
and ties go to the lowest index as in every backend. A near tie therefore resolves the
same way here as in the vote (a search with one float formula and a vote with another
could call a leaking edge free).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from dpevolve.data.encoding import Layout, Records
from dpevolve.data.schema import NumericColumn
from dpevolve.errors import InputError
from dpevolve.pe.distance import Distance
from dpevolve.pe.policy.blowfish import Policy, SecretGraph, Threshold
from dpevolve.pe.policy.sensitivity.bounds import Norm, check_norm
from dpevolve.pe.policy.sensitivity.domain import (
    DEFAULT_MAX_DOMAIN,
    Slot,
    build_records,
    domain_size,
    domain_slots,
    enumerate_domain,
    raw_values,
    replace_values,
)
from dpevolve.pe.votes import SoftVote

# Floats per working block of the search: keeps memory near 32 MB whatever the domain.
_BLOCK_CELLS = 1 << 22


# ----------------------------------------------------------------- search result
@dataclass(frozen=True)
class SearchResult:
    """The outcome of an exact sensitivity search.

    Attributes
    ----------
    value
        ``max ||vote(x') - vote(x)||`` over the protected edges searched.
    edges_checked
        Number of ``(x, x')`` pairs evaluated (an unordered edge counts once when the
        full domain is searched; a hard search stops at the first argmin change).
    seconds
        Wall time of the search.
    worst
        ``(x, x')`` as one-row :class:`Records` attaining ``value``; ``None`` if no edge
        changes the vote.
    attribute
        The attribute substituted in ``worst`` (``"participation"`` for whole records).
    """

    value: float
    edges_checked: int
    seconds: float
    worst: tuple[Records, Records] | None
    attribute: str | None
    vote: str
    norm: str

    @property
    def edges_per_second(self) -> float:
        return self.edges_checked / self.seconds if self.seconds > 0 else float("inf")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "vote": self.vote,
            "norm": self.norm,
            "value": self.value,
            "edges_checked": self.edges_checked,
            "seconds": self.seconds,
            "attribute": self.attribute,
        }
        if self.worst is not None:
            out["worst"] = [
                {"numeric": r.numeric[0].tolist(), "codes": r.codes[0].tolist()} for r in self.worst
            ]
        return out


# ----------------------------------------------------------------------- votes
class _Scorer(Protocol):
    """How a vote is compared along an edge: features of a record, then a pair value."""

    ceiling: float

    def features(self, distances: np.ndarray) -> np.ndarray: ...

    def compare(self, a: np.ndarray, b: np.ndarray) -> np.ndarray: ...


class _SoftScorer:
    def __init__(self, tau: float, norm: Norm) -> None:
        self.vote = SoftVote(tau)
        self.ord = 1 if norm == "l1" else 2
        # Soft values approach but must not be cut short at the bound: search everything.
        self.ceiling = math.inf

    def features(self, distances: np.ndarray) -> np.ndarray:
        m = distances.shape[-1]
        return self.vote.row_votes(distances.reshape(-1, m)).reshape(distances.shape)

    def compare(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = a - b
        if self.ord == 1:
            return np.abs(diff, out=diff).sum(axis=-1)
        return np.sqrt(np.einsum("...i,...i->...", diff, diff))


class _HardScorer:
    def __init__(self, norm: Norm) -> None:
        self.ceiling = 2.0 if norm == "l1" else math.sqrt(2.0)

    def features(self, distances: np.ndarray) -> np.ndarray:
        # np.argmin breaks ties to the lowest index, as every backend does (canonical rule).
        return np.argmin(distances, axis=-1)

    def compare(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.where(a != b, self.ceiling, 0.0)


# ---------------------------------------------------------------------- search
class _Best:
    """Running maximum over edges, keeping how to rebuild the worst pair lazily."""

    def __init__(self) -> None:
        self.value = 0.0
        self.pair: tuple[Records, Records] | None = None
        self.attribute: str | None = None
        self.edges = 0

    def offer(self, value: float, attribute: str, make: Any) -> None:
        if value > self.value:
            self.value = value
            self.attribute = attribute
            self.pair = make()


def _edge_groups(ia: np.ndarray, ib: np.ndarray) -> list[tuple[np.ndarray, np.ndarray, int | None]]:
    """Edges grouped by ``ib - ia``; a group whose ``ia`` are consecutive gets its step.

    Threshold edges on a grid are diagonals ``(a, a + step)``: comparing them through
    slices (views) instead of fancy indexing (copies) halves the memory traffic.
    """
    groups: list[tuple[np.ndarray, np.ndarray, int | None]] = []
    steps = ib - ia
    for step in np.unique(steps):
        a, b = ia[steps == step], ib[steps == step]
        contiguous = a.size > 0 and a[-1] - a[0] + 1 == a.size
        groups.append((a, b, int(step) if contiguous else None))
    return groups


def _search_fibers(
    slots: Sequence[Slot],
    layout: Layout,
    s: int,
    graph: SecretGraph,
    distance: Distance,
    population: Records,
    scorer: _Scorer,
    best: _Best,
) -> None:
    """Full-domain search along attribute slot ``s``.

    The domain splits into fibers (all columns fixed but ``s``); each fiber's points are
    scored once and every edge inside it compared, so distances cost O(domain) per
    protected attribute instead of O(edges).
    """
    slot = slots[s]
    adjacency = graph.adjacent(slot.column, slot.raw, slot.raw)
    groups = _edge_groups(*np.nonzero(np.triu(adjacency | adjacency.T, k=1)))
    if not groups:
        return
    ia = np.concatenate([a for a, _, _ in groups])
    ib = np.concatenate([b for _, b, _ in groups])
    g, m = len(slot.raw), len(population)
    others = [len(t.raw) for k, t in enumerate(slots) if k != s]
    n_fibers = math.prod(others)
    widest = max(g, *(a.size for a, _, _ in groups))
    chunk = max(1, _BLOCK_CELLS // (widest * max(m, 1)))
    for start in range(0, n_fibers, chunk):
        stop = min(n_fibers, start + chunk)
        other = np.stack(np.unravel_index(np.arange(start, stop), others), axis=1)
        coords = np.insert(
            np.repeat(other, g, axis=0), s, np.tile(np.arange(g), stop - start), axis=1
        )
        points = build_records(slots, layout, coords)
        feats = scorer.features(distance.pairwise(points, population).reshape(stop - start, g, m))
        values = np.concatenate(
            [
                scorer.compare(feats[:, a], feats[:, b])
                if step is None
                else scorer.compare(
                    feats[:, a[0] : a[-1] + 1], feats[:, a[0] + step : a[-1] + 1 + step]
                )
                for a, b, step in groups
            ],
            axis=1,
        )
        best.edges += values.size
        flat = int(np.argmax(values))
        f, e = divmod(flat, ia.size)

        def make(f: int = f, e: int = e, coords: np.ndarray = coords) -> tuple[Records, Records]:
            rows = coords[f * g : (f + 1) * g]
            return (
                build_records(slots, layout, rows[ia[e] : ia[e] + 1]),
                build_records(slots, layout, rows[ib[e] : ib[e] + 1]),
            )

        best.offer(float(values.flat[flat]), slot.column.name, make)
        if best.value >= scorer.ceiling:
            return


def _search_records(
    slots: Sequence[Slot],
    s: int,
    graph: SecretGraph,
    distance: Distance,
    population: Records,
    records: Records,
    scorer: _Scorer,
    best: _Best,
) -> None:
    """Search from supplied records ``x`` to their neighbours ``x'`` on the grid of ``s``.

    Only the neighbours themselves are built and scored (not the whole grid per record):
    a threshold touches a few grid values out of many.
    """
    slot = slots[s]
    g, m = len(slot.raw), len(population)
    chunk = max(1, _BLOCK_CELLS // (g * max(m, 1)))
    for start in range(0, len(records), chunk):
        block = records.take(slice(start, start + chunk))
        rows, values_at = np.nonzero(graph.adjacent(slot.column, raw_values(slot, block), slot.raw))
        if rows.size == 0:
            continue
        here = scorer.features(distance.pairwise(block, population))
        moved = replace_values(block, slot, rows, values_at)
        there = scorer.features(distance.pairwise(moved, population))
        values = scorer.compare(here[rows], there)
        best.edges += int(rows.size)
        e = int(np.argmax(values))

        def make(
            i: int = int(rows[e]), e: int = e, block: Records = block, moved: Records = moved
        ) -> tuple[Records, Records]:
            return block.take(slice(i, i + 1)), moved.take(slice(e, e + 1))

        best.offer(float(values[e]), slot.column.name, make)
        if best.value >= scorer.ceiling:
            return


def _search_participation(
    slots: Sequence[Slot],
    layout: Layout,
    distance: Distance,
    population: Records,
    records: Records | None,
    max_domain: int,
    scorer: _Scorer,
    best: _Best,
) -> None:
    """Whole-record replacement: every x against every domain record (quadratic)."""
    domain = enumerate_domain(
        layout, {s.column.name: s.raw.tolist() for s in slots if s.numeric}, max_domain
    )
    sources = domain if records is None else records
    m = len(population)
    if len(sources) * len(domain) * max(m, 1) > 1000 * _BLOCK_CELLS:
        raise InputError(
            f"participation search compares {len(sources)} x {len(domain)} records; "
            "too large for an exact search (use fewer records or coarser grids)"
        )
    target = scorer.features(distance.pairwise(domain, population))
    origin = target if records is None else scorer.features(distance.pairwise(records, population))
    chunk = max(1, _BLOCK_CELLS // (len(domain) * max(m, 1)))
    for start in range(0, len(sources), chunk):
        stop = min(len(sources), start + chunk)
        values = scorer.compare(origin[start:stop, None], target[None, :])
        if records is None:  # an unordered pair once: keep j > i
            values = np.where(
                np.arange(len(domain))[None, :] > np.arange(start, stop)[:, None], values, -np.inf
            )
            best.edges += int(np.isfinite(values).sum())
        else:
            best.edges += values.size
        flat = int(np.argmax(values))
        i, j = divmod(flat, len(domain))

        def make(i: int = start + i, j: int = j) -> tuple[Records, Records]:
            return sources.take(slice(i, i + 1)), domain.take(slice(j, j + 1))

        best.offer(float(values.flat[flat]), "participation", make)
        if best.value >= scorer.ceiling:
            return


def _exact(
    policy: Policy,
    distance: Distance,
    population: Records,
    records: Records | None,
    grids: Mapping[str, Sequence[float]] | None,
    max_domain: int,
    scorer: _Scorer,
    vote: str,
    norm: Norm,
) -> SearchResult:
    started = time.perf_counter()
    if len(population) == 0:
        raise InputError("the population is empty: nothing to vote for")
    layout = distance.layout
    protected = list(policy.columns(layout))  # validates the policy against the columns
    best = _Best()
    if policy.participation:
        slots = domain_slots(layout, grids, None)
        _search_participation(
            slots, layout, distance, population, records, max_domain, scorer, best
        )
    elif protected:
        need = None if records is None else {name for name, _, _ in protected}
        slots = domain_slots(layout, grids, need)
        position = {slot.column.name: k for k, slot in enumerate(slots)}
        if records is None:
            domain_size(slots, max_domain)
        for name, _, graph in protected:
            if records is None:
                _search_fibers(
                    slots, layout, position[name], graph, distance, population, scorer, best
                )
            else:
                _search_records(
                    slots, position[name], graph, distance, population, records, scorer, best
                )
            if best.value >= scorer.ceiling:
                break
    return SearchResult(
        value=best.value,
        edges_checked=best.edges,
        seconds=time.perf_counter() - started,
        worst=best.pair,
        attribute=best.attribute,
        vote=vote,
        norm=norm,
    )


def exact_soft_sensitivity(
    policy: Policy,
    distance: Distance,
    population: Records,
    tau: float,
    records: Records | None = None,
    norm: Norm = "l2",
    *,
    grids: Mapping[str, Sequence[float]] | None = None,
    max_domain: int = DEFAULT_MAX_DOMAIN,
) -> SearchResult:
    """Exact soft-vote sensitivity for a fixed population, by search over protected edges.

    ``S = max_{x, x' ~ x} ||softmax(-d(x', C) / tau) - softmax(-d(x, C) / tau)||``,
    with ``x`` over the full product domain (``records=None``; numeric columns on
    ``grids``, default their integers) or over ``records``, and ``x'`` over the protected
    neighbours of ``x`` (numeric threshold neighbours: grid values ``b`` with
    ``0 < |a - b| <= theta``). Always ``<= soft_bound(policy.reach(distance), tau, norm)``.

    Parameters
    ----------
    population
        The candidates ``C`` (public).
    records
        Records ``x`` to search from instead of the whole domain.
    norm
        ``"l2"`` (what Gaussian noise is calibrated to) or ``"l1"``.
    grids
        Raw grid values per numeric column name (needed for non-integer columns).
    max_domain
        Refuse to enumerate a larger product domain.
    """
    check_norm(norm)
    return _exact(
        policy, distance, population, records, grids, max_domain,
        _SoftScorer(tau, norm), "soft", norm,
    )  # fmt: skip


def exact_hard_sensitivity(
    policy: Policy,
    distance: Distance,
    population: Records,
    records: Records | None = None,
    norm: Norm = "l2",
    *,
    grids: Mapping[str, Sequence[float]] | None = None,
    max_domain: int = DEFAULT_MAX_DOMAIN,
) -> SearchResult:
    """Exact hard-vote sensitivity for a fixed population: ``sqrt(2)`` (L2) or 2 (L1) if
    any protected edge changes ``argmin_j d(x, c_j)`` (ties to the lowest index), else 0.

    Same domain and neighbour rules as :func:`exact_soft_sensitivity`; the search stops
    at the first edge that changes the argmin.
    """
    check_norm(norm)
    return _exact(
        policy, distance, population, records, grids, max_domain,
        _HardScorer(norm), "hard", norm,
    )  # fmt: skip


def per_round_hard_sensitivity(
    policy: Policy,
    distance: Distance,
    population: Records,
    domain: Records | None = None,
    *,
    grids: Mapping[str, Sequence[float]] | None = None,
    norm: Norm = "l2",
) -> float:
    """Hard-vote L2 sensitivity for this round's population, for exact per-round calibration.

    The population is public, so the search costs no budget (docs/math.md §3). ``domain`` must
    hold every record the private table could contain (default: the full product
    domain); a sample of records does not give a valid sensitivity.
    """
    return exact_hard_sensitivity(policy, distance, population, domain, norm, grids=grids).value


def reach_edge(policy: Policy, distance: Distance, attribute: str) -> tuple[Records, Records]:
    """``(x, x')`` one-row records of an edge of ``attribute`` carrying its reach.

    With population ``C = [x', x]`` the soft vote's change along this edge equals the
    closed-form bound exactly (docs/math.md §3). Other columns sit at their first
    value (numeric: lo).
    """
    layout = distance.layout
    column = next(c for name, c, _ in policy.columns(layout) if name == attribute)
    graph = policy.attributes[attribute]
    numeric = np.zeros((1, len(layout.numeric)))
    codes = np.zeros((1, len(layout.categorical)), dtype=np.int32)
    x, x_prime = Records(numeric, codes), Records(numeric.copy(), codes.copy())
    if isinstance(column, NumericColumn):
        j = [c.name for c in layout.numeric].index(attribute)
        # A numeric column has two graph kinds: threshold, or complete (span the range).
        theta = graph.theta if isinstance(graph, Threshold) else column.range
        span = min(theta, column.range) / column.range
        x_prime.numeric[0, j] = span
        return x, x_prime
    j = [c.name for c in layout.categorical].index(attribute)
    codes_all = np.arange(len(column.values))
    edges = np.argwhere(graph.adjacent(column, codes_all, codes_all))
    if edges.size == 0:
        raise InputError(f"attribute '{attribute}' has no protected edge")
    lengths = [distance.edge_length(attribute, int(a), int(b)) for a, b in edges]
    a, b = edges[int(np.argmax(lengths))]
    x.codes[0, j], x_prime.codes[0, j] = a, b
    return x, x_prime


__all__ = [
    "SearchResult",
    "exact_hard_sensitivity",
    "exact_soft_sensitivity",
    "per_round_hard_sensitivity",
    "reach_edge",
]
