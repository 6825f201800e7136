"""One shape for a setting, measured (docs/architecture.md, "One budget, measured").

``dpevolve synth -e EPS`` is run under a profiler that notes every call inside the
package whose arguments carry the budget: the number itself, a mapping holding it, a
:class:`~dpevolve.privacy.Budget`, an object holding either (the CLI's run settings,
PE's release inputs) or the engine's :class:`~dpevolve.engine.plan.Plan`.
The files those calls live in are the route from the flag to the noise scale, apart
from the places that only check, record or say the number (listed below). The facade's
and the command's parameters are counted here too, and what each method writes as its
ledger's ``config`` block.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import dpevolve
from dpevolve import Synthesizer
from dpevolve.cli import ledger_path, main
from dpevolve.engine.plan import Plan
from dpevolve.privacy import Budget

EPSILON = 0.8137  # a number no default takes: where it appears, the budget is
ROOT = str(Path(dpevolve.__file__).parent) + "/"
#: Where the number is only checked (``privacy/checks.py``: Budget's own checks), said
#: (``cli/interrupt.py``: what a run puts at stake; ``cli/announce.py``: the small-table
#: warning) or written (the ledger): no hop towards the noise scale.
ASIDE = frozenset({"privacy/checks.py", "cli/interrupt.py", "cli/announce.py", "privacy/ledger.py"})
#: The measured routes (docs/architecture.md); a new hop fails here and is counted there.
#: The adaptive engine's budget stops at its plan: the run is handed a ``Schedule`` of
#: noise scales. Private Evolution's stops at its fit plan: the vote choice is handed the
#: public pilot's noise multiplier, the Gaussian release the rounds' ``rho``.
ROUTES = {
    "adaptive": {
        "cli/synth.py", "synthesizer.py", "privacy/budget.py", "privacy/conversions.py",
        "engine/method.py", "engine/plan.py",
    },
    "tabpe": {
        "cli/synth.py", "synthesizer.py", "privacy/budget.py", "privacy/conversions.py",
        "pe/method.py", "pe/fit_plan.py",
    },
}  # fmt: skip
#: The target (#26): at most 6 files in at most 3 shapes (flag, ``Budget``, the plan).
MOST_FILES = {"adaptive": 6, "tabpe": 6}
SHAPES = {"adaptive": {"float", "Budget", "Plan"}, "tabpe": {"float", "Budget"}}


def _shape(value: Any, top: bool = True) -> str | None:
    """The shape in which ``value`` carries the budget, or ``None``."""
    if isinstance(value, float) and value == EPSILON:
        return "float"
    if isinstance(value, Budget):
        return "Budget"
    if isinstance(value, Plan):
        return "Plan"
    if not top:
        return None
    if isinstance(value, Mapping):
        inner = {_shape(v, False) for v in value.values()} - {None}
        return "mapping" if inner else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = {_shape(getattr(value, f.name, None), False) for f in dataclasses.fields(value)}
        inner -= {None}
        return inner.pop() if inner else None  # a carrier: the shape it holds
    return None


def _route(argv: list[str]) -> dict[str, set[str]]:
    """file -> shapes in which its functions received the budget during ``main(argv)``."""
    seen: dict[str, set[str]] = {}

    def profile(frame: Any, event: str, arg: Any) -> None:
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(ROOT):
            return
        count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 8)
        for name in code.co_varnames[:count]:
            shape = _shape(frame.f_locals.get(name))
            if shape is not None:
                seen.setdefault(code.co_filename[len(ROOT) :], set()).add(shape)
                return

    sys.setprofile(profile)
    try:
        assert main(argv) == 0
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize(
    ("method", "flags"),
    [
        ("adaptive", ["--engine-options", "{max_rounds: 2}"]),
        ("tabpe", ["--method", "tabpe", "--population", "8", "--rounds", "1"]),
        # With public data and a policy the vote is "auto": the public pilot runs, at the
        # noise multiplier the fit plan works out, and the route stays the same.
        ("tabpe", ["--method", "tabpe", "--population", "8", "--rounds", "1", "--public",
                   "PUBLIC", "--policy", "POLICY"]),
    ],
)  # fmt: skip
def test_epsilon_reaches_the_noise_scale_by_the_measured_route(
    tmp_path: Path, small_schema: Any, small_table: Any, method: str, flags: list[str]
) -> None:
    schema, private, out = tmp_path / "s.yaml", tmp_path / "p.csv", tmp_path / "o.csv"
    schema.write_text(small_schema.to_yaml())
    small_table.to_csv(private, index=False)
    public, policy = tmp_path / "public.csv", tmp_path / "policy.yaml"
    small_table.iloc[:200].to_csv(public, index=False)
    policy.write_text("attributes:\n  age:\n    threshold: 5\n")
    flags = [{"PUBLIC": str(public), "POLICY": str(policy)}.get(f, f) for f in flags]
    argv = ["synth", str(private), "-s", str(schema), "-e", str(EPSILON), "-o", str(out)]
    seen = _route([*argv, "--quiet", "--seed", "1", *flags])
    route = {f: s for f, s in seen.items() if f not in ASIDE}
    assert set(route) == ROUTES[method], sorted(route)
    assert len(route) <= MOST_FILES[method]
    assert set().union(*route.values()) - {"mapping"} == SHAPES[method], route
    assert len(SHAPES[method]) <= 3
    # A mapping holds the number only where a ledger is written (aside) or read.
    assert not any("mapping" in s for f, s in route.items() if f != "privacy/budget.py")
    # One config block per method: its own words only.
    config = json.loads(ledger_path(out).read_text())["config"]
    own = {"adaptive": {"method", "engine"}, "tabpe": {"preset", "vote", "mechanism", "marginals"}}
    assert set(config) == own[method] | {"backend", "on_invalid"}
    assert "engine" not in config.get("preset", {})
    if "--policy" in flags:
        assert config["vote"]["kind"] == "auto"


def test_the_facade_and_the_command_have_few_parameters() -> None:
    from dpevolve.cli.synth import synth

    facade = inspect.signature(Synthesizer.__init__).parameters.values()
    assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in facade)
    assert len([p for p in facade if p.name != "self"]) <= 12
    assert len(inspect.signature(synth).parameters) <= 25
    with pytest.raises(TypeError):
        Synthesizer("schema.yaml", epsilon=1.0, vote="hard")  # type: ignore[call-arg]
