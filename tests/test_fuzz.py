"""Property-based fuzzing: no input makes the linter raise or the engine catch an exception.

Two sources of programs: layouts the tokenizer must survive (blank lines, tabs, form feeds, CR
and CRLF line ends, comments in any Unicode, between small statements and blocks), and random
mutations of the shipped examples (lines deleted, duplicated or swapped, numbers, operators and
names replaced). Kept small so that the suite stays fast. ``benchmarks/fuzz.py`` runs hypothesmith's
programs from the Python grammar (slow to generate: tens of seconds for a few dozen, and at the few
examples a test could afford it only produced such layouts), and ``benchmarks/robustness.py`` the
same check over large real corpora.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from shapecheck.linter import lint_source

EXAMPLES = sorted((REPO / "examples").rglob("*.py"))
SOURCES = [path.read_text() for path in EXAMPLES]
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
MUTATIONS = settings(FUZZ, max_examples=40)


def assert_robust(source: str, name: str = "fuzz.py") -> None:
    result = lint_source(source, name)  # an exception escaping here fails the test with its traceback
    assert result.error is None or "internal error" not in result.error.message, result.error
    assert result.internal_errors == [], "\n".join(result.internal_errors) + "\n--- source:\n" + source


#: Pieces of a line's layout: indentation, form feeds, comments with characters from any plane.
_SPACING = st.text(alphabet=" \t\x0c", max_size=6)
_COMMENT = st.builds(lambda text: "#" + text, st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\r\n"), max_size=12))
_LINE_END = st.sampled_from(["\n", "\r\n", "\r"])
_STATEMENT = st.sampled_from([
    "", "pass", "A", "x = torch.randn(2, 3)", "y = x @ x.T", "class A:\n pass", "def f(x):\n    return x",
    "if x:\n\tpass", "with torch.no_grad():\n    pass", "nn.Linear(4, 4)(x)", "x.view(-1)",
])


@st.composite
def layouts(draw: st.DrawFn) -> str:
    """A program of top-level statements, each preceded by odd spacing and maybe a comment."""
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        comment = draw(st.one_of(st.just(""), _COMMENT))
        statement = draw(_STATEMENT)
        if statement:
            lines.append(statement + ("  " + comment if comment else ""))
        else:
            lines.append(draw(_SPACING) + comment)
        lines.append(draw(_LINE_END))
    return "".join(lines)


@FUZZ
@given(layouts())
def test_layouts_of_lines_and_comments(program: str) -> None:
    assert_robust("import torch\nimport torch.nn as nn\n" + program)


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?![\w.])")
_OPERATOR = re.compile(r" (\+|-|\*|/|@|//) ")
_NAME = re.compile(r"\b[a-zA-Z_]\w*\b")


def mutate(source: str, rng: random.Random, steps: int) -> str:
    lines = source.splitlines(keepends=True)
    for _ in range(steps):
        if not lines:
            break
        kind = rng.randrange(6)
        i = rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[rng.randrange(len(lines))])
        elif kind == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            lines[i] = _NUMBER.sub(lambda m: str(rng.choice([-2, -1, 0, 1, 2, 3, 64, 10**12])), lines[i], count=1)
        elif kind == 4:
            lines[i] = _OPERATOR.sub(lambda m: f" {rng.choice(['+', '-', '*', '/', '@', '//', '%'])} ", lines[i], count=1)
        else:
            names = _NAME.findall(source)
            if names:
                lines[i] = _NAME.sub(lambda m: rng.choice(names), lines[i], count=1)
    return "".join(lines)


@MUTATIONS
@given(index=st.integers(0, len(SOURCES) - 1), salt=st.integers(0, 2**32), steps=st.integers(1, 6))
def test_mutated_examples(index: int, salt: int, steps: int) -> None:
    rng = random.Random(salt)
    assert_robust(mutate(SOURCES[index], rng, steps), Path(EXAMPLES[index]).name)
