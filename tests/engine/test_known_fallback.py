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
from dpevolve.engine.cells import even_weights
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


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(1, 199), min_size=1, max_size=4, unique=True),
    st.integers(0, BINS - 1),
    st.floats(0.001, 1.0),
)
def test_known_values_take_at_least_their_declared_share_of_a_bin(
    at: list[int], bin_: int, share: float
) -> None:
    """In a bin holding ``share`` of the column's rows whose cells weigh nothing, its
    known values together take at least ``ATOM_SHARE`` of the column each (up to the
    whole bin), never less than as cells of an even density, and the other cells keep
    their proportions."""
    column = NumericColumn("x", 0.0, 100.0, atoms=tuple(sorted(v / 2 for v in at)))
    cells = _cells(column)
    inside = np.flatnonzero(cells.coarse == bin_)
    even = even_weights(cells, inside)
    floored = even_weights(cells, inside, share)
    held = cells.known_cells[inside]
    if not held.any() or held.all():
        assert np.allclose(floored, even)
        return
    least = min(1.0, held.sum() * ATOM_SHARE / share)
    part = floored[held].sum() / floored.sum()
    assert part >= min(least, 1.0) - 1e-9
    assert part >= even[held].sum() / even.sum() - 1e-9
    rest = ~held
    if floored[rest].sum() > 0:
        assert np.allclose(floored[rest] / floored[rest].sum(), even[rest] / even[rest].sum())


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
