"""Subscripts: ``x[:, :T]``, ``x[..., None]``, ``self.bias[:, :, :T, :T]``, ``x.shape[-1]``, ``qkv[0]``."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import DictValue, OpenTuple, ParameterTag, Repeated, ShiftTag, SplitTuple, open_tuple
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    IntValue,
    ModuleValue,
    Opaque,
    UnseenSizes,
    PositionTag,
    ProjectionTag,
    ShapeValue,
    TensorValue,
    TriangleTag,
    TupleValue,
    Value,
    dim_of,
    int_of,
)
from shapecheck.engine.ops import windows
from shapecheck.engine.ops.base import Call, _piece, read_size, read_trailing_size, register, same_values
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.dims import Dim, provably_negative
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


def index_value(interp: "Interpreter", base: Value, node: cst.Subscript, frame: "Frame") -> Value:
    elements = node.slice
    if isinstance(base, TensorValue):
        return _index_tensor(interp, base, elements, frame, node)
    if isinstance(base, Opaque) and (len(elements) >= 2 or any(_adds_axis(element.slice) for element in elements)):
        # ``tgt[:, 1:]`` / ``x[..., None]`` of a parameter: only an array takes several axes or None;
        # its shape stays unknown. One array per parameter, so that two windows cut from it
        # (``x[:, :-1]``, ``x[:, 1:]``) are windows of the same sequence.
        return _index_tensor(interp, _array_of(interp, base, node), elements, frame, node)
    if len(elements) != 1 or not isinstance(elements[0].slice, cst.Index):
        if isinstance(base, ShapeValue) and len(elements) == 1 and isinstance(elements[0].slice, cst.Slice):
            return _slice_shape(interp, base, elements[0].slice, frame)
        if isinstance(base, (TupleValue, OpenTuple, SplitTuple, Repeated)) and len(elements) == 1 and isinstance(elements[0].slice, cst.Slice):
            return _slice_sequence(interp, base, elements[0].slice, frame)
        for element in elements:
            _eval_slice_parts(interp, element.slice, frame)
        return UNKNOWN
    index = interp.eval(elements[0].slice.value, frame)
    position = int_of(index)
    if isinstance(base, DictValue) and isinstance(index, ConstValue) and isinstance(index.value, str):
        found = base.get(index.value)  # ``kwargs["context"]``
        return found if found is not None else UNKNOWN
    if isinstance(base, UnseenSizes):
        # ``cache.shape[1]`` / ``cache.shape[time_dim]`` of a value out of view: an integer.
        named = base.size(position) if position is not None else None
        return named if named is not None else IntValue(read_size(interp))  # an int, wherever it is read
    if isinstance(base, Opaque) and position is not None:
        # ``window_size[0]`` of a parameter the engine cannot see: a value named after it, as
        # ``config.hidden_size`` is (the same item is the same size each time it is read)
        return base.item(position)
    if isinstance(base, ShapeValue):
        if base.shape is not None and position is not None:
            dim = base.shape.dim(position)
            if dim is not None:
                return IntValue(dim)
        return IntValue(read_trailing_size(interp, base, position, frame))
    if isinstance(base, TupleValue):
        if position is not None and -len(base.items) <= position < len(base.items):
            return base.items[position]
        return UNKNOWN
    if isinstance(base, OpenTuple):
        # ``outputs[0]``: a leading item; an item counted from the open end is not known.
        return base.prefix[position] if position is not None and 0 <= position < len(base.prefix) else UNKNOWN
    if isinstance(base, SplitTuple):
        if base.pieces is not None and position is not None and -len(base.pieces) <= position < len(base.pieces):
            return base.pieces[position]
        if position is not None and position >= 0:
            return _piece(base.template, base.template.shape, position)
        return base.template
    if isinstance(base, ModuleValue) and base.named:
        found = base.named.get(index.value) if isinstance(index, ConstValue) and isinstance(index.value, str) else None
        return found if found is not None else UNKNOWN
    if isinstance(base, ModuleValue) and base.items:
        return base.item(position)
    if isinstance(base, Repeated):
        return base.element
    return UNKNOWN


def _slice_sequence(interp: "Interpreter", base: Value, part: cst.Slice, frame: "Frame") -> Value:
    """``pieces[1:]`` of a tuple or of the pieces of a split."""
    bounds = [int_of(interp.eval(b, frame)) if b is not None else None for b in (part.lower, part.upper, part.step)]
    known = all(
        b is not None or node is None for b, node in zip(bounds, (part.lower, part.upper, part.step))
    )
    items = base.items if isinstance(base, TupleValue) else (base.pieces if isinstance(base, SplitTuple) else None)
    if items is not None and known:
        return TupleValue(tuple(items[slice(*bounds)]))
    if isinstance(base, OpenTuple) and known:
        return _slice_open(base.prefix, *bounds)
    if isinstance(base, SplitTuple):
        return Repeated(base.template)
    if isinstance(base, Repeated):
        return base
    return UNKNOWN


def _slice_open(prefix: tuple[Value, ...], lower: int | None, upper: int | None, step: int | None) -> Value:
    """``outputs[1:]`` / ``outputs[:2]`` of a tuple whose first items are known: what the known
    items say. Bounds counted from the end, or past the known items, are not known."""
    lower = 0 if lower is None else lower
    if lower < 0 or step not in (None, 1):
        return UNKNOWN
    if upper is None:
        return open_tuple(prefix[lower:])
    if 0 <= upper <= len(prefix):
        return TupleValue(prefix[lower:upper])
    return UNKNOWN


def _eval_slice_parts(interp: "Interpreter", part: cst.BaseSlice, frame: "Frame") -> None:
    if isinstance(part, cst.Index):
        interp.eval(part.value, frame)
    elif isinstance(part, cst.Slice):
        for bound in (part.lower, part.upper, part.step):
            if bound is not None:
                interp.eval(bound, frame)


def _slice_shape(interp: "Interpreter", base: ShapeValue, part: cst.Slice, frame: "Frame") -> Value:
    shape = base.shape
    lower = int_of(interp.eval(part.lower, frame)) if part.lower is not None else 0
    upper = int_of(interp.eval(part.upper, frame)) if part.upper is not None else None
    if lower == 0 and upper is not None and upper < 0 and part.step is None and not base.extra:
        # ``x.size()[:-1]``: the leading dims of x, whatever their number.
        kept = None
        if shape is not None and len(shape.dims) >= -upper:
            kept = Shape(shape.dims[:upper], shape.variadic)
        elif shape is not None and not shape.variadic:
            return UNKNOWN
        return ShapeValue(kept, base.source, base.base, base.dropped - upper, ())
    if shape is None or shape.variadic or part.step is not None or lower is None:
        return UNKNOWN
    if part.upper is not None and upper is None:
        return UNKNOWN
    dims = shape.dims[lower:upper]
    return TupleValue(tuple(IntValue(d) for d in dims))


def _index_tensor(
    interp: "Interpreter", base: TensorValue, elements: "tuple[cst.SubscriptElement, ...] | list[cst.SubscriptElement]", frame: "Frame", node: cst.Subscript
) -> Value:
    parts: list[tuple[str, object]] = []
    for element in elements:
        part = element.slice
        if isinstance(part, cst.Slice):
            lower = interp.eval(part.lower, frame) if part.lower is not None else None
            upper = interp.eval(part.upper, frame) if part.upper is not None else None
            step = interp.eval(part.step, frame) if part.step is not None else None
            parts.append(("slice", (lower, upper, step)))
        elif isinstance(part, cst.Index):
            value = part.value
            if isinstance(value, cst.Ellipsis):
                parts.append(("ellipsis", None))
                continue
            if isinstance(value, cst.Name) and value.value == "None":
                parts.append(("none", None))
                continue
            index = interp.eval(value, frame)
            if isinstance(index, ConstValue) and index.value is None:
                parts.append(("none", None))
            elif isinstance(index, ConstValue) and index.value is Ellipsis:
                parts.append(("ellipsis", None))
            elif isinstance(index, TensorValue):
                parts.append(("tensor", index))
            elif dim_of(index) is not None and not isinstance(index, TupleValue):
                parts.append(("int", index))
            else:
                parts.append(("unknown", None))
    result = _apply_parts(interp, base, parts, node)
    windows.rows_gathered(interp, result, base, parts)
    return result


def _array_of(interp: "Interpreter", base: Opaque, node: cst.CSTNode) -> TensorValue:
    """The tensor of unknown shape a parameter indexed as an array stands for, the same one each time."""
    return windows.array_of(interp, base, node)


def _rows_of_a_position_table(base: TensorValue, parts: list[tuple[str, object]], node: cst.CSTNode) -> PositionTag | None:
    """``self.pos[:t]`` / ``self.pos[:, :t]`` of a parameter declared with one row per position
    (``(max_len, d)`` or ``(1, max_len, d)``): the rows of a learned positional table, cut to the
    sequence."""
    parameter = base.tag(ParameterTag)
    if parameter is None or not parameter.per_position or parameter.shape is None or parameter.shape.rank is None:
        return None
    rows_axis = parameter.shape.rank - 2
    sliced = [i for i, (kind, value) in enumerate(parts) if kind == "slice" and _restricts(value)]  # type: ignore[arg-type]
    if sliced != [rows_axis] or any(kind not in ("slice",) for kind, _ in parts):
        return None
    return PositionTag(node, "learned", parameter.shape.dims[rows_axis], sliced=True)


def _feature_slice(base: TensorValue, parts: list[tuple[str, object]], node: cst.CSTNode) -> str | None:
    """The text of a slice that cuts the last (feature) axis, ``qkv[..., a:b]`` or ``x[:, :, a:b]`` of a
    rank-3 tensor; None for any other index."""
    if not parts or parts[-1][0] != "slice" or not _restricts(parts[-1][1]) or not isinstance(node, cst.Subscript):  # type: ignore[arg-type]
        return None
    if len(node.slice) != len(parts):
        return None
    on_last = ("ellipsis", None) in parts[:-1] or (
        base.shape is not None and not base.shape.variadic and len(parts) == base.shape.rank
        and all(kind in ("slice", "int") for kind, _ in parts)
    )
    return cst.Module([]).code_for_node(node.slice[-1].slice) if on_last else None


def _apply_parts(interp: "Interpreter", base: TensorValue, parts: list[tuple[str, object]], node: cst.CSTNode) -> Value:
    restricted = any(kind == "slice" and _restricts(value) for kind, value in parts)  # type: ignore[arg-type]
    tags = base.tags
    if restricted:
        tags = tuple(_sliced(tag) for tag in tags)
    picked = tuple(int_of(value) for kind, value in parts if kind == "int")  # type: ignore[arg-type]
    if picked:
        # ``qkv[0]`` / ``qkv[1]``: different pieces of one fused projection.
        tags = tuple(
            replace(tag, part=tag.part + tuple(-1 if p is None else p for p in picked)) if isinstance(tag, ProjectionTag) else tag
            for tag in tags
        )
    piece = _feature_slice(base, parts, node)
    if piece is not None:
        # ``qkv[..., :q_size]`` / ``qkv[..., q_size:q_size + kv_size]``: pieces of one fused projection
        # cut along its features, each its own (the slice's text names it).
        tags = tuple(replace(tag, part=tag.part + (piece,), node=node) if isinstance(tag, ProjectionTag) else tag for tag in tags)
    if parts and parts[0][0] == "slice" and _restricts(parts[0][1]) and isinstance(node, cst.Subscript):  # type: ignore[arg-type]
        # ``in_proj_weight[:d]`` / ``[d:2 * d]``: rows of a fused weight, each its own projection.
        rows = cst.Module([]).code_for_node(node.slice[0])
        tags = tuple(replace(tag, rows=rows) if isinstance(tag, ParameterTag) else tag for tag in tags)
    table = _rows_of_a_position_table(base, parts, node)
    if table is not None and not any(isinstance(tag, PositionTag) for tag in tags):
        tags = tags + (table,)
    if any(kind == "slice" and _shifts(value) for kind, value in parts):  # type: ignore[arg-type]
        tags = tags + (ShiftTag(node),)
    tags = windows.after_index(interp, base, tags, parts, node)
    result = replace(base, tags=tags, node=node)
    shape = base.shape
    if shape is None and ("ellipsis", None) in parts:
        shape = Shape((), variadic=True)  # unknown rank: what follows ``...`` is still known
    gather = _gather(parts)
    if gather is not None:
        if _gathered_rows(shape, parts):
            table = rows_looked_up(base, gather, node)
            if table is not None:
                result = result.with_tag(table)
        if gather.shape is None or gather.shape.variadic:
            gather = None  # ids of unknown shape: a lookup of unknown shape
    if shape is None or (gather is None and any(kind == "tensor" for kind, _ in parts)) or any(kind == "unknown" for kind, _ in parts):
        return replace(result, shape=None)
    ellipses = sum(1 for kind, _ in parts if kind == "ellipsis")
    consuming = sum(1 for kind, _ in parts if kind in ("slice", "int", "tensor"))
    if ellipses > 1:
        return replace(result, shape=None)
    if shape.variadic and ellipses == 0:
        return replace(result, shape=_sliced_unknown_prefix(shape, parts))
    if shape.variadic:
        # ``x[..., :T]`` style on a shape with an unknown prefix: only trailing parts can be applied.
        head = parts.index(("ellipsis", None))
        if any(kind != "none" for kind, _ in parts[:head]):
            return replace(result, shape=None)
        trailing = parts[head + 1 :]
        trailing_consumed = sum(1 for kind, _ in trailing if kind in ("slice", "int"))
        if trailing_consumed > len(shape.dims):
            return replace(result, shape=None)
        kept = shape.dims[: len(shape.dims) - trailing_consumed]
        dims = _walk(interp, shape.dims[len(shape.dims) - trailing_consumed :], trailing)
        return replace(result, shape=Shape(kept + dims, variadic=True)) if dims is not None else replace(result, shape=None)
    rank = shape.rank or 0
    if consuming > rank:
        return replace(result, shape=None)
    if ellipses:
        head = [p for p in parts[: parts.index(("ellipsis", None))]]
        tail = parts[parts.index(("ellipsis", None)) + 1 :]
        middle_count = rank - consuming
        expanded = head + [("slice", (None, None, None))] * middle_count + tail
    else:
        expanded = parts + [("slice", (None, None, None))] * (rank - consuming)
    dims = _walk(interp, shape.dims, expanded)
    return replace(result, shape=Shape(dims) if dims is not None else None)


def _sliced_unknown_prefix(shape: Shape, parts: list[tuple[str, object]]) -> Shape | None:
    """``x[:, :-1, :]`` on ``x`` of shape ``(*, V)``: slices only, so the rank is kept, and it is at
    least the number of slices (torch raises on more indices than dims): ``(*, _, _, V)``. A known
    trailing dim is kept when every slice that may land on it takes the whole axis; the dims known
    only to exist are of unknown size. None for any other index (ints, ``None``, tensors)."""
    if not parts or any(kind != "slice" for kind, _ in parts):
        return None
    known = len(shape.dims)
    least = max(len(parts), known)
    dims: list[Dim] = [fresh_anonymous() for _ in range(least - known)]
    for j, dim in enumerate(shape.dims):
        # dim j of the known tail is axis rank - known + j, rank >= least: the parts from index
        # least - known + j on may land on it.
        reaching = parts[least - known + j :]
        dims.append(dim if all(_whole(value) for _, value in reaching) else fresh_anonymous())  # type: ignore[arg-type]
    return Shape(tuple(dims), variadic=True)


def _whole(bounds: tuple[Value | None, Value | None, Value | None]) -> bool:
    """A slice ``:`` (``0:``, ``::1``) that keeps the whole axis."""
    lower, upper, step = bounds
    return upper is None and (lower is None or int_of(lower) == 0) and (step is None or int_of(step) == 1)


def _gather(parts: list[tuple[str, object]]) -> TensorValue | None:
    """The index of an integer gather along one axis (``table[ids]``, ``x[:, ids]``): one integer
    tensor among slices, ``None`` and ``...``. With a second tensor, a bool mask, an int beside it
    (torch moves the indexed dims to the front when the two are apart) or an index of unknown
    dtype, None."""
    tensors = [value for kind, value in parts if kind == "tensor"]
    if len(tensors) != 1 or any(kind in ("int", "unknown") for kind, _ in parts):
        return None
    index = tensors[0]
    return index if isinstance(index, TensorValue) and index.dtype == "int" else None


def _gathered_rows(shape: Shape | None, parts: list[tuple[str, object]]) -> bool:
    """The gather picks from a table's first axis (its rows)."""
    if shape is None or shape.variadic or not shape.dims:
        return False
    return [kind for kind, _ in parts].index("tensor") == 0


def rows_looked_up(table: TensorValue, index: TensorValue, node: cst.CSTNode) -> PositionTag | None:
    """The rows of ``table`` (its first axis) picked by the integer ``index`` are rows of a
    positional table, as an ``nn.Embedding`` looked up with positions is, when the index holds
    position ids (``arange``-derived) or the table holds values built from positions (a sinusoid
    table, CTRL's ``self.pos_encoding[position_ids, :]``, M2M100's ``weights.index_select(0, ids)``):
    a table of that many rows, cut to the positions asked for (its rows are a sequence length)."""
    if table.shape is None or table.shape.variadic or not table.shape.dims or index.dtype != "int":
        return None
    ids, values = index.tag(PositionTag), table.tag(PositionTag)
    if (ids is not None and ids.kind == "index") or (values is not None and values.kind in ("index", "table")):
        return PositionTag(node, "table", table.shape.dims[0], sliced=True)
    return None


def _index_select(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.index_select(dim, index)`` / ``torch.index_select(x, dim, index)``: the axis ``dim`` becomes
    as long as the 1-d ``index``."""
    source, index = call.tensor(0), call.tensor(2, "index")
    axis = int_of(call.arg(1, "dim"))
    result = same_values(source, None)
    if axis is None or source.shape is None:
        return result
    if index.shape is not None and not index.shape.variadic and index.shape.rank == 1:
        length = index.shape.dims[0]
    else:
        length = fresh_anonymous()  # a 1-d index of a length nobody knows
    shape = source.shape.with_dim(axis, length) if not source.shape.variadic or axis < 0 else None
    result = result.with_shape(shape)
    if axis in (0, -(source.shape.rank or 0)) and not source.shape.variadic:
        table = rows_looked_up(source, index, call.node)
        if table is not None:
            result = result.with_tag(table)
    return result


def _walk(interp: "Interpreter", dims: tuple[Dim, ...], parts: list[tuple[str, object]]) -> tuple[Dim, ...] | None:
    out: list[Dim] = []
    position = 0
    for kind, value in parts:
        if kind == "none":
            out.append(Dim.const(1))
        elif kind == "int":
            position += 1
        elif kind == "tensor":
            # One integer index tensor (``_gather``): its dims take the place of the axis it picks from.
            if position >= len(dims):
                return None
            out.extend(value.shape.dims)  # type: ignore[attr-defined]
            position += 1
        elif kind == "slice":
            if position >= len(dims):
                return None
            length = _slice_length(interp, dims[position], value)  # type: ignore[arg-type]
            if length is None:
                step = int_of(value[2]) if value[2] is not None else None  # type: ignore[index]
                if step is not None and step <= 0:
                    return None  # torch raises: slice step must be positive
                # A bound the engine cannot read (``self.query[:query_num]`` with ``query_num`` found
                # in a loop, a stepped window): the axis keeps its place, of a size nobody knows.
                length = fresh_anonymous()
            out.append(length)
            position += 1
    out.extend(dims[position:])
    return tuple(out)


def _slice_length(interp: "Interpreter", full: Dim, bounds: tuple[Value | None, Value | None, Value | None]) -> Dim | None:
    lower, upper, step = bounds
    if step is not None:
        stride = int_of(step)
        if stride is None or stride <= 0:
            return None
        if lower is None and upper is None:
            if full.is_const:
                return Dim.const(-(-full.value // stride))
            try:
                return (full + (stride - 1)) // stride if stride > 1 else full
            except ArithmeticError:
                return None
        first = int_of(lower) if lower is not None else None
        if upper is None and first is not None and first >= 0:
            # ``x[:, 1::2]`` (the odd columns): every stride-th element from ``first`` on.
            if full.is_const:
                return Dim.const(max(0, -(-(full.value - first) // stride)))
            try:
                return (full - first + (stride - 1)) // stride
            except ArithmeticError:
                return None
        return None
    if lower is None and upper is None:
        return full
    start = dim_of(lower) if lower is not None else Dim.const(0)
    if start is None:
        return None
    if upper is None:
        if start.is_const and start.value < 0:
            return Dim.const(-start.value) if full.is_const and full.value >= -start.value else None
        if start.is_const and full.is_const:
            return Dim.const(max(0, full.value - start.value))  # x[:, 4:] of 3 is empty, not -1
        return full - start if not (start.is_const and start.value == 0) else full
    stop = dim_of(upper)
    if stop is None:
        return None
    if (stop.is_const and stop.value < 0) or provably_negative(stop):
        # Counted from the end (``ids[:, :-1]``, ``x[:, :, :-window]``): all but the last positions,
        # of a known size or a symbolic one (T - 1, and T - 2 of a length already T - 1).
        if not start.is_const or start.value < 0:
            return None
        if full.is_const and stop.is_const:
            return Dim.const(max(0, full.value + stop.value - start.value))
        return full + stop - start
    if start.is_const and start.value < 0:
        return None
    if stop.is_const and full.is_const:
        return Dim.const(max(0, min(stop.value, full.value) - start.value)) if start.is_const else None
    # ``[:T]`` of a max_len axis: T elements when T <= max_len (which the code intends).
    return stop - start if not (start.is_const and start.value == 0) else stop


def _restricts(bounds: tuple[Value | None, Value | None, Value | None]) -> bool:
    lower, upper, step = bounds
    return upper is not None or (lower is not None and int_of(lower) not in (0,))


def _shifts(bounds: tuple[Value | None, Value | None, Value | None]) -> bool:
    """``1:`` or ``:-1``: one position dropped at one end (a next-token shift)."""
    lower, upper, step = bounds
    if step is not None:
        return False
    return (upper is None and lower is not None and int_of(lower) == 1) or (
        lower is None and upper is not None and int_of(upper) == -1
    )


def _sliced(tag: object) -> object:
    if isinstance(tag, TriangleTag):
        return replace(tag, sliced=True)
    if isinstance(tag, PositionTag) and tag.kind == "table":
        return replace(tag, sliced=True)
    return tag



def _adds_axis(part: cst.BaseSlice) -> bool:
    """An index part that only a tensor accepts: ``None`` or ``...``."""
    if not isinstance(part, cst.Index):
        return False
    value = part.value
    return isinstance(value, cst.Ellipsis) or (isinstance(value, cst.Name) and value.value == "None")


register(_index_select, "index_select")
