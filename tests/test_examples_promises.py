"""What the README promises about the shipped examples, file by file.

Every file in examples/bugs/ marks its bug with ``# BUG: SCnnn`` and gets exactly that finding, on
that line, and nothing else; examples/clean/, examples/reference/ and reference_model/ get none.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from shapecheck.linter import lint_source

BUG_MARK = re.compile(r"#\s*BUG:\s*(SC\d{3})\b")
BUGS = sorted((REPO / "examples" / "bugs").glob("*.py"))
CLEAN = sorted(
    [*(REPO / "examples" / "clean").glob("*.py"), *(REPO / "examples" / "reference").glob("*.py"),
     *(REPO / "reference_model").glob("*.py")]
)


def _findings(path: Path) -> list[tuple[int, str]]:
    result = lint_source(path.read_text(), str(path))
    assert result.error is None, result.error
    return sorted((d.span.line, d.code) for d in result.diagnostics)


def _marked(path: Path) -> list[tuple[int, str]]:
    return [
        (number, match.group(1))
        for number, text in enumerate(path.read_text().splitlines(), 1)
        if (match := BUG_MARK.search(text))
    ]


def test_the_example_folders_are_there() -> None:
    assert len(BUGS) >= 20 and len(CLEAN) >= 10


@pytest.mark.parametrize("path", BUGS, ids=lambda path: path.stem)
def test_bug_example_gets_exactly_its_finding(path: Path) -> None:
    marked = _marked(path)
    assert len(marked) == 1, f"{path.name} must mark exactly one line with '# BUG: SCnnn', found {marked}"
    assert path.name.startswith(marked[0][1].lower()), f"{path.name} marks {marked[0][1]}"
    assert _findings(path) == marked


@pytest.mark.parametrize("path", CLEAN, ids=lambda path: f"{path.parent.name}/{path.stem}")
def test_clean_code_gets_no_finding(path: Path) -> None:
    assert _findings(path) == []
