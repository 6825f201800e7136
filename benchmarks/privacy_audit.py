"""Privacy audit at scale: empirical epsilon lower bounds, one case per mechanism and option.

Each case builds an adversarial pair of neighbouring inputs, runs the release's own
noise path ``trials`` times on each (vectorised, in chunks, each chunk from a fresh
:class:`SeededNoise` seed: the secure source's distributions, fast), counts a
distinguishing event and turns the counts into a Clopper-Pearson 95% lower bound on
epsilon (:mod:`dpevolve.privacy.audit`). Beside it stand the claim (the ledger's, or
the recorded event's) and, where the output distributions are known, the exact epsilon
of the pair (``exact_epsilon``): Balle-Wang for Gaussian shifts, the hockey-stick
divergence of the exact pmfs for PubMix and the exponential mechanism, ``shift / b``
for Laplace. Both must stay at or below the claim, and so must the lower bound.

Cases that run a whole command (``synth``, ``hybrid``, ``pubmix``) record what the
release handed the noise source (:class:`SpyNoise`) on each neighbour, then replay
exactly those calls; one PE round keeps the release non-adaptive, so the recorded calls
are the whole mechanism.

A new case is one function decorated with :func:`case`: it takes ``trials`` and
returns :func:`row` (the suite runs every registered case at a small trial count). The
shared pieces (recording, replays, event choice, rows) live in ``audit_harness.py``.

Usage::

    python benchmarks/privacy_audit.py --trials 1000000
    # -> benchmarks/results/privacy_audit.json
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
from audit_harness import (
    CASES,
    CHUNK,
    DELTA,
    SpyNoise,
    best_event,
    case,
    chunk_seeds,
    count_gaussian,
    mixture_case,
    recorder,
    replay_gaussians,
    row,
    run_case,
    softmax,
    spying,
)
from scipy import stats

from dpevolve import Synthesizer
from dpevolve.backends import make_backend
from dpevolve.backends.canonical import soft_quantisation_slack
from dpevolve.data.encoding import Records, encode
from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.pe.distance import make_distance
from dpevolve.pe.invalid_rows import calibrate as calibrate_invalid_rows
from dpevolve.pe.policy.blowfish import Policy
from dpevolve.pe.policy.sensitivity import enumerate_domain, per_round_hard_sensitivity, reach_edge
from dpevolve.pe.release.gaussian import GaussianRelease
from dpevolve.pe.specs import MarginalSpec, VoteSpec
from dpevolve.pe.votes import HardVote, SoftVote
from dpevolve.presets import get_method
from dpevolve.privacy import Budget, GaussianEvent, calibrate_gaussian
from dpevolve.privacy.audit import (
    cks_epsilon,
    exact_epsilon,
    gaussian_epsilon,
    independent_epsilon,
)
from dpevolve.privacy.noise import SeededNoise

SCHEMA = Schema(
    (NumericColumn("age", 17, 90, integer=True), CategoricalColumn("sex", ("Female", "Male")))
)


def frame(ages: list[float], sexes: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"age": ages, "sex": sexes})


def records(table: pd.DataFrame) -> Records:
    """Through validation, as the Synthesizer reads a private table."""
    validated, _ = SCHEMA.validate(table)
    return encode(validated, SCHEMA)


def release_for(epsilon: float, sensitivity: float, slack: float = 0.0) -> GaussianRelease:
    """One round calibrated as the Synthesizer does: discrete Gaussian, zCDP, for the
    sensitivity plus the slack quantised soft votes and the noise grid add."""
    z = calibrate_gaussian(1, Budget.from_args(epsilon=epsilon, delta=DELTA), discrete=True)
    return GaussianRelease(
        z * (sensitivity + slack), sensitivity, noise=SeededNoise(0), rounding_slack=slack
    )


def soft_slack(m: int) -> float:
    return soft_quantisation_slack(m) + SeededNoise(0).rounding_slack(m)


def gaussian_case(
    name: str,
    here: np.ndarray,
    there: np.ndarray,
    release: GaussianRelease,
    event: GaussianEvent,
    trials: int,
) -> dict[str, Any]:
    claimed = independent_epsilon([event], DELTA)
    seed = int.from_bytes(name.encode(), "little") % 2**32  # stable across runs
    a, b = count_gaussian(release, here, there, trials, seed=seed)
    shift = float(np.linalg.norm(here - there))
    out = row(name, claimed, a, b, trials, gaussian_epsilon(shift / release.sigma, DELTA))
    out["shift"] = shift
    out["sensitivity_charged"] = event.sensitivity
    out["shift_zcdp_epsilon"] = cks_epsilon(shift**2 / (2 * release.sigma**2), DELTA)
    return out


@case
def hard_alone(trials: int) -> dict[str, Any]:
    distance, vote = make_distance("gower", SCHEMA), HardVote()
    candidates = records(frame([20, 50, 85], ["Male"] * 3))
    base = frame([21, 22, 19], ["Male", "Male", "Female"])
    d = records(pd.concat([base, frame([88], ["Female"])]))
    d2 = records(pd.concat([base, frame([17], ["Male"])]))
    backend = make_backend("auto")
    here, there = (backend.vote(t, candidates, distance, vote) for t in (d, d2))
    release = release_for(1.0, vote.l2_sensitivity(distance.diameter()))
    return gaussian_case("hard-vote-alone-in-bin", here, there, release, release.event(), trials)


@case
def soft_edge(trials: int) -> dict[str, Any]:
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    distance, vote = make_distance("gower", SCHEMA), SoftVote(0.075)
    x, x2 = reach_edge(policy, distance, "age")
    population = Records.concat([x2, x])
    backend = make_backend("auto")
    here = backend.vote(x, population, distance, vote)
    there = backend.vote(x2, population, distance, vote)
    release = release_for(1.0, vote.l2_sensitivity(policy.reach(distance)), soft_slack(2))
    return gaussian_case("soft-vote-reach-edge", here, there, release, release.event(), trials)


@case
def fixed_near_tie(trials: int) -> dict[str, Any]:
    """Former finding 1: exact calibration on a float near-tie (62 between 61 and 63).

    The search now decides with the vote's own arithmetic and the round is charged at
    the bound fixed before the run; the exact sensitivity it finds is reported apart
    (``ex_post_sensitivity``) and must cover the actual shift."""
    policy = Policy.from_dict({"attributes": {"sex": "complete"}}, SCHEMA)
    distance, vote = make_distance("tabpe", SCHEMA), HardVote()
    population = records(frame([54, 61, 88, 70, 63], ["Male"] * 5))
    exact_s = per_round_hard_sensitivity(
        policy, distance, population, enumerate_domain(distance.layout, None, 1_000_000)
    )
    backend = make_backend("auto")
    here = backend.vote(records(frame([62], ["Female"])), population, distance, vote)
    there = backend.vote(records(frame([62], ["Male"])), population, distance, vote)
    release = release_for(1.0, vote.l2_sensitivity(distance.diameter()))
    out = gaussian_case("exact-calibration-near-tie", here, there, release, release.event(), trials)
    out["ex_post_sensitivity"] = exact_s
    assert out["shift"] <= exact_s + 1e-12, "the search misses a vote flip"
    return out


@case
def fixed_fraction(trials: int) -> dict[str, Any]:
    """Former finding 3: 30.5 in an integer column was rounded to 30 (so the protected
    edge 30.5/37.5 became 30/38). It is now an invalid row: refused by default, and
    under ``on_invalid=drop`` it casts an empty vote, with the noise calibrated for
    ``max(S, 1)``. The pair: the invalid row (empty vote) against a valid 38."""
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    distance, vote = make_distance("gower", SCHEMA), SoftVote(0.075)
    population = records(frame([38, 30], ["Male"] * 2))
    kept, _ = SCHEMA.validate(frame([30.5], ["Male"]), on_invalid="drop")
    assert len(kept) == 0, "a fraction in an integer column must be invalid"
    backend = make_backend("auto")
    there = backend.vote(records(frame([38], ["Male"])), population, distance, vote)
    here = np.zeros_like(there)  # the invalid row's empty vote
    calibration = calibrate_invalid_rows("drop", vote.l2_sensitivity(policy.reach(distance)))
    release = release_for(1.0, calibration.sensitivity, soft_slack(2))
    return gaussian_case(
        "soft-vote-drop-invalid-row", here, there, release, release.event(), trials
    )


# ------------------------------------------------------------ recorded noise calls


def synth_pair(
    schema: Schema, tables: tuple[pd.DataFrame, pd.DataFrame], **params: Any
) -> tuple[SpyNoise, SpyNoise, Any]:
    """Fit ``Synthesizer(schema, **params)`` on both neighbours, recording the noise."""
    spies, ledger = [], None
    for table in tables:
        with spying("dpevolve.synthesizer") as made:
            model = Synthesizer(schema, delta=DELTA, random_state=0, **params).fit(table)
        spies.append(made[-1])
        ledger = model.ledger_
    return spies[0], spies[1], ledger


def recorded_gaussian_case(
    name: str, here: SpyNoise, there: SpyNoise, ledger: Any, trials: int
) -> dict[str, Any]:
    hits, hits_prime, mu = replay_gaussians(name, here, there, trials)
    claimed = ledger.result().epsilon
    out = row(name, claimed, hits, hits_prime, trials, gaussian_epsilon(mu, DELTA))
    out["independent_epsilon"] = independent_epsilon(ledger.events, DELTA)
    out["releases"] = len(here.gaussians)
    out["mu"] = mu
    return out


def pair_frames(n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` random records and the same with the last record moved across the domain."""
    rng = np.random.default_rng(seed)
    base = frame(list(rng.integers(17, 91, n - 1)), list(rng.choice(["Female", "Male"], n - 1)))
    return (
        pd.concat([base, frame([17], ["Female"])], ignore_index=True),
        pd.concat([base, frame([90], ["Male"])], ignore_index=True),
    )


@case
def soft_vote_sharpened(trials: int) -> dict[str, Any]:
    """BF-Soft with sharpening 4 under ``age: threshold 7``, one round; the pair differs
    along the protected edge (age 30 vs 37)."""
    rng = np.random.default_rng(5)
    base = frame(list(rng.integers(17, 91, 30)), list(rng.choice(["Female", "Male"], 30)))
    tables = tuple(pd.concat([base, frame([age], ["Male"])], ignore_index=True) for age in (30, 37))
    policy = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, SCHEMA)
    here, there, ledger = synth_pair(
        SCHEMA,
        tables,
        epsilon=1.0,
        method=get_method(
            "bfsoft",
            population=16,
            rounds=1,
            vote=VoteSpec(kind="soft", temperature=0.02, sharpen=4.0),
        ),
        policy=policy,
    )
    return recorded_gaussian_case("soft-vote-sharpened", here, there, ledger, trials)


# The fit after the release is post-processing: kept short, it does not change the audit.
HYBRID_FAST = {"grow_rounds": 1, "children": 60, "iterations": 20}


def hybrid_case(name: str, share: float, seed: int, trials: int) -> dict[str, Any]:
    """The hybrid preset's marginal release at ``share`` of the budget (the rest: one PE
    round), on a pair of tables with one record moved across the domain."""
    here, there, ledger = synth_pair(
        SCHEMA,
        pair_frames(40, seed),
        epsilon=1.0,
        method=get_method(
            "hybrid",
            population=16,
            rounds=1,
            marginals=MarginalSpec(share=share, options=HYBRID_FAST),
        ),
    )
    return recorded_gaussian_case(name, here, there, ledger, trials)


@case
def marginal_release(trials: int) -> dict[str, Any]:
    """The hybrid preset's marginals alone (share 1: no PE round)."""
    return hybrid_case("marginal-release", 1.0, 6, trials)


@case
def marginals_with_pe_round(trials: int) -> dict[str, Any]:
    """The hybrid preset's budget split: one PE round, then the marginal release."""
    return hybrid_case("marginals-split-with-pe-round", 0.5, 7, trials)


# ------------------------------------------------------------- discrete outcomes


DISCRETE = Schema((CategoricalColumn("c", ("p", "q", "r")),))
PUBLIC = pd.DataFrame({"c": ["p"] * 80 + ["q"] * 15 + ["r"] * 5})


def discrete_pair(n: int = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The moving record alone in one of the two smallest public bins, or the other."""
    base = ["p"] * (n - 1)
    return pd.DataFrame({"c": [*base, "q"]}), pd.DataFrame({"c": [*base, "r"]})


def tv_pair(n: int = 60) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The record moved between a bin the private table over-fills and one it
    under-fills: ``TV(public, private)`` moves by the full ``1/n``."""
    base = ["p"] * (n - 1)
    return pd.DataFrame({"c": [*base, "q"]}), pd.DataFrame({"c": [*base, "p"]})


def standalone(
    noise: str,
    budget: Budget,
    m: int,
    pair: Callable[[], tuple[pd.DataFrame, pd.DataFrame]] = discrete_pair,
    **options: Any,
) -> tuple[list, list, Any]:
    """``sample_discrete`` on both neighbours, its noise and mixture draws recorded."""
    from dpevolve.pe.pubmix import discrete

    spies, mixes, ledger = [], [], None
    for table in pair():
        calls: list[tuple[np.ndarray, np.ndarray, float, int]] = []

        record = recorder(calls)

        with (
            spying("dpevolve.pe.pubmix.discrete") as made,
            mock.patch.object(discrete, "pubmix_sample", record),
        ):
            release = discrete.sample_discrete(
                table, PUBLIC, DISCRETE, m, budget, noise=noise, random_state=0, **options
            )  # type: ignore[arg-type]
        spies.append(made[-1])
        mixes.append(calls)
        ledger = release.ledger
    return spies, mixes, ledger


@case
def standalone_pubmix(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix``: WF floor, gamma given, m = 4 samples over 3 cells."""
    _, (a, b), ledger = standalone("pubmix", Budget(epsilon=1.0, delta=DELTA), 4, gamma=0.2)
    return mixture_case("standalone-pubmix", a, b, ledger.result().epsilon, trials)


@case
def standalone_linmix(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix --noise linmix``: uniform noise, m = 4 samples over 3 cells."""
    _, (a, b), ledger = standalone("linmix", Budget(epsilon=1.0, delta=DELTA), 4)
    return mixture_case("standalone-linmix", a, b, ledger.result().epsilon, trials)


@case
def standalone_gaussian(trials: int) -> dict[str, Any]:
    """``dpevolve pubmix --noise gaussian``: discrete-Gaussian counts over 3 cells."""
    (here, there), _, ledger = standalone("gaussian", Budget(epsilon=1.0, delta=DELTA), 4)
    return recorded_gaussian_case("standalone-gaussian", here, there, ledger, trials)


@case
def private_gamma_estimate(trials: int) -> dict[str, Any]:
    """``--gamma-epsilon 0.3``: Laplace on TV(public, private); the claim is the
    estimate's own event, the exact figure ``|TV - TV'| / b``."""
    (here, there), _, ledger = standalone(
        "pubmix", Budget(epsilon=1.0, delta=DELTA), 4, tv_pair, gamma_epsilon=0.3
    )
    ((tv, scale),), ((tv2, _),) = here.laplaces, there.laplaces
    event = next(e for e in ledger.events if getattr(e, "label", "") == "gamma_estimate")
    cut = max(float(tv[0]), float(tv2[0]))
    seeds = chunk_seeds("gamma", 2 * (trials // CHUNK + 1))
    hits = []
    for value in (tv, tv2):
        count = 0
        for start in range(0, trials, CHUNK):
            size = min(CHUNK, trials - start)
            noisy = SeededNoise(next(seeds)).laplace(np.full(size, value[0]), scale)
            count += int((noisy >= cut).sum())
        hits.append(count)
    exact = abs(float(tv[0] - tv2[0])) / scale
    out = row("private-gamma-estimate", event.epsilon, hits[0], hits[1], trials, exact)
    out["shift"] = abs(float(tv[0] - tv2[0]))
    return out


@case
def private_floor_choice(trials: int) -> dict[str, Any]:
    """``--floor-epsilon 0.3``: Gumbel noisy max over the candidate floors' scores; the
    exact pmf is the softmax of the scores over the scale."""
    (here, there), _, ledger = standalone(
        "pubmix", Budget(epsilon=1.0, delta=DELTA), 4, tv_pair, floor_epsilon=0.3
    )
    ((scores, scale),), ((scores2, _),) = here.argmaxes, there.argmaxes
    event = next(e for e in ledger.events if getattr(e, "label", "") == "floor_selection")
    p, q = (stats.multinomial.pmf(np.eye(s.size), 1, softmax(s / scale)) for s in (scores, scores2))
    chosen, forward = best_event(p, q, trials)
    seeds = chunk_seeds("floor", 2)
    hits = []
    for values in (scores, scores2):
        source = SeededNoise(next(seeds))
        picks = np.array([source.noisy_argmax(values, scale) for _ in range(trials)])
        hits.append(int(chosen[picks].sum()))
    if not forward:
        hits.reverse()
    return row("private-floor-choice", event.epsilon, hits[0], hits[1], trials,
               exact_epsilon(p, q, 0.0))  # fmt: skip


@case
def engine_selection(trials: int) -> dict[str, Any]:
    """The adaptive engine's selection: AIM's exponential mechanism over every 1-way
    and 2-way candidate of a tiny table scored against a uniform model, the last record
    moved across the domain; the claim is the draw's own event, the exact pmf the
    softmax of the qualities over the scale."""
    from dpevolve.data.sources import FrameSource
    from dpevolve.engine.discretise import Discretiser
    from dpevolve.engine.measure import count_marginals
    from dpevolve.engine.select import candidates, scores, selection_event, weight

    disc = Discretiser(SCHEMA, bins=4, fine_cells=8)
    domain = disc.domain
    pool = candidates(domain, (), 2)
    weights = [weight(c, None, 1.0) for c in pool]
    event = selection_event(1.0, weights)
    values = []
    for table in pair_frames(40, 8):
        exact, _ = count_marginals(FrameSource(table, SCHEMA), disc, pool)
        uniform = {c: np.full(domain.shape(c), len(table) / domain.cells(c)) for c in pool}
        values.append(scores(pool, exact.__getitem__, uniform.__getitem__, weights, 2.0))
    p, q = (softmax(v / event.scale) for v in values)
    chosen, forward = best_event(p, q, trials)
    seeds = chunk_seeds("engine-selection", 2)
    hits = []
    for v in values:
        source = SeededNoise(next(seeds))
        picks = np.array([source.noisy_argmax(v, event.scale) for _ in range(trials)])
        hits.append(int(chosen[picks].sum()))
    if not forward:
        hits.reverse()
    return row("engine-selection", event.epsilon, hits[0], hits[1], trials,
               exact_epsilon(p, q, 0.0))  # fmt: skip


# ------------------------------------------------------------------ PubMix in PE
def pe_pubmix_case(name: str, accounting: str, rounds: int, trials: int) -> dict[str, Any]:
    """PubMix as PE's selection over 3 candidates, ``rounds`` rounds of m = 4 parents
    on the worst-case pair (the record alone in either of the two smallest public
    bins); the claim is the composition of the rounds' recorded events."""
    import dpevolve.pe.pubmix.release as pe_pubmix
    from dpevolve.pe.pubmix.release import PubMixRelease

    schema = DISCRETE
    distance = make_distance("gower", schema)
    population = encode(pd.DataFrame({"c": ["p", "q", "r"]}), schema)
    public = encode(PUBLIC, schema)
    n = 60
    draws: list[list[tuple[np.ndarray, np.ndarray, float, int]]] = [[], []]
    events = []
    for side, valid in enumerate((np.array([59.0, 1, 0]), np.array([59.0, 0, 1]))):
        release = PubMixRelease(
            public, distance, make_backend("auto"), n, rounds,
            Budget(epsilon=1.0, delta=DELTA), accounting=accounting, noise=SpyNoise(0),
            gamma=0.2,
        )  # fmt: skip
        calls = draws[side]

        record = recorder(calls)

        with mock.patch.object(pe_pubmix, "pubmix_sample", record):
            for _ in range(rounds):
                selection = release.select(
                    valid, 4, np.random.default_rng(0), population=population, mode="sample"
                )
                if side == 0:
                    events.append(selection.event)
    claimed = independent_epsilon(events, DELTA)
    out = mixture_case(name, draws[0], draws[1], claimed, trials)
    out["rounds"] = rounds
    return out


@case
def pubmix_basic(trials: int) -> dict[str, Any]:
    """PubMix in PE, basic accounting, two rounds."""
    return pe_pubmix_case("pubmix-basic-two-rounds", "basic", 2, trials)


@case
def pubmix_tight(trials: int) -> dict[str, Any]:
    """PubMix in PE, tight accounting (the composed worst-case pair), two rounds."""
    return pe_pubmix_case("pubmix-tight-two-rounds", "tight", 2, trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "results" / "privacy_audit.json"
    )
    args = parser.parse_args()
    rows = []
    for key in args.cases:
        result = run_case(key, args.trials)
        rows.append(result)
        exact = result["exact_epsilon"]
        if result["lower_bound"] > result["claimed_epsilon"]:
            print(f"LEAK: {result['case']} lower bound above the claim")
        print(
            f"{result['case']:<34} claimed {result['claimed_epsilon']:7.3f}  "
            f"lower bound {result['lower_bound']:7.3f}  exact "
            f"{'-' if exact is None else f'{exact:.3f}'}  ({result['seconds']} s)",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"trials": args.trials, "cases": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
