"""The engine's public choices, in one frozen spec (docs/architecture.md, "The engine").

Every field is a public choice made before any private record is read; the ledger
writes the spec verbatim (:meth:`EngineSpec.to_dict`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from dpevolve.engine.rules import DEFAULT_RULE, SELECTION_RULES
from dpevolve.errors import InputError
from dpevolve.options import options_of

#: What a public table may give the model (:attr:`EngineSpec.public_prior`).
PUBLIC_PRIORS = ("off", "ones", "tree")

#: How a public table may place the numeric bins (:attr:`EngineSpec.public_bins`).
PUBLIC_BINS = ("off", "range", "quantile")

#: Treewidths the relations phase may give the graph of its picks
#: (:attr:`EngineSpec.relation_width`).
RELATION_WIDTHS = (1, 2)

#: Where the numeric bins may be placed from released values (:attr:`EngineSpec.adaptive_bins`).
ADAPTIVE_BINS = ("off", "released")

#: Bins of a numeric column by default, and on a table of fewer than :data:`SMALL_TABLE`
#: rows (:attr:`EngineSpec.bins`).
BINS, SMALL_BINS, SMALL_TABLE = 20, 10, 1000

#: The PE stage runs only on tables of this many private records per candidate
#: (:meth:`EngineSpec.runs_pe`).
RECORDS_PER_CANDIDATE = 10


@dataclass(frozen=True)
class EngineSpec:
    """How the select-measure-estimate-generate engine spends its budget.

    Attributes
    ----------
    bins
        Bins of every numeric column (the model's resolution): equal-width over the
        declared range, unless ``public_bins`` or ``adaptive_bins`` move them where that
        range is loose. ``None`` (the default): :data:`BINS`, or :data:`SMALL_BINS` on a
        table of fewer than :data:`SMALL_TABLE` rows (``n``, public; :meth:`for_rows`),
        where a 1-way's noise is as large as a twentieth of the rows and most bins of 20
        hold noise the model draws rows in (docs/engine.md, Bins: on 15 tables of 434
        to 880 rows, TV2 -0.033 +- 0.015 with 10).
    fine_share
        Share of ``rho`` for the fine 1-way histogram of every numeric column, from which
        decoded values are drawn within their bin (point masses, integer values).
        ``0``: values uniform within their bin, nothing spent.
    atom_share
        Share of ``rho`` for the atom release (:mod:`~dpevolve.engine.atoms`): noisy
        counts of a public candidate set of values (round values at the schema's
        decimals) in every numeric column whose fine partition is not one cell per value;
        a value found holding a large share becomes a cell, and a bin, of its own.
        Spent only where such a column exists; ``0``: none.
    zoom_share
        Most share of ``rho`` for the zoom (:mod:`~dpevolve.engine.zoom`): a finer fine
        histogram of a column over the span its first one shows its values in, where
        that span is a small part of the declared range (no public table given).
        Planned only where a numeric column's fine partition is not one cell per value;
        what no column needs goes to the adaptive rounds. ``0``: no zoom.
    fine_cells
        Most cells of one fine histogram: one per value for integer (or ``decimals``)
        columns with at most this many values, else sub-bins of every bin plus the
        declared end points (and 0 inside the range) as cells of their own.
    oneway_share, oneway_most
        Share of the rest of ``rho`` for the first measurement of every 1-way marginal;
        more on a small table, up to ``oneway_most`` (0: never;
        :func:`~dpevolve.engine.plan.oneway_share`).
    rounds, rounds_per_column, max_rounds
        Planned selection rounds (sets the first round's noise; annealing usually ends
        the run earlier); ``None``: ``rounds_per_column`` per column (AIM plans 16), at
        most ``max_rounds``.
    select_share
        Share of each round's ``rho`` spent on selection (AIM: 0.1); the rest measures.
    tree_share
        Most share of the rounds' ``rho`` for the spanning-tree phase before the
        adaptive rounds (:mod:`~dpevolve.engine.tree`): ``d - 1`` pairs joining every
        column, each pick and measurement costing at most one planned round. ``0``: no
        tree phase.
    tree_label_groups, tree_label_columns
        ``0``: the tree's pairs are measured cell by cell. ``g >= 2``: on a table with
        a label and at least ``tree_label_columns`` columns (public facts of the
        schema), the tree joins the other columns and measures each of its pairs with
        the label, numerics in ``g`` equal-width groups of their bins: a tree-augmented
        naive Bayes structure (docs/engine.md, The label tree on wide tables: measured
        there, with why narrower tables keep the fine pairs and why 3 groups).
    tree_label_quantiles
        ``True``: the label tree's numeric groups hold about equal mass, cut at the
        quantiles of the model's answer to the released 1-ways (post-processing, as the
        relations phase cuts its pairs); ``False``: equal-width groups of the bins.
    tree_groups
        ``g >= 2``: besides each pair of a numeric and a categorical column cell by
        cell, where its fine cells' noise outweighs its rows, the tree phase's draws
        score it with its numeric in ``g`` quantile groups of its bins
        (:func:`~dpevolve.engine.tree.coarse_pairs`; cut at the model's answer to the
        released 1-ways: post-processing), and a coarse pick is released coarse. On a
        table of 24 columns (NIST's ACS excerpts) a fine pair of an income with its
        decile is 220 cells of noise and scored below pairs of two flags; coarse, the
        tree picks it. ``0``: fine pairs only (docs/engine.md, the spanning tree).
    relation_share
        Share of the rounds' ``rho`` for the relations phase before the tree phase
        (:mod:`~dpevolve.engine.relations`): on tables of ``k >= 2`` numeric columns,
        ``k - 1`` pairs joining them (and ``relation_width``'s closing pairs), each
        measured on ``relation_groups`` quantile groups of both columns. ``0``: no
        relations phase.
    relation_groups
        Groups per numeric column in the relations phase's coarse pairs. The defaults
        (0.3, 6) against (0.15, 4), the suite's tables paired (docs/engine.md,
        Relations between numbers): Spearman error -0.009 +- 0.008 on the 8 tables
        where it is largest (5 seeds), SDMetrics and TSTR within their noise; Adult-9's
        TSTR -0.003 (the label's rounds give up what the pairs take).
    relation_width
        ``1``: the relations phase picks ``k - 1`` pairs, a spanning tree of the numeric
        columns; ``2``: then ``k - 2`` more, each closing a triangle of picked pairs
        while the picked graph keeps treewidth two
        (:func:`~dpevolve.engine.relations.closing_pairs`), so that two numbers the tree
        does not pair are related through a triangle rather than a long path, and the
        model's cliques hold three numeric columns at most; the spanning-tree phase then
        starts from the numbers' component. Against ``1``, 10 of the suite's tables x 3
        seeds paired (docs/engine.md, Closing triangles): Spearman error -0.0087 +-
        0.0072, TSTR +0.0002 +- 0.0059, SDMetrics -0.0022 +- 0.0032.
    relation_close_max_numeric
        Triangles are closed (``relation_width`` 2) only on tables of at most this many
        numeric columns (a public fact of the schema; wider: a spanning tree). On the
        d = 40 wide table (23 numerics) closing them lost 0.05 TSTR on each of 3 seeds:
        the numbers' 43 picks split the phase's share, and the label joins their one
        component by a single tree pair (docs/engine.md). The suite's tables hold 3-9.
    relation_max_numeric
        The relations phase runs only on tables of at most this many numeric columns (a
        public fact of the schema). On wide tables its ``k - 1`` picks, with the tree's,
        make the model costly to fit: on the d = 100 table (57 numerics) the run took
        about ten times the CPU of the run without the phase, at the same TSTR
        (docs/engine.md); on the d = 40 table (23) 1.2-2.6x, and there the phase keeps
        the rank correlations of the strongly related pairs. The suite's tables hold at
        most 9 numeric columns.
    label_share, label_groups
        Most share of what the adaptive rounds have left after the spanning-tree phase
        for the label pairs (:mod:`~dpevolve.engine.label_pairs`): on a table with a
        label, each column that shares no measured clique with it is measured with it,
        numerics in ``label_groups`` quantile groups, each at a tree pair's noise
        (raised where the pairs would take more than this share). On the d = 40 wide
        table (docs/engine.md, The label pairs) TSTR +0.010 +- 0.018 over 6 seeds, the
        label then with all 8 of its columns (with 5-7 before); the suite's 16 tables
        within their noise (TSTR +0.0001 +- 0.0029). ``0``: no label pairs.
    pair_shrinkage
        ``True``: every released coarse pair of two numeric columns reaches the
        estimator shrunk toward its linear-by-linear association fit
        (:mod:`~dpevolve.engine.association`: post-processing), so the noise does not
        pull a strong rank relation toward independence; ``False``: as released.
    label_shrinkage
        ``True``: every released pair of the label reaches the estimator shrunk toward
        the independence of its margins by the share of its residual that is not noise
        (:mod:`~dpevolve.engine.independence`: post-processing); ``False``: as released.
    pair_tilt
        ``True``: the last fits carry such a pair's (on the label tree's tables, a flag's
        with a number) association into its groups' bins (:mod:`~dpevolve.engine.tilt`).
    density_smoothing
        ``True``: each numeric column's bin counts, every release combined, reach the
        last fit smoothed as one more measurement of its 1-way (a Whittaker smoother of
        the density, its weight chosen by Stein's unbiased risk estimate:
        :mod:`~dpevolve.engine.density`; post-processing), so the model does not keep
        each bin's noise; ``False``: the releases alone.
    empty_folds
        ``True``: the model is fitted once more (warm start) with the bins its
        folds move (end stretches whose rows the releases read as noise:
        :func:`~dpevolve.engine.tails.released_inward`) held empty
        (:func:`~dpevolve.engine.vacant.folded_measurements`; post-processing), so
        those rows go where the releases put the column's other rows instead of piling
        up in the bin they fold into; ``False``: they decode in that bin.
    hold_zeros
        ``True``: cells of released pairs that show a rule (at an atom, a category) are
        held empty in the last fit (:mod:`~dpevolve.engine.zeros`; post-processing).
    anneal
        When a refit barely moved the chosen marginal, the next rounds divide ``sigma``
        and multiply ``epsilon`` by this (AIM: 2).
    max_model_mb
        Model-size limit of the estimator, annealed by the fraction of ``rho`` spent.
    max_candidates
        Most candidates scored in one round: beyond it, those holding the label and a
        public random draw of the others (post-processing randomness: the selection
        stays an exponential mechanism over a public set).
    max_order
        Largest clique selected: 2 (pairs), 3 (plus triples grown from selected
        pairs) or 4 (plus 4-way cliques grown from selected triples).
    label_weight
        Selection weight of cliques holding the schema's label, relative to others
        (2.0 measured against 1.0: docs/engine.md, Options).
    coarse_groups
        Numbers of equal-width groups of the declared range (of the ``bins`` bins) at
        which coarse label cliques are proposed: the label with two or more other
        columns, numerics grouped, the rest at full resolution (a parity of signs needs
        such a high-order, low-resolution measurement). Empty: none.
    coarse_order
        Largest coarse label clique (3 or 4 columns, the label included).
    coarse_splits
        Fractions of the declared range at which coarse label cliques cut their numerics
        in two as well (one cut for all of a clique's numerics): a sign change off the
        midpoint needs a cut near it (the bins must hold the cut: ``bins`` a multiple
        of 8 for octiles). Empty: none.
    parity_quantiles
        Released quantiles at which the label's all-numeric cliques of ``coarse_order``
        columns (those ``coarse_all`` proposes) cut each numeric in two, every
        combination of one cut per column a candidate
        (:func:`~dpevolve.engine.select.parity_candidates`): a parity whose signs change
        off the middle of the declared range, or of skewed data, needs each column cut
        where its own sign changes. The cuts are the bin edges nearest those quantiles
        of the model's answer to the released 1-ways (post-processing). Empty: none.
        Three (a third, the middle, two thirds): with five (quartiles too) the
        exponential mechanism's draw among 125 near-equal combinations rarely found
        the right one (docs/engine.md, Selection: coarse candidates).
    parity_reach
        Once a query cutting two or more numerics in two is measured, the same query
        with one column's cut moved by 1 to this many bin edges either way is a
        candidate in the later rounds
        (:func:`~dpevolve.engine.select.parity_neighbours`): the first draw lands near
        a parity's cuts, these move it onto them. ``0``: none.
    coarse_all
        When the label's cliques of ``coarse_order`` columns whose other columns are all
        numeric number at most this (``C(k, coarse_order - 1)`` of ``k`` numerics:
        public), all of them are coarse candidates from the first round, not only those
        grown from selected cliques (a parity of signs shows in no smaller marginal, so
        nothing would lead the selection to it). ``0``: grown only.
    coarse_weight, parity_weight
        Selection weight of a coarse label clique relative to its fine clique's; of a
        parity query (:func:`~dpevolve.engine.select.is_parity`), whose fine clique is
        never a candidate, the one that keeps its cuts apart under the draw's noise.
    pair_groups
        Numbers of equal-width groups at which every pair holding a numeric is proposed
        as well (fewer cells than the fine pair: less noise in all when ``sigma`` is
        large); weighted as the fine pair. Empty: none.
    round_iters, final_iters
        Estimator iterations per warm-started refit and for the final fit.
    round_tol, final_tol
        The estimator's stopping tolerance (relative fall of the loss over its window
        of steps) in the refits before the last fit and in the last fit. A refit only
        steers the next selection and the last fit starts where it stopped, so the
        refits stop at the looser tolerance and the last fit converges once
        (docs/scale.md: wide tables' CPU 0.5-0.75x, quality within noise).
    pe_share
        Share of ``rho`` for the PE stage after the marginal rounds
        (:mod:`~dpevolve.engine.refine`): nearest-candidate votes over model draws that
        reweight the model's rows. ``0``: no stage, nothing spent. The default, 0.25 in
        4 rounds of 1,000 candidates, raked to the 1-ways, was measured at epsilon 1:
        Person Activity's TSTR +0.094 (0.560 to 0.655), Adult-9, Bank-5 and XOR-3 within
        their seed spread (docs/engine.md).
    pe_rounds, pe_candidates
        The stage's vote rounds (the share split evenly) and candidates per round. It
        runs only on tables of :data:`RECORDS_PER_CANDIDATE` private records per
        candidate (``n`` is public): on smaller ones a vote's fewer candidates hold as
        few rows each under the same noise, and the share is worth more to the rounds
        (docs/engine.md, The PE stage: 2,237 and 6,000 rows, and 9 tables under 2,000).
    pe_pool
        Model draws per output row that the stage's weights resample from.
    pe_max_columns
        The stage runs only on tables of at most this many columns (a public fact of the
        schema): on wider ones the votes' nearest candidate is decided by many columns
        at once and the share is worth more to the marginal rounds (measured on the
        d = 40 and d = 100 tables: TSTR -0.010 and -0.015, 2.4x and 6x the time).
    pe_min_numeric
        The stage runs only on tables whose numeric columns are at least this share of
        all columns (a public fact of the schema): the votes find structure in the
        numbers' continuous space that binned marginals lose; on mostly categorical
        tables the marginals describe the table and the share is worth more to them
        (measured at epsilon 1: Adult-9 tv_all -0.0012 and 72% less CPU, Adult-15 TSTR
        +0.003 and 63% less CPU; Person Activity (3 of 5 numeric) keeps its +0.094).
    pe_rake
        Rake the stage's weights so the rows keep the model's 1-way marginals (1), its
        1- and 2-way ones (2), or not (0).
    public_bins
        Bin edges of the numeric columns when a public table is passed
        (:func:`~dpevolve.engine.public.public_edges`): ``range`` (equal-width over the
        public central range, two tails), ``quantile`` (public quantiles) or ``off``
        (equal-width over the declared range). Free: public facts only.
    adaptive_bins
        ``released``: where a numeric column's declared range is loose, its bins go over
        the central range of its released fine histogram (the rule of ``public_bins``;
        :func:`~dpevolve.engine.bins.released_edges`), columns placed by a public table
        aside; post-processing, free. ``off``: equal-width over the declared range.
    public_prior
        What a public table gives the model as a prior when one is passed
        (:func:`~dpevolve.engine.public.public_prior`): ``tree`` (its 1-ways and the
        pairs of its mutual-information spanning tree), ``ones`` (its 1-ways) or ``off``
        (measured on Person Activity and Adult: no gain beyond the seeds' spread, so off
        by default). Free.
    public_scale
        Multiplies the public pseudo-measurements' variances (larger: trust less).
    selection
        The adaptive rounds' selection rule, by its name in
        :data:`~dpevolve.engine.rules.SELECTION_RULES` (``aim``: AIM's). Written in a
        ledger only when it is not the default (ledgers before it read the same).
    """

    bins: int | None = None
    fine_share: float = 0.05
    atom_share: float = 0.03
    zoom_share: float = 0.0625
    fine_cells: int = 128
    oneway_share: float = 0.06
    oneway_most: float = 0.25
    rounds: int | None = None
    rounds_per_column: int = 16
    max_rounds: int = 120
    select_share: float = 0.1
    tree_share: float = 0.8
    tree_label_groups: int = 3
    tree_label_columns: int = 60
    tree_label_quantiles: bool = True
    tree_groups: int = 6
    relation_share: float = 0.3
    relation_groups: int = 6
    relation_width: int = 2
    relation_close_max_numeric: int = 12
    relation_max_numeric: int = 32
    label_share: float = 0.75
    label_groups: int = 5
    pair_shrinkage: bool = True
    label_shrinkage: bool = True
    pair_tilt: bool = True
    density_smoothing: bool = True
    empty_folds: bool = True
    hold_zeros: bool = True
    anneal: float = 2.0
    max_model_mb: float = 2.0
    max_candidates: int = 600
    max_order: int = 3
    label_weight: float = 1.0
    coarse_groups: tuple[int, ...] = (2, 4, 5)
    coarse_order: int = 4
    coarse_splits: tuple[float, ...] = ()
    parity_quantiles: tuple[float, ...] = (1 / 3, 0.5, 2 / 3)
    parity_reach: int = 2
    coarse_all: int = 10
    coarse_weight: float = 0.25
    parity_weight: float = 0.75
    pair_groups: tuple[int, ...] = (5,)
    round_iters: int = 100
    final_iters: int = 500
    round_tol: float = 1e-2
    final_tol: float = 1e-3
    pe_share: float = 0.25
    pe_rounds: int = 4
    pe_candidates: int = 1000
    pe_pool: int = 4
    pe_max_columns: int = 16
    pe_min_numeric: float = 0.5
    pe_rake: int = 1
    public_bins: str = "range"
    adaptive_bins: str = "released"
    public_prior: str = "off"
    public_scale: float = 1.0
    selection: str = DEFAULT_RULE

    def __post_init__(self) -> None:
        ones: tuple[str, ...] = ("fine_cells", "rounds_per_column", "max_rounds", "max_candidates")
        ones += ("round_iters", "final_iters", "pe_rounds", "pe_candidates", "pe_pool")
        for name in (*ones, "pe_max_columns"):
            _at_least(name, getattr(self, name), 1)
        if self.bins is not None:
            _at_least("bins", self.bins, 1)
        _at_least("coarse_all", self.coarse_all, 0)
        _at_least("parity_reach", self.parity_reach, 0)
        for name in ("tree_label_groups", "tree_groups"):
            if getattr(self, name) == 1:
                raise InputError(f"engine spec: {name} must be 0 or an integer >= 2, got 1")
            _at_least(name, getattr(self, name), 0)
        _at_least("tree_label_columns", self.tree_label_columns, 3)
        if self.rounds is not None:
            _at_least("rounds", self.rounds, 1)
        twos = ("relation_groups", "label_groups", "relation_max_numeric")
        for name in (*twos, "relation_close_max_numeric"):
            _at_least(name, getattr(self, name), 2)
        if type(self.relation_width) is not int or self.relation_width not in RELATION_WIDTHS:
            raise InputError(
                f"engine spec: relation_width must be one of {RELATION_WIDTHS}, "
                f"got {self.relation_width!r}"
            )
        if not isinstance(self.tree_label_quantiles, bool):
            raise InputError(
                f"engine spec: tree_label_quantiles must be true or false, "
                f"got {self.tree_label_quantiles!r}"
            )
        shares: tuple[str, ...] = ("fine_share", "atom_share", "zoom_share", "oneway_share")
        shares += ("oneway_most", "pe_share", "tree_share")
        for name in (*shares, "relation_share", "label_share", "round_tol", "final_tol"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0.0 <= value < 1.0):
                raise InputError(f"engine spec: {name} must lie in [0, 1), got {value!r}")
        value = self.pe_min_numeric
        if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
            raise InputError(f"engine spec: pe_min_numeric must lie in [0, 1], got {value!r}")
        # the shares taken before the 1-ways
        before = self.fine_share + self.atom_share + self.zoom_share
        if self.pe_share >= (1.0 - before) * (1.0 - max(self.oneway_share, self.oneway_most)):
            raise InputError("engine spec: pe_share leaves nothing for the marginal rounds")
        if not (isinstance(self.select_share, (int, float)) and 0.0 < self.select_share < 1.0):
            raise InputError(
                f"engine spec: select_share must lie in (0, 1), got {self.select_share!r}"
            )
        for name in ("coarse_groups", "pair_groups"):
            groups = getattr(self, name)
            if isinstance(groups, int | str) or not all(
                isinstance(g, int) and not isinstance(g, bool) and g >= 2 for g in groups
            ):
                raise InputError(f"engine spec: {name} must be integers >= 2, got {groups!r}")
            object.__setattr__(self, name, tuple(sorted(set(groups))))
        if self.pe_rake not in (0, 1, 2):
            raise InputError(f"engine spec: pe_rake must be 0, 1 or 2, got {self.pe_rake!r}")
        for name in ("coarse_splits", "parity_quantiles"):
            splits = getattr(self, name)
            if isinstance(splits, int | float | str) or not all(
                isinstance(f, int | float) and not isinstance(f, bool) and 0.0 < f < 1.0
                for f in splits
            ):
                raise InputError(f"engine spec: {name} must lie in (0, 1), got {splits!r}")
            object.__setattr__(self, name, tuple(sorted({float(f) for f in splits})))
        if self.coarse_order not in (3, 4):
            raise InputError(f"engine spec: coarse_order must be 3 or 4, got {self.coarse_order!r}")
        if self.max_order not in (2, 3, 4):
            raise InputError(f"engine spec: max_order must be 2, 3 or 4, got {self.max_order!r}")
        if not (isinstance(self.anneal, (int, float)) and 1.0 <= self.anneal <= 16.0):
            raise InputError(f"engine spec: anneal must lie in [1, 16], got {self.anneal!r}")
        words = {"public_bins": PUBLIC_BINS, "adaptive_bins": ADAPTIVE_BINS}
        words |= {"public_prior": PUBLIC_PRIORS, "selection": tuple(SELECTION_RULES)}
        for name, allowed in words.items():
            if getattr(self, name) not in allowed:
                raise InputError(
                    f"engine spec: {name} must be one of {', '.join(allowed)}, "
                    f"got {getattr(self, name)!r}"
                )
        positive = ("max_model_mb", "label_weight", "coarse_weight", "parity_weight")
        for name in (*positive, "public_scale"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise InputError(f"engine spec: {name} must be a positive number, got {value!r}")

    def runs_pe(self, columns: int, numeric: int, rows: int | None = None) -> bool:
        """Whether the PE stage runs on a table of ``columns`` columns, ``numeric`` of them
        numeric, and ``rows`` rows (public facts; ``None``: any number): ``pe_share``,
        ``pe_max_columns``, ``pe_min_numeric`` and ``pe_candidates`` allow it."""
        return (
            self.pe_share > 0
            and columns <= self.pe_max_columns
            and numeric >= self.pe_min_numeric * columns
            and (rows is None or rows >= RECORDS_PER_CANDIDATE * self.pe_candidates)
        )

    def runs_relations(self, numeric: int) -> bool:
        """Whether the relations phase runs on a table of ``numeric`` numeric columns
        (a public fact of the schema): ``relation_share`` and ``relation_max_numeric``
        allow it and there is a pair to join."""
        return self.relation_share > 0 and 2 <= numeric <= self.relation_max_numeric

    def relation_width_for(self, numeric: int) -> int:
        """The treewidth the relations phase gives its picks on a table of ``numeric``
        numeric columns (public): ``relation_width``, or 1 (a spanning tree) beyond
        ``relation_close_max_numeric``."""
        return self.relation_width if numeric <= self.relation_close_max_numeric else 1

    def planned_rounds(self, columns: int) -> int:
        """Rounds that set the first round's noise: ``rounds``, or per column capped."""
        if self.rounds is not None:
            return self.rounds
        return max(1, min(self.max_rounds, self.rounds_per_column * columns))

    def for_rows(self, n: int) -> EngineSpec:
        """This spec for ``n`` rows (public), ``bins`` set (the ledger records them)."""
        bins = SMALL_BINS if n < SMALL_TABLE else BINS
        return self if self.bins is not None else replace(self, bins=bins)

    @property
    def numeric_bins(self) -> int:
        """``bins`` as :meth:`for_rows` sets them (:data:`BINS` before it has run)."""
        return BINS if self.bins is None else self.bins

    @classmethod
    def from_any(cls, value: EngineSpec | dict[str, Any] | None) -> EngineSpec:
        """A spec from itself, a mapping of its fields, or the defaults."""
        return options_of(cls, value, "engine options")

    def to_dict(self) -> dict[str, Any]:
        words = asdict(self)
        if self.selection == DEFAULT_RULE:
            del words["selection"]
        return words


def _at_least(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InputError(f"engine spec: {name} must be an integer >= {low}, got {value!r}")


__all__ = ["ADAPTIVE_BINS", "BINS", "PUBLIC_BINS", "PUBLIC_PRIORS", "SMALL_BINS", "EngineSpec"]
