"""The data behind ``shapecheck shapes``: inferred tensor shapes per function, JSON-ready.

Contract (``--format json``)::

    {"version": 1, "functions": [{"qualname": "MultiHeadAttention.forward", "path": str, "line": int,
      "values": [{"line": int, "name": "scores", "shape": ["b", "n_heads", "t", "t"],
                  "dtype": "float" | "bool" | "int" | null}]}]}

A dim is an int or a string without spaces (a symbol or an expression such as ``"d_model//n_heads"``);
``"*"`` first stands for leading dims of unknown number; an unknown shape is null.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import TensorValue
from shapecheck.linter import SourceError, read_source
from shapecheck.positions import PositionIndex
from shapecheck.project import LintContext, Workspace

VERSION = 1


class ShapesError(Exception):
    """The file cannot be analysed (missing, unreadable, not Python) or the qualname is unknown."""


def shapes_report(path: str, qualname: str | None = None) -> dict:
    file = Path(path)
    if file.is_dir():
        raise ShapesError(f"{path}: is a directory; give one Python file")
    try:
        source = read_source(file)
    except SourceError as error:
        raise ShapesError(f"{path}: {error}") from None
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        raise ShapesError(f"{path}:{error.raw_line}:{error.raw_column + 1}: the file does not parse") from None
    # The project's modules that the file imports are followed, as in ``lint``.
    context = LintContext.for_file(Workspace(), file)
    if context is not None and context.this.source == source:
        module = context.this.module
        facts = analyze(module, source, path, context.graph, context.this)
    else:
        facts = analyze(module, source, path)
    positions = PositionIndex(module)
    functions = []
    seen: set[int] = set()
    for run in facts.runs:
        if run.inlined or run.node is None or id(run.node) in seen:
            continue
        if qualname and not (run.qualname == qualname or run.qualname.startswith(qualname + ".")):
            continue
        seen.add(id(run.node))
        values = []
        for assignment in run.assignments:
            value = assignment.value
            if not isinstance(value, TensorValue):
                continue
            values.append(
                {
                    "line": positions.span(assignment.node).line,
                    "name": assignment.name,
                    "shape": value.shape.to_json() if value.shape is not None else None,
                    "dtype": value.dtype,
                }
            )
        functions.append(
            {"qualname": run.qualname, "path": path, "line": positions.span(run.node.name).line, "values": values}
        )
    if qualname and not functions:
        raise ShapesError(f"{path}: no function or class named {qualname!r} with tensor code")
    functions.sort(key=lambda f: f["line"])
    return {"version": VERSION, "functions": functions}
