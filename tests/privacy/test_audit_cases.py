"""Every case of the privacy audit benchmark, at a small trial count.

``benchmarks/privacy_audit.py`` runs each case at 10**6 trials per side; here each
runs at a few thousand (every chunk from a fixed seed: the same counts every run) and
must keep the audit's promises: the claim is finite, the pair is visible (exact
epsilon above 0), and neither the exact figure nor the empirical lower bound exceeds
the claim.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

AUDIT = Path(__file__).resolve().parents[2] / "benchmarks" / "privacy_audit.py"


def _load() -> ModuleType:
    if str(AUDIT.parent) not in sys.path:
        sys.path.append(str(AUDIT.parent))  # the benchmark imports its harness beside it
    spec = importlib.util.spec_from_file_location("privacy_audit", AUDIT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("privacy_audit", module)
    spec.loader.exec_module(module)
    return module


audit = _load()
#: What the issue asks the audit to cover, each by at least one case.
REQUIRED = {
    "hard-alone", "soft-edge", "soft-vote-sharpened", "fixed-fraction", "fixed-near-tie",
    "marginal-release", "marginals-with-pe-round", "pubmix-tight", "pubmix-basic",
    "standalone-pubmix", "standalone-linmix", "standalone-gaussian",
    "private-gamma-estimate", "private-floor-choice", "engine-selection",
}  # fmt: skip


def test_the_audit_covers_every_mechanism_and_option() -> None:
    assert REQUIRED <= set(audit.CASES)
    assert len(audit.CASES) >= 12


@pytest.mark.parametrize("key", sorted(audit.CASES))
def test_each_audit_case_keeps_its_claim(key: str) -> None:
    result = audit.run_case(key, 4_000)
    claimed, exact = result["claimed_epsilon"], result["exact_epsilon"]
    assert 0 < claimed < math.inf
    assert exact is not None and 0 < exact <= claimed * (1 + 1e-6) + 1e-9
    assert result["lower_bound"] <= claimed
    assert result["trials"] == 4_000


def test_a_new_case_is_one_registered_function() -> None:
    @audit.case
    def extension_probe(trials: int) -> dict:
        return audit.row("probe", 1.0, trials // 2, trials // 2, trials, 0.5)

    try:
        assert audit.run_case("extension-probe", 100)["lower_bound"] <= 1.0
    finally:
        del audit.CASES["extension-probe"]
