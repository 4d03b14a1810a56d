"""Replaying a jaxtyping shape annotation against an actual shape, to say which axis failed.

jaxtyping answers "does this value match?"; this module answers "where not, and why", for the
error message (``errors.py``) and to name the dims of a trace (``trace.py``). It follows jaxtyping's
dim syntax: ``b`` named, ``3`` fixed, ``#t`` broadcastable (size 1 always fits), ``_`` / ``_x``
anonymous, ``*batch`` / ``...`` variadic, ``t-1`` or ``n=t-1`` symbolic (evaluated over the dims
bound so far).
"""

from __future__ import annotations

import ast
import operator
import typing
from dataclasses import dataclass
from typing import Any

# Dim kinds
NAMED, FIXED, ANONYMOUS, SYMBOLIC, VARIADIC = "named", "fixed", "anonymous", "symbolic", "variadic"


@dataclass(frozen=True)
class Dim:
    """One token of a jaxtyping dim string."""

    kind: str
    name: str = ""  # named / variadic name ("" when anonymous); the expression for symbolic
    size: int = 0  # fixed size
    broadcastable: bool = False

    def label(self, bound: dict[str, Any]) -> str:
        """How the expected size reads in a message: ``d_model=512``, ``3``, ``t-1=4``."""
        if self.kind == FIXED:
            return str(self.size)
        value = bound.get(self.name) if self.kind == NAMED else _evaluate(self.name, bound)
        text = self.name if value is None else f"{self.name}={value}"
        return f"{text} (or 1)" if self.broadcastable and value is not None else text


def parse_dims(dim_str: str) -> tuple[Dim, ...]:
    """The dims of a jaxtyping dim string such as ``"b #t *rest 3 n=t-1"``."""
    return tuple(_parse_token(token) for token in dim_str.split())


def _parse_token(token: str) -> Dim:
    if token == "...":
        return Dim(VARIADIC)
    variadic = token.startswith("*")
    token = token.lstrip("*")
    broadcastable = token.startswith("#")
    token = token.lstrip("#?")
    if variadic:
        anonymous = token == "_" or token.startswith("_")
        return Dim(VARIADIC, "" if anonymous else token, broadcastable=broadcastable)
    if "=" in token:
        token = token.split("=", 1)[1]
    if token.isdigit():
        return Dim(FIXED, size=int(token), broadcastable=broadcastable)
    if token == "_" or token.startswith("_"):
        return Dim(ANONYMOUS)
    if token.isidentifier():
        return Dim(NAMED, token, broadcastable=broadcastable)
    return Dim(SYMBOLIC, token, broadcastable=broadcastable)


_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def _evaluate(expression: str, bound: dict[str, Any]) -> int | None:
    """The value of a symbolic dim (``t-1``, ``2*d``) over the bound dims, or None when unknown.

    Integer arithmetic only, read with ``ast`` (never ``eval``): names, ints, + - * // %.
    """
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None

    def value(node: ast.AST) -> int | None:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            found = bound.get(node.id)
            return found if type(found) is int else None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = value(node.operand)
            return None if inner is None else -inner
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = value(node.left), value(node.right)
            if left is None or right is None or (right == 0 and type(node.op) in (ast.FloorDiv, ast.Mod)):
                return None
            return _OPERATORS[type(node.op)](left, right)
        return None

    return value(tree)


def array_types(annotation: Any) -> list[type]:
    """The jaxtyping array types inside an annotation (itself, or inside unions and tuples)."""
    if is_array_type(annotation):
        return [annotation]
    return [t for arg in typing.get_args(annotation) for t in array_types(arg)]


def is_array_type(annotation: Any) -> bool:
    """Whether ``annotation`` is a jaxtyping array type such as ``Float[Tensor, "b t"]``."""
    return isinstance(annotation, type) and hasattr(annotation, "dim_str") and hasattr(annotation, "dtypes")


def dim_names(annotation: Any) -> list[str]:
    """Named (non-variadic) dims of every jaxtyping array type inside an annotation."""
    return [d.name for t in array_types(annotation) for d in parse_dims(t.dim_str) if d.kind == NAMED]


def match_shape(dims: tuple[Dim, ...], shape: tuple[int, ...], bound: dict[str, Any]) -> str | None:
    """Match ``shape`` to ``dims``, binding new names in ``bound``; the first problem, or None.

    The problem reads ``axis 2: expected d_model=512, got 384`` or ``expected 3 dims (b t d), got 2``.
    """
    variadic = [i for i, d in enumerate(dims) if d.kind == VARIADIC]
    fixed_count = len(dims) - len(variadic)
    spelled = " ".join(_spell(d) for d in dims)
    if (not variadic and len(shape) != len(dims)) or (variadic and len(shape) < fixed_count):
        at_least = "at least " if variadic else ""
        return f"expected {at_least}{fixed_count} dims ({spelled}), got {len(shape)}"
    stretch = len(shape) - fixed_count
    axis = 0
    for dim in dims:
        if dim.kind == VARIADIC:
            sizes = tuple(shape[axis : axis + stretch])
            problem = _match_variadic(dim, sizes, axis, bound)
            axis += stretch
        else:
            problem = _match_one(dim, shape[axis], axis, bound)
            axis += 1
        if problem:
            return problem
    return None


def _spell(dim: Dim) -> str:
    if dim.kind == VARIADIC:
        return f"*{dim.name}" if dim.name else "..."
    if dim.kind == FIXED:
        return str(dim.size)
    if dim.kind == ANONYMOUS:
        return "_"
    return ("#" if dim.broadcastable else "") + dim.name


def _match_one(dim: Dim, size: int, axis: int, bound: dict[str, Any]) -> str | None:
    if dim.kind == ANONYMOUS or (dim.broadcastable and size == 1):
        return None
    if dim.kind == FIXED:
        expected: int | None = dim.size
    elif dim.kind == SYMBOLIC:
        expected = _evaluate(dim.name, bound)
    elif dim.name in bound:
        expected = bound[dim.name]
    else:
        bound[dim.name] = size
        return None
    if expected is None or expected == size:
        return None
    return f"axis {axis}: expected {dim.label(bound)}, got {size}"


def _match_variadic(dim: Dim, sizes: tuple[int, ...], axis: int, bound: dict[str, Any]) -> str | None:
    if not dim.name:
        return None
    key = f"*{dim.name}"
    if key not in bound:
        bound[key] = sizes
        return None
    expected = bound[key]
    if _variadic_fits(expected, sizes, dim.broadcastable):
        return None
    where = f"axes {axis}-{axis + len(sizes) - 1}" if len(sizes) > 1 else f"axis {axis}"
    return f"{where} (*{dim.name}): expected {tuple(expected)}, got {sizes}"


def _variadic_fits(expected: tuple[int, ...], sizes: tuple[int, ...], broadcastable: bool) -> bool:
    if len(expected) != len(sizes):
        return False
    return all(e == s or (broadcastable and s == 1) for e, s in zip(expected, sizes))


def format_bound(bound: dict[str, Any]) -> str:
    """``b=2 t=5 d_model=512`` (variadic dims as ``*batch=(2, 3)``), in binding order."""
    return " ".join(f"{name}={value}" for name, value in bound.items())
