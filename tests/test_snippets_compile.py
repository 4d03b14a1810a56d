"""The rule examples in shapecheck/rules/examples/ are well formed: every snippet parses, every INVALID snippet
marks exactly one line with ``# <-``, and no VALID snippet carries a marker."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from shapecheck.rules.base import EXPECT_MARKER

SNIPPETS = Path(__file__).parents[1] / "shapecheck" / "rules" / "examples"
FILES = sorted(SNIPPETS.glob("sc[0-9][0-9][0-9].py"))
MIN_EXAMPLES = 6


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"snippets_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _marked_lines(code: str) -> list[int]:
    return [
        number
        for number, text in enumerate(code.splitlines(), start=1)
        if text.rstrip().endswith(EXPECT_MARKER) or (EXPECT_MARKER + " ") in text
    ]


def _cases():
    for path in FILES:
        module = _load(path)
        for kind in ("INVALID", "VALID"):
            for title, code in getattr(module, kind):
                yield pytest.param(path.stem, kind, title, code, id=f"{path.stem}-{kind}-{title[:40]}")


def test_there_are_snippet_files():
    assert FILES, f"no snippet files in {SNIPPETS}"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_shape(path: Path):
    module = _load(path)
    for kind in ("INVALID", "VALID"):
        examples = getattr(module, kind)
        assert isinstance(examples, list), f"{path.name}: {kind} is not a list"
        assert len(examples) >= MIN_EXAMPLES, f"{path.name}: {len(examples)} {kind} snippets, want >= {MIN_EXAMPLES}"
        for pair in examples:
            assert isinstance(pair, tuple) and len(pair) == 2, f"{path.name}: {kind} entry is not (title, code)"
            assert all(isinstance(part, str) for part in pair), f"{path.name}: {kind} entry is not two strings"
        titles = [title for title, _ in examples]
        assert len(set(titles)) == len(titles), f"{path.name}: duplicate {kind} titles"


@pytest.mark.parametrize(("stem", "kind", "title", "code"), list(_cases()))
def test_snippet_compiles_and_is_marked(stem: str, kind: str, title: str, code: str):
    compile(code, f"<{stem} {kind}: {title}>", "exec")
    marked = _marked_lines(code)
    if kind == "INVALID":
        assert len(marked) == 1, f"{stem} INVALID {title!r}: marked lines {marked}, want exactly one"
    else:
        assert marked == [], f"{stem} VALID {title!r}: carries a {EXPECT_MARKER!r} marker on lines {marked}"
