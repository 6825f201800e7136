"""The 1-ways' share of the budget on small tables (engine/plan.py, ``oneway_share``):
``EngineSpec.oneway_share``, or more, up to ``oneway_most``, as keeps a 1-way's noise
within a bin's mean count (docs/engine.md, Bins)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.engine import EngineSpec
from dpevolve.engine.plan import Plan, oneway_share
from dpevolve.errors import InputError
from dpevolve.privacy import Budget

BUDGETS = st.sampled_from([Budget(epsilon=1.0, delta=1e-5), Budget(epsilon=0.3, delta=1e-6)])


def _rest(plan: Plan) -> float:
    return plan.total - plan.fine - plan.atoms - plan.zoom


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    rows=st.integers(20, 200_000),
    columns=st.integers(1, 120),
    numeric=st.integers(0, 120),
    budget=BUDGETS,
)
def test_the_ones_noise_stays_within_a_bins_count_as_far_as_the_cap_allows(
    rows: int, columns: int, numeric: int, budget: Budget
) -> None:
    spec = EngineSpec().for_rows(rows)
    numeric = min(numeric, columns)
    plan = Plan.of(budget, spec, columns, numeric, rows=rows)
    share = plan.oneway / _rest(plan)
    assert spec.oneway_share - 1e-12 <= share <= spec.oneway_most + 1e-12
    sigma, bin_count = plan.schedule().oneway, rows / spec.numeric_bins
    raised, capped = share > spec.oneway_share + 1e-12, share > spec.oneway_most - 1e-12
    if not capped:  # within a bin's count
        assert sigma <= bin_count * (1 + 1e-9)
    if raised and not capped:  # no more than it takes
        assert sigma == pytest.approx(bin_count, rel=1e-9)
    if capped:  # the cap holds it: the noise is past a bin's count
        assert sigma >= bin_count * (1 - 1e-9)
    # the rest of the split still adds up to the budget
    parts = plan.fine + plan.oneway + plan.relations + plan.tree + plan.rounds + plan.pe
    assert parts == pytest.approx(plan.total, rel=1e-12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(rows=st.integers(20, 50_000), more=st.integers(1, 50_000), columns=st.integers(1, 80))
def test_fewer_rows_never_get_less_of_the_budget(rows: int, more: int, columns: int) -> None:
    spec = EngineSpec().for_rows(rows)  # same bins on both sides
    rest = 0.02
    assert oneway_share(spec, columns, rows, rest) >= oneway_share(spec, columns, rows + more, rest)


def test_a_large_table_keeps_the_usual_share_bit_for_bit() -> None:
    """Where the usual share keeps a 1-way within a bin's count, the plan is as before."""
    budget, spec = Budget(epsilon=1.0, delta=1e-5), EngineSpec().for_rows(18_413)
    before = Plan.of(budget, spec, 9, 5)
    assert Plan.of(budget, spec, 9, 5, rows=18_413) == before
    assert before.oneway == spec.oneway_share * _rest(before)


def test_a_small_table_gets_its_noise_down_to_a_bins_count() -> None:
    """``bwght``: 555 private rows, 14 columns, 10 bins (the numbers in the docs)."""
    budget, spec = Budget(epsilon=1.0, delta=1e-5), EngineSpec().for_rows(555)
    usual = Plan.of(budget, spec, 14, 1).schedule().oneway
    small = Plan.of(budget, spec, 14, 1, rows=555).schedule().oneway
    assert usual == pytest.approx(89.7, abs=0.1)
    assert small == pytest.approx(55.5, abs=1e-6) and spec.numeric_bins == 10


def test_oneway_most_zero_turns_the_rule_off_and_bad_values_are_refused() -> None:
    spec = EngineSpec(oneway_most=0.0).for_rows(100)
    plan = Plan.of(Budget(epsilon=1.0, delta=1e-5), spec, 14, 3, rows=100)
    assert plan.oneway == pytest.approx(spec.oneway_share * _rest(plan), rel=1e-12)
    with pytest.raises(InputError, match="oneway_most"):
        EngineSpec(oneway_most=1.5)
    with pytest.raises(InputError, match="pe_share"):
        EngineSpec(oneway_most=0.9, pe_share=0.2)
