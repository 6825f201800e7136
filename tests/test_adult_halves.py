"""The README's "your own table" flow on Adult's 15 columns, one half public and the
other private, unedited (skips without the data): a value of `native-country` that only
the private half holds becomes '(other)', and the output keeps the input's look."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpevolve import datasets
from dpevolve.cli import main
from dpevolve.data.schema import OTHER, CategoricalColumn, NumericColumn, Schema
from dpevolve.errors import InputError

FAST = ["--engine-options", "{max_rounds: 4}", "--quiet"]


@pytest.fixture
def adult() -> pd.DataFrame:
    try:
        return datasets.load("adult").frame
    except InputError:
        pytest.skip("UCI Adult files not found")


def cli(*argv: object) -> None:
    code = main([str(a) for a in argv])
    assert code == 0, f"dpevolve {' '.join(map(str, argv))} exited {code}"


def test_readme_flow_on_adult_halves_runs_unedited(adult: pd.DataFrame, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    public_rows = rng.random(len(adult)) < 0.5
    only_private = (adult["native-country"] == "Holand-Netherlands").to_numpy()
    assert only_private.sum() == 1  # one person in the whole training file
    public_rows[only_private] = False
    public, private = tmp_path / "public.csv", tmp_path / "private.csv"
    adult[public_rows].to_csv(public, index=False)
    adult[~public_rows].to_csv(private, index=False)
    schema_path, synthetic = tmp_path / "schema.yaml", tmp_path / "synthetic.csv"

    cli("schema", "infer", public, "--label", "income", "-o", schema_path)
    cli("schema", "check", private, "-s", schema_path)
    cli("synth", private, "-s", schema_path, "--public", public, "-e", 1, "--rows", 500,
        "-o", synthetic, *FAST)  # fmt: skip

    schema = Schema.load(schema_path)
    country = schema["native-country"]
    assert isinstance(country, CategoricalColumn) and country.other
    assert "Holand-Netherlands" not in country.declared
    assert not schema["sex"].other  # only common values in public: no bucket
    assert not schema["income"].other  # never on the label
    assert schema.identifiers == ()  # fnlwgt repeats: a number, not an identifier
    out = pd.read_csv(synthetic)
    assert len(out) == 500 and list(out.columns) == schema.names
    for column in schema.columns:
        if isinstance(column, NumericColumn):
            assert column.integer  # every Adult number is whole, and so is the output
            assert (out[column.name] == out[column.name].round()).all()
            assert out[column.name].between(column.lo, column.hi).all()
        elif not column.other:
            assert OTHER not in set(out[column.name].astype(str))
    cli("schema", "check", synthetic, "-s", schema_path)  # the output fits its schema
