"""Property-based fuzzing: no input makes the linter raise or the engine catch an exception.

Two sources of programs: hypothesmith (random valid Python from the grammar, with ``import torch``
in front so that the engine analyses it) and random mutations of the shipped examples (lines
deleted, duplicated or swapped, numbers, operators and names replaced). Kept small so that the
suite stays fast; ``benchmarks/robustness.py`` runs the same check over large real corpora.
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
FUZZ = settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
MUTATIONS = settings(FUZZ, max_examples=40)


def assert_robust(source: str, name: str = "fuzz.py") -> None:
    result = lint_source(source, name)  # an exception escaping here fails the test with its traceback
    assert result.error is None or "internal error" not in result.error.message, result.error
    assert result.internal_errors == [], "\n".join(result.internal_errors) + "\n--- source:\n" + source


def _grammar_programs() -> st.SearchStrategy[str]:
    """hypothesmith's strategies, built when a test first draws from them: importing hypothesmith
    and building its parser of the Python grammar takes seconds, which every test process would
    otherwise pay at collection."""
    import hypothesmith

    return hypothesmith.from_grammar()


def _node_programs() -> st.SearchStrategy[str]:
    import hypothesmith

    return hypothesmith.from_node()


@FUZZ
@given(st.deferred(_grammar_programs))
def test_grammar_generated_programs(program: str) -> None:
    assert_robust("import torch\nimport torch.nn as nn\n" + program)


@settings(FUZZ, max_examples=3)  # from_node is slow to generate
@given(st.deferred(_node_programs))
def test_node_generated_programs(program: str) -> None:
    assert_robust("import torch\n" + program)


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
