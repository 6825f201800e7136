"""PubMix's privacy draws come from the noise source, never from the run's seed.

A release that draws from a generator seeded by ``random_state`` can be replayed by
anyone holding the seed (it sits in the ledger). Here: the same ``random_state`` alone
gives fresh parents and samples every run; ``noise_seed`` reproduces them; and the
parents the release draws follow the mixture it states.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpevolve.pe.pubmix.release as pubmix_module
from dpevolve import Synthesizer
from dpevolve.backends import make_backend
from dpevolve.data.encoding import encode
from dpevolve.data.schema import CategoricalColumn, Schema
from dpevolve.pe.distance import make_distance
from dpevolve.pe.invalid_rows import fill_empty_votes
from dpevolve.pe.pubmix import water_fill
from dpevolve.pe.pubmix.discrete import sample_discrete
from dpevolve.pe.pubmix.release import PubMixRelease
from dpevolve.pe.specs import PubMixSpec
from dpevolve.pe.votes import HardVote
from dpevolve.presets import get_method
from dpevolve.privacy import Budget
from dpevolve.privacy.noise import SeededNoise

FAST = {
    "method": get_method(
        "tabpe", population=30, rounds=2, mechanism=PubMixSpec(accounting="basic")
    ),
    "random_state": 0,
}
SAMPLE = pubmix_module.pubmix_sample  # the sampler the release calls, unwrapped


def _pubmix_parents(monkeypatch, schema, public, private, **kwargs) -> tuple[list, dict]:
    """Fit PubMix in PE; return every round's parents and the ledger."""
    drawn: list[np.ndarray] = []

    def spy(*args, **kw):
        out = SAMPLE(*args, **kw)
        drawn.append(np.array(out))
        return out

    monkeypatch.setattr(pubmix_module, "pubmix_sample", spy)
    model = Synthesizer(schema, epsilon=2.0, delta=1e-5, public=public, **FAST, **kwargs).fit(
        private
    )
    return drawn, model.ledger_.to_dict()


def test_synthesizer_pubmix_parents_are_fresh_unless_noise_seeded(
    monkeypatch, small_schema, small_table
) -> None:
    public, private = small_table.iloc[:150], small_table.iloc[150:]
    first, ledger = _pubmix_parents(monkeypatch, small_schema, public, private)
    second, _ = _pubmix_parents(monkeypatch, small_schema, public, private)
    assert len(first) == len(second) == FAST["method"].preset.schedule.rounds
    assert ledger["noise"] == "secure"
    # Same random_state, same public data: the first round votes over the same
    # population, yet its parents differ (30 draws over the candidates).
    assert not np.array_equal(first[0], second[0])
    seeded = [
        _pubmix_parents(monkeypatch, small_schema, public, private, noise_seed=123)
        for _ in range(2)
    ]
    for a, b in zip(seeded[0][0], seeded[1][0], strict=True):
        assert np.array_equal(a, b)
    assert seeded[0][1]["noise"] == "seeded"
    assert "123" not in json.dumps(seeded[0][1])


DISCRETE_SCHEMA = Schema((CategoricalColumn("a", ("x", "y", "z")), CategoricalColumn("b", (1, 2))))


def _discrete_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(4)
    private = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 400), "b": rng.choice([1, 2], 400)})
    public = pd.DataFrame({"a": rng.choice(["x", "y"], 200), "b": rng.choice([1, 2], 200)})
    return private, public


@pytest.mark.parametrize(
    ("options", "key"),
    [
        ({"noise": "pubmix", "gamma": 0.2}, None),
        ({"noise": "linmix"}, None),
        ({"noise": "gaussian"}, None),
        ({"noise": "pubmix", "gamma_epsilon": 0.3}, "gamma"),
        ({"noise": "pubmix", "floor_epsilon": 0.3}, None),
    ],
    ids=["pubmix", "linmix", "gaussian", "gamma-estimate", "private-floor"],
)
def test_sample_discrete_is_fresh_unless_noise_seeded(options, key) -> None:
    private, public = _discrete_tables()
    budget = Budget(epsilon=1.0, delta=1e-5)

    def run(noise_seed: int | None):
        return sample_discrete(
            private, public, DISCRETE_SCHEMA, 200, budget, random_state=5,
            noise_seed=noise_seed, **options,
        )  # fmt: skip

    a, b = run(None), run(None)
    assert a.ledger.to_dict()["noise"] == "secure"
    assert a.ledger.to_dict()["mechanism"] == options["noise"]
    assert not a.samples.equals(b.samples)
    if key is not None:  # the private estimate itself is fresh
        assert a.details[key] != b.details[key]
    c, d = run(77), run(77)
    pd.testing.assert_frame_equal(c.samples, d.samples)
    assert c.details == d.details
    assert c.ledger.to_dict()["noise"] == "seeded"
    assert "77" not in json.dumps(c.ledger.to_dict())


def test_sample_discrete_refuses_a_generator_as_noise() -> None:
    from dpevolve.errors import InputError
    from dpevolve.pe.pubmix import choose_floor_privately

    with pytest.raises(InputError, match="NoiseSource"):
        choose_floor_privately(
            np.full(4, 0.25), np.full(4, 0.25), 100, 10, 1.0, 1e-5, 0.1,
            noise=np.random.default_rng(0),  # type: ignore[arg-type]
        )  # fmt: skip


@pytest.mark.parametrize(
    ("accounting", "fill", "missing"),
    [("tight", "wf", 0), ("basic", "wf", 0), ("basic", "linmix", 0), ("tight", "mifr", 37)],
)
def test_pubmix_release_parents_follow_the_stated_mixture(accounting, fill, missing) -> None:
    """Chi-square of many parents against ``(1 - beta) H / n + beta P_nse``, with
    ``P_nse`` rebuilt from the public votes and the floor the release reports; with
    ``missing`` invalid rows, ``H`` includes their stand-in votes."""
    schema = Schema((CategoricalColumn("c", ("p", "q", "r", "s", "t")),))
    distance = make_distance("gower", schema)
    backend = make_backend("local")
    public = encode(pd.DataFrame({"c": list("pppppppqqqrrs") * 3}), schema)
    population = encode(pd.DataFrame({"c": list("pqrst")}), schema)
    n = 400
    valid = np.array([150.0, 20.0, 90.0, 3.0, 100.0]) - np.array([0, 0, 0, 0, missing])
    # epsilon 1 in one round puts beta near 0.3 (wf, mifr) or 0.18 (linmix): both parts
    # of the mixture carry weight.
    release = PubMixRelease(
        public, distance, backend, n, 1, Budget(epsilon=1.0, delta=1e-5),
        accounting=accounting, fill=fill, noise=SeededNoise(2024), gamma=0.1,
    )  # fmt: skip
    # Many calls of 400 parents (tight calibrates once, for m = 400): 20000 draws.
    rounds = [
        release.select(valid, 400, np.random.default_rng(0), population=population, mode="sample")
        for _ in range(50)
    ]
    info = rounds[0].info
    assert all(r.info == info for r in rounds)  # one mixture, as the ledger says
    beta = info["beta"]
    parents = np.concatenate([r.parents for r in rounds])
    m = parents.size
    assert 0.0 < beta < 1.0
    votes = backend.vote(public, population, distance, HardVote())
    public_hist = votes / votes.sum()
    if fill == "linmix":
        p_noise = np.full(5, 0.2)
    elif fill == "wf":
        p_noise = water_fill(public_hist, info["floor"])
    else:
        from dpevolve.pe.pubmix import max_invariance_fill

        p_noise = max_invariance_fill(public_hist, info["floor"], counts=votes.astype(np.int64))
    counts = fill_empty_votes(valid, n, population, distance)
    assert counts.sum() == n
    expected = (1 - beta) * counts / n + beta * p_noise
    observed = np.bincount(parents, minlength=5)
    assert observed.sum() == m
    chi = stats.chisquare(observed, m * expected / expected.sum())
    assert chi.pvalue > 1e-4
    # Both parts carry weight: either one alone is rejected.
    for alone in (p_noise, counts / n):
        keep = alone > 0
        if observed[~keep].sum() == 0:  # else that part alone is impossible already
            assert stats.chisquare(observed[keep], m * alone[keep]).pvalue < 1e-6


def test_pubmix_cli_noise_seed(tmp_path, capsys) -> None:
    """``dpevolve pubmix --noise-seed``: the same bytes twice, a warning, no trace of the
    seed in the ledger; without it the ledger says the noise was secure."""
    from dpevolve.cli import main

    private, public = _discrete_tables()
    (tmp_path / "s.yaml").write_text(DISCRETE_SCHEMA.to_yaml())
    private.to_csv(tmp_path / "p.csv", index=False)
    public.to_csv(tmp_path / "pub.csv", index=False)

    def run(name: str, *extra: str) -> tuple[bytes, dict, str]:
        out = tmp_path / f"{name}.csv"
        code = main(
            [
                "pubmix", str(tmp_path / "p.csv"), "-s", str(tmp_path / "s.yaml"),
                "-o", str(out), "-m", "60", "--epsilon", "1", "--delta", "1e-5",
                "--public", str(tmp_path / "pub.csv"), "--seed", "3", "--quiet", *extra,
            ]
        )  # fmt: skip
        err = capsys.readouterr().err
        assert code == 0, err
        ledger_text = (tmp_path / f"{name}.ledger.json").read_text()
        assert "424242" not in ledger_text
        return out.read_bytes(), json.loads(ledger_text), err

    a, ledger_a, err_a = run("a", "--noise-seed", "424242")
    b, _, _ = run("b", "--noise-seed", "424242")
    assert a == b
    assert ledger_a["noise"] == "seeded" and "anyone who holds the noise seed" in err_a
    c, ledger_c, err_c = run("c")
    assert c != a  # same --seed, fresh noise
    assert ledger_c["noise"] == "secure" and "noise seed" not in err_c


class Recording:
    """A seeded source that records the scale of every Laplace and noisy-max draw."""

    def __init__(self, seed: int) -> None:
        self.inner = SeededNoise(seed)
        self.name = self.inner.name
        self.calls: list[tuple[str, float, np.ndarray]] = []

    def laplace(self, values, scale):
        self.calls.append(("laplace", scale, np.asarray(values, dtype=float)))
        return self.inner.laplace(values, scale)

    def noisy_argmax(self, scores, scale):
        self.calls.append(("argmax", scale, np.asarray(scores, dtype=float)))
        return self.inner.noisy_argmax(scores, scale)

    def gaussian(self, values, sigma):
        return self.inner.gaussian(values, sigma)

    def mixture_sample(self, counts, p_public, beta, m):
        return self.inner.mixture_sample(counts, p_public, beta, m)

    def rounding_slack(self, d, norm="l2"):
        return self.inner.rounding_slack(d, norm)


def test_private_steps_are_calibrated_for_their_epsilon(monkeypatch) -> None:
    """The gamma estimate's Laplace scale and the floor choice's Gumbel scale give at
    most the epsilon the ledger charges, covering grid and floating-point slack."""
    import dpevolve.pe.pubmix.discrete as discrete
    from dpevolve.pe.pubmix import score_sensitivity

    private, public = _discrete_tables()
    n, budget = len(private), Budget(epsilon=1.0, delta=1e-5)
    source = Recording(3)
    monkeypatch.setattr(discrete, "make_noise", lambda seed: source)
    release = sample_discrete(
        private, public, DISCRETE_SCHEMA, 50, budget, gamma_epsilon=0.3, random_state=0
    )
    ((kind, scale, values),) = source.calls
    domain = discrete.ProductDomain.of(DISCRETE_SCHEMA)
    a = domain.counts(public) / len(public)
    h = domain.counts(private) / n
    assert kind == "laplace" and values[0] == pytest.approx(0.5 * np.abs(a - h).sum(), abs=1e-15)
    # epsilon = sensitivity / scale, the sensitivity 1/n plus slack far below it
    assert 0.3 * (1 - 1e-6) <= (1.0 / n) / scale <= 0.3
    assert release.details["gamma_epsilon"] == 0.3

    source.calls.clear()
    release = sample_discrete(
        private, public, DISCRETE_SCHEMA, 50, budget, floor_epsilon=0.2, random_state=0
    )
    ((kind, scale, scores),) = source.calls
    assert kind == "argmax" and scores.size == 41 and np.all(scores <= 0)
    # epsilon = 2 Delta / scale, Delta the largest beta over the candidate floors / n
    # (the release keeps epsilon - floor_epsilon), widened by the scores' float error
    from dpevolve.pe.pubmix import beta_min

    betas = []
    for t in np.linspace(0.0, 1.0 / domain.cells, 41):
        z1, z2 = np.sort(water_fill(a, t))[:2]
        betas.append(beta_min(n, 50, 0.8, 1e-5, z1, z2))
    sensitivity = max(betas) / n
    assert 2 * sensitivity / scale <= 0.2
    assert 2 * sensitivity / scale == pytest.approx(0.2, rel=1e-9)
    assert sensitivity < score_sensitivity(max(betas), n, domain.cells) < sensitivity * (1 + 1e-9)
    assert release.details["floor_epsilon"] == 0.2
