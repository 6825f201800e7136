"""Audit of PubMix inside PE (tight and basic accounting): the parents of one round.

A round releases ``m`` i.i.d. parents from ``(1 - beta) H / n + beta P_nse``: the output
distribution is a multinomial we can enumerate when the population is tiny, so the
check is exact. The moving record sits alone in the bin whose noise mass is smallest
(public votes concentrated elsewhere), the worst case of the analysis.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpevolve.pe.pubmix.release as pubmix_module
from dpevolve.pe.specs import PubMixSpec
from dpevolve.presets import get_method, get_preset
from dpevolve.privacy.audit import exact_epsilon, hockey_stick
from dpevolve.privacy.noise import SeededNoise

from .conftest import DELTA, fit_spied


def multinomial_pmf(p: np.ndarray, m: int) -> dict[tuple[int, ...], float]:
    """Counts of ``m`` i.i.d. draws from ``p`` (sufficient for the parents' sequence:
    the likelihood ratio of two i.i.d. sequences depends on the counts only)."""
    out = {}
    for counts in itertools.product(range(m + 1), repeat=len(p)):
        if sum(counts) == m:
            out[counts] = float(stats.multinomial.pmf(counts, m, p))
    return out


def _spied_round(monkeypatch, age_sex, table, **settings):
    """Fit; return the model and each round's sampling distribution (p_private, p_noise,
    beta) as the release handed it to the sampler (private counts over n)."""
    seen: list[tuple[np.ndarray, np.ndarray, float, int]] = []
    original = pubmix_module.pubmix_sample

    def spy(counts, p_noise, beta, m, noise):
        p_private = np.asarray(counts, float) / np.sum(counts)
        seen.append((p_private, np.asarray(p_noise, float), float(beta), m))
        return original(counts, p_noise, beta, m, noise)

    monkeypatch.setattr(pubmix_module, "pubmix_sample", spy)
    model, backend = fit_spied(age_sex, table, **settings)
    return model, backend, seen


PUBLIC = pd.DataFrame({"age": [20] * 12 + [50] * 3 + [80] * 2, "sex": ["Male"] * 17})
PRIVATE = pd.DataFrame({"age": [20 + k % 5 for k in range(59)], "sex": ["Male"] * 59})


def _ages(records) -> set[int]:
    return set(np.rint(records.numeric[:, 0] * 73 + 17).astype(int).tolist())


def _seed_drawing(age_sex, settings, wanted: set[int]) -> int:
    """The first seed whose initial population (drawn from public data only) holds the
    candidates ``wanted``: the population is public, so choosing it is fair."""
    for seed in range(64):
        _, spy = fit_spied(
            age_sex,
            PRIVATE,
            **{
                **settings,
                "random_state": seed,
                "method": replace(settings["method"], preset=get_preset("tabpe", rounds=1)),
            },
        )
        if wanted <= _ages(spy.populations[0]):
            return seed
    raise AssertionError("no seed drew the wanted candidates")


@pytest.mark.parametrize("accounting", ["tight", "basic"])
def test_one_round_parents_within_the_claim(monkeypatch, age_sex, accounting) -> None:
    d = pd.concat([PRIVATE, pd.DataFrame({"age": [82], "sex": ["Male"]})], ignore_index=True)
    d2 = pd.concat([PRIVATE, pd.DataFrame({"age": [49], "sex": ["Male"]})], ignore_index=True)
    settings = {
        "epsilon": 2.0, "method": get_method(
            "bfsoft", population=4, rounds=2,
            mechanism=PubMixSpec(accounting=accounting, gamma=0.2)),
        "public": PUBLIC,

    }  # fmt: skip
    settings["random_state"] = _seed_drawing(age_sex, settings, {20, 50, 80})
    model, spy, seen = _spied_round(monkeypatch, age_sex, d, **settings)
    _, spy2, seen2 = _spied_round(monkeypatch, age_sex, d2, **settings)
    assert spy.populations[0].equals(spy2.populations[0])
    assert not np.array_equal(spy.histograms[0], spy2.histograms[0])  # the record moved
    (p, noise, beta, m), (p2, noise2, beta2, _) = seen[0], seen2[0]
    assert np.array_equal(noise, noise2) and beta == beta2  # public side only
    here = multinomial_pmf((1 - beta) * p + beta * noise, m)
    there = multinomial_pmf((1 - beta) * p2 + beta * noise2, m)
    event = model.ledger_.events[0]
    if accounting == "basic":
        assert exact_epsilon(here, there, event.delta) <= event.epsilon + 1e-9
    else:
        grid = np.linspace(0.0, 3.0, 31)
        claimed = event.hockey_stick(grid)
        found = np.array([hockey_stick(here, there, e) for e in grid])
        assert np.all(found <= claimed + 1e-12)
    assert exact_epsilon(here, there, DELTA) > 0  # the audit sees the record


def test_mixture_sampling_is_not_short_cut() -> None:
    """The parents follow the stated mixture whatever the private histogram looks like
    (a shortcut such as 'all-private when beta is small' or 'skip the public part for a
    one-hot histogram' changes these frequencies)."""
    source = SeededNoise(0)  # the same distributions as the secure source, vectorised
    for counts in (np.array([5, 0, 0, 0]), np.array([3] * 4), np.array([0, 2, 2, 0])):
        p = counts / counts.sum()
        noise = np.array([0.7, 0.1, 0.1, 0.1])
        for beta in (0.05, 0.5, 0.999):
            draws = pubmix_module.pubmix_sample(counts, noise, beta, 40_000, source)
            expected = (1 - beta) * p + beta * noise
            observed = np.bincount(draws, minlength=4)
            keep = expected > 0
            assert observed[~keep].sum() == 0
            chi = stats.chisquare(observed[keep], 40_000 * expected[keep])
            assert chi.pvalue > 1e-4, (p, beta)


def test_pubmix_tight_composes_every_round(age_sex) -> None:
    """The ledger of a T-round tight run charges T rounds: the composed epsilon grows
    with T (an under-composed ledger would stay at one round's cost)."""
    from dpevolve.privacy.audit import independent_epsilon

    settings = {
        "epsilon": 2.0, "method": get_method("bfsoft", population=4, rounds=3,
                                             mechanism=PubMixSpec(gamma=0.2)),
        "public": PUBLIC,
        "random_state": 1,
    }  # fmt: skip
    model, _ = fit_spied(age_sex, PRIVATE, **settings)
    events = model.ledger_.events
    assert len(events) == 3
    one = independent_epsilon(events[:1], DELTA)
    total = independent_epsilon(events, DELTA)
    assert one < total <= 2.0 + 1e-2
    assert model.ledger_.result().epsilon >= total - 1e-2
    assert math.isfinite(total)
