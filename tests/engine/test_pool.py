"""The candidate pool as arrays: the same list, order and draw as the plain functions of
:mod:`dpevolve.engine.select` (so the selection is unchanged by the speed-up)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.engine.pool import CandidatePool
from dpevolve.engine.select import candidates, coarse_candidates, coarse_pairs, parity_candidates
from dpevolve.measurements import Clique, Domain, MarginalQuery


def reference(
    domain: Domain,
    label: str | None,
    numeric: dict[str, int],
    measured: list[Clique],
    masses: dict[str, np.ndarray],
    options: dict,
    cap: int,
    rng: np.random.Generator,
) -> list[MarginalQuery]:
    """The round's candidates built one object at a time, then capped (the draw the
    engine made before the pool)."""
    fine = [MarginalQuery(c) for c in candidates(domain, measured, options["max_order"])]
    coarse = coarse_candidates(
        domain, measured, label, numeric, options["coarse_groups"], options["coarse_order"],
        options["coarse_all"], options["coarse_splits"],
    )  # fmt: skip
    parity = parity_candidates(
        domain, label, numeric, masses, options["parity_quantiles"], options["coarse_order"],
        options["coarse_all"],
    )  # fmt: skip
    pool = fine + coarse_pairs(domain, numeric, options["pair_groups"]) + coarse + parity
    if len(pool) <= cap:
        return pool

    def first_in(q: MarginalQuery) -> bool:
        return len(q.clique) == 1 or (label is not None and label in q.clique and not q.coarse)

    first = [q for q in pool if first_in(q)]
    first = first[: max(cap, sum(len(q.clique) == 1 for q in first))]
    rest = [q for q in pool if not first_in(q)]
    take = max(0, min(cap - len(first), len(rest)))
    drawn = np.sort(rng.choice(len(rest), size=take, replace=False))
    return first + [rest[int(i)] for i in drawn]


@st.composite
def setups(draw: st.DrawFn) -> tuple:
    d = draw(st.integers(2, 8))
    names = tuple(f"a{i}" for i in range(d))
    sizes = tuple(draw(st.lists(st.integers(1, 9), min_size=d, max_size=d)))
    domain = Domain(names, sizes)
    label = draw(st.sampled_from([None, *names]))
    numeric = {}
    for name, size in zip(names, sizes, strict=True):
        if size >= 2 and draw(st.booleans()):
            numeric[name] = size - draw(st.integers(0, 1))  # a missing cell or not
    cliques = st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
    measured = [domain.canonical(c) for c in draw(st.lists(cliques, max_size=8))]
    options = {
        "max_order": draw(st.integers(2, 4)),
        "pair_groups": draw(st.lists(st.integers(1, 6), max_size=2)),
        "coarse_groups": draw(st.lists(st.integers(1, 6), max_size=3)),
        "coarse_order": draw(st.integers(3, 4)),
        "coarse_all": draw(st.sampled_from([0, 10])),
        "coarse_splits": draw(st.lists(st.sampled_from([0.25, 0.5, 0.75]), max_size=2)),
        "parity_quantiles": draw(st.lists(st.sampled_from([0.2, 1 / 3, 0.5, 0.8]), max_size=3)),
    }
    # released 1-way masses (any non-negative arrays; some all zero: nothing released)
    masses = {
        a: np.asarray(draw(st.lists(st.sampled_from([0.0, 1.0, 5.0]), min_size=s, max_size=s)))
        for a, s in zip(names, sizes, strict=True)
        if a in numeric
    }
    cap = draw(st.integers(1, 80))
    return domain, label, numeric, measured, masses, options, cap, draw(st.integers(0, 2**31))


@settings(max_examples=300, deadline=None)
@given(setups())
def test_the_pool_draws_the_plain_functions_candidates(setup: tuple) -> None:
    domain, label, numeric, measured, masses, options, cap, seed = setup
    pool = CandidatePool(domain, label, numeric, masses=masses, **options)
    ours = pool.draw(measured, cap, np.random.default_rng(seed))
    rng = np.random.default_rng(seed)
    theirs = reference(domain, label, numeric, measured, masses, options, cap, rng)
    assert ours == theirs


def test_a_wide_pool_draws_the_same_as_the_plain_functions() -> None:
    d = 120
    names = tuple(f"a{i}" for i in range(d))
    domain = Domain(names, (20,) * (d - 1) + (2,))
    numeric = {a: 20 for a in names[: d // 2]}
    options = {"max_order": 3, "pair_groups": (5,), "coarse_groups": (2, 4, 5),
               "coarse_order": 4, "coarse_all": 10, "coarse_splits": (),
               "parity_quantiles": (0.5,)}  # fmt: skip
    masses = {a: np.ones(20) for a in numeric}
    measured = [(names[i], names[i + 1]) for i in range(0, d - 1, 7)]
    pool = CandidatePool(domain, names[-1], numeric, masses=masses, **options)
    kept = pool.draw(measured, 600, np.random.default_rng(0))
    assert len(kept) == 600 and sum(q.coarse for q in kept) > 200
    assert kept == reference(domain, names[-1], numeric, measured, masses, options, 600,
                             np.random.default_rng(0))  # fmt: skip
