"""A bin whose fine cells all weigh nothing decodes at the values the data are known to
hold in it (declared in the schema's ``atoms`` or found by the atom release) whose fine
count stands 2 noise scales out (``tails.shown_values``): such a value holds 5% or more
of the column (``schema infer``), a bin of twenty holds 5% on average, and the releases
show nothing else of where the bin's rows lie (docs/engine.md, Decoding values within a
bin). Found by the scan of package tables (``benchmarks/pathologies.py``): mathpnl's
``psa``, 0 in 92% of 1,536 rows, was drawn at 0 in 17% of them, evenly over the first
bin's seven cells."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.engine.conftest import OneWayAnswers

from dpevolve.data.atoms import ATOM_SHARE
from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.cells import even_weights, known_floor
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.tails import released_inward, shown_values
from dpevolve.measurements import HistogramQuery, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

BINS = 20
SIGMA = 100.0


def _decoded(column: NumericColumn, bin_: int, values: tuple[int, ...], rows: int = 400):
    """``rows`` rows of bin ``bin_`` decoded with a fine histogram weighing nothing and
    ``values`` the cells shown (``tails.shown_values``)."""
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    weights = {column.name: np.zeros(disc.fine[column.name].size)}
    codes = np.full((rows, 1), bin_)
    out = disc.decode(codes, np.random.default_rng(0), weights, rows, values={column.name: values})
    return out[column.name].to_numpy(dtype=np.float64)


def _cells(column: NumericColumn):
    return Discretiser(Schema((column,)), bins=BINS, fine_cells=128).fine[column.name]


def _fine(noisy: np.ndarray) -> Measurement:
    return Measurement(HistogramQuery("x", noisy.size), noisy, SIGMA, GaussianEvent(1.0, 1.0))


def test_a_known_value_is_shown_above_two_noise_scales_and_a_candidate_never() -> None:
    """The declared 0 at 2.3 scales (mathpnl's ``psa``) is shown, at 1.9 not; the
    declared end 4,000 (a candidate: nothing says the data hold it) never."""
    cells = _cells(NumericColumn("x", 0.0, 4000.0, integer=True, atoms=(0.0,)))
    zero = int(np.flatnonzero(cells.known_cells)[0])
    end = int(np.flatnonzero((np.arange(cells.size) < cells.atoms) & (cells.lo == 4000.0))[0])
    noisy = np.zeros(cells.size)
    noisy[[zero, end]] = 2.3 * SIGMA
    assert shown_values(cells, _fine(noisy)) == (zero,)
    noisy[zero] = 1.9 * SIGMA
    assert shown_values(cells, _fine(noisy)) == ()
    assert shown_values(cells, None) == ()


def test_a_shown_declared_zero_takes_its_bin_where_the_cells_show_nothing() -> None:
    column = NumericColumn("psa", 0.0, 4000.0, integer=True, atoms=(0.0,))
    zero = int(np.flatnonzero(_cells(column).known_cells)[0])
    assert np.all(_decoded(column, 0, (zero,)) == 0.0)
    # not shown: evenly over the bin's cells, the known value as one interval
    assert np.mean(_decoded(column, 0, ()) == 0.0) < 0.3


def test_a_shown_value_on_a_grid_takes_its_bin() -> None:
    """htv's mothers' schooling (0-22 years, 12 declared): the bin [11, 12.1) holds 11
    and 12; with nothing else shown, 12 (52% of the real rows) takes it."""
    column = NumericColumn("motheduc", 0.0, 22.0, integer=True, atoms=(12.0, 16.0))
    cells = _cells(column)
    twelve = int(np.flatnonzero(cells.lo == 12.0)[0])
    assert np.all(_decoded(column, 10, (twelve,)) == 12.0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 200), min_size=1, max_size=4, unique=True),
    st.lists(st.booleans(), min_size=4, max_size=4),
    st.integers(0, BINS - 1),
)
def test_only_the_shown_values_of_a_bin_are_drawn_and_each_of_them(
    at: list[int], shown: list[bool], bin_: int
) -> None:
    """Whatever values are declared (on a 0.5 grid of [0, 100]), whichever of them the
    histogram shows and whichever bin is drawn: where the bin holds a shown value, every
    row lands on one of its declared values and each is drawn (catholic's two lowest
    income brackets share a bin: the one shown alone had taken all its rows); where it
    holds none, the rows land within the bin."""
    atoms = tuple(sorted(v / 2 for v in at))
    column = NumericColumn("x", 0.0, 100.0, atoms=atoms)
    cells = _cells(column)
    known = np.flatnonzero(cells.known_cells)
    picked = tuple(int(c) for c, s in zip(known, shown, strict=False) if s)
    lo, hi = Discretiser(Schema((column,)), bins=BINS, fine_cells=128).edges("x")[bin_ : bin_ + 2]
    declared = {float(cells.lo[c]) for c in known if cells.coarse[c] == bin_}
    shown_here = any(cells.coarse[c] == bin_ for c in picked)
    values = _decoded(column, bin_, picked)
    if shown_here:
        assert set(np.unique(values)) == declared
    else:
        assert np.all((values >= lo) & (values <= hi))


def test_the_folds_carry_the_shown_values_to_the_draw() -> None:
    """mathpnl's ``psa`` as released (seed 0): every row in the first bin (the model's
    1-way: 1,536 rows there), 0's fine count 2.3 noise scales up, every other cell
    noise: the column's fold names 0's cell, and its bin's rows decode at 0."""
    column = NumericColumn("psa", 0.0, 4000.0, integer=True, atoms=(0.0,))
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    cells = disc.fine["psa"]
    zero = int(np.flatnonzero(cells.known_cells)[0])
    mass = np.r_[1536.0, np.zeros(BINS - 1)]
    event = GaussianEvent(np.sqrt(2.0), SIGMA, label="marginal")
    oneway = Measurement(MarginalQuery(("psa",)), mass + 0.0, SIGMA, event)
    noisy = np.zeros(cells.size)
    noisy[zero] = 2.3 * SIGMA
    fine = Measurement(HistogramQuery("psa", cells.size), noisy, SIGMA, event)
    weights = {"psa": np.zeros(cells.size)}
    fold = released_inward(disc, OneWayAnswers(mass), [oneway], weights, {"psa": fine})["psa"]  # type: ignore[arg-type]
    assert fold.values == (zero,)
    out = disc.decode(
        np.zeros((300, 1), dtype=np.int64), np.random.default_rng(0), weights, 1536,
        {"psa": fold.ends}, {"psa": fold.thin}, {"psa": fold.held}, values={"psa": fold.values},
    )  # fmt: skip
    assert np.all(out["psa"] == 0)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.integers(1, 199), min_size=1, max_size=4, unique=True),
    st.integers(0, BINS - 1),
    st.floats(0.001, 1.0),
    st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)
def test_known_values_take_at_least_their_declared_share_of_a_bin(
    at: list[int], bin_: int, share: float, seed: int | None
) -> None:
    """In a bin holding ``share`` of the column's rows, whatever its cells weigh (even,
    or released counts some of them zero), each known value takes at least
    ``ATOM_SHARE`` of the column (up to an equal part of the whole bin), never less than
    it weighed, and the other cells keep their proportions."""
    column = NumericColumn("x", 0.0, 100.0, atoms=tuple(sorted(v / 2 for v in at)))
    cells = _cells(column)
    inside = np.flatnonzero(cells.coarse == bin_)
    weights = even_weights(cells, inside)
    if seed is not None:
        rng = np.random.default_rng(seed)
        weights = rng.exponential(size=inside.size) * (rng.random(inside.size) < 0.7)
        if weights.sum() == 0:
            weights[0] = 1.0
    floored = known_floor(cells, inside, weights, share)
    held = cells.known_cells[inside]
    if not held.any() or held.all():
        assert np.allclose(floored, weights / weights.sum())
        return
    p, before = floored / floored.sum(), weights / weights.sum()
    least = min(ATOM_SHARE / share, 1.0 / held.sum())
    assert np.all(p[held] >= least - 1e-9)
    assert np.all(p[held] >= before[held] - 1e-9)
    rest = ~held
    if p[rest].sum() > 0:
        assert np.allclose(p[rest] / p[rest].sum(), before[rest] / before[rest].sum())


def test_a_known_value_its_bin_spreads_over_the_intervals_is_drawn() -> None:
    """jtrain3's earnings of 0 (declared; 13% of 1,070 rows, 1.9 noise scales: floored)
    beside the smoothed density of the first bin's intervals, [0, 7.5], 21% of the rows:
    0 takes at least 5% of the column, a quarter of its bin, not nothing."""
    column = NumericColumn("re78", 0.0, 150.0, atoms=(0.0,))
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    cells = disc.fine["re78"]
    weights = np.where(cells.coarse == 0, 50.0, 0.0)
    weights[cells.known_cells] = 0.0
    codes = np.r_[np.full(210, 0), np.full(790, 5)][:, None]
    out = disc.decode(codes, np.random.default_rng(0), {"re78": weights}, 1000)["re78"]
    at = float(np.mean(out.to_numpy()[:210] == 0.0))
    assert 0.18 <= at <= 0.32  # 50 of the bin's 210 rows


def test_a_bracket_takes_its_declared_share_of_a_bin_the_noise_hides() -> None:
    """bwght's family income in brackets (555 rows, 6-13% at each midpoint, declared):
    a bin of 10% of the rows whose cells show nothing, holding the 27.5 bracket, draws
    half its rows there, not one row in its cells' count."""
    column = NumericColumn("faminc", 0.0, 65.0, atoms=(22.5, 27.5, 32.5))
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    b = int(np.searchsorted(disc.edges("faminc"), 27.5, side="right") - 1)
    codes = np.r_[np.full(100, b), np.full(900, (b + 5) % BINS)][:, None]
    weights = {"faminc": np.zeros(disc.fine["faminc"].size)}
    out = disc.decode(codes, np.random.default_rng(0), weights, 1000)["faminc"].to_numpy()
    at = np.mean(out[:100] == 27.5)
    assert 0.4 <= at <= 0.6  # 5% of 1,000 rows = 50 of the bin's 100


def _y85educ(shown: float):
    """cps78_85's 1985 schooling as released (seed 0; 434 rows, 0 and 12 declared):
    the model's 1-way, the 1-way release (noise 50) and a fine histogram (noise 62.7)
    in which 0 stands out and 12 at ``shown`` noise scales."""
    column = NumericColumn("educ", 0.0, 20.0, integer=True, atoms=(0.0, 12.0))
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    cells = disc.fine["educ"]
    mass = np.zeros(BINS)
    mass[[0, 9, 12, 15, 19]] = [231.0, 3.0, 95.0, 52.0, 52.0]
    released = np.array([259, 79, -71, -37, 6, 6, 70, 14, -30, 8, -29, -26, 128, 36, 0, 75, 75,
                         -29, -58, 20], dtype=np.float64)  # fmt: skip
    event = GaussianEvent(np.sqrt(2.0), 50.0, label="marginal")
    oneway = Measurement(MarginalQuery(("educ",)), released, 50.0, event)
    noisy = np.zeros(cells.size)
    noisy[cells.lo == 0.0] = 245.0
    noisy[cells.lo == 12.0] = shown * 62.7
    fine = Measurement(HistogramQuery("educ", cells.size), noisy, 62.7, event)
    weights = {"educ": np.clip(noisy, 0.0, None)}
    return disc, OneWayAnswers(mass), oneway, fine, weights


def test_a_shown_known_value_keeps_its_bin_from_the_folds() -> None:
    """Every bin but 0's within the noise: the stretch from 12 years down to 1 had
    folded into 0, and every row of the column was drawn at 0 (53% of the real rows,
    12 years 20%). With 12 shown (2.5 noise scales; a value the public table holds at
    5% or more), its bin holds data: no stretch folds it, nor the bins between it and
    0; at 1.9 scales the fold stands."""
    disc, model, oneway, fine, weights = _y85educ(2.5)
    fold = released_inward(disc, model, [oneway], weights, {"educ": fine})["educ"]  # type: ignore[arg-type]
    assert 12 in fold.held and fold.target[12] == 12
    assert np.all(fold.target[1:12] == np.arange(1, 12))
    disc, model, oneway, fine, weights = _y85educ(1.9)
    fold = released_inward(disc, model, [oneway], weights, {"educ": fine})["educ"]  # type: ignore[arg-type]
    assert np.all(fold.target[:BINS] == 0)


def test_a_shown_value_leaves_a_hidden_column_hidden() -> None:
    """htv's fathers' schooling (492 rows, no bin's count 4 noise scales out; 12 years
    shown at 2.6): the column stays one the releases show nowhere, whose ends fold by
    at most one bin's noise (counted by depth), not whole into 12's bin."""
    column = NumericColumn("fatheduc", 0.0, 22.0, integer=True, atoms=(12.0, 16.0))
    disc = Discretiser(Schema((column,)), bins=BINS, fine_cells=128)
    cells = disc.fine["fatheduc"]
    mass = np.zeros(BINS)
    mass[[3, 7, 10, 11, 15, 16]] = [9.0, 34.0, 261.0, 32.0, 3.0, 152.0]
    released = np.array([0, -35, 37, -36, -4, 46, 37, 71, 11, -69, 220, 33, 57, 25, -70, -4,
                         160, -59, 61, 38], dtype=np.float64)  # fmt: skip
    event = GaussianEvent(np.sqrt(2.0), 64.0, label="marginal")
    oneway = Measurement(MarginalQuery(("fatheduc",)), released, 64.0, event)
    noisy = np.zeros(cells.size)
    noisy[cells.lo == 12.0] = 2.6 * 84.9
    fine = Measurement(HistogramQuery("fatheduc", cells.size), noisy, 84.9, event)
    weights = {"fatheduc": np.clip(noisy, 0.0, None)}
    fold = released_inward(disc, OneWayAnswers(mass), [oneway], weights, {"fatheduc": fine})  # type: ignore[arg-type]
    target = fold["fatheduc"].target[:BINS]
    assert 10 in fold["fatheduc"].held
    assert target[16] == 16  # 152 model rows: more than one bin's noise, counted by depth
