"""Point bins (docs/engine.md, Point bins): a bin holding a single value enters every
fit with that value's count as the fine histogram released it, at that count's own
weight, and nothing is charged for it."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.schema import NumericColumn, Schema
from dpevolve.engine.bins import atom_edges
from dpevolve.engine.discretise import Discretiser
from dpevolve.engine.points import POINT, point_bins, point_measurements
from dpevolve.estimate import MarkovRandomField
from dpevolve.measurements import HistogramQuery, MarginalQuery, Measurement
from dpevolve.privacy import GaussianEvent

SCHEMA = Schema(
    (
        NumericColumn("exper", 0, 22, integer=True),  # a grid: one fine cell per value
        NumericColumn("tax", 0.0, 45.0, decimals=1, atoms=(10.0, 26.0)),
        NumericColumn("income", 0.0, 200.0, nullable=True),
    )
)


def _fine(discretiser: Discretiser, sigma: float, seed: int) -> dict[str, Measurement]:
    rng = np.random.default_rng(seed)
    out = {}
    for column in discretiser.numeric:
        size = discretiser.fine[column.name].size
        event = GaussianEvent(np.sqrt(2.0), sigma, label="fine:" + column.name)
        out[column.name] = Measurement(
            HistogramQuery(column.name, size), rng.normal(50.0, sigma, size), sigma, event
        )
    return out


def test_point_bins_are_a_grid_s_single_values_and_atoms_own_bins() -> None:
    """Whole numbers 0-22 in 20 bins: the bins holding one value are point bins, those
    holding two are not; a column of tenths with two declared atoms: their own bins
    only; a column of intervals without atoms: none."""
    tax = SCHEMA.columns[1]
    assert isinstance(tax, NumericColumn)
    bounds = Discretiser(SCHEMA, 20, 128).fine["tax"].boundaries
    picks = bounds[np.linspace(0, bounds.size - 1, 17).round().astype(int)]
    edges = sorted({*picks.tolist(), *atom_edges(tax, tax.atoms)})
    discretiser = Discretiser(SCHEMA, 20, 128, {"tax": np.array(edges)}, nested={"tax"})
    cells = discretiser.fine["exper"]
    held = np.bincount(cells.coarse[: cells.values], minlength=20)
    points = point_bins(discretiser, "exper")
    assert set(points) == set(np.flatnonzero(held == 1).tolist())
    assert all(cells.lo[c] == cells.lo[c].round() for c in points.values())
    taxes = point_bins(discretiser, "tax")
    assert sorted(discretiser.fine["tax"].lo[c] for c in taxes.values()) == [10.0, 26.0]
    assert point_bins(discretiser, "income") == {}


@settings(max_examples=60, deadline=None)
@given(
    sigma=st.floats(1.0, 200.0),
    seed=st.integers(0, 10_000),
    n=st.integers(100, 100_000),
)
def test_a_point_measurement_weighs_its_bin_as_the_fine_cell_does(
    sigma: float, seed: int, n: int
) -> None:
    """For any 1-way holding ``n`` rows, each point measurement's squared error over its
    noise scale squared is the point bin's error against its fine cell's count over
    the fine noise scale squared: the bin has the fine cell's own weight. Each is free
    (sensitivity 0) and labelled for its column."""
    discretiser = Discretiser(SCHEMA, 20, 128)
    fine = _fine(discretiser, sigma, seed)
    rng = np.random.default_rng(seed + 1)
    for m in point_measurements(discretiser, fine, n):
        name = m.clique[0]
        x = rng.dirichlet(np.ones(discretiser.domain.shape((name,))[0])) * n
        assert isinstance(m.query, MarginalQuery)
        error = float(np.sum((m.query.project(x) - m.noisy) ** 2)) / m.sigma**2
        b = m.query.groups[0].index(0)  # type: ignore[index]
        y = fine[name].noisy[point_bins(discretiser, name)[b]]
        assert np.isclose(error, (x[b] - y) ** 2 / sigma**2, rtol=1e-9, atol=1e-9)
        assert m.event.sensitivity == 0.0 and m.event.label == POINT + name


def test_the_fit_reads_a_point_bin_from_its_fine_cell() -> None:
    """wagepan's years of experience: a 1-way at noise 167 says a value of 200 rows
    holds -108, its fine cell at noise 57 says 243. Fitted to the 1-way alone the model
    holds the bin near 0; with the point measurement, near the two counts' precision-
    weighted mean (about 206)."""
    schema = Schema((NumericColumn("k", 0, 19, integer=True),))
    discretiser = Discretiser(schema, 20, 128)
    n = 2000
    truth = np.full(20, 100.0)
    oneway = truth.copy()
    oneway[4] = -108.0
    oneway[5] = 324.0  # the noise's other side, so the 1-way still sums to n
    event = GaussianEvent(np.sqrt(2.0), 167.0, label="marginal")
    released = Measurement(MarginalQuery(("k",)), oneway, 167.0, event)
    fine_counts = truth.copy()
    fine_counts[4] = 243.0
    fine = {"k": Measurement(HistogramQuery("k", 20), fine_counts, 57.0, event)}
    alone = MarkovRandomField(discretiser.domain, n, iterations=500).fit([released])
    both = MarkovRandomField(discretiser.domain, n, iterations=500).fit(
        [released, *point_measurements(discretiser, fine, n)]
    )
    assert alone.answer(("k",))[4] < 20.0
    weighted = (243.0 / 57.0**2 - 108.0 / 167.0**2) / (1 / 57.0**2 + 1 / 167.0**2)
    assert abs(both.answer(("k",))[4] - weighted) < 25.0
