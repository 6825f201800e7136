"""Vote sensitivity (spec §3): the exact edge search against brute force and the
closed-form bounds, tightness of the soft bound, and the hard vote's 0-or-sqrt(2)."""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
from scipy.special import softmax

from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, Hierarchy, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.distance import Gower, TabPEEmbedding
from dpevolve.pe.policy.blowfish import Complete, HierarchyGraph, Partition, Policy, Threshold
from dpevolve.pe.policy.sensitivity import (
    enumerate_domain,
    exact_hard_sensitivity,
    exact_soft_sensitivity,
    hard_bound,
    per_round_hard_sensitivity,
    reach_edge,
    soft_bound,
)

TREE = {"g1": ["a", "b"], "g2": ["c", "d"]}
SMALL = Schema(
    (
        NumericColumn("n", 0, 6, integer=True),
        CategoricalColumn("c", ("x", "y", "z")),
        CategoricalColumn(
            "t", ("a", "b", "c", "d"), Hierarchy.from_nested("t", TREE, list("abcd"))
        ),
    )
)
NUMERIC_VALUES = {"n": list(range(7))}
TAUS = (0.02, 0.1, 0.5)

# Both distances are now computed per pair (dpevolve.backends.canonical), independent of the
# batch; the looser Tab-PE tolerance is kept for the brute-force references' own formulas.
TOL = {"gower": 1e-12, "tabpe": 1e-7}

POLICIES = {
    "threshold": Policy({"n": Threshold(2)}),
    "threshold-wide": Policy({"n": Threshold(10)}),
    "partition": Policy({"c": Partition([["x", "y"]])}),
    "hierarchy": Policy({"t": HierarchyGraph(2)}),
    "complete": Policy({"c": Complete()}),
    "mixed": Policy({"n": Threshold(1), "t": HierarchyGraph(2), "c": Partition([["y", "z"]])}),
}


def row(n: float, c: int, t: int) -> Records:
    return Records(np.array([[n / 6]]), np.array([[c, t]], dtype=np.int32))


def random_population(rng: np.random.Generator, m: int) -> Records:
    return Records.concat(
        [
            row(int(rng.integers(0, 7)), int(rng.integers(0, 3)), int(rng.integers(0, 4)))
            for _ in range(m)
        ]
    )


def brute_force_edges(policy: Policy) -> list[tuple[Records, Records]]:
    """Every (x, x') protected substitution on SMALL, by a plain double loop."""
    tree = SMALL["t"].hierarchy
    edges = []
    for n, c, t in itertools.product(range(7), range(3), range(4)):
        for name, graph in policy.attributes.items():
            if name == "n":
                for b in range(7):
                    if b != n and (isinstance(graph, Complete) or abs(b - n) <= graph.theta):
                        edges.append((row(n, c, t), row(b, c, t)))
            elif name == "c":
                for b in range(3):
                    same_block = isinstance(graph, Complete) or any(
                        "xyz"[c] in block and "xyz"[b] in block for block in graph.blocks
                    )
                    if b != c and same_block:
                        edges.append((row(n, c, t), row(n, b, t)))
            else:
                for b in range(4):
                    if b != t and tree.treepath("abcd"[t], "abcd"[b]) <= graph.theta:
                        edges.append((row(n, c, t), row(n, c, b)))
    if policy.participation:
        domain = [row(*v) for v in itertools.product(range(7), range(3), range(4))]
        edges += [(x, y) for x in domain for y in domain]
    return edges


def brute_force(policy, distance, population, tau=None, norm="l2") -> float:
    """``max ||vote(x') - vote(x)||`` over :func:`brute_force_edges`, one edge at a time."""
    x_rows, x_prime_rows = zip(*brute_force_edges(policy), strict=True)
    # One pairwise call per side: the loop below is the brute force, not the distances.
    d_all = distance.pairwise(Records.concat(x_rows), population)
    d_prime_all = distance.pairwise(Records.concat(x_prime_rows), population)
    best = 0.0
    for d, d_prime in zip(d_all, d_prime_all, strict=True):
        if tau is None:
            value = (2.0 if norm == "l1" else math.sqrt(2)) * (np.argmin(d) != np.argmin(d_prime))
        else:
            change = softmax(-d / tau) - softmax(-d_prime / tau)
            value = np.abs(change).sum() if norm == "l1" else np.sqrt((change**2).sum())
        best = max(best, float(value))
    return best


# -------------------------------------------------------------- closed forms
def test_closed_forms() -> None:
    assert soft_bound(0.2, 0.06) == pytest.approx(math.sqrt(2) * math.tanh(0.2 / 0.12))
    assert soft_bound(0.2, 0.06, "l1") == pytest.approx(2 * math.tanh(0.2 / 0.12))
    assert soft_bound(0.0, 0.1) == 0.0
    assert hard_bound(0.1) == math.sqrt(2) and hard_bound(0.1, "l1") == 2.0
    assert hard_bound(0.0) == 0.0
    with pytest.raises(InputError, match="norm"):
        soft_bound(0.1, 0.1, "linf")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="temperature"):
        soft_bound(0.1, 0.0)
    with pytest.raises(InputError, match="reach"):
        hard_bound(-1.0)


# ------------------------------------------------ exact search vs brute force
@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("distance_kind", ["gower", "tabpe"])
def test_exact_soft_matches_brute_force_and_bound(name: str, distance_kind: str) -> None:
    policy = POLICIES[name]
    distance = Gower(SMALL) if distance_kind == "gower" else TabPEEmbedding(SMALL)
    reach = policy.reach(distance)
    rng = np.random.default_rng(zlib.crc32(f"{name}/{distance_kind}".encode()))
    for m in (2, 3, 6):
        population = random_population(rng, m)
        for tau in TAUS:
            for norm in ("l2", "l1"):
                found = exact_soft_sensitivity(policy, distance, population, tau, norm=norm)
                assert found.value <= soft_bound(reach, tau, norm) + TOL[distance_kind]
                assert found.value == pytest.approx(
                    brute_force(policy, distance, population, tau, norm), abs=TOL[distance_kind]
                )
                assert found.edges_checked > 0
                x, x_prime = found.worst
                change = softmax(-distance.pairwise(x, population)[0] / tau) - softmax(
                    -distance.pairwise(x_prime, population)[0] / tau
                )
                ord_ = 1 if norm == "l1" else 2
                assert np.linalg.norm(change, ord_) == pytest.approx(
                    found.value, abs=TOL[distance_kind]
                )


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("distance_kind", ["gower", "tabpe"])
def test_soft_bound_attained_by_two_candidates(name: str, distance_kind: str) -> None:
    policy = POLICIES[name]
    distance = Gower(SMALL) if distance_kind == "gower" else TabPEEmbedding(SMALL)
    reaches = policy.attribute_reaches(distance)
    carrier = max(reaches, key=reaches.__getitem__)
    x, x_prime = reach_edge(policy, distance, carrier)
    assert distance.pairwise(x, x_prime)[0, 0] == pytest.approx(
        policy.reach(distance), abs=TOL[distance_kind]
    )
    population = Records.concat([x_prime, x])
    for tau in TAUS:
        for norm in ("l2", "l1"):
            bound = soft_bound(policy.reach(distance), tau, norm)
            found = exact_soft_sensitivity(policy, distance, population, tau, norm=norm)
            assert found.value == pytest.approx(bound, abs=TOL[distance_kind])


def test_participation_search_and_tightness() -> None:
    policy = Policy.standard()
    g = Gower(SMALL)
    rng = np.random.default_rng(7)
    population = random_population(rng, 3)
    found = exact_soft_sensitivity(policy, g, population, 0.1)
    assert found.attribute == "participation"
    assert found.value <= soft_bound(1.0, 0.1) + 1e-12
    assert found.value == pytest.approx(brute_force(policy, g, population, 0.1), abs=1e-12)
    assert found.edges_checked == 84 * 83 // 2
    # Opposite corners of the domain are the diameter apart: the two-candidate population
    # built from them attains the participation bound.
    x, x_prime = row(0, 0, 0), row(6, 1, 2)
    assert g.pairwise(x, x_prime)[0, 0] == pytest.approx(policy.reach(g))
    tight = exact_soft_sensitivity(policy, g, Records.concat([x_prime, x]), 0.1)
    assert tight.value == pytest.approx(soft_bound(1.0, 0.1), abs=1e-12)
    hard = exact_hard_sensitivity(policy, g, population)
    assert hard.value == brute_force(policy, g, population)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_exact_hard_is_zero_or_sqrt2_and_matches_brute_force(name: str) -> None:
    policy = POLICIES[name]
    g = Gower(SMALL)
    rng = np.random.default_rng(11)
    seen = set()
    for m in (1, 2, 3, 5):
        for _ in range(3):
            population = random_population(rng, m)
            for norm in ("l2", "l1"):
                found = exact_hard_sensitivity(policy, g, population, norm=norm)
                assert found.value in (0.0, hard_bound(1.0, norm))
                assert found.value == brute_force(policy, g, population, norm=norm)
                seen.add(found.value > 0)
                if found.value > 0:
                    x, x_prime = found.worst
                    assert np.argmin(g.pairwise(x, population)) != np.argmin(
                        g.pairwise(x_prime, population)
                    )
    assert True in seen  # random populations do change some argmin


def test_hard_ties_go_to_lowest_index() -> None:
    g = Gower(SMALL)
    # Two copies of one candidate: every x ties, the argmin stays at index 0.
    population = Records.concat([row(3, 0, 0), row(3, 0, 0)])
    assert exact_hard_sensitivity(Policy({"n": Threshold(6)}), g, population).value == 0.0
    # Candidates differing only in an unprotected column ('c') that the policy never moves.
    population = Records.concat([row(3, 0, 0), row(3, 1, 0)])
    assert exact_hard_sensitivity(Policy({"n": Threshold(6)}), g, population).value == 0.0
    assert exact_hard_sensitivity(Policy({"c": Complete()}), g, population).value == math.sqrt(2)
    # c0 has c=y, c1 has c=z; the edge x ~ y moves a record from a tie (c=x: both one
    # mismatch away, so c0 by the lowest index) to c0 outright: the argmin never changes.
    # Breaking ties to the highest index instead would flip it (sensitivity sqrt(2)).
    population = Records.concat([row(3, 1, 0), row(3, 2, 0)])
    policy = Policy({"c": Partition([["x", "y"]])})
    assert exact_hard_sensitivity(policy, g, population).value == 0.0
    assert brute_force(policy, g, population) == 0.0


def test_no_edges_gives_zero() -> None:
    g = Gower(SMALL)
    population = random_population(np.random.default_rng(3), 4)
    for policy in (
        Policy({}),
        Policy({"c": Partition([["x"], ["y"]])}),
        Policy({"t": HierarchyGraph(1)}),
        Policy({"n": Threshold(0.5)}),  # narrower than the integer grid
    ):
        soft = exact_soft_sensitivity(policy, g, population, 0.1)
        hard = exact_hard_sensitivity(policy, g, population)
        assert soft.value == 0.0 and hard.value == 0.0
        assert soft.edges_checked == 0 and soft.worst is None


def test_records_mode_matches_full_domain() -> None:
    g = Gower(SMALL)
    rng = np.random.default_rng(5)
    population = random_population(rng, 4)
    domain = enumerate_domain(g.layout)
    assert len(domain) == 84
    for policy in POLICIES.values():
        full = exact_soft_sensitivity(policy, g, population, 0.1)
        over = exact_soft_sensitivity(policy, g, population, 0.1, records=domain)
        assert over.value == pytest.approx(full.value, abs=1e-15)
        assert over.edges_checked == 2 * full.edges_checked  # directed vs undirected
        sample = domain.take(rng.choice(84, 10, replace=False))
        assert exact_soft_sensitivity(policy, g, population, 0.1, records=sample).value <= (
            full.value + 1e-15
        )
        assert per_round_hard_sensitivity(policy, g, population) == (
            exact_hard_sensitivity(policy, g, population, records=domain).value
        )


def test_per_round_hard() -> None:
    g = Gower(SMALL)
    policy = Policy({"n": Threshold(1)})
    assert per_round_hard_sensitivity(policy, g, row(3, 0, 0)) == 0.0
    assert per_round_hard_sensitivity(policy, g, Records.concat([row(0, 0, 0), row(6, 0, 0)])) == (
        math.sqrt(2)
    )


def test_grids_and_limits() -> None:
    continuous = Schema((NumericColumn("u", 0.0, 1.0), CategoricalColumn("k", ("p", "q"))))
    g = Gower(continuous)
    population = Records(np.array([[0.1], [0.9]]), np.array([[0], [1]], dtype=np.int32))
    policy = Policy({"u": Threshold(0.25)})
    with pytest.raises(InputError, match="'u' is not integer"):
        exact_soft_sensitivity(policy, g, population, 0.1)
    grid = {"u": np.linspace(0, 1, 21).tolist()}
    found = exact_soft_sensitivity(policy, g, population, 0.1, grids=grid)
    assert 0 < found.value <= soft_bound(policy.reach(g), 0.1) + 1e-12
    with pytest.raises(InputError, match="leaves the declared range"):
        exact_soft_sensitivity(policy, g, population, 0.1, grids={"u": [0.0, 2.0]})
    with pytest.raises(InputError, match="unknown column 'v'"):
        exact_soft_sensitivity(policy, g, population, 0.1, grids={**grid, "v": [1.0]})
    with pytest.raises(InputError, match="max_domain"):
        exact_soft_sensitivity(policy, g, population, 0.1, grids=grid, max_domain=10)
    with pytest.raises(InputError, match="empty"):
        exact_soft_sensitivity(policy, g, population.take(slice(0, 0)), 0.1, grids=grid)
    with pytest.raises(InputError, match="'k'"):
        exact_soft_sensitivity(Policy({"k": Threshold(1)}), g, population, 0.1, grids=grid)


def test_search_result_report() -> None:
    g = Gower(SMALL)
    found = exact_soft_sensitivity(
        POLICIES["mixed"], g, random_population(np.random.default_rng(1), 3), 0.1
    )
    report = found.to_dict()
    assert report["vote"] == "soft" and report["norm"] == "l2"
    assert report["edges_checked"] == found.edges_checked > 0
    assert found.edges_per_second > 0
    assert found.attribute in ("n", "t", "c")
    assert len(report["worst"]) == 2
