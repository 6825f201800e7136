"""Noisy marginals (release) and the weighted pool fitted to them (post-processing)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpevolve import Synthesizer
from dpevolve.data.encoding import Layout, Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.hybrid.fit import MarginalFit, allocate, draw_rows, project_simplex
from dpevolve.pe.hybrid.marginals import CellIndex, Workload, l2_change, measure_marginals
from dpevolve.pe.hybrid.tail import MarginalOptions, split_budget
from dpevolve.pe.specs import MarginalSpec
from dpevolve.pe.variation import Variation
from dpevolve.presets import get_method
from dpevolve.privacy import Accountant, Budget


class _NoNoise:
    """Exact counts: isolates the fit from the release noise."""

    def gaussian(self, values: np.ndarray, sigma: float) -> np.ndarray:
        return np.asarray(values, dtype=np.float64).copy()


class _Recorder:
    """Remembers the sigma it was asked for."""

    sigma = math.nan

    def gaussian(self, values: np.ndarray, sigma: float) -> np.ndarray:
        self.sigma = sigma
        return np.asarray(values, dtype=np.float64).copy()


@pytest.fixture(scope="module")
def tiny_schema() -> Schema:
    return Schema(
        (
            NumericColumn("x", 0, 3, integer=True),
            CategoricalColumn("a", ("p", "q")),
            CategoricalColumn("b", ("u", "v", "w")),
        ),
        label="b",
    )


def _domain(schema: Schema) -> Records:
    """Every record of the tiny domain, encoded."""
    rows = list(itertools.product(range(4), ("p", "q"), ("u", "v", "w")))
    return encode(pd.DataFrame(rows, columns=schema.names), schema)


@pytest.mark.parametrize(
    ("coarse_order", "sets"),
    [(0, 6), (3, 7)],  # 3 one-way + 3 two-way (+ 1 coarse 3-way)
)
def test_sensitivity_is_the_brute_forced_max_l2_change(
    tiny_schema: Schema, coarse_order: int, sets: int
) -> None:
    workload = Workload.all_up_to(tiny_schema, order=2, bins=2, coarse_order=coarse_order)
    assert len(workload.sets) == sets
    index = CellIndex(tiny_schema, workload)
    assert index.total_cells == (2 + 2 + 3) + (2 * 2 + 2 * 3 + 2 * 3) + (12 if sets == 7 else 0)
    domain = _domain(tiny_schema)
    others = domain.take(np.array([0, 7, 13]))  # the rest of the table: counts cancel
    largest = 0.0
    for i, j in itertools.product(range(len(domain)), repeat=2):
        before = Records.concat([others, domain.take(np.array([i]))])
        after = Records.concat([others, domain.take(np.array([j]))])
        largest = max(largest, l2_change(index, before, after))
    assert largest == pytest.approx(workload.sensitivity)
    assert workload.sensitivity == pytest.approx(math.sqrt(2 * sets))


def test_release_calibrates_sigma_and_event(tiny_schema: Schema) -> None:
    workload = Workload.all_up_to(tiny_schema)
    noise = _Recorder()
    released = measure_marginals(_domain(tiny_schema), tiny_schema, workload, 0.05, noise)
    assert noise.sigma == pytest.approx(workload.sensitivity / math.sqrt(2 * 0.05))
    assert released.event.rho == pytest.approx(0.05)
    assert released.sigma == noise.sigma
    assert released.query.cliques == workload.sets
    assert not released.noisy.flags.writeable
    # Exact counts of the full domain: every 1-way cell of b holds 8 of 24 rows.
    b = workload.sets.index(("b",))
    assert CellIndex(tiny_schema, workload).part(released.noisy, b).tolist() == [8.0, 8.0, 8.0]


def test_counting_streams_over_batches(tiny_schema: Schema) -> None:
    workload = Workload.all_up_to(tiny_schema)
    domain = _domain(tiny_schema)
    whole = measure_marginals(domain, tiny_schema, workload, 1.0, _NoNoise())
    parts = [domain.take(slice(0, 5)), domain.take(slice(5, 24))]
    streamed = measure_marginals(lambda: iter(parts), tiny_schema, workload, 1.0, _NoNoise())
    np.testing.assert_array_equal(whole.noisy, streamed.noisy)


def test_counting_slices_stay_within_the_index_budget(tiny_schema, monkeypatch) -> None:
    """However many sets, one slice holds at most INDEX_CELLS cell indices; the counts
    are those of one pass over every record, locally and through a backend."""
    import dpevolve.pe.hybrid.marginals as marginals
    from dpevolve.backends import LocalBackend

    workload = Workload.all_up_to(tiny_schema)
    index = CellIndex(tiny_schema, workload)
    domain = _domain(tiny_schema)
    want = index.counts(domain)
    monkeypatch.setattr(marginals, "INDEX_CELLS", 2 * len(workload.sets))
    seen: list[int] = []
    real = CellIndex.index

    def spy(self, records):
        out = real(self, records)
        seen.append(out.size)
        return out

    monkeypatch.setattr(CellIndex, "index", spy)
    for backend in (None, LocalBackend()):
        got, rows = marginals.count_workload(domain, index, backend=backend)
        np.testing.assert_array_equal(got, want)
        assert rows == len(domain)
    assert seen and max(seen) <= 2 * len(workload.sets)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(1, 40), elements=st.floats(-5, 5)))
def test_projection_lands_on_the_simplex_and_is_closest(v: np.ndarray) -> None:
    w = project_simplex(v)
    assert (w >= 0).all()
    assert w.sum() == pytest.approx(1.0)
    # Optimality: no vertex of the simplex is closer to v than the projection.
    for k in range(len(v)):
        vertex = np.zeros(len(v))
        vertex[k] = 1.0
        assert np.linalg.norm(v - w) <= np.linalg.norm(v - vertex) + 1e-9


@pytest.mark.parametrize("solver", ["fista", "mw"])
def test_fit_drives_the_error_to_exact_marginals_down(
    small_schema, small_table, solver: str
) -> None:
    private = encode(small_schema.validate(small_table)[0], small_schema)
    workload = Workload.all_up_to(small_schema)
    index = CellIndex(small_schema, workload)
    released = measure_marginals(private, small_schema, workload, 1.0, _NoNoise())
    rng = np.random.default_rng(0)
    pool = Variation(Layout.of(small_schema)).random(300, rng)
    fitter = MarginalFit(index, released, len(private), iterations=300, solver=solver)  # type: ignore[arg-type]
    uniform = fitter.loss(pool, np.full(len(pool), 1 / len(pool)))
    result = fitter.fit(pool, rng)
    assert result.weights.sum() == pytest.approx(1.0) and (result.weights >= 0).all()
    assert result.loss == pytest.approx(fitter.loss(pool, result.weights))
    assert result.loss < 0.5 * uniform
    # Growing the pool (post-processing) gets closer still.
    grown, better = fitter.grow(pool, Variation(index.binning.layout), rng, rounds=3, children=600)
    assert better.loss < result.loss
    assert len(grown) == len(better.weights)
    # A pool holding the table itself can match its marginals exactly.
    exact = fitter.fit(Records.concat([pool, private]), rng)
    assert exact.loss < 1e-3 * uniform


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, st.integers(1, 30), elements=st.floats(0, 1)),
    st.integers(0, 500),
    st.integers(0, 2**32 - 1),
)
def test_allocation_honours_num_rows(w: np.ndarray, num_rows: int, seed: int) -> None:
    counts = allocate(w, num_rows, np.random.default_rng(seed))
    assert counts.sum() == num_rows and (counts >= 0).all()
    if w.sum() > 0:
        share = w / w.sum()
        assert (counts >= np.floor(share * num_rows)).all()
        assert (counts[share == 0] == 0).all()


def test_jitter_keeps_every_cell(small_schema, small_table) -> None:
    private = encode(small_schema.validate(small_table)[0], small_schema)
    workload = Workload.all_up_to(small_schema, coarse_order=3, coarse_bins=4)
    index = CellIndex(small_schema, workload)
    weights = np.full(len(private), 1 / len(private))
    kept = draw_rows(private, weights, 1000, np.random.default_rng(3), index, "keep")
    jittered = draw_rows(private, weights, 1000, np.random.default_rng(3), index, "jitter")
    assert len(kept) == len(jittered) == 1000
    np.testing.assert_array_equal(index.index(kept), index.index(jittered))
    assert not np.array_equal(kept.numeric, jittered.numeric)
    np.testing.assert_array_equal(kept.codes, jittered.codes)


@pytest.mark.parametrize("share", [0.25, 0.75, 1.0])
@pytest.mark.parametrize("budget", [Budget(epsilon=1.0, delta=1e-5), Budget(rho=0.3)])
def test_split_composes_to_the_target(share: float, budget: Budget) -> None:
    from dpevolve.privacy import GaussianEvent, calibrate_gaussian

    pe, marginal_rho = split_budget(budget, share)
    sigma_m = math.sqrt(12) / math.sqrt(2 * marginal_rho)
    events = [GaussianEvent(math.sqrt(12), sigma_m, discrete=True)]
    if pe is not None:
        z = calibrate_gaussian(7, pe, discrete=True)
        events += [GaussianEvent(1.0, z, discrete=True)] * 7
    rho = sum(e.rho for e in events)
    if budget.rho is not None:
        assert rho == pytest.approx(budget.rho) and rho <= budget.rho
    else:
        eps = Accountant(1e-5, methods=("zcdp",)).epsilon(events).epsilon
        assert eps <= 1.0 and eps == pytest.approx(1.0, abs=1e-6)
    with pytest.raises(InputError):
        split_budget(budget, 0.0)


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_synthesizer_samples_num_rows_from_the_weighted_support(
    small_schema, small_table, share: float
) -> None:
    options = MarginalOptions(grow_rounds=2, children=200, iterations=100)
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        delta=1e-5,
        random_state=0,
        noise_seed=0,
        method=get_method(
            "tabpe", population=40, rounds=3, marginals=MarginalSpec(share=share, options=options)
        ),
    )
    model.fit(small_table)
    assert len(model.sample()) == len(small_table)  # default: the private row count
    frame = model.sample(123)
    assert len(frame) == 123
    small_schema.validate(frame)  # inside the declared domain
    ledger = model.ledger_.to_dict()
    assert ledger["epsilon"] <= 1.0 + 1e-9
    assert ledger["epsilon"] == pytest.approx(1.0, abs=1e-6)
    mechanisms = [e["mechanism"] for e in ledger["events"]]
    assert mechanisms[-1] == "marginals"
    assert len(mechanisms) == (1 if share == 1.0 else 4)
    assert ledger["events"][-1]["round"] == len(mechanisms)
    assert ledger["marginals"]["pe_rounds_run"] == (share < 1.0)
    assert ledger["marginals"]["share"] == share
    # Deterministic given the seed (post-processing randomness follows it).
    first = Synthesizer(**model.get_params()).fit(small_table).sample(50)
    second = Synthesizer(**model.get_params()).fit(small_table).sample(50)
    pd.testing.assert_frame_equal(first, second)


def test_streamed_fit_equals_in_memory_fit(tmp_path, small_schema, small_table) -> None:
    path = tmp_path / "private.csv"
    small_table.to_csv(path, index=False)
    settings = {
        "epsilon": 1.0,
        "random_state": 5,
        "noise_seed": 5,
        "method": get_method(
            "tabpe",
            population=32,
            rounds=2,
            marginals=MarginalSpec(
                share=0.5, options={"grow_rounds": 1, "children": 100, "iterations": 50}
            ),
        ),
    }
    whole = Synthesizer(small_schema, **settings).fit(pd.read_csv(path))
    streamed = Synthesizer(small_schema, **settings).fit_file(path, batch_rows=37)
    np.testing.assert_array_equal(streamed.support_.released.noisy, whole.support_.released.noisy)
    pd.testing.assert_frame_equal(streamed.sample(80), whole.sample(80))
