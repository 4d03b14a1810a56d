"""Op rules that create tensors from sizes or data: ``ones`` / ``zeros`` / ``full`` / ``empty`` /
``rand*`` and their ``*_like`` forms, ``eye``, ``arange``, ``tensor``. Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import DtypeValue, FilledTag
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    FloatValue,
    IntValue,
    PositionTag,
    Scale,
    TensorValue,
    TupleValue,
    Value,
    dim_of,
    int_of,
    scale_of,
)
from shapecheck.engine.ops import frequencies
from shapecheck.engine.ops.base import (
    Call,
    lineage,
    _callee_name,
    dims_from,
    dtype_class,
    promoted,
    register,
    size_args_inventing,
)
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


def _factory(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if name == "full":
        sizes = dims_from((call.arg(0, "size"),))
    else:
        sizes = size_args_inventing(interp, call, 0)
    dtype_class = dtype_class_of_kwarg(call)
    given = call.kwargs.get("dtype")
    if dtype_class is None and name != "full" and (given is None or (isinstance(given, ConstValue) and given.value is None)):
        dtype_class = "float"  # torch's default; a dtype given but unread (``x.dtype``) stays unknown
    if name == "full" and dtype_class is None:
        fill = call.arg(1, "fill_value")
        if isinstance(fill, ConstValue) and isinstance(fill.value, bool):
            dtype_class = "bool"
        elif isinstance(fill, FloatValue):
            dtype_class = "float"
    shape = Shape(tuple(sizes)) if sizes is not None else None
    fill = {"ones": Scale(1.0), "zeros": Scale(0.0)}.get(name)
    if name == "full":
        fill = scale_of(call.arg(1, "fill_value"))
    tags = (FilledTag(fill),) if fill is not None else ()
    return TensorValue(shape, dtype_class, tags, call.node)


def _factory_like(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    dtype = call.kwargs.get("dtype")
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    fill = {"ones_like": Scale(1.0), "zeros_like": Scale(0.0)}.get(name)
    if name == "full_like":
        fill = scale_of(call.arg(1, "fill_value"))
    tags = (FilledTag(fill),) if fill is not None else ()
    return TensorValue(source.shape, dtype.dtype if isinstance(dtype, DtypeValue) else source.dtype, tags, call.node)


def _new_factory(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.new_zeros(b, t, d)`` / ``x.new_empty(size)`` / ``x.new_full(size, v)``: a fresh tensor of
    the given sizes, with ``x``'s dtype unless one is given. Nothing of ``x`` but its dtype carries
    over: the values are new."""
    source = call.tensor(0)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if name == "new_full":
        sizes = dims_from((call.arg(1, "size"),))
        fill = scale_of(call.arg(2, "fill_value"))
    else:
        sizes = size_args_inventing(interp, call, 1)
        fill = {"new_ones": Scale(1.0), "new_zeros": Scale(0.0)}.get(name)
    dtype = dtype_class_of_kwarg(call) or source.dtype
    tags = (FilledTag(fill),) if fill is not None else ()
    return TensorValue(Shape(tuple(sizes)) if sizes is not None else None, dtype, tags, call.node)


def _eye(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    n = dim_of(call.arg(0, "n"))
    m = dim_of(call.arg(1, "m")) if call.has(1, "m") else n
    dtype = dtype_class_of_kwarg(call) or "float"
    return TensorValue(Shape((n, m)) if n is not None and m is not None else None, dtype, (), call.node)


def dtype_class_of_kwarg(call: Call) -> str | None:
    return dtype_class(call.kwargs.get("dtype"))


def _arange(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    positional = [call.arg(i) for i in range(len(call.args))]
    start: Dim | None = Dim.const(0)
    end: Dim | None
    if "end" in call.kwargs:
        end = dim_of(call.kwargs["end"])
        start = dim_of(call.kwargs.get("start", positional[0] if positional else IntValue(Dim.const(0))))
    elif len(positional) >= 2:
        start, end = dim_of(positional[0]), dim_of(positional[1])
    elif positional:
        end = dim_of(positional[0])
    else:
        end = None
    step = positional[2] if len(positional) >= 3 else call.kwargs.get("step")
    dtype = call.kwargs.get("dtype")
    dtype_class = dtype.dtype if isinstance(dtype, DtypeValue) else None
    if dtype_class is None:
        dtype_class = "float" if any(isinstance(v, FloatValue) for v in positional) else "int"
    length = None
    if start is not None and end is not None and (step is None or int_of(step) == 1):
        length = end - start
    shape = Shape((length,)) if length is not None else None
    tags: tuple[object, ...] = (PositionTag(call.node, "index"),)
    start_value = call.kwargs.get("start", positional[0] if len(positional) >= 2 or (positional and "end" in call.kwargs) else None)
    index = frequencies.arange_index(start_value, step)
    if index is not None:
        tags += (index,)
    return TensorValue(shape, dtype_class, tags, call.node)


def _tensor(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    data = call.arg(0, "data")
    dtype = call.kwargs.get("dtype")
    nested = _nested_shape(data)
    if nested is not None:
        dims, element = nested
        dtype_class = dtype.dtype if isinstance(dtype, DtypeValue) else element
        return TensorValue(Shape(tuple(Dim.const(d) for d in dims)), dtype_class, (), call.node)
    return TensorValue(None, dtype.dtype if isinstance(dtype, DtypeValue) else None, (), call.node)


def _nested_shape(data: Value) -> tuple[list[int], str | None] | None:
    """``torch.tensor([[1, 2], [3, 4]])``: the sizes of a rectangular nested list, and the dtype
    class of its numbers (float if any is a float, bool if all are bools, else int)."""
    if isinstance(data, ConstValue) and isinstance(data.value, bool):
        return [], "bool"
    if isinstance(data, (IntValue, FloatValue)):
        return [], "float" if isinstance(data, FloatValue) else "int"
    if not isinstance(data, TupleValue) or not data.items:
        return None
    inner = [_nested_shape(item) for item in data.items]
    if any(x is None for x in inner) or len({tuple(x[0]) for x in inner}) != 1:  # type: ignore[index]
        return None
    kinds = {x[1] for x in inner}  # type: ignore[index]
    element = promoted(kinds)
    return [len(data.items)] + inner[0][0], element  # type: ignore[index]


def _randint(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers of the given size."""
    size = call.kwargs.get("size")
    if size is None:
        positional = call.args
        size = positional[2] if len(positional) >= 3 else positional[1] if len(positional) == 2 else None
    sizes = dims_from((size,)) if size is not None else None
    dtype = dtype_class_of_kwarg(call) or "int"
    return TensorValue(Shape(tuple(sizes)) if sizes is not None else None, dtype, (), call.node)


def _randint_like(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    return TensorValue(source.shape, dtype_class_of_kwarg(call) or source.dtype, (), call.node)


def _randperm(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    n = dim_of(call.arg(0, "n"))
    return TensorValue(Shape((n,)) if n is not None else None, dtype_class_of_kwarg(call) or "int", (), call.node)


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

def _meshgrid(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``torch.meshgrid(a, b, indexing="ij")``: one grid per 1-d input, each of shape ``(len(a),
    len(b), ...)`` (``indexing="xy"`` swaps the first two axes), with what each input carried."""
    inputs = list(call.args)
    if len(inputs) == 1 and isinstance(inputs[0], TupleValue):
        inputs = list(inputs[0].items)  # ``torch.meshgrid([a, b])``
    if not inputs or not all(isinstance(value, TensorValue) for value in inputs):
        return UNKNOWN
    sizes: list[Dim] | None = []
    for value in inputs:
        shape = value.shape  # type: ignore[union-attr]
        if shape is None or shape.variadic or (shape.rank or 0) > 1:
            sizes = None
            break
        sizes.append(shape.dims[0] if shape.dims else Dim.const(1))  # type: ignore[union-attr]
    indexing = call.kwargs.get("indexing", ConstValue("ij"))
    if sizes is not None and len(sizes) >= 2 and not (isinstance(indexing, ConstValue) and indexing.value == "ij"):
        if isinstance(indexing, ConstValue) and indexing.value == "xy":
            sizes[0], sizes[1] = sizes[1], sizes[0]
        elif sizes[0] != sizes[1]:
            sizes = None  # an indexing the engine cannot read
    shape = Shape(tuple(sizes)) if sizes is not None else None
    grid = tuple(sizes) if sizes is not None and len(sizes) >= 2 else None
    return TupleValue(tuple(TensorValue(shape, value.dtype, _laid_out(lineage(value), grid), call.node) for value in inputs))  # type: ignore[union-attr]


def _laid_out(tags: tuple[object, ...], grid: tuple[Dim, ...] | None) -> tuple[object, ...]:
    """The tags of one input of ``meshgrid``: positions of one axis become positions laid out
    over the whole grid."""
    if grid is None:
        return tags
    return tuple(replace(tag, grid=grid) if type(tag) is PositionTag else tag for tag in tags)


register(_factory, "ones", "zeros", "empty", "rand", "randn", "full")
register(_meshgrid, "meshgrid")
register(_factory_like, "ones_like", "zeros_like", "empty_like", "rand_like", "randn_like", "full_like")
register(_new_factory, "new_zeros", "new_ones", "new_empty", "new_full")
register(_eye, "eye")
register(_arange, "arange")
register(_tensor, "tensor")
register(_randint, "randint")
register(_randint_like, "randint_like")
register(_randperm, "randperm")
