"""Python literals as abstract values."""

from __future__ import annotations

import libcst as cst

from shapecheck.engine.domain.values import (
    ConstValue,
    FloatValue,
    IntValue,
    Scale,
    TupleValue,
    Value,
)
from shapecheck.engine.symbolic.dims import Dim

_MAX_LITERAL_INT = 1 << 62
_STRING_PREFIXES = {"": False, "r": True, "R": True}


def _integer(text: str) -> int | None:
    """The value of an integer literal without ``ast.literal_eval`` (libcst's evaluated_value
    compiles each literal, a measurable share of a lint run)."""
    try:
        return int(text.replace("_", ""), 0)
    except ValueError:
        return None


def _string(node: cst.SimpleString) -> str | None:
    """A plain or raw one-line string literal's value, without compiling it; None otherwise."""
    text = node.value
    quote = text[-1]
    prefix = text[: text.index(quote)]
    if prefix not in _STRING_PREFIXES:
        return None
    body = text[len(prefix) :]
    if body.startswith(quote * 3) or len(body) < 2:
        return None
    inner = body[1:-1]
    if not _STRING_PREFIXES[prefix] and "\\" in inner:
        return None
    return inner


def literal_value(node: cst.BaseExpression | None) -> Value | None:
    """The value of a literal expression (numbers, strings, None/True/False, tuples of them)."""
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        number = _integer(node.value)
        if number is None:
            return None
        return IntValue(Dim.const(number)) if abs(number) < _MAX_LITERAL_INT else None
    if isinstance(node, cst.Float):
        try:
            return FloatValue(Scale(float(node.value.replace("_", ""))))
        except ValueError:
            return FloatValue(Scale(float(node.evaluated_value)))
    if isinstance(node, cst.SimpleString):
        text = _string(node)
        return ConstValue(text if text is not None else node.evaluated_value)
    if isinstance(node, cst.ConcatenatedString):
        return ConstValue(node.evaluated_value)
    if isinstance(node, cst.FormattedString):
        return ConstValue("<f-string>")
    if isinstance(node, cst.Ellipsis):
        return ConstValue(Ellipsis)
    if isinstance(node, cst.Name) and node.value in ("None", "True", "False"):
        return ConstValue({"None": None, "True": True, "False": False}[node.value])
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_value(node.expression)
        if isinstance(inner, IntValue) and inner.dim.is_const:
            return IntValue(Dim.const(-inner.dim.value))
        if isinstance(inner, FloatValue):
            return FloatValue(Scale(-inner.scale.coef, inner.scale.factors))
        return None
    if isinstance(node, (cst.Tuple, cst.List)):
        items = []
        for element in node.elements:
            item = literal_value(element.value)
            if item is None or isinstance(element, cst.StarredElement):
                return None
            items.append(item)
        return TupleValue(tuple(items))
    return None


def defaults_to_none(param: cst.Param) -> bool:
    """A parameter written with ``= None``."""
    return isinstance(param.default, cst.Name) and param.default.value == "None"
