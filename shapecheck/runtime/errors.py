"""Readable runtime shape errors: which function, which argument, which axis, and why.

A failed check becomes one line a person can act on::

    shapecheck.ShapeCheckError: Encoder.forward (reference_model/encoder.py:97):
    parameter x: expected Float[Tensor, 'b t d_model'], got float32[2, 5, 384]; dims bound so far:
    d_model=512 b=2 t=5; axis 2: expected d_model=512, got 384

(printed on one line). The error is a ``jaxtyping.TypeCheckError``, so existing ``except`` clauses
keep working; jaxtyping's own long message stays available as ``error.jaxtyping_message``.
"""

from __future__ import annotations

import linecache
import os
import re
import types
import typing
from typing import Any

from jaxtyping import TypeCheckError

from shapecheck.runtime.dims import array_types, format_bound, is_array_type, match_shape, parse_dims

_PROBLEM_PARAMETER = re.compile(r"The problem arose whilst typechecking parameter '([^']+)'")


class ShapeCheckError(TypeCheckError):
    """A checked function got, or returned, a value its jaxtyping annotation rejects."""

    def __init__(self, message: str, jaxtyping_message: str = "") -> None:
        super().__init__(message)
        self.jaxtyping_message = jaxtyping_message


ShapeCheckError.__module__ = "shapecheck"  # tracebacks print `shapecheck.ShapeCheckError: ...`


def describe(value: Any) -> str:
    """A short description of a value: ``float32[2, 5, 384]``, ``None``, ``tuple(int64[2], None)``."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if shape is not None and dtype is not None:
        device = getattr(value, "device", None)
        where = f" on {device.type}" if device is not None and getattr(device, "type", "cpu") not in ("cpu",) else ""
        return f"{dtype_name(dtype)}[{', '.join(str(int(s)) for s in shape)}]{where}"
    if isinstance(value, tuple) and len(value) <= 8:
        return "tuple(" + ", ".join(describe(v) for v in value) + ")"
    if value is None or isinstance(value, (bool, int, float)):
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= 40 else "a str"
    return f"a {type(value).__name__}"


def dtype_name(dtype: Any) -> str:
    """``float32`` for ``torch.float32`` and ``numpy.dtype('float32')``."""
    return str(dtype).rsplit(".", 1)[-1]


def render_annotation(annotation: Any) -> str:
    """An annotation as its author wrote it: ``Float[Tensor, 'b t d']``, ``Bool[Tensor, 't t'] | None``."""
    if is_array_type(annotation):
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(render_annotation(a) for a in args)
    if annotation is type(None):
        return "None"
    if origin is not None and args:
        name = getattr(origin, "__name__", str(origin).replace("typing.", ""))
        return f"{name}[{', '.join(render_annotation(a) for a in args)}]"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def value_problem(annotation: Any, value: Any, bound: dict[str, Any]) -> str | None:
    """Why ``value`` does not fit ``annotation`` given the dims ``bound`` (updated), or None."""
    if is_array_type(annotation):
        return _array_problem(annotation, value, bound)
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        problems = []
        for member in (a for a in args if array_types(a)):
            trial = dict(bound)
            problem = value_problem(member, value, trial)
            if problem is None:
                bound.update(trial)
                return None
            problems.append(problem)
        # The member of the right rank and dtype says most: prefer an axis over a rank or a dtype.
        axis_problems = [p for p in problems if p.startswith("ax")]
        return (axis_problems or problems or [None])[0]
    if origin is tuple and isinstance(value, tuple) and args and args[-1] is not Ellipsis and len(args) == len(value):
        for index, (member, item) in enumerate(zip(args, value)):
            problem = value_problem(member, item, bound)
            if problem:
                return f"element {index}: {problem}"
    return None


def _array_problem(annotation: type, value: Any, bound: dict[str, Any]) -> str | None:
    array_type = getattr(annotation, "array_type", None)
    if isinstance(array_type, type) and not isinstance(value, array_type):
        return f"expected a {array_type.__name__}, got {describe(value)}"
    dtypes = annotation.dtypes
    if isinstance(dtypes, (tuple, list)) and dtype_name(value.dtype) not in dtypes:
        kind = annotation.__name__.split("[", 1)[0]
        return f"dtype: expected {kind}, got {dtype_name(value.dtype)}"
    return match_shape(parse_dims(annotation.dim_str), tuple(int(s) for s in value.shape), bound)


def where_defined(fn: Any) -> str:
    """``path:line`` of the ``def`` line of ``fn`` (path relative to the working directory when inside it)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return "?"
    path, line = code.co_filename, code.co_firstlineno
    for offset in range(0, 40):  # step over decorators to the `def` line
        text = linecache.getline(path, line + offset).lstrip()
        if text.startswith(("def ", "async def ")):
            line += offset
            break
    try:
        relative = os.path.relpath(path)
        path = relative if not relative.startswith("..") else path
    except ValueError:  # another drive on Windows
        pass
    return f"{path}:{line}"


def build_message(
    fn: Any,
    *,
    returned: bool,
    arguments: dict[str, Any],
    annotations: dict[str, Any],
    sizes: dict[str, int],
    result: Any = None,
    jaxtyping_message: str = "",
) -> str:
    """The one-line message for a failed check of ``fn``'s parameters (or of its return value)."""
    bound: dict[str, Any] = dict(sizes)
    head = f"{getattr(fn, '__qualname__', fn)} ({where_defined(fn)})"
    for name, value in arguments.items():
        if name not in annotations:
            continue
        problem = value_problem(annotations[name], value, bound)
        if problem and not returned:
            return _line(head, f"parameter {name}", annotations[name], value, bound, problem)
    if returned:
        problem = value_problem(annotations.get("return"), result, bound)
        return _line(head, "return value", annotations.get("return"), result, bound, problem)
    # The replay found nothing (a non-tensor argument, say): name what jaxtyping named.
    found = _PROBLEM_PARAMETER.search(jaxtyping_message)
    name = found.group(1) if found else "?"
    return _line(head, f"parameter {name}", annotations.get(name), arguments.get(name), bound, None)


def _line(head: str, what: str, annotation: Any, value: Any, bound: dict[str, Any], problem: str | None) -> str:
    parts = [f"{head}: {what}: expected {render_annotation(annotation)}, got {describe(value)}"]
    parts.append(f"dims bound so far: {format_bound(bound) or '(none)'}")
    if problem:
        parts.append(problem)
    return "; ".join(parts)
