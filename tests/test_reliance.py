"""What the score rests on (reporting/reliance.py): a column that nearly copies the label
carries a synthetic table whose other relations are gone, and the verdict says so
before the headline number."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from dpevolve.data.schema import CategoricalColumn, NumericColumn, Schema
from dpevolve.reporting.evaluation import evaluate, format_report, verdict
from dpevolve.reporting.reliance import carries, findings

pytest.importorskip("sklearn")

SCHEMA = Schema(
    (
        NumericColumn("income", 0.0, 400.0),
        NumericColumn("wealth", 0.0, 2000.0),
        NumericColumn("age", 18.0, 90.0, integer=True),
        CategoricalColumn("flag", ("a", "b")),
        CategoricalColumn("owner", ("no", "yes")),
    ),
    label="owner",
)


def _household(n: int, seed: int) -> pd.DataFrame:
    """Income and wealth correlated, income higher for owners, a flag copying the label."""
    rng = np.random.default_rng(seed)
    owner = rng.random(n) < 0.4
    income = np.clip(rng.lognormal(3.6 + 0.5 * owner, 0.5), 0, 400)
    wealth = np.clip(income * rng.lognormal(1.0, 0.6, n), 0, 2000)
    flag = np.where(rng.random(n) < 0.96, owner, ~owner)
    return pd.DataFrame(
        {
            "income": income,
            "wealth": wealth,
            "age": rng.integers(18, 91, n),
            "flag": np.where(flag, "b", "a"),
            "owner": np.where(owner, "yes", "no"),
        }
    )


def _proxy_only(real: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Keeps the flag-label pairs and every column's marginal, loses everything else."""
    rng = np.random.default_rng(seed)
    out = real.sample(frac=1.0, replace=True, random_state=seed).reset_index(drop=True)
    for column in ("income", "wealth", "age"):
        out[column] = rng.permutation(out[column].to_numpy())
    return out


@pytest.fixture(scope="module")
def tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    return _household(3000, 1), _household(1000, 2)


def test_a_proxy_carrying_the_score_is_named_before_the_headline(tables) -> None:
    real, test = tables
    result = evaluate(real, _proxy_only(real, 3), SCHEMA, label="owner", test=test,
                      privacy_checks=False)  # fmt: skip
    checked = result["reliance"]
    assert checked["without"]["column"] == "flag" and carries(checked["without"])
    # The headline alone would call the table excellent: level with the real model.
    assert result["tstr"]["accuracy"] > result["tstr"]["real"]["accuracy"] - 0.03
    text = verdict(result)
    assert text.startswith("Check before trusting the score: the score rests on 'flag'")
    assert text.index("'income' and 'wealth' fell") < text.index("A model trained")
    assert "gap in mean 'income' between owner 'no' and 'yes'" in text
    assert format_report(result).startswith(text)


def test_a_faithful_table_raises_no_warning(tables) -> None:
    real, test = tables
    bootstrap = real.sample(frac=1.0, replace=True, random_state=4).reset_index(drop=True)
    result = evaluate(real, bootstrap, SCHEMA, label="owner", test=test, privacy_checks=False)
    checked = result["reliance"]
    assert findings(checked) == []
    pairs = [p["columns"] for p in checked["pairs"]]
    assert pairs == [["income", "wealth"], ["income", "age"], ["wealth", "age"]]
    assert [f["column"] for f in checked["features"]] == ["income", "wealth", "age", "flag"]
    assert checked["without"]["column"] == "flag" and not carries(checked["without"])
    assert verdict(result).startswith("A model trained")


def test_the_result_has_one_shape_for_neighbouring_tables(tables) -> None:
    """Which relations matter is judged from the numbers: the result itself names the
    same columns in the same order whichever row of the real table changes."""
    real, test = tables
    synthetic = _proxy_only(real, 3)
    neighbour = real.copy()
    neighbour.loc[7] = [399.0, 1999.0, 90, "b", "no"]

    def shape(frame: pd.DataFrame) -> str:
        out = evaluate(frame, synthetic, SCHEMA, label="owner", test=test, privacy_checks=False)
        return re.sub(r"-?\d+(\.\d+)?(e[+-]?\d+)?", "#", json.dumps(out["reliance"]))

    assert shape(real) == shape(neighbour)


def test_the_owner_report_shows_the_relations(tables) -> None:
    pytest.importorskip("matplotlib")
    from dpevolve.reporting.report import render_report

    real, test = tables
    synthetic = _proxy_only(real, 3)
    result = evaluate(real, synthetic, SCHEMA, label="owner", test=test, privacy_checks=False)
    ledger = {"epsilon": 1.0, "delta": 1e-5, "events": [], "schema": SCHEMA.to_dict()}
    page = render_report(ledger=ledger, evaluation=result, schema=SCHEMA)
    box = page.index('class="verdict"')
    assert page.index("Check before trusting the score", box) < page.index("A model trained", box)
    assert 'id="reliance"' in page and "no: the score rests on it" in page
    shared = render_report(ledger=ledger, evaluation=result, synthetic=synthetic, schema=SCHEMA,
                           public_safe=True)  # fmt: skip
    assert "Check before trusting" not in shared and 'id="reliance"' not in shared
