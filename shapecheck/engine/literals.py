"""Python literals as abstract values."""

from __future__ import annotations

import libcst as cst

from shapecheck.engine.dims import Dim
from shapecheck.engine.values import ConstValue, FloatValue, IntValue, Scale, TupleValue, Value

_MAX_LITERAL_INT = 1 << 62


def literal_value(node: cst.BaseExpression | None) -> Value | None:
    """The value of a literal expression (numbers, strings, None/True/False, tuples of them)."""
    if node is None:
        return None
    if isinstance(node, cst.Integer):
        try:
            number = int(node.evaluated_value)
        except ValueError:
            return None
        return IntValue(Dim.const(number)) if abs(number) < _MAX_LITERAL_INT else None
    if isinstance(node, cst.Float):
        return FloatValue(Scale(float(node.evaluated_value)))
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
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
