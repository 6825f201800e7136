"""The engine's privacy numbers: sensitivities, each event's zCDP, the split's total."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine
from dpevolve.engine.measure import MARGINAL_SENSITIVITY, marginal_event, sigma_for
from dpevolve.engine.plan import SLACK, Plan, Spend, round_cost
from dpevolve.engine.select import L1_SENSITIVITY, selection_event
from dpevolve.errors import InputError, PrivacyError
from dpevolve.privacy import Accountant, Budget, ExponentialEvent, GaussianEvent, zcdp_budget
from dpevolve.privacy.audit import cks_epsilon
from dpevolve.privacy.conversions import epsilon_from_rho
from dpevolve.privacy.noise import SeededNoise


def test_each_event_costs_what_the_formulas_say() -> None:
    assert MARGINAL_SENSITIVITY == math.sqrt(2.0)
    assert L1_SENSITIVITY == 2.0
    event = marginal_event(10.0)
    assert event.rho == pytest.approx(2.0 / (2.0 * 100.0))
    assert marginal_event(sigma_for(0.003)).rho == pytest.approx(0.003)
    pick = ExponentialEvent(0.2, 3.0)
    assert pick.rho == pytest.approx(0.2**2 / 8) and pick.scale == pytest.approx(30.0)
    assert pick.claim() == (0.2, 0.0)
    assert pick.to_dict()["kind"] == "exponential"
    with pytest.raises(InputError, match="epsilon"):
        ExponentialEvent(0.0, 1.0)
    assert round_cost(10.0, 0.2) == pytest.approx(0.01 + 0.005)


def test_the_accountant_composes_selections_in_zcdp_and_as_pure_dp() -> None:
    acc = Accountant(1e-5)
    mixed = [GaussianEvent(math.sqrt(2), 20.0, discrete=True), ExponentialEvent(0.3, 2.0)]
    result = acc.epsilon(mixed)
    rho = 1.0 / 400.0 + 0.3**2 / 8
    assert result.method == "zcdp"
    assert result.epsilon == pytest.approx(epsilon_from_rho(rho, 1e-5, "cks"))
    assert result.epsilon == pytest.approx(cks_epsilon(rho, 1e-5), rel=1e-6)
    picks = [ExponentialEvent(0.1, 2.0)] * 5
    alone = acc.epsilon(picks)
    assert alone.by_method["basic"] == pytest.approx(0.5)
    assert alone.epsilon <= 0.5 + 1e-9  # pld or zcdp may beat basic composition
    assert "pld" in alone.by_method and "rdp" not in alone.by_method


@pytest.mark.parametrize("budget", [Budget(epsilon=1.0, delta=1e-5), Budget(rho=0.05)])
def test_the_plan_splits_exactly_the_budget(budget) -> None:
    spec = EngineSpec()
    plan = Plan.of(budget, spec, columns=9, numeric=5)
    assert plan.total == pytest.approx(zcdp_budget(budget) * SLACK)
    parts = plan.fine + plan.oneway + plan.relations + plan.tree + plan.rounds + plan.pe
    assert parts == pytest.approx(plan.total, rel=1e-12)
    assert plan.fine == pytest.approx(spec.fine_share * plan.total)
    assert plan.pe == pytest.approx(spec.pe_share * plan.total)
    sigma, eps = plan.round_parameters(0.004)
    assert round_cost(sigma, eps) == pytest.approx(0.004)
    assert eps**2 / 8 == pytest.approx(spec.select_share * 0.004)
    assert Plan.of(budget, spec, columns=9, numeric=0).fine == 0.0
    mostly_categorical = Plan.of(budget, spec, columns=9, numeric=3)
    assert mostly_categorical.pe == 0.0
    after = mostly_categorical.rounds + mostly_categorical.tree + mostly_categorical.relations
    assert after == pytest.approx(plan.rounds + plan.tree + plan.relations + plan.pe, rel=1e-12)


def test_spend_refuses_to_go_past_the_limit() -> None:
    spend = Spend(0.01)
    spend.charge(marginal_event(sigma_for(0.006)))
    with pytest.raises(PrivacyError):
        spend.charge(selection_event(math.sqrt(8 * 0.005), [1.0]))
    assert len(spend.events) == 1


@pytest.mark.parametrize("on_invalid", ["error", "drop"])
def test_a_run_spends_its_budget_and_the_ledger_agrees(nulls_schema, standin, on_invalid) -> None:
    rng = np.random.default_rng(0)
    n = 400
    table = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n),
            "spend": rng.random(n) * 100,
            "job": rng.choice(["a", "b", None], n),
            "y": rng.choice(["no", "yes"], n),
        }
    )
    if on_invalid == "drop":
        table.loc[0, "age"] = 120  # invalid: dropped, n stays public
    budget = Budget(epsilon=1.0, delta=1e-5)
    result = fit_engine(
        FrameSource(table, nulls_schema, on_invalid=on_invalid),
        nulls_schema,
        budget,
        EngineSpec(bins=4, fine_cells=12, rounds=6, pe_candidates=40),  # 10 rows each
        noise=SeededNoise(3),
        rng=rng,
        **standin,
    )
    events = result.events
    total = sum(e.rho for e in events)
    assert total <= zcdp_budget(budget)
    assert total == pytest.approx(zcdp_budget(budget), rel=1e-8)  # the last round spends the rest
    independent = cks_epsilon(total, 1e-5)
    ledger = result.ledger.to_dict()
    assert ledger["epsilon"] <= 1.0 and ledger["epsilon"] == pytest.approx(independent, rel=1e-6)
    kinds = [e["kind"] for e in ledger["events"]]
    selections = kinds.count("exponential")
    assert selections == len(result.history) >= 1
    # atom releases and fine histograms (2 numeric columns, each holding more values than
    # 12 fine cells), 4 one-ways, one marginal per selection, and the PE stage's votes
    assert kinds.count("gaussian") == 2 + 2 + 4 + selections + EngineSpec().pe_rounds
    assert len(result.measurements.marginals()) == 4 + selections
    assert result.measurements.events() == list(events)  # every release, in ledger order
    assert all(isinstance(e, GaussianEvent | ExponentialEvent) for e in events)
    assert ledger["engine"]["spec"]["rounds"] == 6
    assert not any("noisy" in e for e in ledger["events"])
