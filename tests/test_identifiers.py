"""Identifier columns (data/identifiers.py): inferred from public data, never modelled,
written fresh so that no synthetic id can equal a private one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpevolve import Synthesizer
from dpevolve.data.identifiers import IdentifierColumn, fresh_ids, propose_identifier
from dpevolve.data.infer import problems_of
from dpevolve.data.schema import Schema
from dpevolve.errors import InputError


def _table(n: int, seed: int, start: int = 100_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "id": rng.permutation(np.arange(start, start + n)),
            "income": np.round(rng.uniform(1, 300, n), 1),
            "ref": [f"R{k:05d}" for k in rng.permutation(n)],
            "owner": rng.choice(["no", "yes"], n),
        }
    )


def test_infer_declares_identifiers_and_nothing_else() -> None:
    public = _table(300, 0)
    public["wealth"] = np.random.default_rng(1).integers(0, 10**7, len(public))  # sparse
    schema = Schema.infer(public, label="owner")
    assert schema.identifier_names == ["id", "ref"]
    assert schema.names == ["income", "owner", "wealth"]
    ident = schema.identifiers[0]
    assert (ident.integer, ident.lo, ident.hi, ident.position) == (True, 0, 999_999, 0)
    assert schema.identifiers[1] == IdentifierColumn("ref", position=2)
    # Round trip through YAML keeps the order and every setting.
    again = Schema.from_dict(json.loads(json.dumps(schema.to_dict())))
    assert again == schema and list(again.to_dict()["columns"]) == list(public.columns)


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        ("customer_id", np.arange(0, 10_000, 7), True),  # hinted: sparse is fine
        ("amount", np.arange(0, 10_000, 7), False),  # not hinted, not a running count
        ("serial", np.arange(500, 800), True),  # a running count
        ("year", np.arange(1900, 2000), False),  # a short one: data
        ("ratio", np.linspace(0, 1, 100), False),  # not whole numbers
        ("name", [f"n{k}" for k in range(50)], True),  # distinct texts
        ("name", [f"n{k % 40}" for k in range(50)], False),  # repeated texts
        ("id", np.arange(10), False),  # too few rows to tell
    ],
)
def test_what_looks_like_an_identifier(name: str, values: object, expected: bool) -> None:
    series = pd.Series(values)
    assert (propose_identifier(name, series, len(series)) is not None) is expected


def test_a_text_prefix_the_public_ids_use_is_avoided() -> None:
    series = pd.Series([f"syn-{k}" for k in range(30)])
    found = propose_identifier("ref", series, 30)
    assert found is not None and not any(str(v).startswith(found.prefix) for v in series)


@settings(max_examples=50, deadline=None)
@given(
    lo=st.integers(-(10**9), 10**9),
    span=st.integers(0, 10**6),
    rows=st.integers(0, 500),
    prefix=st.text(min_size=1, max_size=5),
)
def test_fresh_ids_are_distinct_and_outside_every_valid_private_id(
    lo: int, span: int, rows: int, prefix: str
) -> None:
    integer = IdentifierColumn("id", True, lo, lo + span)
    ids = np.asarray(fresh_ids(integer, rows))
    assert len(set(ids.tolist())) == rows and np.all(ids > lo + span)
    text = fresh_ids(IdentifierColumn("ref", prefix=prefix), rows)
    assert len(set(text)) == rows and all(t.startswith(prefix) for t in text)


@pytest.fixture(scope="module")
def fitted() -> tuple[Synthesizer, pd.DataFrame, Schema]:
    schema = Schema.infer(_table(300, 0), label="owner")
    private = _table(400, 1, start=100_300)
    model = Synthesizer(schema, epsilon=1.0, random_state=0).fit(private)
    return model, private, schema


def test_synthesis_spends_nothing_on_ids_and_writes_fresh_ones(fitted) -> None:
    model, private, _ = fitted
    ledger = json.dumps(model.ledger_.to_dict()["events"])
    assert "id" not in {w.strip('"') for w in ledger.replace(":", " ").split()}
    assert '"ref' not in ledger and "fine:id" not in ledger
    out = model.sample(700)
    assert list(out.columns) == list(private.columns)
    assert out["id"].is_unique and out["ref"].is_unique
    assert not set(out["id"]) & set(private["id"]) and out["id"].min() == 1_000_000
    assert not set(out["ref"]) & set(private["ref"])


def test_dropped_ids_are_left_out() -> None:
    spec = Schema.infer(_table(300, 0), label="owner").to_dict()
    spec["columns"]["id"]["drop"] = True
    schema = Schema.from_dict(spec)
    model = Synthesizer(schema, epsilon=1.0, random_state=0).fit(_table(200, 1))
    assert list(model.sample(5).columns) == ["income", "ref", "owner"]


def test_a_private_id_outside_its_declared_form_stops_before_any_spend() -> None:
    schema = Schema.infer(_table(300, 0), label="owner")
    private = _table(200, 1, start=999_950)  # past the declared [0, 999999]
    model = Synthesizer(schema, epsilon=1.0)
    with pytest.raises(InputError, match=r"column 'id' \(an id\): 150 of 200 ids") as error:
        model.fit(private)
    assert "1000" not in str(error.value)  # no private value quoted
    assert not hasattr(model, "ledger_")
    assert problems_of(schema, private)[0].startswith("column 'id' (an id): 150 of 200")
    private = _table(200, 1)
    private.loc[3, "ref"] = "syn-7"
    with pytest.raises(InputError, match="1 of 200 ids start with 'syn-'"):
        Synthesizer(schema, epsilon=1.0).fit(private)


def test_id_declarations_are_checked() -> None:
    base = {"label": "y", "columns": {"y": {"type": "categorical", "values": ["a", "b"]}}}
    for decl, message in (
        ({"type": "id", "integer": True}, "integer ids need a declared range"),
        ({"type": "id", "lo": 0, "hi": 9}, "only for integer ids"),
        ({"type": "id", "values": [1]}, "'values' is not a key of an id column"),
        ({"type": "id", "drop": "yes"}, "'drop' must be true or false"),
        ({"type": "id", "integer": True, "lo": 0.5, "hi": 9}, "'lo' must be a whole number"),
    ):
        with pytest.raises(InputError, match=message):
            Schema.from_dict({**base, "columns": {"k": decl, **base["columns"]}})
    with pytest.raises(InputError, match="cannot be an id column"):
        Schema.from_dict({"label": "k", "columns": {"k": {"type": "id"}, **base["columns"]}})
