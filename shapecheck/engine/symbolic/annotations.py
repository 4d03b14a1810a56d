"""jaxtyping annotation strings -> shapes: ``"b h t d_k"``, ``"*batch d"``, ``"... d"``, ``"b t 3*d"``.

The grammar is jaxtyping 0.3's (``_make_array_cached``): axes separated by whitespace; each axis takes
prefixes ``#`` (broadcastable: size 1 also matches), ``*`` (any number of axes), ``_`` (anonymous),
``?`` (depends on the PyTree path) and ``name=`` (documentation only: ``rows=3`` is ``3``); then it is
a name (an identifier), a fixed int, or a symbolic Python expression over names (``3*d``, ``d-1``,
``d//2``). ``...`` alone is an anonymous variadic axis. What jaxtyping rejects, and what we cannot
read (f-string braces, calls, attributes), gives None: we never guess, and never ``eval``.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Mapping, Sequence, Union

from shapecheck.engine.symbolic.dims import Dim, const, exact_div, sym
from shapecheck.engine.symbolic.shapes import ANONYMOUS_PREFIX, Shape

__all__ = [
    "DTYPE_OF",
    "Anonymous",
    "DimSpec",
    "Expr",
    "Fixed",
    "Named",
    "Variadic",
    "dtype_of",
    "fresh_anonymous",
    "parse_dims",
    "to_shape",
]


@dataclass(frozen=True, slots=True)
class Named:
    """A named axis ``b``; ``#b`` is broadcastable, ``?b`` depends on the PyTree path."""

    name: str
    broadcastable: bool = False
    treepath: bool = False


@dataclass(frozen=True, slots=True)
class Fixed:
    """A fixed size ``3`` (``rows=3`` too)."""

    size: int
    broadcastable: bool = False


@dataclass(frozen=True, slots=True)
class Expr:
    """A symbolic axis ``3*d``: ``dim`` over the names it mentions; ``text`` as written."""

    dim: Dim
    text: str = ""
    broadcastable: bool = False


@dataclass(frozen=True, slots=True)
class Anonymous:
    """``_`` or ``_name``: any size, bound to nothing."""

    broadcastable: bool = False  # jaxtyping rejects "#_"; kept for a uniform interface


@dataclass(frozen=True, slots=True)
class Variadic:
    """Any number of axes: ``*batch`` (named), ``*_`` or ``...`` (``name`` None)."""

    name: str | None = None
    broadcastable: bool = False
    treepath: bool = False


DimSpec = Union[Named, Fixed, Expr, Anonymous, Variadic]


# --- parsing -----------------------------------------------------------------------------------


def parse_dims(spec: str) -> list[DimSpec] | None:
    """Parse a jaxtyping shape string; None when jaxtyping would reject it or we cannot read it."""
    if not isinstance(spec, str):
        return None
    out: list[DimSpec] = []
    seen_variadic = False
    for elem in spec.split():
        d = _parse_axis(elem)
        if d is None:
            return None
        if isinstance(d, Variadic):
            if seen_variadic:
                return None  # jaxtyping: variadic specifiers at most once
            seen_variadic = True
        out.append(d)
    return out


def _parse_axis(elem: str) -> DimSpec | None:
    if ("," in elem and "(" not in elem) or elem.endswith("#"):
        return None
    if "..." in elem:
        return Variadic() if elem == "..." else None
    broadcastable = variadic = anonymous = treepath = False
    while elem:
        first = elem[0]
        if first == "#":
            if broadcastable:
                return None
            broadcastable, elem = True, elem[1:]
        elif first == "*":
            if variadic:
                return None
            variadic, elem = True, elem[1:]
        elif first == "_":
            if anonymous:
                return None
            anonymous, elem = True, elem[1:]
        elif first == "?":
            if treepath:
                return None
            treepath, elem = True, elem[1:]
        elif elem.count("=") == 1:
            elem = elem.split("=")[1]
        else:
            break
    if not elem or elem.isidentifier():
        if anonymous:
            if broadcastable:
                return None
            return Variadic() if variadic else Anonymous()
        if not elem:
            return Variadic("", broadcastable, treepath) if variadic else None
        if variadic:
            return Variadic(elem, broadcastable, treepath)
        return Named(elem, broadcastable, treepath)
    size = _int_literal(elem)
    if size is not None:
        if variadic or anonymous or treepath or size < 0:
            return None
        return Fixed(size, broadcastable)
    if anonymous or variadic or treepath:
        return None
    dim = _parse_expr(elem)
    return None if dim is None else Expr(dim, elem, broadcastable)


def _int_literal(text: str) -> int | None:
    """``int(text)`` as jaxtyping does (accepts ``+3`` and ``1_000``), None if not an int."""
    try:
        return int(text)
    except ValueError:
        return None


_MAX_EXPR_NODES = 64
_MAX_EXPR_CHARS = 200


def _parse_expr(text: str) -> Dim | None:
    """A symbolic axis as a Dim: ints, names, ``+ - * // % **`` and exact ``/``; never ``eval``."""
    if "{" in text or "}" in text or "'" in text or '"' in text or len(text) > _MAX_EXPR_CHARS:
        return None  # braces: jaxtyping formats these as f-strings over the call's arguments
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if sum(1 for _ in ast.walk(tree)) > _MAX_EXPR_NODES:
        return None
    try:
        return _eval_node(tree.body)
    except (ArithmeticError, ValueError, TypeError):
        return None


def _eval_node(node: ast.AST) -> Dim | None:
    if isinstance(node, ast.Constant):
        v = node.value
        return const(v) if type(v) is int else None
    if isinstance(node, ast.Name):
        return sym(node.id)
    if isinstance(node, ast.UnaryOp):
        operand = _eval_node(node.operand)
        if operand is None:
            return None
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        return None
    if isinstance(node, ast.BinOp):
        left, right = _eval_node(node.left), _eval_node(node.right)
        if left is None or right is None:
            return None
        op = node.op
        if isinstance(op, ast.Add):
            return left + right
        if isinstance(op, ast.Sub):
            return left - right
        if isinstance(op, ast.Mult):
            return left * right
        if isinstance(op, ast.FloorDiv):
            return left // right
        if isinstance(op, ast.Mod):
            return left % right
        if isinstance(op, ast.Div):
            # jaxtyping compares the float quotient with an int size: a match means it is exact
            return exact_div(left, right)
        if isinstance(op, ast.Pow):
            n = right.value
            if n is None or n < 0:
                return None
            return left**n
    return None


# --- shapes --------------------------------------------------------------------------------------

_counter = itertools.count()


def fresh_anonymous() -> Dim:
    """A new symbol that equals no other Dim (printed ``_`` in shapes)."""
    return sym(f"{ANONYMOUS_PREFIX}{next(_counter)}")


def to_shape(specs: Sequence[DimSpec] | None, bindings: Mapping[str, Dim] | None = None) -> Shape | None:
    """The shape an annotation declares, or None when it is unknown.

    Names become ``Dim.sym(name)`` unless bound in ``bindings`` (so ``d_model`` in an annotation
    meets the module's known ``d_model``); symbolic axes are substituted the same way. Anonymous
    axes, broadcastable axes (size 1 or the named size) and PyTree-path axes (``?b``, one fresh
    symbol per name within this call) become fresh symbols that equal nothing. A variadic axis
    first gives ``variadic=True``; a variadic axis anywhere else gives None.
    """
    if specs is None:
        return None
    dims: list[Dim] = []
    variadic = False
    treepath_syms: dict[str, Dim] = {}
    for i, spec in enumerate(specs):
        if isinstance(spec, Variadic):
            if i != 0:
                return None
            variadic = True
            continue
        if isinstance(spec, Anonymous) or getattr(spec, "broadcastable", False):
            dims.append(fresh_anonymous())
        elif isinstance(spec, Named):
            if spec.treepath:
                if spec.name not in treepath_syms:
                    treepath_syms[spec.name] = fresh_anonymous()
                dims.append(treepath_syms[spec.name])
            elif bindings is not None and spec.name in bindings:
                dims.append(bindings[spec.name])
            else:
                dims.append(sym(spec.name))
        elif isinstance(spec, Fixed):
            dims.append(const(spec.size))
        elif isinstance(spec, Expr):
            d = spec.dim
            if bindings:
                try:
                    d = d.substitute(bindings)
                except ArithmeticError:
                    return None
            dims.append(d)
        else:
            return None
    return Shape(tuple(dims), variadic)


# --- dtypes --------------------------------------------------------------------------------------

_FLOAT_NAMES = (
    "Float",
    "Float16",
    "Float32",
    "Float64",
    "BFloat16",
    "Float4e2m1fn",
    "Float8e4m3b11fnuz",
    "Float8e4m3fn",
    "Float8e4m3fnuz",
    "Float8e5m2",
    "Float8e5m2fnuz",
)
_INT_NAMES = (
    "Int",
    "Int2",
    "Int4",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "UInt",
    "UInt2",
    "UInt4",
    "UInt8",
    "UInt16",
    "UInt32",
    "UInt64",
    "Integer",
)
# Mixed families say nothing about float vs int vs bool.
_MIXED_NAMES = ("Complex", "Complex64", "Complex128", "Inexact", "Real", "Num", "Shaped", "Key")

DTYPE_OF: dict[str, str | None] = {
    **{n: "float" for n in _FLOAT_NAMES},
    **{n: "int" for n in _INT_NAMES},
    "Bool": "bool",
    **{n: None for n in _MIXED_NAMES},
}
"""jaxtyping dtype names (0.3.x) -> the engine's dtype class: "float", "int", "bool" or None."""


def dtype_of(name: str) -> str | None:
    """The dtype class of a jaxtyping name (``"Float32"`` -> ``"float"``); None when mixed or unknown.
    Accepts a dotted name (``jaxtyping.Float``)."""
    return DTYPE_OF.get(name.rsplit(".", 1)[-1])
