"""Start-up stays light: what `import dpevolve.cli`, `--version` and help load.

Structural, not timed: each check runs in a fresh interpreter and asserts which heavy
modules are (not) in ``sys.modules``. OpenDP's prelude alone costs seconds and pulls in
scikit-learn; numba, matplotlib and pandas are needed only by the commands that use them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
HEAVY = ("opendp", "numba", "matplotlib", "sklearn", "pandas", "scipy", "dask", "typer")


def _loaded(code: str) -> dict[str, object]:
    """Run ``code`` in a fresh interpreter; report which HEAVY modules it loaded."""
    script = (
        "import contextlib, io, json, sys\n"
        f"with contextlib.redirect_stdout(io.StringIO()) as out:\n    {code}\n"
        f"print(json.dumps({{'loaded': sorted(m for m in {HEAVY!r} if m in sys.modules), "
        "'out': out.getvalue()}))"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert _loaded("import dpevolve.cli")["loaded"] == []


def test_version_loads_nothing_heavy() -> None:
    result = _loaded("from dpevolve.cli import main; main(['--version'])")
    assert result["loaded"] == []
    assert str(result["out"]).startswith("dpevolve ")


@pytest.mark.parametrize("argv", [["-h"], ["synth", "-h"], ["schema", "check", "-h"]])
def test_help_loads_only_typer(argv: list[str]) -> None:
    result = _loaded(f"from dpevolve.cli import main; main({argv!r})")
    assert result["loaded"] == ["typer"]  # no pandas, numba, OpenDP, plotting
    assert "Usage: dpevolve" in str(result["out"])


def test_secure_noise_imports_only_what_it_draws_with() -> None:
    code = (
        "from dpevolve.privacy.noise import SecureNoise; s = SecureNoise(); "
        "import sys; assert 'opendp' not in sys.modules; s.gaussian([0.0, 1.0], 2.0); "
        "s.noisy_argmax([0.0, 1.0], 1.0); assert 'opendp.prelude' not in sys.modules"
    )
    loaded = _loaded(code)["loaded"]
    assert "opendp" in loaded  # imported on the first draw ...
    assert "sklearn" not in loaded  # ... without the prelude's scikit-learn extras
