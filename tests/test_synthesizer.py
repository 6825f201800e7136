from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.errors import InputError
from dpevolve.pe.schedule import Schedule, Stage
from dpevolve.pe.specs import MarginalSpec, VoteSpec
from dpevolve.pe.variation import mutation_rate
from dpevolve.presets import get_method, get_preset

FAST = {"method": get_method("tabpe", population=40, rounds=3)}


def test_fit_returns_self_and_sets_fitted_attributes(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=0, **FAST)
    assert model.fit(small_table) is model
    assert len(model.synthetic_) == 40
    assert list(model.synthetic_.columns) == small_schema.names
    frame, _ = small_schema.validate(model.synthetic_)  # the output stays in the domain
    assert len(frame) == 40
    ledger = model.ledger_.to_dict()
    assert len(ledger["events"]) == 3
    assert ledger["epsilon"] <= 1.0 + 1e-9
    assert ledger["delta"] == 1e-5
    assert ledger["seed"] == 0
    assert model.history_[-1]["epsilon_spent"] == pytest.approx(ledger["epsilon"])
    json.dumps(ledger)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32 - 1),
    preset=st.sampled_from(["bfsoft", "tabpe"]),
    vote=st.sampled_from(["hard", "soft"]),
)
def test_same_seed_same_output(small_schema, small_table, seed, preset, vote) -> None:
    def run() -> pd.DataFrame:
        return (
            Synthesizer(
                small_schema,
                epsilon=2.0,
                delta=1e-5,
                method=get_method(
                    preset,
                    population=30,
                    rounds=6,
                    vote=VoteSpec(kind=vote, temperature=0.05 if vote == "soft" else None),
                ),
                random_state=seed,
                noise_seed=seed,
            )
            .fit(small_table)
            .sample(50)
        )

    pd.testing.assert_frame_equal(run(), run())


def test_same_seed_fresh_noise_by_default(small_schema, small_table) -> None:
    """Without a noise seed the privacy noise is fresh every run (it must not be
    replayable from --seed); the ledger says which noise a run used, never its seed."""

    def run(**kw: int) -> Synthesizer:
        return Synthesizer(small_schema, epsilon=1.0, random_state=0, **kw, **FAST).fit(small_table)

    a, b = run(), run()
    assert not a.synthetic_.equals(b.synthetic_)
    assert a.ledger_.to_dict()["noise"] == "secure"
    seeded = run(noise_seed=123456789).ledger_
    assert seeded.to_dict()["noise"] == "seeded"
    assert "123456789" not in seeded.to_json() and "123456789" not in seeded.to_json(True)


def test_different_seeds_differ(small_schema, small_table) -> None:
    a = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=1, **FAST).fit(small_table)
    b = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=2, **FAST).fit(small_table)
    assert not a.synthetic_.equals(b.synthetic_)


def test_rho_budget_and_default_delta(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, rho=0.05, random_state=0, **FAST).fit(small_table)
    events = model.ledger_.to_dict()["events"]
    assert sum(e["rho"] for e in events) == pytest.approx(0.05)
    n = len(small_table)
    model = Synthesizer(small_schema, epsilon=1.0, random_state=0, **FAST).fit(small_table)
    assert model.ledger_.to_dict()["delta"] == pytest.approx(min(1e-5, 1 / (n * math.log(n))))


def test_sample_draws_from_the_population(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=0, **FAST)
    model.fit(small_table)
    rows = model.sample(200)
    assert len(rows) == 200
    released = {tuple(r) for r in model.synthetic_.itertuples(index=False)}
    assert all(tuple(r) in released for r in rows.itertuples(index=False))
    with pytest.raises(InputError, match="fit"):
        Synthesizer(small_schema, epsilon=1.0).sample(3)


def test_public_data_seeds_the_population(monkeypatch, small_schema, small_table) -> None:
    # The first population is drawn from the public records (not from the random API):
    # every initial candidate is one of them, and without public data they are not.
    from dpevolve.data.encoding import encode
    from dpevolve.pe.evolution import Evolution

    seen: list = []
    run = Evolution.run

    def spy(self, source, initial, rng, on_round):
        seen.append(initial)
        return run(self, source, initial, rng, on_round)

    monkeypatch.setattr(Evolution, "run", spy)
    public = small_table.iloc[:50]
    encoded = encode(public, small_schema)

    def rows(records) -> list[tuple]:
        return [(*records.numeric[i], *records.codes[i]) for i in range(len(records))]

    settings = {"epsilon": 1.0, "delta": 1e-5, "random_state": 0,
                "method": get_method("tabpe", population=20, rounds=1)}  # fmt: skip
    Synthesizer(small_schema, public=public, **settings).fit(small_table.iloc[50:])
    Synthesizer(small_schema, **settings).fit(small_table.iloc[50:])
    seeded, random = (rows(population) for population in seen)
    assert len(seeded) == 20 and set(seeded) <= set(rows(encoded))
    assert len(set(seeded)) > 1  # drawn from the table, not one record repeated
    assert not set(random) <= set(rows(encoded))


def test_unknown_preset(small_schema, small_table) -> None:
    with pytest.raises(InputError, match="unknown method"):
        Synthesizer(small_schema, epsilon=1.0, method="fast").fit(small_table)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"epsilon": -1.0, "delta": 1e-5}, "epsilon"),
        ({"epsilon": 1.0, "delta": 2.0}, "delta"),
        ({}, "budget"),
        ({"epsilon": 1.0, "delta": 1e-5, "mechanism": "laplace"}, "mechanism"),
        ({"epsilon": 1.0, "delta": 1e-5, "vote": "soft"}, "temperature"),
    ],
)
def test_bad_configuration(small_schema, small_table, kwargs, needle) -> None:
    kwargs = dict(kwargs)
    pe = {k: kwargs.pop(k) for k in ("mechanism", "vote") if k in kwargs}
    with pytest.raises(InputError, match=needle):
        method = get_method("tabpe", population=40, rounds=3, **pe)
        Synthesizer(small_schema, method=method, random_state=0, **kwargs).fit(small_table)


def test_noise_matches_the_calibration(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=0, **FAST)
    meta = model.fit(small_table).ledger_.to_dict()
    assert meta["l2_sensitivity"] == pytest.approx(math.sqrt(2))  # hard vote
    assert meta["sigma"] == pytest.approx(meta["noise_multiplier"] * math.sqrt(2))


def test_tabpe_schedule_follows_the_spec() -> None:
    schedule = get_preset("tabpe").schedule
    assert schedule.population == 1000 and schedule.rounds == 29
    assert [schedule.stage(t).mode for t in (1, 4, 5, 29)] == ["sample", "sample", "rank", "rank"]
    assert schedule.stage(5).keep_selected and schedule.stage(5).mutations == 3
    assert get_preset("bfsoft").schedule.rounds == 8
    assert mutation_rate(0, 29) == 0.5 and math.isclose(mutation_rate(29, 29), 0.01)


def test_rank_stage_population_is_four_n(small_schema, small_table) -> None:
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        delta=1e-5,
        method=get_method("tabpe", population=25, rounds=6),
        random_state=0,
    ).fit(small_table)
    sizes = [h["population"] for h in model.history_]
    assert sizes == [25, 25, 25, 25, 100, 100]
    assert len(model.synthetic_) == 25


def test_the_loop_improves_on_random(small_schema, small_table) -> None:
    from dpevolve.reporting.evaluation import marginal_tv

    def fit(rounds: int) -> Synthesizer:
        method = get_method("tabpe", population=200, rounds=rounds)
        return Synthesizer(small_schema, rho=10.0, random_state=0, method=method).fit(small_table)

    model, random_only = fit(8), fit(1)
    evolved = marginal_tv(small_table, model.synthetic_, small_schema, 2).mean
    start = marginal_tv(small_table, random_only.synthetic_, small_schema, 2).mean
    assert evolved < start


def test_schedule_validation() -> None:
    with pytest.raises(InputError):
        Stage("median", 2)
    with pytest.raises(InputError):
        Schedule(0, (Stage("sample", 1),))


def test_counts_of_repairs_reach_the_ledger(small_schema, small_table) -> None:
    bad = small_table.copy()
    bad.loc[0, "age"] = 500
    model = Synthesizer(
        small_schema, epsilon=1.0, delta=1e-5, random_state=0, on_invalid="clip", **FAST
    ).fit(bad)
    ledger = model.ledger_.to_dict()
    assert ledger["validation"]["clipped_by_column"] == {"age": 1}
    assert any("clip" in note for note in ledger["notes"])
    assert np.isfinite(ledger["epsilon"])


def test_scikit_learn_parameters_and_clone(small_schema, small_table) -> None:
    from sklearn.base import clone

    model = Synthesizer(small_schema, epsilon=1.0, delta=1e-5, random_state=3, noise_seed=4, **FAST)
    assert model.get_params()["epsilon"] == 1.0
    copy = clone(model).set_params(epsilon=2.0)
    assert copy.epsilon == 2.0 and model.epsilon == 1.0
    assert not hasattr(copy, "synthetic_")
    pd.testing.assert_frame_equal(
        clone(model).fit(small_table).synthetic_, model.fit(small_table).synthetic_
    )


def test_create_fit_sample_save_load(small_schema, small_table, tmp_path) -> None:
    pe = {k: v for k, v in FAST.items() if k != "method"}
    model = Synthesizer.create("tabpe", schema=small_schema, epsilon=1.0, random_state=0, **pe)
    rows = model.fit_sample(small_table, 7)
    assert len(rows) == 7 and list(rows.columns) == list(small_table.columns)
    path = tmp_path / "model.pkl"
    model.save(path)
    with pytest.raises(InputError, match="exists"):
        model.save(path)
    loaded = Synthesizer.load(path)
    pd.testing.assert_frame_equal(loaded.synthetic_, model.synthetic_)
    assert loaded.ledger_.to_dict()["epsilon"] == model.ledger_.to_dict()["epsilon"]
    assert len(loaded.sample(5)) == 5
    # A saved model holds released values only: no attribute beyond the fitted ones.
    assert set(vars(loaded)) - set(vars(model)) == set()
    with pytest.raises(InputError, match="unknown method 'nope'"):
        Synthesizer.create("nope", schema=small_schema, epsilon=1.0)


def test_a_model_file_of_another_format_is_refused_by_name(tmp_path) -> None:
    import pickle

    from dpevolve.model_io import FORMAT

    for old, message in [("dpevolve-model/2", "another dpevolve version"), ("x", "not a")]:
        path = tmp_path / f"{old.replace('/', '_')}.pkl"
        path.write_bytes(pickle.dumps({"format": old, "params": {}, "released": {}}))
        with pytest.raises(InputError, match=message) as info:
            Synthesizer.load(path)
        assert FORMAT in str(info.value)


def test_fitting_twice_warns_and_the_ledger_says_so(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, random_state=0, **FAST).fit(small_table)
    assert model.ledger_.to_dict()["fit_number"] == 1
    with pytest.warns(UserWarning, match="spent again"):
        model.fit(small_table)
    assert model.ledger_.to_dict()["fit_number"] == 2


def test_hybrid_preset_releases_marginals_and_samples_n_rows(small_schema, small_table) -> None:
    """The hybrid preset spends the budget on one marginal release (said in the ledger)
    and draws n rows from the weighted pool."""
    model = Synthesizer(
        small_schema,
        epsilon=1.0,
        random_state=0,
        method=get_method(
            "hybrid",
            marginals=MarginalSpec(
                share=None, options={"grow_rounds": 1, "children": 100, "iterations": 30}
            ),
        ),
    )
    model.fit(small_table)
    ledger = model.ledger_.to_dict()
    assert ledger["preset"] == "hybrid" and ledger["marginals"]["share"] == 1.0
    assert [e["mechanism"] for e in ledger["events"]] == ["marginals"]
    assert ledger["epsilon"] <= 1.0 + 1e-9
    rows = model.sample()
    assert len(rows) == len(small_table) and list(rows.columns) == small_schema.names
    assert len(model.sample(num_rows=7)) == 7
    with pytest.raises(InputError, match="num_rows"):
        model.sample(-1)


def test_the_default_is_the_adaptive_engine(small_schema, small_table, tmp_path) -> None:
    """No preset named: the engine runs, its releases compose to the budget in the
    ledger, rows are fresh draws of any number, and a saved model samples the same."""
    model = Synthesizer(small_schema, epsilon=1.0, random_state=3, noise_seed=4)
    assert model.resolved_method().name == "adaptive"
    model.fit(small_table)
    ledger = model.ledger_.to_dict()
    assert ledger["preset"] == "adaptive" and ledger["config"]["engine"]
    # The config block holds the engine's words only: no vote, mechanism or population.
    assert set(ledger["config"]) == {"method", "engine", "backend", "on_invalid"}
    kinds = {e["kind"] for e in ledger["events"]}
    assert "gaussian" in kinds and len(kinds) == 2  # measurements and selections
    assert ledger["epsilon"] <= 1.0 + 1e-9
    # The history travels with the model file: released facts only, no timings.
    assert model.history_ and not any(k.endswith("_s") for h in model.history_ for k in h)
    rows = model.sample(5 * len(small_table))
    assert len(rows) == 5 * len(small_table) and list(rows.columns) == small_schema.names
    _, report = small_schema.validate(rows)
    assert not report.changed  # every row inside the schema
    assert len(model.sample()) == len(small_table)  # n by default (public)
    model.save(tmp_path / "m.pkl")
    loaded = Synthesizer.load(tmp_path / "m.pkl")
    assert loaded.sample(50).equals(model.sample(50))
