"""Annotations as values: a jaxtyping annotation (``Float[Tensor, "b t d"]``) or a plain ``Tensor``
read as the ``TensorValue`` it declares, and the check of the arguments of a call against the
annotated parameters of the callee. The grammar of the dim string itself is in ``annotations``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.values import TensorValue, Value
from shapecheck.engine.interpreter.imports import ImportTable, canonical, dotted_name
from shapecheck.engine.ops.base import Call, check_annotation
from shapecheck.engine.symbolic.annotations import Named, dtype_of, parse_dims, to_shape
from shapecheck.engine.symbolic.dims import Dim

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


_JAXTYPING_NAMES = {
    "Float", "Float16", "Float32", "Float64", "BFloat16", "Int", "Int8", "Int16", "Int32", "Int64",
    "UInt", "UInt8", "Integer", "Bool", "Shaped", "Num", "Real", "Inexact", "Complex",
}


def _without_none(imports: ImportTable, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``X | None`` / ``None | X`` / ``Optional[X]`` -> ``X``: a value of that annotation, when not None."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(other, cst.Name) and other.value == "None":
                return _without_none(imports, side)
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        head = dotted_name(expr.value)
        if head is not None and qualify(imports, head) in ("typing.Optional", "Optional"):
            inner = expr.slice[0].slice
            if isinstance(inner, cst.Index):
                return inner.value
    return expr


def annotated_class_name(imports: ImportTable, annotation: cst.Annotation | None) -> str | None:
    """The plain name an annotation gives (``attn: Attention``, ``attn: "Attention"``, optionally
    ``| None``), or None."""
    if annotation is None:
        return None
    expr = annotation.annotation
    if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            expr = cst.parse_expression(literal_string(expr) or "")
        except cst.ParserSyntaxError:
            return None
    expr = _without_none(imports, expr)
    return expr.value if isinstance(expr, cst.Name) else None


def int_tuple_length(imports: ImportTable, annotation: cst.Annotation | None) -> int | None:
    """The length of a fixed tuple of ints an annotation declares (``Tuple[int, int]``,
    ``tuple[int, int]``), or None."""
    if annotation is None or not isinstance(annotation.annotation, cst.Subscript):
        return None
    expr = annotation.annotation
    head = dotted_name(expr.value)
    if head is None or qualify(imports, head) not in ("typing.Tuple", "Tuple", "tuple"):
        return None
    items = [element.slice for element in expr.slice]
    if not items or not all(isinstance(i, cst.Index) and isinstance(i.value, cst.Name) and i.value.value == "int" for i in items):
        return None
    return len(items)


def annotation_value(
    imports: ImportTable, annotation: cst.Annotation | None, names: "Mapping[str, Dim] | None" = None
) -> Value | None:
    """A tensor value from a jaxtyping annotation (``Float[Tensor, "b t d"]``, optionally
    ``| None``), if any."""
    if annotation is None:
        return None
    expr = annotation.annotation
    if isinstance(expr, cst.SimpleString) or isinstance(expr, cst.ConcatenatedString):
        try:
            expr = cst.parse_expression(literal_string(expr) or "")
        except cst.ParserSyntaxError:
            return None
    expr = _without_none(imports, expr)
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2:
        text = dotted_name(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if text and qualify(imports, text) in ("torch.Tensor", "torch.FloatTensor", "torch.LongTensor"):
            # ``torch.LongTensor`` says its dtype (ids, positions): an integer tensor.
            dtype = "int" if qualify(imports, text) == "torch.LongTensor" else None
            return TensorValue(dtype=dtype, node=annotation)
        return None
    head = dotted_name(expr.value)
    if head is None:
        return None
    qualified = qualify(imports, head)
    if not qualified.startswith("jaxtyping.") and not head.split(".")[-1] in _JAXTYPING_NAMES:
        return None
    dtype_name = qualified.rsplit(".", 1)[-1]
    spec_node = expr.slice[1].slice
    if not isinstance(spec_node, cst.Index):
        return None
    spec = literal_string(spec_node.value)
    if spec is None:
        return None

    specs = parse_dims(spec)
    shape = to_shape(specs, names) if specs is not None else None
    return TensorValue(shape=shape, dtype=dtype_of(dtype_name), node=annotation)


def annotation_specs(imports: ImportTable, annotation: cst.Annotation | None) -> list | None:
    """The parsed dims of a jaxtyping annotation ``Float[Tensor, "b t d"]``, if it is one."""

    if annotation is None:
        return None
    expr = _without_none(imports, annotation.annotation)
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 2:
        return None
    head = dotted_name(expr.value)
    if head is None:
        return None
    qualified = qualify(imports, head)
    if not qualified.startswith("jaxtyping.") and head.split(".")[-1] not in _JAXTYPING_NAMES:
        return None
    spec_node = expr.slice[1].slice
    if not isinstance(spec_node, cst.Index):
        return None
    spec = literal_string(spec_node.value)
    return parse_dims(spec) if spec is not None else None


def check_arguments(
    interp: "Interpreter", node: cst.FunctionDef, bindings: dict[str, Value], call: Call, frame: "Frame"
) -> None:
    """Arguments passed to a jaxtyping-annotated function must fit its annotations (SC506).

    Dim names are bound across the arguments in order, as jaxtyping does: ``a: "b t d"`` and
    ``b: "b t d"`` must agree on d."""

    names: dict[str, Dim] = {}
    params = list(node.params.posonly_params) + list(node.params.params) + list(node.params.kwonly_params)
    for param in params:
        actual = bindings.get(param.name.value)
        specs = annotation_specs(interp.imports, param.annotation)
        if not isinstance(actual, TensorValue) or specs is None:
            continue
        declared = to_shape(specs, names)
        if declared is None or actual.shape is None:
            continue
        checked = check_annotation(
            interp, actual, TensorValue(declared), call.node, frame,
            f"argument `{param.name.value}` of `{node.name.value}`",
        )
        if checked is not actual:
            bindings[param.name.value] = actual = checked  # go on with the annotated shape
        if not any(type(spec).__name__ == "Variadic" for spec in specs) and actual.shape.rank == len(specs):
            for spec, dim in zip(specs, actual.shape.dims):
                if isinstance(spec, Named) and spec.name not in names:
                    names[spec.name] = dim
        elif all(type(spec).__name__ != "Variadic" for spec in specs[-len(actual.shape.dims):] if actual.shape.dims):
            trailing = specs[len(specs) - len(actual.shape.dims):] if len(actual.shape.dims) <= len(specs) else []
            for spec, dim in zip(trailing, actual.shape.dims):
                if isinstance(spec, Named) and spec.name not in names:
                    names[spec.name] = dim


def qualify(imports: ImportTable, dotted: str) -> str:
    """A dotted name as written, resolved through the file's imports (``F.softmax`` -> ``torch.nn.functional.softmax``)."""
    head, _, rest = dotted.partition(".")
    resolved = imports.resolve(head)
    if resolved is None:
        return dotted
    return canonical(resolved + ("." + rest if rest else ""))


def literal_string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
