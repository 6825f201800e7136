"""PubMix as PE's selection step and as the standalone discrete sampler."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.cli import main
from dpevolve.data.schema import CategoricalColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.pubmix import beta_min, pubmix_delta
from dpevolve.pe.pubmix.discrete import ProductDomain, sample_discrete
from dpevolve.pe.specs import PubMixSpec, VoteSpec
from dpevolve.presets import get_method
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

FAST = {"random_state": 0}


def fast(**settings):
    """A quick Private Evolution method with ``settings``."""
    return get_method("tabpe", population=30, rounds=3, **settings)


@pytest.mark.parametrize("accounting", ["basic", "tight"])
def test_pubmix_in_pe_meets_the_budget(small_schema, small_table, accounting) -> None:
    public, private = small_table.iloc[:150], small_table.iloc[150:]
    model = Synthesizer(
        small_schema,
        epsilon=2.0,
        delta=1e-5,
        method=fast(mechanism=PubMixSpec(accounting=accounting)),
        public=public,
        **FAST,
    ).fit(private)
    ledger = model.ledger_.to_dict()
    assert ledger["epsilon"] <= 2.0 + 1e-6 and ledger["delta"] == 1e-5
    assert len(ledger["events"]) == 3
    assert all(0.0 <= e["beta"] <= 1.0 for e in ledger["events"])
    assert ledger["pubmix"]["accounting"] == accounting
    assert ledger["noise"] == "secure"
    seeded = [
        Synthesizer(
            small_schema,
            epsilon=2.0,
            delta=1e-5,
            method=fast(mechanism=PubMixSpec(accounting=accounting)),
            public=public,
            noise_seed=11,
            **FAST,
        ).fit(private)
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(seeded[0].synthetic_, seeded[1].synthetic_)


def test_tight_accounting_gives_each_round_more_than_basic(small_schema, small_table) -> None:
    public, private = small_table.iloc[:150], small_table.iloc[150:]
    betas = {}
    for accounting in ("basic", "tight"):
        model = Synthesizer(
            small_schema,
            epsilon=2.0,
            delta=1e-5,
            method=fast(mechanism=PubMixSpec(accounting=accounting)),
            public=public,
            **FAST,
        ).fit(private)
        betas[accounting] = [e["beta"] for e in model.ledger_.to_dict()["events"]]
    # a smaller beta is more private signal for the same guarantee
    assert max(betas["tight"]) <= min(betas["basic"]) + 1e-9


def test_pubmix_refuses_soft_votes_rho_and_missing_public(small_schema, small_table) -> None:
    with pytest.raises(InputError, match="hard votes"):
        Synthesizer(
            small_schema,
            epsilon=1.0,
            delta=1e-5,
            method=fast(mechanism="pubmix", vote=VoteSpec(kind="soft", temperature=0.1)),
            public=small_table,
            **FAST,
        ).fit(small_table)
    with pytest.raises(InputError, match="public"):
        Synthesizer(
            small_schema, epsilon=1.0, delta=1e-5, method=fast(mechanism="pubmix"), **FAST
        ).fit(small_table)
    with pytest.raises(InputError, match="rho"):
        Synthesizer(
            small_schema, rho=1.0, method=fast(mechanism="pubmix"), public=small_table, **FAST
        ).fit(small_table)


def test_beta_profile_does_not_grow_with_the_floor() -> None:
    """Tight mode's domination argument: at fixed beta, raising z1, z2 lowers the profile."""
    n, m, beta = 500, 50, 0.3
    for eps in (0.1, 0.5, 1.0, 3.0):
        base = pubmix_delta(beta, n, m, eps, 1e-3, 1e-3)
        for z1, z2 in ((2e-3, 1e-3), (1e-3, 5e-3), (4e-3, 4e-3)):
            assert pubmix_delta(beta, n, m, eps, z1, z2) <= base + 1e-15


def test_discrete_sampler(tmp_path) -> None:
    schema = Schema((CategoricalColumn("a", ("x", "y", "z")), CategoricalColumn("b", (1, 2))))
    rng = np.random.default_rng(0)
    private = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 300), "b": rng.choice([1, 2], 300)})
    public = pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice([1, 2], 200)})
    budget = Budget(epsilon=2.0, delta=1e-4)
    for noise in ("pubmix", "linmix", "gaussian"):
        release = sample_discrete(private, public, schema, 100, budget, noise=noise, random_state=1)
        assert len(release.samples) == 100
        schema.validate(release.samples)
        assert release.ledger.to_dict()["epsilon"] <= 2.0 + 1e-9
    linmix = sample_discrete(private, None, schema, 100, budget, noise="linmix")
    assert linmix.details["beta"] == pytest.approx(beta_min(300, 100, 2.0, 1e-4, 1 / 6, 1 / 6))


def test_product_domain_too_large_is_refused() -> None:
    columns = tuple(CategoricalColumn(f"c{i}", tuple(range(100))) for i in range(5))
    with pytest.raises(InputError, match="cells"):
        ProductDomain.of(Schema(columns))


def test_pubmix_cli(tmp_path, small_schema, small_table, capsys) -> None:
    schema = Schema(tuple(c for c in small_schema.columns if isinstance(c, CategoricalColumn)))
    (tmp_path / "s.yaml").write_text(schema.to_yaml())
    small_table[schema.names].iloc[100:].to_csv(tmp_path / "p.csv", index=False)
    small_table[schema.names].iloc[:100].to_csv(tmp_path / "pub.csv", index=False)
    out = tmp_path / "o.csv"
    code = main(
        [
            "pubmix",
            str(tmp_path / "p.csv"),
            "-s",
            str(tmp_path / "s.yaml"),
            "-o",
            str(out),
            "-m",
            "50",
            "--epsilon",
            "1",
            "--delta",
            "1e-5",
            "--public",
            str(tmp_path / "pub.csv"),
            "--quiet",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(pd.read_csv(out)) == 50
    assert math.isfinite(
        __import__("json").loads((tmp_path / "o.ledger.json").read_text())["epsilon"]
    )


def test_private_gamma_estimate_is_charged() -> None:
    schema = Schema((CategoricalColumn("a", ("x", "y", "z")), CategoricalColumn("b", (1, 2))))
    rng = np.random.default_rng(3)
    private = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 2000), "b": rng.choice([1, 2], 2000)})
    public = pd.DataFrame({"a": rng.choice(["x", "y"], 500), "b": rng.choice([1, 2], 500)})
    budget = Budget(epsilon=2.0, delta=1e-4)
    release = sample_discrete(
        private, public, schema, 200, budget, gamma_epsilon=1.0, random_state=0
    )
    ledger = release.ledger.to_dict()
    assert [e["mechanism"] for e in ledger["events"]] == ["gamma_estimate", "pubmix"]
    assert ledger["epsilon"] <= 2.0 + 1e-9
    domain = ProductDomain.of(schema)
    p_prv = domain.counts(schema.validate(private)[0]) / 2000
    a = domain.counts(schema.validate(public)[0]) / 500
    true_tv = 0.5 * np.abs(a - p_prv).sum()
    # Laplace scale 1/(n eps0) = 5e-4: the estimate is close to the true shift
    assert abs(release.details["gamma"] - true_tv) < 0.01
    with pytest.raises(InputError, match="gamma_epsilon"):
        sample_discrete(private, public, schema, 10, budget, gamma_epsilon=3.0)


def test_private_floor_choice_is_charged_and_picks_the_best_floor() -> None:
    from dpevolve.pe.pubmix import choose_floor_privately, water_fill

    rng = np.random.default_rng(0)
    A = rng.dirichlet(np.full(40, 0.3))
    p_private = rng.dirichlet(np.full(40, 0.3))
    n, m, eps, delta = 5000, 200, 3.0, 1e-5
    # a huge selection epsilon makes the exponential mechanism an argmin
    choice = choose_floor_privately(A, p_private, n, m, eps, delta, 1e6, noise=SeededNoise(0))
    grid = np.linspace(0, 1 / 40, 41)
    scores = []
    for t in grid:
        fill = water_fill(A, t)
        z1, z2 = np.sort(fill)[:2]
        scores.append(beta_min(n, m, eps, delta, z1, z2) * 0.5 * np.abs(fill - p_private).sum())
    assert choice.t == pytest.approx(grid[int(np.argmin(scores))])

    schema = Schema((CategoricalColumn("a", ("x", "y", "z")), CategoricalColumn("b", (1, 2))))
    private = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 800), "b": rng.choice([1, 2], 800)})
    public = pd.DataFrame({"a": rng.choice(["x", "y"], 300), "b": rng.choice([1, 2], 300)})
    release = sample_discrete(
        private,
        public,
        schema,
        100,
        Budget(epsilon=2.0, delta=1e-4),
        floor_epsilon=0.1,
        random_state=0,
    )
    ledger = release.ledger.to_dict()
    assert [e["mechanism"] for e in ledger["events"]] == ["floor_selection", "pubmix"]
    assert ledger["epsilon"] <= 2.0 + 1e-9
    with pytest.raises(InputError, match="drop gamma"):
        sample_discrete(
            private,
            public,
            schema,
            10,
            Budget(epsilon=2.0, delta=1e-4),
            floor_epsilon=0.1,
            gamma=0.2,
        )
