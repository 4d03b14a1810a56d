"""Exceptions the engine catches are counted and shown, never hidden; SHAPECHECK_DEBUG raises them."""

from __future__ import annotations

import json
from pathlib import Path

import libcst as cst
import pytest

from shapecheck.engine import analyze
from shapecheck.engine.ops import base, dispatch

SOURCE = "import torch\n\n\ndef f(x, y):\n    return torch.cat([x, y], dim=0)\n"


@pytest.fixture
def broken_cat(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode(interp, call, frame):
        raise IndexError("boom")

    monkeypatch.setitem(base.OPS, "cat", explode)


def test_caught_errors_are_counted_with_their_place(broken_cat, cli, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    ran = cli("lint", "--no-cache", "m.py", cwd=tmp_path)
    assert ran.code == 0
    assert "1 internal error caught (--verbose lists them)." in ran.out
    verbose = cli("lint", "--no-cache", "--verbose", "m.py", cwd=tmp_path)
    assert "m.py:5:12: internal error in 'cat' (IndexError: boom) at test_internal_errors.py:" in verbose.err
    data = json.loads(cli("lint", "--no-cache", "--format", "json", "m.py", cwd=tmp_path).out)
    assert data["coverage"]["internal_errors"] == 1


def test_debug_raises_them(broken_cat, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    monkeypatch.setenv("SHAPECHECK_DEBUG", "1")
    with pytest.raises(IndexError, match="boom"):
        cli("lint", "--no-cache", "m.py", cwd=tmp_path)


def test_results_with_caught_errors_are_not_cached(broken_cat, cli, tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    cli("lint", "m.py", cwd=tmp_path)
    assert "1 internal error caught" in cli("lint", "m.py", cwd=tmp_path).out


def test_cat_of_an_empty_list_is_not_a_crash() -> None:
    source = "import torch\n\n\ndef f(x):\n    parts = []\n    return torch.cat(parts, dim=0), torch.cat([], 1)\n"
    facts = analyze(cst.parse_module(source), source, "m.py")
    assert facts.internal_errors == []
