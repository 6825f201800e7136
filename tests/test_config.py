"""Typed configuration (dpevolve.config), the release factory and the pilot callback."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.config import GaussianSpec, MarginalSpec, PubMixSpec, VoteSpec, resolve
from dpevolve.errors import InputError
from dpevolve.pilot.choice import VoteArm, choose_vote
from dpevolve.pilot.run import run_pilot
from dpevolve.privacy import Budget
from dpevolve.release.build import build_release


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
        ({"calibration": "tight"}, "calibration must be bound or exact"),
        ({"mechanism": "pubmix", "calibration": "exact"}, "exact calibration"),
        ({"mechanism": "pubmix", "pubmix_noise": "gauss"}, "wf, mifr or linmix"),
        ({"mechanism": "pubmix", "pubmix_accounting": "exact"}, "basic or tight"),
        ({"vote": "median"}, "hard, soft or auto"),
        ({"temperature": -1.0}, "temperature must be a number > 0"),
        ({"sharpen": 0.5}, "sharpen must be a number >= 1"),
        ({"debias": 1.5}, "debias must be a whole number"),
        ({"marginals": 1.5}, r"marginal share must lie in \(0, 1\]"),
        ({"marginals": 0.5, "mechanism": "pubmix"}, "gaussian mechanism only"),
        ({"preset": "nope"}, "unknown preset 'nope'"),
        (
            {"mechanism": GaussianSpec(threshold=1.0), "threshold": 2.0},
            "give threshold either in mechanism=GaussianSpec",
        ),
        ({"mechanism": PubMixSpec(), "gamma": 0.1}, "give gamma either"),
    ],
)
def test_resolve_says_what_is_wrong(params: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve({"epsilon": 1.0, **params})


def test_resolve_fills_in_from_the_preset() -> None:
    assert resolve({"epsilon": 1.0}).preset.name == "tabpe"  # the default
    config = resolve({"epsilon": 1.0, "preset": "hybrid"})
    assert config.preset.name == "hybrid" and config.marginals is not None
    assert isinstance(config.mechanism, GaussianSpec)
    assert config.mechanism.threshold == config.preset.threshold
    assert config.vote.kind == config.preset.vote
    pe = resolve({"epsilon": 1.0, "vote": "soft", "temperature": 0.03, "rounds": 3})
    assert pe.preset.name == "tabpe" and pe.preset.schedule.rounds == 3
    assert resolve({"epsilon": 1.0, "mechanism": PubMixSpec()}).preset.name == "tabpe"
    assert resolve({"epsilon": 1.0, "distance": "l2"}).preset.distance == "l2"
    assert resolve({"epsilon": 1.0, "preset": "hybrid", "marginals": 0.25}).marginals == (
        MarginalSpec(share=0.25, options=dict(config.preset.marginal_options))
    )


@settings(max_examples=40, deadline=None)
@given(
    accounting=st.sampled_from(["basic", "tight"]),
    fill=st.sampled_from(["wf", "mifr", "linmix"]),
    gamma=st.none() | st.floats(0.01, 0.5),
)
def test_a_pubmix_spec_equals_its_flat_arguments(accounting: str, fill: str, gamma: float) -> None:
    flat = {"mechanism": "pubmix", "pubmix_accounting": accounting, "pubmix_noise": fill}
    spec = PubMixSpec(accounting=accounting, fill=fill, gamma=gamma)  # type: ignore[arg-type]
    assert resolve({**flat, "gamma": gamma}) == resolve({"mechanism": spec})


def test_a_spec_runs_like_its_name(small_schema, small_table) -> None:
    common = {"rho": 1e-3, "preset": "tabpe", "population_size": 30, "rounds": 2}
    by_name = Synthesizer(small_schema, threshold=0.5, noise_seed=3, random_state=0, **common)
    by_spec = Synthesizer(
        small_schema, mechanism=GaussianSpec(threshold=0.5), noise_seed=3, random_state=0, **common
    )
    a, b = by_name.fit(small_table), by_spec.fit(small_table)
    pd.testing.assert_frame_equal(a.synthetic_, b.synthetic_)
    assert a.ledger_.to_dict()["sigma"] == b.ledger_.to_dict()["sigma"]
    assert b.ledger_.to_dict()["mechanism"] == "gaussian"
    assert "GaussianSpec" in repr(by_spec)


def test_the_factory_dispatches_by_type() -> None:
    with pytest.raises(InputError, match="no release for mechanism"):
        build_release("gaussian", None)  # type: ignore[arg-type]


def test_the_pilot_runs_through_its_callback(small_schema, small_table) -> None:
    calls: list[dict] = []

    def fit(options: dict) -> pd.DataFrame:
        calls.append(options)
        return options["X"].iloc[: len(options["X"]) // 2]

    public = small_table.iloc[:100]
    result = run_pilot(
        small_schema, public, 400, Budget(rho=1e-3, delta=1e-5), temperatures=(0.02, 0.04),
        seeds=(0, 1), public_init=True, fit=fit, rounds=4,
    )  # fmt: skip
    assert len(calls) == 2 * 3  # hard and two temperatures, per seed
    assert {(c["vote"], c["temperature"]) for c in calls} == {
        ("hard", None), ("soft", 0.02), ("soft", 0.04)
    }  # fmt: skip
    assert {c["random_state"] for c in calls} == {0, 1}
    for c in calls:  # half the public table stands in, the other half seeds the population
        assert len(c["X"]) + len(c["public"]) == len(public)
        assert c["rho"] > 0
    assert result.noise_scale == pytest.approx(50 / 400)

    arms = (VoteArm("hard"), VoteArm("soft", 0.03, debias=2))
    calls.clear()
    choice = choose_vote(
        small_schema, public, 400, Budget(rho=1e-3, delta=1e-5), arms=arms, seeds=(0,),
        fit=fit, rounds=4,
    )  # fmt: skip
    assert [c["debias"] for c in calls] == [0, 2] and set(choice.errors) == set(arms)
    with pytest.raises(InputError, match=r"give fit=.* and rounds="):
        run_pilot(small_schema, public, 400, Budget(rho=1e-3, delta=1e-5), fit=fit)


def test_vote_spec_says_soft() -> None:
    assert VoteSpec(kind="auto").asks_soft and VoteSpec(temperature="auto").asks_soft
    assert not VoteSpec(kind="hard").asks_soft
