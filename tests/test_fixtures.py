"""One fixture per name: no conftest or test module redefines a conftest's fixture.

A fixture redefined in a sub-folder (or in one test module) silently changes what a
name means there: a test moved between folders then tests another table. Fixtures
local to one test module are that module's business. Read with ``ast``, nothing
imported.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
        isinstance(target, ast.Name) and target.id == "fixture"
    )


def fixtures(source: str) -> list[str]:
    """Names of the fixtures a module defines (``@pytest.fixture``, with or without args)."""
    tree = ast.parse(source)
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(_is_fixture(d) for d in node.decorator_list)
    ]


def test_no_shared_fixture_is_redefined() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(TESTS.rglob("*.py")):
        for name in fixtures(path.read_text(encoding="utf-8")):
            where[name].append(path.relative_to(TESTS).as_posix())
    shared = {
        name for name, paths in where.items() if any(p.endswith("conftest.py") for p in paths)
    }
    assert len(shared) > 5  # the reader sees the conftest fixtures
    twice = {name: where[name] for name in sorted(shared) if len(where[name]) > 1}
    assert not twice, f"shared fixtures defined more than once (rename one): {twice}"


def test_the_reader_finds_fixtures() -> None:
    source = (
        "import pytest\n@pytest.fixture\ndef a(): ...\n"
        "@pytest.fixture(scope='session')\ndef b(): ...\ndef c(): ...\n"
    )
    assert fixtures(source) == ["a", "b"]
