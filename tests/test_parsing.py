"""Large files are parsed in pieces: the joined module is the same tree and prints the same code."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from conftest import REPO
from shapecheck import parsing

TRICKY = '''\
# leading comment

import torch
x = """
not a statement
else:
"""
@decorator
def f(
a,
):
    return a


if x:
    pass
else:
    pass
y = 1 + \\
2
# a comment between statements

try:
    pass
except ValueError:
    pass
finally:
    pass
class C:
    pass
# trailing comment
'''


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parsing, "CHUNK_LINES", 2)


@pytest.mark.parametrize(
    "source",
    [TRICKY, TRICKY.rstrip("\n"), *(path.read_text() for path in sorted((REPO / "examples").rglob("*.py"))[:12])],
)
def test_pieces_join_to_the_same_module(small_pieces, source: str) -> None:
    joined = parsing.parse_module(source)
    whole = cst.parse_module(source)
    assert joined.code == source
    assert joined.deep_equals(whole)


def test_a_syntax_error_is_reported_at_its_real_place(small_pieces) -> None:
    source = "".join(f"x{i} = {i}\n" for i in range(20)) + "def f(:\n    pass\n"
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(source)
    with pytest.raises(cst.ParserSyntaxError) as error:
        parsing.parse_module(source)
    assert error.value.raw_line == whole.value.raw_line >= 21


def test_large_file_findings_are_at_the_right_lines(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(parsing, "CHUNK_LINES", 50)
    bug = (REPO / "examples" / "bugs" / "sc201_mask_dtype.py").read_text()
    filler = "".join(f"def helper_{i}(x):\n    return x\n\n\n" for i in range(100))
    source = filler + bug
    (tmp_path / "big.py").write_text(source)
    ran = cli("lint", "--no-cache", "--format", "concise", "big.py", cwd=tmp_path)
    expected = filler.count("\n") + next(i for i, line in enumerate(bug.splitlines(), 1) if "BUG: SC201" in line)
    assert f"big.py:{expected}:" in ran.out
