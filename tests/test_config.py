"""The methods and their specs (dpevolve.config, dpevolve.presets): checks, defaults from
the preset, the round trip through plain values, and the pilot callback."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.engine.method import AdaptiveMethod
from dpevolve.errors import InputError
from dpevolve.pe.hybrid.tail import MarginalOptions
from dpevolve.pe.method import PEMethod
from dpevolve.pe.pilot.choice import choose_vote
from dpevolve.pe.pilot.run import PilotRun, VoteArm, run_pilot
from dpevolve.pe.specs import GaussianSpec, MarginalSpec, PubMixSpec, VoteSpec, mechanism_spec
from dpevolve.presets import Preset, from_settings, get_method, get_preset, method_from_dict
from dpevolve.privacy import Budget, calibrate_gaussian

FAST = get_preset("tabpe", population=30, rounds=2)


def resolve(params: dict) -> PEMethod:
    """The Private Evolution method ``params`` name, resolved as a fit resolves it."""
    params = dict(params)
    public, policy = params.pop("public", None), params.pop("policy", None)
    method = from_settings(params.pop("preset", "tabpe"), params)
    assert isinstance(method, PEMethod)
    return method.resolved(public=public is not None, policy=policy is not None)


def test_specs_are_frozen_and_keyword_only() -> None:
    with pytest.raises(TypeError):
        GaussianSpec(0.5)  # type: ignore[misc]
    spec = PubMixSpec(fill="mifr")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.fill = "wf"  # type: ignore[misc]
    assert (GaussianSpec.name, PubMixSpec.name) == ("gaussian", "pubmix")


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"mechanism": "laplace"}, "unknown mechanism 'laplace'"),
        ({"mechanism": {"name": "gaussian", "calibration": "tight"}}, "bound or exact"),
        ({"mechanism": {"name": "pubmix", "fill": "gauss"}}, "wf, mifr or linmix"),
        ({"mechanism": {"name": "pubmix", "accounting": "exact"}}, "basic or tight"),
        ({"mechanism": {"name": "pubmix", "sigma": 1}}, r"unknown settings \['sigma'\]"),
        ({"vote": "median"}, "hard, soft or auto"),
        ({"marginals": 1.5}, r"marginal share must lie in \(0, 1\]"),
        ({"marginals": 0.5, "mechanism": "pubmix"}, "gaussian mechanism only"),
        ({"marginals": {"options": {"bins": 8}}}, "needs its share"),
        ({"mechanism": "pubmix", "vote": "auto"}, "pubmix needs hard votes"),
        ({"preset": "nope"}, "unknown preset 'nope'"),
        ({"vote": "auto"}, "vote 'auto' needs public data"),
    ],
)
def test_a_method_says_what_is_wrong(params: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve(params)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: VoteSpec(kind="soft", temperature=-1.0), "temperature must be a number > 0"),
        (lambda: VoteSpec(kind="soft"), "vote soft needs a temperature"),
        (lambda: VoteSpec(kind="hard", temperature=0.1), "a temperature is for vote soft"),
        (lambda: VoteSpec(kind="auto", sharpen=2.0), "vote auto chooses sharpen itself"),
        (lambda: VoteSpec(sharpen=0.5), "sharpen must be a number >= 1"),
        (lambda: VoteSpec(debias=1.5), "debias must be a whole number"),
        (lambda: MarginalSpec(share=1.0, options={"binz": 8}), "unknown marginal options"),
        (lambda: Budget(epsilon=1.0, delta=2.0), "delta"),
        (lambda: Budget(), "give a budget"),
        (lambda: Budget(epsilon=-1.0), "epsilon must be > 0"),
        (lambda: Budget(epsilon=1.0, rho=1e-3), "either epsilon and delta, or rho"),
    ],
)
def test_specs_say_what_is_wrong(make, message: str) -> None:
    with pytest.raises(InputError, match=message):
        make()


def test_one_budget_type_resolves_its_delta_for_n() -> None:
    given = Budget(epsilon=1.0)
    n = 10**6
    assert given.delta is None and given.for_rows(n).delta == pytest.approx(1 / (n * math.log(n)))
    assert Budget(epsilon=1.0, delta=1e-6).for_rows(1000).delta == 1e-6
    assert Budget(rho=1e-3).for_rows(10).delta == 1e-5


def test_methods_fill_in_from_the_preset_and_never_switch() -> None:
    default = get_method("adaptive")
    assert isinstance(default, AdaptiveMethod)
    assert method_from_dict(default.to_dict()) == default  # its ledger block re-runs it
    # A Private Evolution setting given to the engine is refused by name, not obeyed by
    # switching to Private Evolution.
    for asked, words in (({"vote": "hard"}, "takes no vote"),
                         ({"mechanism": "pubmix"}, "takes no mechanism"),
                         ({"marginals": 0.5}, "takes no marginals")):  # fmt: skip
        with pytest.raises(InputError, match=words):
            from_settings(None, asked)
        with pytest.raises(InputError, match=words):
            get_method("adaptive", **asked)
        with pytest.raises(TypeError):  # a setting is the method's, never the facade's
            Synthesizer("schema.yaml", epsilon=1.0, **asked)
    with pytest.raises(InputError, match="takes no population"):
        get_method("adaptive", population=40)
    with pytest.raises(InputError, match="PE settings"):
        get_preset("adaptive", population=40)
    config = resolve({"preset": "hybrid"})
    assert config.preset.name == "hybrid" and config.marginals is not None
    assert isinstance(config.mechanism, GaussianSpec)
    assert config.mechanism.threshold == config.preset.threshold
    assert config.vote.kind == config.preset.vote
    pe = resolve({"vote": VoteSpec(temperature=0.03), "preset": FAST})
    assert pe.vote.kind == "soft"  # a temperature asks for the soft vote
    assert pe.preset.name == "tabpe" and pe.preset.schedule.rounds == 2
    l2 = resolve({"preset": get_preset("tabpe", distance="l2")})
    assert l2.preset.distance == "l2"
    assert resolve({"preset": "hybrid", "marginals": 0.25}).marginals == (
        MarginalSpec(share=0.25, options=dict(config.preset.marginal_options))
    )


def test_the_engine_refuses_a_policy_by_name(small_schema, small_table) -> None:
    model = Synthesizer(small_schema, epsilon=1.0, policy="policy.yaml")
    with pytest.raises(InputError, match="the adaptive method cannot use policy"):
        model.fit(small_table)
    assert not hasattr(model, "ledger_")  # refused before anything was spent


def test_marginal_options_are_laid_over_the_presets() -> None:
    # Issue 16: {"grow_rounds": 2} must keep the hybrid preset's 4-way label sets.
    hybrid = get_preset("hybrid")
    spec = resolve({"preset": "hybrid", "marginals": {"options": {"grow_rounds": 2}}})
    assert spec.marginals is not None and spec.marginals.share == hybrid.marginals
    options = spec.marginals.build()
    assert options.grow_rounds == 2
    assert (options.coarse_order, options.coarse_bins) == (4, 2) == (
        hybrid.marginal_options["coarse_order"], hybrid.marginal_options["coarse_bins"]
    )  # fmt: skip
    assert MarginalOptions().coarse_order == 0  # so the 4-way sets came from the preset
    # Without a preset's marginals the options stand alone.
    alone = resolve({"marginals": MarginalSpec(share=0.5, options={"bins": 4})})
    assert alone.marginals is not None and alone.marginals.build().coarse_order == 0


def test_a_default_vote_is_auto_only_where_the_pilot_can_run() -> None:
    def kind(**params: object) -> str | None:
        return resolve(params).vote.kind

    assert kind(policy="p.yaml", public="table") == "auto"
    assert kind(policy="p.yaml") == "hard"
    assert kind(public="table") == "hard"  # no policy: no soft vote pays
    assert kind(policy="p.yaml", public="table", mechanism="pubmix") == "hard"
    exact = GaussianSpec(calibration="exact")
    assert kind(policy="p.yaml", public="table", mechanism=exact) == "hard"
    assert kind(policy="p.yaml", public="table", vote=VoteSpec(temperature=0.03)) == "soft"


@settings(max_examples=40, deadline=None)
@given(
    accounting=st.sampled_from(["basic", "tight"]),
    fill=st.sampled_from(["wf", "mifr", "linmix"]),
    gamma=st.none() | st.floats(0.01, 0.5),
)
def test_a_mechanism_reads_back_from_its_words(accounting: str, fill: str, gamma: float) -> None:
    spec = PubMixSpec(accounting=accounting, fill=fill, gamma=gamma)  # type: ignore[arg-type]
    words = PEMethod(FAST, VoteSpec(kind="hard"), spec).to_dict()["mechanism"]
    assert mechanism_spec(words) == spec
    assert mechanism_spec("pubmix") == PubMixSpec()


@settings(max_examples=30, deadline=None)
@given(
    vote=st.sampled_from(
        [
            VoteSpec(kind="hard"),
            VoteSpec(kind="soft", temperature=0.05, sharpen=3.0, debias=2),
            VoteSpec(kind="soft", temperature="auto"),
            VoteSpec(kind="auto"),
        ]
    ),
    preset=st.sampled_from(["tabpe", "bfsoft", "hybrid"]),
    population=st.none() | st.integers(2, 50),
    rounds=st.none() | st.integers(1, 40),
    share=st.none() | st.floats(0.1, 1.0),
    grow=st.none() | st.integers(0, 5),
)
def test_a_run_spec_survives_its_plain_values(vote, preset, population, rounds, share, grow):
    marginals = None
    if share is not None or grow is not None:
        options = {} if grow is None else {"grow_rounds": grow}
        marginals = MarginalSpec(share=share if share is not None else 0.5, options=options)
    spec = resolve(
        {"vote": vote, "marginals": marginals, "public": "table",
         "preset": get_preset(preset, population=population, rounds=rounds)}
    )  # fmt: skip
    again = method_from_dict(spec.to_dict())
    assert again == spec
    assert again.resolved(public=True, policy=False) == spec  # resolving is idempotent


def test_a_preset_reads_back_by_name_or_in_full() -> None:
    bfsoft = get_preset("bfsoft", rounds=3)
    assert Preset.from_dict(bfsoft.to_dict()) == bfsoft
    assert Preset.from_dict({"name": "bfsoft", "rounds": 3}) == bfsoft
    with pytest.raises(InputError, match="unknown preset"):
        Preset.from_dict({"name": "nope"})


def test_a_spec_runs_like_its_name(small_schema, small_table) -> None:
    common = {"rho": 1e-3, "noise_seed": 3, "random_state": 0}
    by_name = Synthesizer(small_schema, method=PEMethod(FAST, mechanism="gaussian"), **common)
    by_spec = Synthesizer(
        small_schema, method=PEMethod(FAST, mechanism=GaussianSpec(threshold=0.0)), **common
    )
    a, b = by_name.fit(small_table), by_spec.fit(small_table)
    pd.testing.assert_frame_equal(a.synthetic_, b.synthetic_)
    assert a.ledger_.to_dict()["sigma"] == b.ledger_.to_dict()["sigma"]
    assert b.ledger_.to_dict()["mechanism"] == "gaussian"
    assert "PEMethod" in repr(by_spec) and by_spec.method.mechanism == GaussianSpec(threshold=0)


def test_the_ledger_config_re_runs_the_same_run(small_schema, small_table) -> None:
    vote = VoteSpec(kind="soft", temperature=0.05, debias=1)
    model = Synthesizer(
        small_schema, rho=1e-3, noise_seed=1, random_state=0, method=PEMethod(FAST, vote=vote,
        marginals=MarginalSpec(share=0.5, options={"grow_rounds": 1, "children": 60})),
        on_invalid="drop",
    ).fit(small_table)  # fmt: skip
    config = model.ledger_.to_dict()["config"]
    assert method_from_dict(config) == model.resolved_method().resolved(public=False, policy=False)
    again = Synthesizer(small_schema, method=method_from_dict(config), rho=1e-3, noise_seed=1,
                        random_state=0, on_invalid="drop").fit(small_table)  # fmt: skip
    assert again.ledger_.to_dict()["config"] == config
    pd.testing.assert_frame_equal(again.synthetic_, model.synthetic_)


def test_the_synthesizer_takes_few_parameters_and_only_stores_them() -> None:
    import inspect

    named = [p for p in inspect.signature(Synthesizer.__init__).parameters.values()
             if p.kind is not p.VAR_KEYWORD][1:]  # fmt: skip
    assert len(named) <= 12, named
    assert len(Synthesizer("schema.yaml").get_params()) == len(named)
    model = Synthesizer("schema.yaml", epsilon=-5.0, method="nope")  # nothing checked yet
    assert model.get_params()["method"] == "nope"
    with pytest.raises(InputError, match="epsilon must be > 0"):
        model.budget()
    with pytest.raises(InputError, match="unknown method 'nope'"):
        model.resolved_method()


def test_the_pilot_runs_through_its_callback(small_schema, small_table) -> None:
    calls: list[PilotRun] = []

    def fit(run: PilotRun) -> pd.DataFrame:
        calls.append(run)
        return run.table.iloc[: len(run.table) // 2]

    public = small_table.iloc[:100]
    result = run_pilot(
        small_schema, public, 400, calibrate_gaussian(4, Budget(rho=1e-3)),
        temperatures=(0.02, 0.04),
        seeds=(0, 1), public_init=True, fit=fit, rounds=4,
    )  # fmt: skip
    assert len(calls) == 2 * 3  # hard and two temperatures, per seed
    assert {(c.arm.vote, c.arm.temperature) for c in calls} == {
        ("hard", None), ("soft", 0.02), ("soft", 0.04)
    }  # fmt: skip
    assert {c.seed for c in calls} == {0, 1}
    for c in calls:  # half the public table stands in, the other half seeds the population
        assert c.public is not None and len(c.table) + len(c.public) == len(public)
        assert c.rho > 0
    assert result.noise_scale == pytest.approx(50 / 400)

    arms = (VoteArm("hard"), VoteArm("soft", 0.03, debias=2))
    calls.clear()
    choice = choose_vote(
        small_schema, public, 400, calibrate_gaussian(4, Budget(rho=1e-3)), arms=arms, seeds=(0,),
        fit=fit, rounds=4,
    )  # fmt: skip
    assert [c.arm.debias for c in calls] == [0, 2] and set(choice.errors) == set(arms)
    with pytest.raises(InputError, match=r"give fit=.* and rounds="):
        run_pilot(small_schema, public, 400, 1.0, fit=fit)


def test_vote_spec_says_soft() -> None:
    assert VoteSpec(kind="auto").asks_soft and VoteSpec(temperature="auto").asks_soft
    assert not VoteSpec(kind="hard").asks_soft


def test_a_ledger_re_runs_from_the_command_line(tmp_path, small_schema, small_table, capsys):
    import json

    import yaml

    from dpevolve.cli import ledger_path, main

    schema, private = tmp_path / "schema.yaml", tmp_path / "private.csv"
    schema.write_text(small_schema.to_yaml())
    small_table.to_csv(private, index=False)

    def synth(out: str, *extra: str) -> dict:
        argv = ["synth", str(private), "-s", str(schema), "-o", str(tmp_path / out), "--quiet"]
        assert main([*argv, "--seed", "1", *extra]) == 0, capsys.readouterr().err
        return json.loads(ledger_path(tmp_path / out).read_text())

    words = {
        "method": {"name": "hybrid", "population": 30, "rounds": 2, "distance": "gower"},
        "mechanism": {"name": "gaussian", "threshold": 0.5}, "on_invalid": "drop",
        "marginals": {"options": {"grow_rounds": 1, "children": 60, "iterations": 20}},
        "budget": {"rho": 1e-3},
    }  # fmt: skip
    short = tmp_path / "short.yaml"
    short.write_text(yaml.safe_dump(words))
    first = synth("a.csv", "--config", str(short))
    config = first["config"]
    spec = method_from_dict(config)
    assert isinstance(spec, PEMethod) and config["on_invalid"] == "drop"
    assert spec.preset.distance == "gower" and spec.preset.schedule.population == 30
    assert spec.mechanism == GaussianSpec(threshold=0.5)
    assert spec.marginals is not None and spec.marginals.build().coarse_order == 4  # kept
    assert spec.marginals.build().grow_rounds == 1
    run_file = tmp_path / "run.yaml"
    run_file.write_text(yaml.safe_dump({**config, "budget": {"rho": 1e-3}}))
    assert synth("b.csv", "--config", str(run_file))["config"] == config
    # A ledger itself is a run file: its config block (and its budget).
    assert synth("c.csv", "--method", str(ledger_path(tmp_path / "a.csv")))["config"] == config
    argv = ["synth", str(private), "-s", str(schema), "-o", str(tmp_path / "d.csv")]
    assert main([*argv, "--config", str(run_file), "--rho", "1"]) == 2
    assert "--rho: give the run's settings in" in capsys.readouterr().err


def test_engine_options_from_the_command_line_to_the_ledger(
    tmp_path, small_schema, small_table, capsys
):
    import json

    import yaml

    from dpevolve.cli import ledger_path, main
    from dpevolve.engine.spec import EngineSpec
    from dpevolve.presets import get_preset

    schema, private = tmp_path / "schema.yaml", tmp_path / "private.csv"
    schema.write_text(small_schema.to_yaml())
    small_table.to_csv(private, index=False)
    argv = ["synth", str(private), "-s", str(schema), "--quiet", "--seed", "1"]

    def synth(out: str, *extra: str) -> int:
        return main([*argv, "-o", str(tmp_path / out), *extra])

    assert synth("a.csv", "-e", "1", "--engine-options", "{max_rounds: 3, bins: 8}") == 0
    config = json.loads(ledger_path(tmp_path / "a.csv").read_text())["config"]
    engine = method_from_dict(config)
    assert engine == AdaptiveMethod(EngineSpec(max_rounds=3, bins=8))  # over the defaults
    # A short run file names the preset and its engine options only.
    run_file = tmp_path / "run.yaml"
    short = {"budget": {"epsilon": 1.0}, "preset": {"name": "adaptive", "engine": {"bins": 8}}}
    run_file.write_text(yaml.safe_dump(short))
    assert synth("b.csv", "--config", str(run_file)) == 0, capsys.readouterr().err
    again = json.loads(ledger_path(tmp_path / "b.csv").read_text())["config"]
    assert method_from_dict(again) == AdaptiveMethod(EngineSpec(bins=8))
    capsys.readouterr()
    # Engine options are for the engine; an unknown one is named; bad YAML is one line.
    for extra, words in (
        (["--preset", "tabpe", "--engine-options", "{bins: 8}"], "runs Private Evolution"),
        (["--engine-options", "{binz: 8}"], "unknown engine options ['binz']"),
        (["--engine-options", "[1, 2"], "--engine-options must be a YAML mapping"),
    ):
        assert synth("c.csv", *extra) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c.csv").exists()
    assert get_preset("adaptive").with_engine({}).engine == EngineSpec()
