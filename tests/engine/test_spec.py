"""The engine's options as users meet them."""

from __future__ import annotations


def test_every_engine_option_is_documented() -> None:
    """docs/engine.md's Options table names every EngineSpec field (users set them)."""
    from dataclasses import fields
    from pathlib import Path

    from dpevolve.engine.spec import EngineSpec

    docs = Path(__file__).resolve().parents[2] / "docs" / "engine.md"
    table = docs.read_text(encoding="utf-8").split("## Options", 1)[1]
    missing = [f.name for f in fields(EngineSpec) if f"`{f.name}`" not in table]
    assert not missing, f"docs/engine.md's Options table lacks {missing}"
