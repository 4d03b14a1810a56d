"""The data behind ``shapecheck shapes``: inferred tensor shapes per function, JSON-ready.

Contract (``--format json``)::

    {"version": 1, "functions": [{"qualname": "MultiHeadAttention.forward", "path": str, "line": int,
      "values": [{"line": int, "name": "scores", "shape": ["b", "n_heads", "t", "t"],
                  "dtype": "float" | "bool" | "int" | null}]}]}

A dim is an int or a string without spaces (a symbol or an expression such as ``"d_model//n_heads"``);
``"*"`` first stands for leading dims of unknown number; an unknown shape is null. ``a|b`` is a dim
that is ``a`` on one path through the function and ``b`` on another.

Within one function a dim has one name: when the function names a size itself (``B, T, C =
x.size()``) and the engine proves it equal to a derived symbol (``config.n_embd``), the user's name
is shown. ``values`` are the tensors assigned to names; ``computed`` (added in version 1, as
``{"line", "expression", "shape", "dtype"}``) the tensors computed without being assigned
(``self.wte(idx)``).
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst

import re

from shapecheck.engine import analyze
from shapecheck.engine.domain.values import IntValue, TensorValue
from shapecheck.engine.symbolic.dims import Truth, equal, sym
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
        assigned: set[int] = set()
        for assignment in run.assignments:
            value = assignment.value
            if not isinstance(value, TensorValue):
                continue
            assigned.add(id(getattr(assignment.node, "value", None)))
            values.append(
                {
                    "line": positions.span(assignment.node).line,
                    "name": assignment.name,
                    "shape": value.shape.to_json() if value.shape is not None else None,
                    "dtype": value.dtype,
                }
            )
        computed = _computed(facts, run, assigned, module, positions)
        renames = _user_names(facts, run)
        _rename_dims(values, renames)
        _rename_dims(computed, renames)
        functions.append(
            {
                "qualname": run.qualname,
                "path": path,
                "line": positions.span(run.node.name).line,
                "values": values,
                "computed": computed,
            }
        )
    if qualname and not functions:
        raise ShapesError(f"{path}: no function or class named {qualname!r} with tensor code")
    functions.sort(key=lambda f: f["line"])
    return {"version": VERSION, "functions": functions}


#: Longest expression text shown for a tensor computed without a name.
MAX_EXPRESSION = 48
_IDENTIFIER = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*(?![\w.])")


def _computed(facts, run, assigned: set[int], module: cst.Module, positions: PositionIndex) -> list[dict]:
    """Tensors the function computes without assigning them (``self.wte(idx)`` in ``x = a + b``)."""
    out = []
    seen: set[int] = set()
    for event in facts.events:
        if event.run is not run or id(event.node) in assigned or id(event.node) in seen:
            continue
        result = event.result
        if not isinstance(result, TensorValue):
            continue
        seen.add(id(event.node))
        text = " ".join(module.code_for_node(event.node).split())
        if len(text) > MAX_EXPRESSION:
            text = text[: MAX_EXPRESSION - 3] + "..."
        span = positions.span(event.node)
        out.append(
            {
                "line": span.line,
                "column": span.column,
                "expression": text,
                "shape": result.shape.to_json() if result.shape is not None else None,
                "dtype": result.dtype,
            }
        )
    out.sort(key=lambda value: (value["line"], value.pop("column")))
    return out


def _user_names(facts, run) -> dict[str, str]:
    """Derived symbol -> the name the function gave that size itself, when provably equal."""
    sizes = [
        a.name
        for a in run.assignments
        if isinstance(a.value, IntValue) and str(a.value.dim) == a.name
    ]
    if not sizes:
        return {}
    assumptions = None
    for event in facts.events:
        if event.run is run and event.assumptions is not None:
            assumptions = event.assumptions
    symbols = {
        match
        for a in run.assignments
        if isinstance(a.value, TensorValue) and a.value.shape is not None
        for dim in a.value.shape.to_json() or []
        if isinstance(dim, str)
        for match in _IDENTIFIER.findall(dim)
    }
    renames: dict[str, str] = {}
    for symbol in sorted(symbols):
        if symbol in sizes:
            continue
        for name in sizes:
            try:
                same = equal(sym(symbol), sym(name), assumptions)
            except (ValueError, ArithmeticError):
                continue
            if same is Truth.TRUE:
                renames[symbol] = name
                break
    return renames


def _rename_dims(values: list[dict], renames: dict[str, str]) -> None:
    if not renames:
        return
    for value in values:
        shape = value["shape"]
        if shape is None:
            continue
        value["shape"] = [
            _IDENTIFIER.sub(lambda m: renames.get(m.group(), m.group()), dim) if isinstance(dim, str) else dim
            for dim in shape
        ]
