"""The engine end to end: rounds, fresh rows, the one-call form, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.sources import FrameSource
from dpevolve.engine import EngineSpec, fit_engine, synthesize
from dpevolve.errors import InputError
from dpevolve.privacy import Budget, Ledger
from dpevolve.privacy.noise import SeededNoise


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n)
    y = np.where(rng.random(n) < (age - 17) / 73, "yes", "no")
    return pd.DataFrame(
        {
            "age": age,
            "spend": np.where(rng.random(n) < 0.3, 0.0, rng.random(n) * 100),
            "job": rng.choice(["a", "b", None], n),
            "y": y,
        }
    )


def test_rounds_select_the_label_and_rows_are_fresh(nulls_schema, standin) -> None:
    table = _table(3000)
    ledger = Ledger(1e-5, {"preset": "engine-test"})
    result = fit_engine(
        FrameSource(table, nulls_schema),
        nulls_schema,
        Budget(epsilon=2.0, delta=1e-5),
        EngineSpec(bins=5, fine_cells=40, rounds=8),
        noise=SeededNoise(1),
        rng=np.random.default_rng(0),
        ledger=ledger,
        **standin,
    )
    assert result.ledger is ledger and ledger.metadata["preset"] == "engine-test"
    assert result.history and all(h["sigma"] > 0 for h in result.history)
    picked = [h["clique"] for h in result.history]
    assert any("y" in c and "age" in c for c in picked)  # the strongest link is found
    out = result.sample(5000, np.random.default_rng(1))
    assert len(out) == 5000 and list(out.columns) == nulls_schema.names
    nulls_schema.validate(out)
    young = out["age"] < 35
    assert out.loc[young, "y"].eq("yes").mean() < out.loc[~young, "y"].eq("yes").mean() - 0.2
    assert (out["spend"] == 0).mean() == pytest.approx(0.3, abs=0.06)  # the point mass
    again = result.sample(5000, np.random.default_rng(2))
    assert not out.equals(again)  # fresh draws, not a fixed support
    assert len(result.sample(rng=np.random.default_rng(0))) == 3000  # default: n rows


def test_synthesize_in_one_call_with_the_estimator() -> None:
    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    schema = Schema(
        (NumericColumn("age", 17, 90, integer=True), CategoricalColumn("y", ("no", "yes"))),
        label="y",
    )
    table = _table(800)[["age", "y"]]
    spec = EngineSpec(rounds=3, round_iters=20, final_iters=40)
    out = synthesize(table, schema, epsilon=1.0, rows=300, seed=0, noise_seed=5, spec=spec)
    assert len(out) == 300
    schema.validate(out)
    same = synthesize(table, schema, epsilon=1.0, rows=300, seed=0, noise_seed=5, spec=spec)
    assert out.equals(same)  # research reproduction: seed and noise seed fix the output


def test_bad_input_fails_before_any_budget_is_spent(nulls_schema) -> None:
    table = _table(50)
    table.loc[3, "age"] = 500
    with pytest.raises(InputError, match="age"):
        synthesize(table, nulls_schema, epsilon=1.0)
    with pytest.raises(InputError, match="max_order"):
        EngineSpec(max_order=5)
    with pytest.raises(InputError, match="unknown engine options"):
        EngineSpec.from_any({"bogus": 1})
    with pytest.raises(InputError, match="coarse_splits"):
        EngineSpec(coarse_splits=(0.5, 1.0))
    with pytest.raises(InputError, match="coarse_all"):
        EngineSpec(coarse_all=-1)
    assert EngineSpec(coarse_splits=(0.75, 0.25, 0.75)).coarse_splits == (0.25, 0.75)


def test_a_capped_candidate_list_still_runs_and_keeps_the_budget(nulls_schema, standin) -> None:
    result = fit_engine(
        FrameSource(_table(500), nulls_schema),
        nulls_schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(bins=4, fine_cells=12, rounds=5, max_candidates=5, max_order=4),
        noise=SeededNoise(2),
        rng=np.random.default_rng(0),
        **standin,
    )
    assert result.history
    assert result.ledger.result().epsilon <= 1.0


def test_a_parity_of_three_signs_is_found_in_the_first_adaptive_round(standin) -> None:
    from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema

    names = ("a", "b", "c")
    schema = Schema(
        (*(NumericColumn(a, -1.0, 1.0) for a in names), CategoricalColumn("y", ("0", "1"))),
        label="y",
    )
    rng = np.random.default_rng(3)
    x = rng.uniform(-1.0, 1.0, size=(3000, 3))
    table = pd.DataFrame(x, columns=list(names))
    table["y"] = ((x > 0).sum(axis=1) % 2).astype(str)
    result = fit_engine(
        FrameSource(table, schema),
        schema,
        Budget(epsilon=1.0, delta=1e-5),
        EngineSpec(bins=4, fine_cells=8, rounds=6),
        noise=SeededNoise(4),
        rng=np.random.default_rng(0),
        **standin,
    )
    first = next(h for h in result.history if h.get("stage") is None)
    assert first["clique"] == ("a", "b", "c", "y") and first["groups"] == [2, 2, 2, None]
    assert first["grouping"] == [[0, 0, 1, 1]] * 3 + [None]
    # the ledger states each coarse release's grouping as the history does
    events = result.ledger.to_dict()["events"]
    coarse = [e for e in events if e.get("grouping") and e["round"] == first["round"]]
    assert coarse and all(e["grouping"] == first["grouping"] for e in coarse)
    rows = result.sample(2000, np.random.default_rng(1))
    parity = ((rows[list(names)].to_numpy() > 0).sum(axis=1) % 2).astype(str)
    assert (parity == rows["y"].to_numpy()).mean() > 0.9


def test_the_ledger_states_an_uneven_grouping_exactly() -> None:
    """A cut at 3/4 of the range must not read like a midpoint cut (same group count)."""
    from dpevolve.engine.rounds import grouping_facts
    from dpevolve.measurements import MarginalQuery

    uneven = MarginalQuery(("x", "y"), groups=((0, 0, 0, 1), None))
    even = MarginalQuery(("x", "y"), groups=((0, 0, 1, 1), None))
    assert grouping_facts(uneven) == {"groups": [2, None], "grouping": [[0, 0, 0, 1], None]}
    assert grouping_facts(uneven)["groups"] == grouping_facts(even)["groups"]
    assert grouping_facts(uneven) != grouping_facts(even)
    assert grouping_facts(MarginalQuery(("x", "y"))) == {}


def test_refits_stop_at_round_tol_and_the_last_fit_at_final_tol(nulls_schema) -> None:
    """The estimator's refits run at ``round_tol`` and the last fit at ``final_tol``
    (docs/engine.md, Options): each fit's tolerance and cap are what the spec says."""
    from dpevolve.engine.loop import default_estimator
    from dpevolve.estimate import MarkovRandomField

    seen: list[tuple[float, int]] = []

    class Recording(MarkovRandomField):
        def fit(self, measurements):  # type: ignore[no-untyped-def]
            seen.append((self.tol, self.iterations))
            return super().fit(measurements)

    def factory(domain, total, spec):  # type: ignore[no-untyped-def]
        model = default_estimator(domain, total, spec)
        assert isinstance(model, MarkovRandomField)
        return Recording(domain, total, iterations=model.iterations, tol=model.tol)

    spec = EngineSpec(bins=5, fine_cells=40, rounds=4, round_tol=0.02, final_tol=1e-4)
    fit_engine(
        FrameSource(_table(1000), nulls_schema),
        nulls_schema,
        Budget(epsilon=1.0, delta=1e-5),
        spec,
        noise=SeededNoise(3),
        rng=np.random.default_rng(0),
        estimator=factory,
    )
    assert len(seen) >= 3
    assert all(s == (0.02, spec.round_iters) for s in seen[:-1])
    assert seen[-1] == (1e-4, spec.final_iters)
    for bad in (-0.1, 1.0):
        with pytest.raises(InputError, match="round_tol"):
            EngineSpec(round_tol=bad)
        with pytest.raises(InputError, match="final_tol"):
            EngineSpec(final_tol=bad)
