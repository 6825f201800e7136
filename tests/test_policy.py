"""Blowfish policies and reach (spec §2, §3): the spec's numbers, validation, and the
bound ``|d(x, c) - d(x', c)| <= r`` on random protected substitutions."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve.data.encoding import Records
from dpevolve.data.schema import CategoricalColumn, Hierarchy, NumericColumn, Schema
from dpevolve.errors import InputError
from dpevolve.pe.distance import Gower, TabPEEmbedding
from dpevolve.pe.policy.blowfish import (
    Complete,
    HierarchyGraph,
    Partition,
    Policy,
    Threshold,
    load_policy,
    summarize,
)
from dpevolve.pe.votes import noise_ratio

WORKCLASS = (
    "Private",
    "Self-emp-not-inc",
    "Self-emp-inc",
    "Federal-gov",
    "Local-gov",
    "State-gov",
    "Without-pay",
    "Never-worked",
)
JOB_TREE = {
    "white-collar": ["admin.", "management", "entrepreneur", "self-employed", "technician"],
    "manual": ["blue-collar", "housemaid", "services"],
    "not-working": ["retired", "student", "unemployed", "unknown"],
}
JOBS = tuple(job for jobs in JOB_TREE.values() for job in jobs)
TAUS = (0.015, 0.03, 0.06)


def adult_schema() -> Schema:
    """The spec's five modelled Adult columns, weight 1/5 each (spec §3 table)."""
    return Schema(
        (
            NumericColumn("age", 17, 90, integer=True),
            CategoricalColumn("workclass", WORKCLASS),
            CategoricalColumn("sex", ("Female", "Male")),
            NumericColumn("hours-per-week", 1, 99, integer=True),
            CategoricalColumn("income", ("<=50K", ">50K")),
        )
    )


def bank_schema() -> Schema:
    """Bank-5: job carries a two-level tree (siblings 0.5, cousins 1), weight 0.2 each."""
    return Schema(
        (
            NumericColumn("age", 18, 95, integer=True),
            CategoricalColumn("job", JOBS, Hierarchy.from_nested("job", JOB_TREE, JOBS)),
            CategoricalColumn("marital", ("divorced", "married", "single")),
            CategoricalColumn("education", ("primary", "secondary", "tertiary", "unknown")),
            CategoricalColumn("y", ("no", "yes")),
        ),
        label="y",
    )


ADULT = adult_schema()
BANK = bank_schema()


def policy(attributes: dict, participation: bool = False, schema: Schema = ADULT) -> Policy:
    return Policy.from_dict({"participation": participation, "attributes": attributes}, schema)


# ------------------------------------------------------------- spec numbers
SPEC_TABLE = [
    ({"age": {"threshold": 7}}, 7 / 365, (0.5644, 0.3092, 0.1585)),
    ({"hours-per-week": {"threshold": 8}}, 8 / 490, (0.4962, 0.2656, 0.1352)),
    (
        {"age": {"threshold": 7}, "hours-per-week": {"threshold": 8}},
        7 / 365,
        (0.5644, 0.3092, 0.1585),
    ),
    (
        {"age": {"threshold": 7}, "hours-per-week": {"threshold": 8}, "income": "complete"},
        0.2,
        (1.0000, 0.9975, 0.9311),
    ),
]


@pytest.mark.parametrize(("attributes", "reach", "qs"), SPEC_TABLE)
def test_adult_reach_and_noise_ratio(attributes: dict, reach: float, qs: tuple) -> None:
    p = policy(attributes)
    r = p.reach(Gower(ADULT))
    assert r == pytest.approx(reach, abs=1e-15)
    assert [round(noise_ratio(r, tau), 4) for tau in TAUS] == list(qs)


def test_adult_reach_decimals() -> None:
    g = Gower(ADULT)
    assert round(policy({"age": {"threshold": 7}}).reach(g), 6) == 0.019178
    assert round(policy({"hours-per-week": {"threshold": 8}}).reach(g), 6) == 0.016327
    assert 7 / 365 == pytest.approx(7 / 73 * 0.2)


def test_attribute_reaches_and_max_not_sum() -> None:
    g = Gower(ADULT)
    p = policy({"age": {"threshold": 7}, "hours-per-week": {"threshold": 8}})
    assert p.attribute_reaches(g) == pytest.approx({"age": 7 / 365, "hours-per-week": 8 / 490})
    assert p.reach(g) == max(p.attribute_reaches(g).values())
    assert p.attribute_reach("sex", g) == 0.0  # unprotected
    with pytest.raises(InputError, match="'nope'"):
        p.attribute_reach("nope", g)


def test_threshold_wider_than_range_caps_at_weight() -> None:
    g = Gower(ADULT)
    assert policy({"age": {"threshold": 500}}).reach(g) == pytest.approx(0.2)
    assert policy({"age": "complete"}).reach(g) == pytest.approx(0.2)


def test_bank_hierarchy_reach() -> None:
    g = Gower(BANK)
    assert policy({"job": {"hierarchy": 2}}, schema=BANK).reach(g) == pytest.approx(0.1)
    assert policy({"job": {"hierarchy": 4}}, schema=BANK).reach(g) == pytest.approx(0.2)
    assert policy({"job": {"hierarchy": 1}}, schema=BANK).reach(g) == 0.0  # no leaf pair
    # Partition on a tree column: the largest tree distance inside a block.
    siblings = {"partition": [["admin.", "management"], ["retired", "student"]]}
    cousins = {"partition": [["admin.", "retired"]]}
    assert policy({"job": siblings}, schema=BANK).reach(g) == pytest.approx(0.1)
    assert policy({"job": cousins}, schema=BANK).reach(g) == pytest.approx(0.2)
    assert policy({"job": "complete"}, schema=BANK).reach(g) == pytest.approx(0.2)


def test_partition_reach_flat() -> None:
    g = Gower(ADULT)
    two = {"partition": [["Private", "Self-emp-inc"], ["Federal-gov", "State-gov"]]}
    singletons = {"partition": [["Private"], ["Federal-gov"]]}
    assert policy({"workclass": two}).reach(g) == pytest.approx(0.2)
    assert policy({"workclass": singletons}).reach(g) == 0.0


def test_participation_reach() -> None:
    assert Policy.standard().reach(Gower(ADULT)) == pytest.approx(1.0)
    assert Policy.standard().reach(Gower(BANK)) == pytest.approx(1.0)
    p = policy({"age": {"threshold": 7}}, participation=True)
    assert p.reach(Gower(ADULT)) == pytest.approx(1.0)
    weighted = Schema(
        (NumericColumn("a", 0, 1, weight=0.5), CategoricalColumn("b", ("x", "y"), weight=0.25))
    )
    assert Policy.standard().reach(Gower(weighted)) == pytest.approx(0.75)  # sum_k w_k


def test_tabpe_reach() -> None:
    e = TabPEEmbedding(ADULT)
    assert policy({"age": {"threshold": 7}}).reach(e) == pytest.approx(7 / 73)
    assert policy({"hours-per-week": {"threshold": 8}}).reach(e) == pytest.approx(8 / 98)
    assert policy({"income": "complete"}).reach(e) == pytest.approx(math.sqrt(2) / 3)
    two = {"partition": [["Private", "Self-emp-inc"]]}
    assert policy({"workclass": two}).reach(e) == pytest.approx(math.sqrt(2) / 3)
    assert Policy.standard().reach(e) == pytest.approx(math.sqrt(2 + 3 * 2 / 9))


# ---------------------------------------------------------------- loading
def test_yaml_round_trip(tmp_path) -> None:
    text = """
participation: false
attributes:
  age: {threshold: 7}
  workclass: {partition: [[Private, Self-emp-inc], [Federal-gov, State-gov]]}
  income: complete
"""
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    p = load_policy(path, ADULT)
    assert p == Policy.load(path, ADULT)
    assert p.attributes["age"] == Threshold(7)
    assert p.attributes["income"] == Complete()
    assert p.attributes["workclass"] == Partition(
        [["Private", "Self-emp-inc"], ["Federal-gov", "State-gov"]]
    )
    assert p.participation is False
    assert Policy.from_dict(p.to_dict(), ADULT) == p
    assert hash(Policy.from_dict(p.to_dict(), ADULT)) == hash(p)
    bank = policy({"job": {"hierarchy": 2}}, schema=BANK)
    assert bank.attributes["job"] == HierarchyGraph(2)
    assert Policy.from_dict(bank.to_dict(), BANK) == bank


def test_policy_is_frozen() -> None:
    p = policy({"age": {"threshold": 7}})
    with pytest.raises(AttributeError):
        p.participation = True  # type: ignore[misc]
    with pytest.raises(TypeError):
        p.attributes["sex"] = Complete()  # type: ignore[index]


def test_graph_descriptions() -> None:
    assert Threshold(7).describe() == "threshold(7)"
    assert Threshold(7.5).describe() == "threshold(7.5)"
    assert HierarchyGraph(2).describe() == "hierarchy(2)"
    assert Complete().describe() == "complete"
    assert Partition([["a", "b"], ["c"]]).describe() == "partition([a, b], [c])"


ERRORS = [
    ({"attributes": {"agee": {"threshold": 7}}}, ["unknown attribute 'agee'", "age, workclass"]),
    ({"attributes": {"workclass": {"threshold": 1}}}, ["'workclass'", "threshold", "numeric"]),
    ({"attributes": {"age": {"partition": [[17, 18]]}}}, ["'age'", "partition", "categorical"]),
    ({"attributes": {"age": {"hierarchy": 2}}}, ["'age'", "hierarchy", "categorical"]),
    ({"attributes": {"workclass": {"hierarchy": 2}}}, ["'workclass'", "hierarchy", "tree"]),
    (
        {"attributes": {"workclass": {"partition": [["Private", "Privat"]]}}},
        ["'workclass'", "'Privat'", "not a declared value"],
    ),
    (
        {"attributes": {"workclass": {"partition": [["Private"], ["State-gov", "Private"]]}}},
        ["'workclass'", "'Private'", "two blocks"],
    ),
    ({"attributes": {"age": {"threshold": 0}}}, ["'age'", "positive number"]),
    ({"attributes": {"age": {"threshold": -3}}}, ["'age'", "positive number"]),
    ({"attributes": {"age": {"threshold": "seven"}}}, ["'age'", "positive number", "'seven'"]),
    ({"attributes": {"age": {"threshold": True}}}, ["'age'", "positive number"]),
    ({"attributes": {"age": {"threshold": float("nan")}}}, ["'age'", "positive number"]),
    ({"attributes": {"age": {"thresh": 7}}}, ["'age'", "unknown graph 'thresh'"]),
    ({"attributes": {"income": "full"}}, ["'income'", "unknown graph 'full'"]),
    ({"attributes": {"age": {"threshold": 7, "complete": True}}}, ["'age'", "one mapping"]),
    ({"attributes": {"workclass": {"partition": []}}}, ["'workclass'", "non-empty"]),
    ({"attributes": {"workclass": {"partition": [[]]}}}, ["'workclass'", "empty"]),
    ({"attributes": {"workclass": {"partition": "Private"}}}, ["'workclass'", "blocks"]),
    ({"participation": "yes"}, ["participation", "true or false"]),
    ({"attributes": [1, 2]}, ["attributes", "map"]),
    ({"attribute": {}}, ["unknown key 'attribute'"]),
]


@pytest.mark.parametrize(("spec", "fragments"), ERRORS)
def test_validation_errors(spec: dict, fragments: list[str]) -> None:
    with pytest.raises(InputError) as info:
        Policy.from_dict(spec, ADULT)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_hierarchy_theta_error_and_file_errors(tmp_path) -> None:
    with pytest.raises(InputError, match="positive number"):
        Policy.from_dict({"attributes": {"job": {"hierarchy": 0}}}, BANK)
    with pytest.raises(InputError, match="not found"):
        load_policy(tmp_path / "missing.yaml", ADULT)
    bad = tmp_path / "bad.yaml"
    bad.write_text("attributes: {age: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        load_policy(bad, ADULT)


def test_programmatic_policy_is_checked_at_use() -> None:
    p = Policy({"workclass": Threshold(3)})
    with pytest.raises(InputError, match=r"'workclass'.*numeric"):
        p.reach(Gower(ADULT))
    with pytest.raises(InputError, match="'workclass'"):
        p.validate(ADULT)


# ------------------------------------------------------- floors and summary
def test_floors() -> None:
    g = Gower(ADULT)
    assert policy({"age": {"threshold": 7}}).floors(g) == []
    income = policy({"age": {"threshold": 7}, "income": "complete"}).floors(g)
    assert len(income) == 1
    assert "'income' (binary)" in income[0] and "w_k=0.2" in income[0]
    flat = policy({"workclass": {"partition": [["Private", "Self-emp-inc"]]}}).floors(g)
    assert len(flat) == 1 and "'workclass' (flat categorical)" in flat[0]
    wide = policy({"age": {"threshold": 100}}).floors(g)
    assert len(wide) == 1 and "threshold 100 >= range 73" in wide[0]
    participation = Policy.standard().floors(g)
    assert len(participation) == 1 and "participation" in participation[0]
    b = Gower(BANK)
    assert policy({"job": {"hierarchy": 2}}, schema=BANK).floors(b) == []
    assert len(policy({"job": {"hierarchy": 4}}, schema=BANK).floors(b)) == 1


def test_no_protection_warns() -> None:
    warnings = Policy({}).warnings(Gower(ADULT))
    assert any("reach 0" in w for w in warnings)


def test_summarize() -> None:
    g = Gower(ADULT)
    p = policy({"age": {"threshold": 7}, "income": "complete"})
    out = summarize(p, g, TAUS)
    json.dumps(out)  # what `policy show --json` prints
    assert set(out) == {"reach", "attributes", "temperatures", "warnings"}
    assert out["reach"] == pytest.approx(0.2)
    assert out["attributes"] == {
        "age": {"reach": pytest.approx(7 / 365), "graph": "threshold(7)"},
        "income": {"reach": pytest.approx(0.2), "graph": "complete"},
    }
    rows = out["temperatures"]
    assert [row["tau"] for row in rows] == list(TAUS)
    for row in rows:
        assert set(row) == {"tau", "q", "l1_bound", "l2_bound", "budget_saving"}
        q = math.tanh(0.2 / (2 * row["tau"]))
        assert row["q"] == pytest.approx(q)
        assert row["l1_bound"] == pytest.approx(2 * q)
        assert row["l2_bound"] == pytest.approx(math.sqrt(2) * q)
        assert row["budget_saving"] == pytest.approx(1 / q**2)
    assert len(out["warnings"]) == 1
    age = summarize(policy({"age": {"threshold": 7}}), g, TAUS)
    assert [round(row["q"], 4) for row in age["temperatures"]] == [0.5644, 0.3092, 0.1585]
    assert age["warnings"] == []
    assert summarize(Policy({}), g, [0.1])["temperatures"][0]["budget_saving"] is None


# ------------------------------------------------- reach bounds every move
def _encode_row(schema: Schema, row: dict) -> Records:
    numeric = [
        (row[c.name] - c.lo) / c.range for c in schema.columns if isinstance(c, NumericColumn)
    ]
    codes = [
        c.keys.index(str(row[c.name])) for c in schema.columns if isinstance(c, CategoricalColumn)
    ]
    return Records(np.array([numeric], dtype=np.float64), np.array([codes], dtype=np.int32))


def _random_row(draw, schema: Schema) -> dict:
    row = {}
    for c in schema.columns:
        if isinstance(c, NumericColumn):
            row[c.name] = draw(st.floats(c.lo, c.hi, allow_nan=False))
        else:
            row[c.name] = draw(st.sampled_from(c.keys))
    return row


def _neighbour_value(draw, schema: Schema, name: str, graph, value):
    """A value b with value ~ b in graph, chosen independently of the policy code."""
    column = schema[name]
    if isinstance(graph, Threshold):
        lo = max(column.lo, value - graph.theta)
        hi = min(column.hi, value + graph.theta)
        return draw(st.floats(lo, hi, allow_nan=False))
    if isinstance(graph, Complete) and isinstance(column, NumericColumn):
        return draw(st.floats(column.lo, column.hi, allow_nan=False))
    if isinstance(graph, Complete):
        options = [k for k in column.keys if k != value]
    elif isinstance(graph, Partition):
        block = next((b for b in graph.blocks if value in b), ())
        options = [k for k in block if k != value]
    else:
        options = [
            k for k in column.keys
            if k != value and column.hierarchy.treepath(value, k) <= graph.theta
        ]  # fmt: skip
    return draw(st.sampled_from(options)) if options else value


CASES = [
    (
        ADULT,
        {
            "age": {"threshold": 7},
            "hours-per-week": {"threshold": 8},
            "workclass": {"partition": [["Private", "Self-emp-inc"], ["Federal-gov", "State-gov"]]},
        },
    ),
    (ADULT, {"age": {"threshold": 7}, "income": "complete", "hours-per-week": "complete"}),
    (BANK, {"job": {"hierarchy": 2}, "age": {"threshold": 3}}),
    (BANK, {"job": {"hierarchy": 4}, "marital": {"partition": [["married", "single"]]}}),
]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_reach_bounds_distance_change(data) -> None:
    schema, attributes = data.draw(st.sampled_from(CASES))
    p = policy(attributes, schema=schema)
    x_row = _random_row(data.draw, schema)
    name = data.draw(st.sampled_from(sorted(p.attributes)))
    x_prime_row = dict(x_row)
    x_prime_row[name] = _neighbour_value(data.draw, schema, name, p.attributes[name], x_row[name])
    candidates = Records.concat(
        [
            _encode_row(schema, _random_row(data.draw, schema))
            for _ in range(data.draw(st.integers(1, 4)))
        ]
    )
    x, x_prime = _encode_row(schema, x_row), _encode_row(schema, x_prime_row)
    # TabPEEmbedding computes squared distances in Gram form (|a|^2 + |b|^2 - 2 a.b), whose
    # rounding at zero distance reads ~1.5e-8 after the square root; Gower is exact.
    for distance, tol in ((Gower(schema), 1e-12), (TabPEEmbedding(schema), 1e-7)):
        change = np.abs(distance.pairwise(x, candidates) - distance.pairwise(x_prime, candidates))
        assert change.max() <= p.attribute_reach(name, distance) + tol
        assert change.max() <= p.reach(distance) + tol
        # d(x, x') itself is at most the reach: the candidate may sit on x.
        assert distance.pairwise(x, x_prime)[0, 0] <= p.reach(distance) + tol


def test_shipped_study_schemas_give_the_spec_reaches() -> None:
    from dpevolve import datasets
    from dpevolve.pe.distance import Gower as _Gower

    bank5 = datasets.schema("bank", columns="bank5")
    reaches = [
        Policy.from_dict({"attributes": {"job": {"hierarchy": theta}}}, bank5).reach(_Gower(bank5))
        for theta in (2, 4)
    ]
    assert reaches == pytest.approx([0.1, 0.2])
    adult5 = datasets.schema("adult", columns="adult5")
    age = Policy.from_dict({"attributes": {"age": {"threshold": 7}}}, adult5)
    assert age.reach(_Gower(adult5)) == pytest.approx(7 / 365)
