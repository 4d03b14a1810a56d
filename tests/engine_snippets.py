"""Helpers of the engine's idiom tests: lint a snippet and say where its findings are, or read the
shapes a standalone run of one function gave a name."""

from __future__ import annotations

import textwrap

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.linter import lint_source

#: Hugging Face CTRL's sinusoidal table, built by two module-level helpers from ``arange`` (shared by
#: the tests of positional tables and of the norms over them).
CTRL_SINUSOID = """def angle_defn(pos, i, d_model_size):
    angle_rates = 1 / torch.pow(10000, (2 * (i // 2)) / d_model_size)
    return pos * angle_rates


def positional_encoding(position, d_model_size, dtype):
    angle_rads = angle_defn(
        torch.arange(position, dtype=torch.int64).to(dtype).unsqueeze(1),
        torch.arange(d_model_size, dtype=torch.int64).to(dtype).unsqueeze(0),
        d_model_size,
    )
    sines = torch.sin(angle_rads[:, 0::2])
    cosines = torch.cos(angle_rads[:, 1::2])
    pos_encoding = torch.cat([sines, cosines], dim=-1)
    return pos_encoding
"""


def findings_on_lines(source: str, path: str = "attention.py") -> list[tuple[str, str]]:
    """The findings of all rules on ``source`` (dedented), as (code, the stripped text of its line)."""
    source = textwrap.dedent(source)
    lines = source.splitlines()
    result = lint_source(source, path)
    assert result.error is None, result.error
    return [(d.code, lines[d.line - 1].strip()) for d in result.diagnostics]


def standalone_shapes(source: str, function: str, name: str, path: str = "attention.py") -> list[str]:
    """The shapes ``name`` was given in every standalone (not inlined) run of ``function``."""
    source = textwrap.dedent(source)
    facts = analyze(cst.parse_module(source), source, path)
    return [
        str(assignment.value.shape)
        for run in facts.runs
        if run.qualname == function and not run.inlined
        for assignment in run.assignments
        if assignment.name == name and getattr(assignment.value, "shape", None) is not None
    ]


def findings(source: str, path: str = "snippet.py") -> list[tuple[str, int]]:
    """The findings of all rules on ``source`` (dedented), as (code, line)."""
    result = lint_source(textwrap.dedent(source), path)
    assert result.error is None, result.error
    return [(d.code, d.line) for d in result.diagnostics]


def line_of(source: str, text: str) -> int:
    """The number of the first line of ``source`` (dedented) that holds ``text``."""
    for number, line in enumerate(textwrap.dedent(source).splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(text)
