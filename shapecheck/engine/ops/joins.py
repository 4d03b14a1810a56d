"""Op rules that join tensors or split them into pieces: ``cat``, ``stack``, ``split``, ``chunk``,
``tensor_split``, ``unbind``. Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import KeyTransposed, Repeated, SplitTuple
from shapecheck.engine.domain.values import (
    ProjectionTag,
    TensorValue,
    TupleValue,
    Value,
    as_tensor,
    dim_of,
    int_of,
)
from shapecheck.engine.ops.base import (
    Call,
    _axis_index,
    _callee_name,
    _piece,
    conflict,
    keep_scale,
    lineage,
    norm_axis,
    register,
    same_values,
)
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.dims import Dim, Truth, divides, equal
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


# ------------------------------------------------------------------------------------ join


def _cat(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    items = _sequence_items(call.arg(0, "tensors"))
    axis = int_of(call.arg(1, "dim")) if call.has(1, "dim") else 0
    if not items or axis is None:  # unknown, or an empty list (torch.cat raises on it)
        joined = _joined_unknown(call.arg(0, "tensors"), call.node)
        element = getattr(call.arg(0, "tensors"), "element", None)
        shape = element.shape if isinstance(element, TensorValue) else None
        if axis == 0 and shape is not None and not shape.variadic and shape.dims:
            # ``torch.cat([x[i] for i in ix])`` of (T, d) rows: (n*T, d), n the number of items.
            count = Dim.sym(interp.fresh_name("n", use_target=False))
            return TensorValue(Shape((count * shape.dims[0],) + shape.dims[1:]), joined.dtype, joined.tags, call.node)
        return joined
    tensors = [as_tensor(item) for item in items]
    tags = lineage(*tensors) + keep_scale(*tensors) + _one_projection(tensors)
    shapes = [t.shape for t in tensors]
    dtype = tensors[0].dtype if all(t.dtype == tensors[0].dtype for t in tensors) else None
    if any(s is None or s.variadic for s in shapes) or not shapes:
        result_shape = _cat_with_unknown_operands(shapes, axis)
        if shapes and all(s is not None for s in shapes) and axis < 0:
            # With a variadic prefix the joined trailing axis is still known, and the other axes
            # are those of the operand that knows most of them (torch requires them equal).
            widest = max(shapes, key=lambda s: (not s.variadic, len(s.dims)))  # type: ignore[union-attr]
            try:
                total = shape_ops.product_sum([s.dim(axis) for s in shapes])  # type: ignore[union-attr]
                result_shape = widest.with_dim(len(widest.dims) + axis, total) if total is not None else None  # type: ignore[union-attr]
            except (ArithmeticError, AttributeError):
                result_shape = None
        return TensorValue(result_shape, dtype, tags, call.node)
    rank = shapes[0].rank  # type: ignore[union-attr]
    a = norm_axis(axis, rank)
    if a is None or any(s.rank != rank for s in shapes):  # type: ignore[union-attr]
        return TensorValue(None, dtype, tags, call.node)
    total = shapes[0].dims[a]  # type: ignore[union-attr]
    for s in shapes[1:]:
        total = total + s.dims[a]  # type: ignore[union-attr]
    for other in shapes[1:]:
        for i in range(rank):  # type: ignore[arg-type]
            if i != a and equal(shapes[0].dims[i], other.dims[i], frame.assumptions) is Truth.FALSE:  # type: ignore[union-attr]
                conflict(
                    interp,
                    "cat",
                    call.node,
                    f"cat along dim {axis} of {shapes[0]} and {other}: dim {i} differs ({shapes[0].dims[i]} vs {other.dims[i]})",  # type: ignore[union-attr]
                    frame,
                    "cat",
                )
                return TensorValue(None, dtype, tags, call.node)
    return TensorValue(shapes[0].with_dim(a, total), dtype, tags, call.node)  # type: ignore[union-attr]


def _one_projection(tensors: list[TensorValue]) -> tuple[ProjectionTag, ...]:
    """The projection every piece comes from (rotary's ``rotate_half`` joins the two halves of one
    query): the joined tensor is still its output."""
    tags = [t.tag(ProjectionTag) for t in tensors]  # at least one: torch.cat([]) was handled before
    first = tags[0]
    if first is None or any(tag is None or tag.ident is not first.ident for tag in tags):
        return ()
    if all(tag == first for tag in tags):
        return (first,)
    # Pieces cut along the features of one piece of it (``x[..., :h]``, ``x[..., h:]``), joined back.
    whole = first.part[:-1] if first.part and isinstance(first.part[-1], str) else None
    if whole is None or any(not tag.part or not isinstance(tag.part[-1], str) or tag.part[:-1] != whole for tag in tags):
        return ()
    return (replace(first, part=whole),)


def _cat_with_unknown_operands(shapes: list[Shape | None], axis: int) -> Shape | None:
    """``torch.cat([q[:, :, :npt], rotate(q[:, :, npt:])], dim=2)`` with the second operand from a
    callee the engine cannot see (or known only by its trailing dims): torch requires every operand
    to have the rank and the other dims of the one whose shape is fully known, so the result is that
    shape with the joined axis of unknown size (``_``)."""
    known = [s for s in shapes if s is not None and not s.variadic]
    if not known:
        return None
    first = known[0]
    a = norm_axis(axis, first.rank)
    if a is None or a == first.rank - 1 or any(s.rank != first.rank for s in known):
        # Joined along the features, the width is unknown and nothing downstream can be checked
        # against it; the leading dims it would keep have met path-insensitive joins (a batch
        # doubled for classifier-free guidance on one path only) where the precision run saw them.
        return None
    return first.with_dim(a, fresh_anonymous())


def _stack(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    items = _sequence_items(call.arg(0, "tensors"))
    axis = int_of(call.arg(1, "dim")) if call.has(1, "dim") else 0
    if items is None or axis is None:
        joined = _joined_unknown(call.arg(0, "tensors"), call.node)
        element = getattr(call.arg(0, "tensors"), "element", None)
        shape = element.shape if isinstance(element, TensorValue) else None
        if axis == 0 and shape is not None and not shape.variadic:
            # ``torch.stack([data[i:i+T] for i in ix])``: (n, T), n the number of items.
            count = Dim.sym(interp.fresh_name("n", use_target=False))
            return TensorValue(Shape((count,) + shape.dims), joined.dtype, joined.tags, call.node)
        return joined
    tensors = [as_tensor(item) for item in items]
    tags = lineage(*tensors) + keep_scale(*tensors)
    first = tensors[0].shape if tensors else None
    if first is None or first.variadic or any(t.shape != first for t in tensors):
        return TensorValue(None, tensors[0].dtype if tensors else None, tags, call.node)
    a = norm_axis(axis, first.rank + 1)  # type: ignore[operator]
    if a is None:
        return TensorValue(None, tensors[0].dtype, tags, call.node)
    dims = first.dims[:a] + (Dim.const(len(tensors)),) + first.dims[a:]
    return TensorValue(Shape(dims), tensors[0].dtype, tags, call.node)


def _sequence_items(value: Value) -> tuple[Value, ...] | None:
    if isinstance(value, TupleValue):
        return value.items
    return None


def _joined_unknown(value: Value, node: cst.CSTNode) -> TensorValue:
    """cat / stack of a list of unknown length (a comprehension, ``pieces[1:]``): shape unknown,
    provenance that of its items."""
    if isinstance(value, Repeated) and isinstance(value.element, TensorValue):
        element = value.element
        return TensorValue(None, element.dtype, lineage(element) + keep_scale(element), node)
    return TensorValue(None, None, (), node)


# ------------------------------------------------------------------------------------ split


def _split(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``split`` / ``chunk``. Pieces cut along one of the last two axes of a tensor whose last two
    axes a permute swapped (cpubone's ``qkv.permute(0, 1, 3, 2).chunk(3, dim=3)``: a fused
    projection moved from channels-first to tokens-first, then cut into q, k, v) are tensors of
    their own layout, not that tensor transposed: ``k.transpose(-2, -1)`` of such a piece is the
    key transposed for the scores, not a transpose undone."""
    result = _split_pieces(interp, call, frame)
    source = call.tensor(0)
    if not isinstance(result, SplitTuple) or result.pieces is None or not source.has(KeyTransposed):
        return result
    axis = int_of(call.arg(2, "dim")) if call.has(2, "dim") else 0
    rank = source.rank
    if axis is None or not (axis in (-1, -2) or rank is not None and axis in (rank - 1, rank - 2)):
        return result
    pieces = tuple(piece.without(KeyTransposed) if isinstance(piece, TensorValue) else piece for piece in result.pieces)
    return replace(result, pieces=pieces, template=result.template.without(KeyTransposed))


def _split_pieces(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else "split"
    axis = int_of(call.arg(2, "dim")) if call.has(2, "dim") else 0
    shape = source.shape
    size_value = call.arg(1, "split_size_or_sections" if name == "split" else "chunks")
    if name == "split" and "split_size" in call.kwargs:
        size_value = call.kwargs["split_size"]
    if axis is None:
        return SplitTuple(None, same_values(source, None))
    full = shape.dim(axis) if shape is not None else None
    index = _axis_index(shape, axis) if shape is not None else None

    def piece_shape(size: Dim | None) -> Shape | None:
        if shape is None or index is None or size is None:
            return None
        return shape.with_dim(index, size)

    if name == "chunk":
        count = int_of(size_value)
        if count is None or count <= 0:
            return SplitTuple(None, same_values(source, None))
        if full is not None and full.is_const:
            # torch.chunk: pieces of ceil(full / count), the last one shorter, maybe fewer pieces.
            size = -(-full.value // count) if full.value else 0
            sizes = [size] * (full.value // size) + ([full.value % size] if size and full.value % size else []) if size else [0] * count
            pieces = tuple(_piece(source, piece_shape(Dim.const(s)), i) for i, s in enumerate(sizes))
            return SplitTuple(pieces, same_values(source, None))
        if full is not None and divides(Dim.const(count), full, frame.assumptions) is Truth.TRUE:
            piece_dim = frame.assumptions.simplify(full // count)
            pieces = tuple(_piece(source, piece_shape(piece_dim), i) for i in range(count))
        else:
            # ``q.chunk(2, dim=-1)`` of a size not known to be even: each piece keeps the other
            # axes; the chunked one is a size of its own (the last piece may be shorter).
            pieces = tuple(_piece(source, piece_shape(fresh_anonymous() if full is not None else None), i) for i in range(count))
        return SplitTuple(pieces, same_values(source, None))
    if isinstance(size_value, TupleValue):
        sizes = [dim_of(item) for item in size_value.items]
        pieces = tuple(
            _piece(source, shape.with_dim(_axis_index(shape, axis), s) if shape is not None and s is not None and _axis_index(shape, axis) is not None else None, i)
            for i, s in enumerate(sizes)
        )
        return SplitTuple(pieces, same_values(source, None))
    size = dim_of(size_value)
    if size is None:
        return SplitTuple(None, same_values(source, None))
    template_shape = piece_shape(size)
    if full is not None and full.is_const and size.is_const and size.value > 0:
        # torch.split: pieces of `size`, the last one holding the rest.
        count, rest = divmod(full.value, size.value)
        if full.value == 0:  # a zero-size axis splits into one empty piece
            return SplitTuple((_piece(source, piece_shape(full), 0),), same_values(source, None))
        sizes = [size.value] * count + ([rest] if rest else [])
        if 0 < len(sizes) <= 64:
            pieces = tuple(_piece(source, piece_shape(Dim.const(s)), i) for i, s in enumerate(sizes))
            return SplitTuple(pieces, same_values(source, template_shape if not rest else None), exact=not rest)
    count = None
    exact = False
    if full is not None:
        try:
            quotient = frame.assumptions.simplify(full // size)
            exact = equal(quotient * size, full, frame.assumptions) is Truth.TRUE
            count = quotient.value if quotient.is_const and exact else None
        except ArithmeticError:
            count = None
    if count is not None and 0 < count <= 64:
        return SplitTuple(tuple(_piece(source, template_shape, i) for i in range(count)), same_values(source, template_shape), exact=True)
    return SplitTuple(None, same_values(source, template_shape), exact=exact)


def _tensor_split(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``tensor_split(x, n)``: n pieces, the first ``full % n`` of them one longer (``split(x, n)``
    makes pieces *of* n); ``tensor_split(x, (i, j))``: the slices ``[:i]``, ``[i:j]``, ``[j:]``."""
    source = call.tensor(0)
    axis = int_of(call.arg(2, "dim")) if call.has(2, "dim") else 0
    shape = source.shape
    where = call.arg(1, "sections")
    for keyword in ("indices", "tensor_indices_or_sections"):
        where = call.kwargs.get(keyword, where)
    full = shape.dim(axis) if shape is not None and axis is not None else None
    index = _axis_index(shape, axis) if shape is not None and axis is not None else None
    if isinstance(where, TupleValue):
        bounds = [int_of(item) for item in where.items]
        sizes: list[Dim | None] = [None] * (len(bounds) + 1)
        if full is not None and full.is_const and None not in bounds:
            n = full.value
            cuts = [0, *(min(max(b + n if b < 0 else b, 0), n) for b in bounds), n]  # type: ignore[operator]
            sizes = [Dim.const(max(end - start, 0)) for start, end in pairwise(cuts)]
    else:
        count = int_of(where)
        if count is None or not 0 < count <= 64:
            return SplitTuple(None, same_values(source, None))
        sizes = [None] * count
        if full is not None and full.is_const:
            quotient, rest = divmod(full.value, count)
            sizes = [Dim.const(quotient + 1)] * rest + [Dim.const(quotient)] * (count - rest)
        elif full is not None and divides(Dim.const(count), full, frame.assumptions) is Truth.TRUE:
            sizes = [frame.assumptions.simplify(full // count)] * count
    pieces = tuple(
        _piece(source, shape.with_dim(index, size) if shape is not None and index is not None and size is not None else None, i)
        for i, size in enumerate(sizes)
    )
    return SplitTuple(pieces, same_values(source, None))


def _unbind(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    axis = int_of(call.arg(1, "dim")) if call.has(1, "dim") else 0
    shape = source.shape
    if shape is None or shape.variadic or axis is None:
        return SplitTuple(None, same_values(source, None))
    a = norm_axis(axis, shape.rank)
    if a is None:
        return SplitTuple(None, same_values(source, None))
    rest = Shape(shape.dims[:a] + shape.dims[a + 1 :])
    count = shape.dims[a].value if shape.dims[a].is_const else None
    if count is not None and 0 <= count <= 64:  # a zero-size axis unbinds into no tensor at all
        return SplitTuple(tuple(_piece(source, rest, i) for i in range(count)), same_values(source, rest), exact=True)
    return SplitTuple(None, same_values(source, rest), exact=True)


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_cat, "cat")
register(_stack, "stack")
register(_split, "split", "chunk")
register(_tensor_split, "tensor_split")
register(_unbind, "unbind")
