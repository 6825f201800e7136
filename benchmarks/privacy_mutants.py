"""Mutation check of the privacy tests: does ``pytest tests/privacy`` alone fail on each
engine privacy bug?

A text mutant is an edit of the source (:data:`MUTANTS`), applied to a copy of
``src`` in a temporary folder; ``pytest tests/privacy -x -q`` then runs against that
copy (``PYTHONPATH``), the working tree untouched. ``tests/privacy/test_mutants.py``
patches the same bugs in with ``monkeypatch`` on every suite run, and more: the mutants
of the newer mechanisms (atoms, parity cuts, bins read afresh, decoding span) exist
only there, as function patches that survive edits to the lines around them; this
script runs those with the patch applied for the whole pytest session
(``DPEVOLVE_TEST_MUTANT``, read by ``tests/privacy/conftest.py``; the table's own
test, which would stack a second patch on it, is skipped then). The unmutated copy
must pass and every mutant must fail; the first failing test is recorded.

Usage::

    python benchmarks/privacy_mutants.py            # every mutant
    python benchmarks/privacy_mutants.py fine-histogram-free atom-sensitivity-one
    # -> benchmarks/results/privacy_mutants.json (--out elsewhere)
    python benchmarks/privacy_mutants.py --every-failure \
        --paths tests/privacy/test_selection_exact.py tests/privacy/test_model_file.py
    # -> every failing test of those files (no -x), in privacy_mutants_every.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "privacy_mutants.json"
VARIABLE = "DPEVOLVE_TEST_MUTANT"  # tests/privacy/conftest.py: MUTANT_VARIABLE

_RECOUNT = "_, _exact = count_marginals(source, run.discretiser, [], list(fine))\n    "
_LEAK = "{k: type(m)(m.query, _exact[k], m.sigma, m.event) for k, m in fine.items()}"

#: name -> (file under src/dpevolve, text, replacement): each text occurs exactly once.
#: (``bins-from-exact-counts`` was one too, until the atoms changed its line: it now
#: runs as its patch, like every newer mutant.)
MUTANTS: dict[str, tuple[str, str, str]] = {
    "selection-scale-half": (
        "engine/select.py",
        "return noise.noisy_argmax(values, event.scale)",
        "return noise.noisy_argmax(values, event.scale / 2)",
    ),
    "selection-scale-quarter": (
        "engine/select.py",
        "return noise.noisy_argmax(values, event.scale)",
        "return noise.noisy_argmax(values, event.scale / 4)",
    ),
    "selection-rho-eps2-16": (
        "privacy/events.py",
        "return self.epsilon**2 / 8.0",
        "return self.epsilon**2 / 16.0",
    ),
    "fine-histogram-free": (
        "engine/loop.py",
        "event = marginal_event(sigma, FINE + name)",
        "event = marginal_event(sigma, FINE + name)\n"
        "        event = type(event)(0.0, event.sigma, event.label, discrete=True)",
    ),
    "fine-histogram-unrecorded": (
        "engine/loop.py",
        "run.ledger.record(event, round=0, clique=[name], cells=int(fine_exact[name].size))",
        "pass",
    ),
    "decoding-from-exact-counts": (
        "engine/loop.py",
        "    if schedule.pe > 0:\n        stage = StageInputs(",
        f"    {_RECOUNT}result.fine = {_LEAK}\n"
        "    if schedule.pe > 0:\n        stage = StageInputs(",
    ),
}


def patched() -> list[str]:
    """The mutants of ``tests/privacy/test_mutants.py`` that have no text edit here."""
    sys.path.insert(0, str(ROOT))
    from tests.privacy.test_mutants import MUTANTS as PATCHES

    return [name for name in PATCHES if name not in MUTANTS]


def run(name: str | None, paths: list[str] | None = None, every: bool = False) -> dict[str, object]:
    """``pytest tests/privacy -x -q`` (or ``paths``; without ``-x`` when ``every``)
    against a copy of ``src`` with mutant ``name`` (``None``: unmutated)."""
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    with tempfile.TemporaryDirectory() as folder:
        src = Path(folder) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
        if name in MUTANTS:
            file, text, replacement = MUTANTS[name]
            path = src / "dpevolve" / file
            code = path.read_text()
            if code.count(text) != 1:
                raise SystemExit(f"{name}: the text to mutate is not in {file} exactly once")
            path.write_text(code.replace(text, replacement))
        elif name is not None:
            env[VARIABLE] = name
        env.update(PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
        command = [sys.executable, "-m", "pytest", *(paths or ["tests/privacy"]), "-q"]
        command += ["-p", "no:cacheprovider", *([] if every else ["-x"])]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
    failed = re.findall(r"^FAILED (\S+)", done.stdout, flags=re.MULTILINE)
    kind = "text" if name in MUTANTS else "patch" if name else None
    row: dict[str, object] = {"mutant": name or "none", "kind": kind}
    row["pytest_exit"] = done.returncode
    if every:
        row["failures"] = failed
    else:
        row["first_failure"] = failed[0] if failed else None
    row["seconds"] = round(seconds, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    every_name = [*MUTANTS, *patched()]
    parser.add_argument("mutants", nargs="*", help=f"some of {', '.join(every_name)}")
    parser.add_argument("--paths", nargs="+", help="test paths (default tests/privacy)")
    parser.add_argument("--every-failure", action="store_true", help="no -x: every failure")
    parser.add_argument("--out", type=Path, help=f"result file (default {OUT.name})")
    args = parser.parse_args(argv)
    unknown = set(args.mutants) - set(every_name)
    if unknown:
        parser.error(f"unknown mutants: {', '.join(sorted(unknown))}")
    names: list[str | None] = [None, *(args.mutants or every_name)]
    for name in names:  # a stale text edit stops the run before the long clean pass
        if name in MUTANTS:
            file, text, _ = MUTANTS[name]
            if (ROOT / "src" / "dpevolve" / file).read_text().count(text) != 1:
                parser.error(f"{name}: the text to mutate is not in {file} exactly once")
    rows = []
    for name in names:
        row = run(name, args.paths, args.every_failure)
        print(json.dumps(row), flush=True)
        rows.append(row)
    out = args.out or (OUT.with_stem(OUT.stem + "_every") if args.every_failure else OUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n")
    clean = rows[0]["pytest_exit"] == 0
    caught = all(r["pytest_exit"] not in (0, None) for r in rows[1:])
    return 0 if clean and caught else 1


if __name__ == "__main__":
    raise SystemExit(main())
