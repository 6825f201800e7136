"""The facade's one interface (dpevolve.method): any method plugs in through ``fit`` and
``sample``; the named ones satisfy it; an unusable input is refused by name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpevolve import Synthesizer
from dpevolve.engine.method import AdaptiveMethod
from dpevolve.errors import InputError
from dpevolve.method import FitContext, Generator, Method, refuse_inputs
from dpevolve.pe.method import PEMethod
from dpevolve.presets import METHODS, get_method, method_from_dict
from dpevolve.privacy import Budget, Ledger


@dataclass(frozen=True)
class Rows:
    """A generator that repeats public rows (post-processing of nothing private)."""

    frame: pd.DataFrame

    def sample(self, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        index = rng.integers(0, len(self.frame), size=rows)
        return self.frame.iloc[index].reset_index(drop=True)


@dataclass(frozen=True)
class Fixed:
    """A method that spends nothing and releases fixed public rows: the smallest thing the
    facade can run, so the facade can know no more of a method than the interface."""

    frame: pd.DataFrame
    name: str = "fixed"

    def to_dict(self) -> dict[str, Any]:
        return {"preset": self.name}

    def check_inputs(self, *, policy: bool, public: bool) -> None:
        refuse_inputs(self.name, {"policy": policy, "public data": public}, "it reads neither")

    def fit(self, source: Any, schema: Any, budget: Budget, context: FitContext) -> Rows:
        self.check_inputs(policy=context.policy is not None, public=context.public is not None)
        assert budget.delta is not None  # the facade resolved it for n
        context.open(Ledger(budget.delta, metadata={**context.run, "preset": self.name}))
        context.history.append({"round": 0})
        return Rows(self.frame)


def test_any_method_runs_through_the_two_calls(small_schema, small_table) -> None:
    fixed = Fixed(small_table.iloc[:3])
    assert isinstance(fixed, Method) and isinstance(Rows(fixed.frame), Generator)
    model = Synthesizer(small_schema, method=fixed, epsilon=1.0, random_state=0)
    model.fit(small_table)
    assert model.ledger_.to_dict()["preset"] == "fixed" and model.history_ == [{"round": 0}]
    assert model.ledger_.to_dict()["private_rows"] == len(small_table)  # the facade's facts
    rows = model.sample(25)
    assert len(rows) == 25 and set(rows["age"]) <= set(fixed.frame["age"])
    assert len(model.synthetic_) == len(small_table)  # drawn from the generator, n rows
    # The same seed draws the same rows (post-processing only).
    again = Synthesizer(small_schema, method=fixed, epsilon=1.0, random_state=0).fit(small_table)
    pd.testing.assert_frame_equal(again.sample(25), rows)
    with pytest.raises(InputError, match="the fixed method cannot use public data"):
        Synthesizer(small_schema, method=fixed, epsilon=1.0, public=small_table).fit(small_table)


def test_the_named_methods_are_methods_and_read_back_from_their_words() -> None:
    assert METHODS[0] == "adaptive" and isinstance(get_method("adaptive"), AdaptiveMethod)
    for name in METHODS:
        method = get_method(name)
        assert isinstance(method, Method) and method.name == name
        assert method_from_dict(method.to_dict()) == method
    assert all(isinstance(get_method(n), PEMethod) for n in ("tabpe", "bfsoft", "hybrid"))


def test_the_engine_refuses_what_it_cannot_use(small_schema, small_table) -> None:
    engine = get_method("adaptive")
    engine.check_inputs(policy=False, public=True)  # public data: a free prior
    with pytest.raises(InputError, match="the adaptive method cannot use policy"):
        engine.check_inputs(policy=True, public=False)
    with pytest.raises(InputError, match="takes no vote"):
        method_from_dict({"method": "adaptive", "vote": {"kind": "soft", "temperature": 0.1}})
    with pytest.raises(InputError, match="engine options are for method adaptive"):
        get_method("tabpe", engine={"bins": 8})
