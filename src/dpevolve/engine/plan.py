"""The engine's budget plan in zCDP: fine histograms, 1-way marginals, then rounds.

Every release of the engine is a discrete Gaussian (``rho = S^2 / (2 sigma^2)``) or an
exponential-mechanism selection (``rho = epsilon^2 / 8``), and zCDP composes by adding
``rho`` (Bun & Steinke 2016), adaptively chosen parameters included. The plan splits
the budget's ``rho`` (given, or the largest whose CKS conversion meets
``(epsilon, delta)``) as

* ``fine_share`` for the fine 1-way histograms of the numeric columns (one Gaussian each);
* ``atom_share`` for the atom release (:mod:`~dpevolve.engine.atoms`), on tables with a
  numeric column that has candidate values (one Gaussian per such column);
* ``zoom_share`` for the zoom (:mod:`~dpevolve.engine.zoom`), on tables without a
  public table with a numeric column whose fine partition is not one cell per value
  (what no column zooms into goes to the last adaptive round);
* ``oneway_share`` of the rest for the first measurement of every 1-way marginal, more
  on a small table (:func:`oneway_share`);
* ``pe_share`` of the whole for the PE stage's votes (:mod:`~dpevolve.engine.refine`),
  on tables of at most ``pe_max_columns`` columns, at least ``pe_min_numeric`` of
  them numeric, and rows enough for its candidates
  (:meth:`~dpevolve.engine.spec.EngineSpec.runs_pe`);
* for the relations phase (:mod:`~dpevolve.engine.relations`), on tables of two to
  ``relation_max_numeric`` numeric columns
  (:meth:`~dpevolve.engine.spec.EngineSpec.runs_relations`), ``relation_share`` of
  what the rounds have: ``k - 1`` picks among the pairs of the ``k`` numeric columns,
  and ``k - 2`` closing triangles where ``relation_width_for`` says 2
  (:func:`~dpevolve.engine.relations.relation_picks`), each with its coarse measurement
  (``relation_edges``), at an equal share each;
* for the spanning-tree phase (:mod:`~dpevolve.engine.tree`), ``d - 1`` picks each
  with its measurement, at most ``tree_share`` of what the rounds have and at most one
  planned round's cost per pair (``tree``); the planned rounds shrink by as many rounds'
  worth, so the adaptive rounds keep the planned round's noise;
* out of what the rounds have left after the tree phase, at most ``label_share`` for
  the label pairs (:mod:`~dpevolve.engine.label_pairs`), each at a tree pair's noise
  (set at run time: how many pairs depends on the earlier picks);
* the rest for the adaptive rounds, planned as ``T`` equal rounds of which
  ``select_share`` selects and the rest measures (AIM, McKenna et al. 2022, Alg. 2).
  Annealing halves ``sigma`` and doubles ``epsilon`` when a refit barely moved the
  chosen marginal; when less than two rounds' cost is left, the last round spends all
  of it.

:class:`Spend` keeps the running total from the recorded events themselves and refuses
any release that would take it past the target, so the composed events never exceed
the budget (the ledger's accountant composes the same events).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dpevolve.engine.atom_rules import RULE_SHARE
from dpevolve.engine.measure import sigma_for
from dpevolve.engine.relations import relation_picks
from dpevolve.engine.spec import EngineSpec
from dpevolve.errors import PrivacyError
from dpevolve.privacy import Budget, zcdp_budget
from dpevolve.privacy.events import Event, ExponentialEvent, GaussianEvent

#: Keeps the composed rho at or below the target despite float rounding in the split.
SLACK = 1.0 - 1e-9


def oneway_share(spec: EngineSpec, columns: int, rows: int | None, rest: float) -> float:
    """The share of ``rest`` (zCDP ``rho``) the 1-way marginals of ``columns`` columns
    get: ``spec.oneway_share``, or as much more, up to ``spec.oneway_most``, as keeps a
    1-way's noise scale within the mean count of a bin, ``rows / spec.numeric_bins``.

    Why (docs/engine.md, Bins): on a table of a few hundred rows the 1-ways' usual share
    leaves each bin's noise above its count (``bwght``'s 555 rows, 14 columns: 90 on
    bins of 55), where the pairs the rest of the budget buys show nothing either. The
    noise scale of one 1-way at share ``s`` is ``sigma_for(rest / columns) / sqrt(s)``.
    ``rows`` is public under replace-one; ``None``: ``spec.oneway_share``.
    """
    if not rows or columns < 1 or rest <= 0:
        return spec.oneway_share
    whole = sigma_for(rest / columns)  # one 1-way's noise at the whole of ``rest``
    needed = (whole * spec.numeric_bins / rows) ** 2
    return max(spec.oneway_share, min(spec.oneway_most, needed))


@dataclass(frozen=True)
class Plan:
    """What each stage may spend (zCDP ``rho``) and the first round's parameters."""

    total: float
    fine: float
    oneway: float
    rounds: float
    planned_rounds: int
    select_share: float
    pe: float = 0.0
    tree: float = 0.0
    tree_edges: int = 0
    relations: float = 0.0
    relation_edges: int = 0
    atoms: float = 0.0
    zoom: float = 0.0
    columns: int = 0
    numeric: int = 0

    @classmethod
    def of(
        cls,
        budget: Budget,
        spec: EngineSpec,
        columns: int,
        numeric: int,
        candidates: int = 0,
        zoomable: int = 0,
        rows: int | None = None,
    ) -> Plan:
        """The split of ``budget`` for a table of ``columns`` columns, ``numeric`` of them
        numeric, ``candidates`` of those with an atom release, ``zoomable`` that may
        zoom, and ``rows`` rows (public facts; ``None``: the 1-ways at ``oneway_share``)."""
        total = zcdp_budget(budget) * SLACK
        fine = spec.fine_share * total if numeric else 0.0
        atoms = spec.atom_share * total if candidates else 0.0
        zoom = spec.zoom_share * total if zoomable and fine else 0.0
        rest = total - fine - atoms - zoom
        oneway = oneway_share(spec, columns, rows, rest) * rest
        pe = spec.pe_share * total if spec.runs_pe(columns, numeric, rows) else 0.0
        rounds = rest - oneway - pe
        planned = spec.planned_rounds(columns)
        per_round = rounds / planned
        width = spec.relation_width_for(numeric)
        links = relation_picks(numeric, width) if spec.runs_relations(numeric) else 0
        relations = spec.relation_share * rounds if links else 0.0
        edges = max(0, columns - 1) if spec.tree_share > 0 else 0
        tree = min(spec.tree_share * (rounds - relations), edges * per_round)
        # the phases took ``(tree + relations) / per_round`` rounds' worth: the rounds
        # keep their noise
        left = max(1, planned - math.ceil((tree + relations) / per_round - 1e-9))
        return cls(
            total=total,
            fine=fine,
            atoms=atoms,
            zoom=zoom,
            oneway=oneway,
            rounds=rounds - tree - relations,
            pe=pe,
            planned_rounds=left,
            select_share=spec.select_share,
            tree=tree,
            tree_edges=edges,
            relations=relations,
            relation_edges=links,
            columns=columns,
            numeric=numeric,
        )

    def schedule(self) -> Schedule:
        """The noise scales this plan sets, stage by stage (what the run is handed)."""
        fine = self.fine > 0 and self.numeric > 0
        return Schedule(
            total=self.total,
            atoms=self.atoms,
            zoom=self.zoom,
            fine=sigma_for(self.fine / self.numeric) if fine else None,
            oneway=sigma_for(self.oneway / self.columns),
            relations=self.relation_round() if self.relation_edges else None,
            relation_edges=self.relation_edges,
            tree=self.tree_round() if self.tree_edges else None,
            tree_edges=self.tree_edges,
            atom_rules=RULE_SHARE * self.rounds,
            first_round=self.first_round(),
            rounds_limit=self.total - self.pe,
            select_share=self.select_share,
            pe=self.pe,
        )

    def first_round(self) -> tuple[float, float]:
        """``(sigma, epsilon)`` of a planned round: ``rounds / T`` split select/measure."""
        per_round = self.rounds / self.planned_rounds
        return self.round_parameters(per_round)

    def tree_round(self) -> tuple[float, float]:
        """``(sigma, epsilon)`` of one pick of the tree phase and its measurement."""
        return self.round_parameters(self.tree / self.tree_edges)

    def relation_round(self) -> tuple[float, float]:
        """``(sigma, epsilon)`` of one pick of the relations phase and its measurement."""
        return self.round_parameters(self.relations / self.relation_edges)

    def round_parameters(self, rho: float) -> tuple[float, float]:
        """``(sigma, epsilon)`` of a round spending ``rho`` in total."""
        return round_parameters(rho, self.select_share)


@dataclass(frozen=True)
class Schedule:
    """The plan as the run takes it: each stage's noise scale, and the zCDP caps the
    adaptive stages spend up to (docs/architecture.md, "One budget, measured").

    The budget stops at the plan: the run is handed noise scales, never the budget.

    Attributes
    ----------
    total
        The cap of the composed ``rho`` (the run's :class:`Spend` limit).
    atoms
        The atom release's ``rho`` (:mod:`~dpevolve.engine.atoms` splits it per column).
    zoom
        The zoom's ``rho`` (:mod:`~dpevolve.engine.zoom` splits it per level and
        column; 0: no zoom).
    fine, oneway
        ``sigma`` of each fine histogram (``None``: none released) and of each 1-way.
    relations, tree
        ``(sigma, epsilon)`` of one pick of the relations and of the tree phase and its
        measurement (``None``: the phase does not run); ``relation_edges`` and
        ``tree_edges`` picks each.
    atom_rules
        What the label's pairs with the atom columns may spend in all
        (:mod:`~dpevolve.engine.atom_rules`; out of the rounds' share, which then spend
        what is left).
    first_round
        ``(sigma, epsilon)`` of a planned adaptive round.
    rounds_limit
        What the adaptive rounds spend up to (``total`` less the PE stage's share); the
        last round spends what is left at :meth:`last_round`.
    pe
        The PE stage's ``rho`` (:mod:`~dpevolve.engine.refine`; 0: no stage).
    """

    total: float
    atoms: float
    zoom: float
    fine: float | None
    oneway: float
    relations: tuple[float, float] | None
    relation_edges: int
    tree: tuple[float, float] | None
    tree_edges: int
    atom_rules: float
    first_round: tuple[float, float]
    rounds_limit: float
    select_share: float
    pe: float

    def last_round(self, rho: float) -> tuple[float, float]:
        """``(sigma, epsilon)`` of the last round, spending ``rho``."""
        return round_parameters(rho, self.select_share)


def round_parameters(rho: float, select_share: float) -> tuple[float, float]:
    """``(sigma, epsilon)`` of a round spending ``rho``: ``select_share`` of it on the
    selection (``rho = epsilon^2 / 8``), the rest on the marginal (``sigma_for``)."""
    sigma = sigma_for((1.0 - select_share) * rho)
    epsilon = math.sqrt(8.0 * select_share * rho)
    return sigma, epsilon


def round_cost(sigma: float, epsilon: float) -> float:
    """zCDP of one round: a marginal at ``sigma`` plus a selection at ``epsilon``."""
    return 1.0 / sigma**2 + epsilon**2 / 8.0


def event_rho(event: Event) -> float:
    """The zCDP cost of one engine event."""
    if isinstance(event, GaussianEvent | ExponentialEvent):
        return event.rho
    raise PrivacyError(f"the engine records no {type(event).__name__}")


@dataclass
class Spend:
    """The running zCDP total of the recorded events, capped at ``limit``."""

    limit: float
    used: float = 0.0
    events: list[Event] = field(default_factory=list)

    def charge(self, event: Event) -> None:
        """Add ``event``; refuse it (before anything is released) past the limit."""
        cost = event_rho(event)
        if self.used + cost > self.limit * (1.0 + 1e-12):
            raise PrivacyError(
                f"the engine would spend rho {self.used + cost:.6g} of {self.limit:.6g}"
            )
        self.used += cost
        self.events.append(event)

    def left(self, stage_limit: float) -> float:
        """What is left of ``stage_limit`` (a cumulative cap) after the events so far."""
        return max(0.0, stage_limit - self.used)


__all__ = [
    "SLACK",
    "Plan",
    "Schedule",
    "Spend",
    "event_rho",
    "oneway_share",
    "round_cost",
    "round_parameters",
]
