"""Which tokens a tensor holds: windows cut from a token sequence and their offsets (SC603).

``data[i:i+T]`` of a 1-D id tensor, or ``ids[:, 1:]`` / ``ids[..., :-1]`` on the last axis of an id
tensor, starts a ``SequenceOriginTag`` (the sequence's identity, the offset of the window, the
length of its time axis). The tag follows the tokens through stacking, views and every computation
(``base.lineage``), so a model's logits carry the offset of its input ids; slicing a tagged tensor
along its time axis (the axis whose size is the tag's length) moves the offset, picking one position
drops the tag. Ids fed to a model of the file without a window get a tag of offset 0 at the call.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import SequenceOriginTag, SequenceSource
from shapecheck.engine.domain.values import UNKNOWN_TENSOR, Opaque, PositionTag, TensorValue, Value, dim_of
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.shapes import is_anonymous

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter
    from shapecheck.engine.ops.base import Call

Part = tuple  # (kind, value) as built by ``indexing._index_tensor``


def one_per_value(interp: "Interpreter", table: str, value: object, make):
    """``make()``'s result for ``value``, the same each time it is asked for during the analysis
    (kept in the interpreter's table ``table``, by identity: the value is kept alive with it)."""
    entries = interp.__dict__.setdefault(table, {})
    entry = entries.get(id(value))
    if entry is None or entry[0] is not value:
        entry = (value, make())
        entries[id(value)] = entry
    return entry[1]


def source_of(interp: "Interpreter", tensor: TensorValue) -> SequenceSource:
    """One identity per tensor value: two windows cut from the same ``data`` share it. A tensor that
    holds the tokens of another with some of them replaced (``same_tokens``) shares the other's."""
    links = interp.__dict__.get("_same_tokens", {})
    seen = 0
    while id(tensor) in links and links[id(tensor)][0] is tensor and seen < 32:
        tensor, seen = links[id(tensor)][1], seen + 1
    return one_per_value(interp, "_sequence_sources", tensor, lambda: SequenceSource(tensor.node))


def array_of(interp: "Interpreter", base: Opaque, node: cst.CSTNode) -> TensorValue:
    """The tensor of unknown shape a parameter the engine cannot see stands for where it is used as
    a tensor (indexed, or the tokens a ``where`` / ``masked_fill`` keeps), the same one each time."""
    return one_per_value(interp, "_opaque_arrays", base, lambda: TensorValue(None, None, (), node))


def same_tokens(interp: "Interpreter", result: Value, tokens: Value, node: cst.CSTNode) -> None:
    """``result`` holds the tokens of ``tokens`` with some replaced (``torch.where(ids == ignore,
    pad, ids)``, ``ids.masked_fill(~mask, pad)``): a window cut from either is a window of one
    sequence. Recorded only for tokens not yet known as a window (a known window's tag follows
    through ``lineage``), ids or a parameter the engine cannot see."""
    if not isinstance(result, TensorValue) or result is UNKNOWN_TENSOR or result.has(SequenceOriginTag) or result.dtype not in ("int", None):
        return
    if isinstance(tokens, Opaque):
        tokens = array_of(interp, tokens, node)
    if not isinstance(tokens, TensorValue) or tokens is UNKNOWN_TENSOR or tokens.has(SequenceOriginTag) or tokens.dtype not in ("int", None):
        return
    interp.__dict__.setdefault("_same_tokens", {})[id(result)] = (result, tokens)


def unseen_call_result(interp: "Interpreter", call: "Call", result: Value) -> Value:
    """The result of a layer or function the engine cannot see (``self.net(inp)``, a wrapped
    transformer passed in): computed position by position from its first argument's tokens, as a
    model of the file is (``tag_model_inputs``), but by code that may have moved them (opaque).
    Only ids, or inputs of unknown dtype, start a sequence this way."""
    if not isinstance(result, TensorValue) or result.has(SequenceOriginTag) or not call.args:
        return result
    tokens = call.args[0]
    if not isinstance(tokens, TensorValue) or tokens is UNKNOWN_TENSOR or tokens.has(SequenceOriginTag) or tokens.dtype not in ("int", None):
        return result
    tag = SequenceOriginTag(source_of(interp, tokens), Dim.const(0), None, False, None, None, opaque=True, moves=(call.node,))
    return result.with_tag(tag)


def forward_result(interp: "Interpreter", model: object, call: "Call", result: Value) -> Value:
    """The output of a module of the file called on tokens (``self.forward(x[idx])``, ``model(ids)``)
    whose window the engine lost inside (a cached token-by-token loop, values read back out of a
    cache): computed position by position from the tokens, as an unseen layer's output is
    (``unseen_call_result``), by code that may have moved them. A result that keeps its window
    (the usual case) is left as it is; only ``nn.Module`` subclasses count."""
    cls = getattr(model, "cls", None)
    if cls is None or not getattr(cls, "is_module", False):
        return result
    positions = result.tag(PositionTag) if isinstance(result, TensorValue) else None
    if positions is not None and positions.kind != "unknown":
        # Positions, or a table looked up by them (``self.pos_emb(x)`` returning ``emb(arange(n))``),
        # are no tokens: they stay positions alone (``base._positions_alone``). Positions that
        # only may have been given on the way (an unseen call inside) say nothing of the kind.
        return result
    return unseen_call_result(interp, call, result)


def _axes(base: TensorValue, parts: list[Part]) -> list[tuple[int | None, Part]] | None:
    """Each consuming part with its axis: an index from the start, or from the end (negative) when
    the parts after an ellipsis are read against a shape of unknown rank."""
    shape = base.shape
    kinds = [kind for kind, _ in parts]
    if kinds.count("ellipsis") > 1:
        return None
    consuming = [i for i, kind in enumerate(kinds) if kind not in ("none", "ellipsis")]
    result: list[tuple[int | None, Part]] = []
    if "ellipsis" in kinds:
        cut = kinds.index("ellipsis")
        after = [i for i in consuming if i > cut]
        for position, i in enumerate(consuming):
            if i < cut:
                result.append((position, parts[i]))
            else:
                from_end = -(len(after) - after.index(i))
                rank = shape.rank if shape is not None and not shape.variadic else None
                result.append((rank + from_end if rank is not None else from_end, parts[i]))
        return result
    return [(position, parts[i]) for position, i in enumerate(consuming)]


def _axis_dim(base: TensorValue, axis: int | None) -> Dim | None:
    """The size of ``axis``; None where it is not known (a size nobody knows, ``_``, included)."""
    shape = base.shape
    if shape is None or axis is None:
        return None
    if shape.variadic:
        dim = shape.dims[axis] if axis < 0 and -axis <= len(shape.dims) else None
    else:
        dim = shape.dims[axis] if -shape.rank <= axis < shape.rank else None  # type: ignore[operator]
    return None if dim is None or is_anonymous(dim) else dim


def _is_last_axis(base: TensorValue, axis: int | None, count: int) -> bool:
    if axis is None:
        return False
    if axis == -1:
        return True
    shape = base.shape
    if shape is None:
        return axis == 0 and count == 1  # ``data[a:b]`` of a tensor of unknown rank: a 1-D stream
    return not shape.variadic and shape.rank == axis + 1


def _batch_first_time_axis(base: TensorValue, axis: int | None, axes: list) -> bool:
    """``x[:, a:b]`` of a tensor of unknown rank: the batch kept whole, a window of the time axis
    (batch-first sequences: ids ``(b, t)`` or features ``(b, t, d)``)."""
    if base.shape is not None or axis != 1 or len(axes) != 2:
        return False
    first_axis, (kind, value) = axes[0]
    return first_axis == 0 and kind == "slice" and _full(value)


def _full(value: object) -> bool:
    lower, upper, step = value  # type: ignore[misc]
    return lower is None and upper is None and step is None


def _window(bounds: object, full: Dim | None) -> tuple[Dim | None, Dim | None] | None:
    """(offset, length) of a slice ``[lower:upper]`` without a step; None for a negative start."""
    lower, upper, step = bounds  # type: ignore[misc]
    if step is not None:
        return None
    start = dim_of(lower) if lower is not None else Dim.const(0)
    if start is not None and start.is_const and start.value < 0:
        return None
    stop = dim_of(upper) if upper is not None else None
    length: Dim | None = None
    try:
        if stop is not None and stop.is_const and stop.value < 0:
            length = full + stop - start if full is not None and start is not None else None
        elif stop is not None and start is not None:
            length = stop - start
        elif upper is None and full is not None and start is not None:
            length = full - start
    except ArithmeticError:
        length = None
    return start, length


def after_index(
    interp: "Interpreter", base: TensorValue, tags: tuple[object, ...], parts: list[Part], node: cst.CSTNode
) -> tuple[object, ...]:
    """The result's tags (``tags``, from the other index rules) after indexing ``base``: the sequence
    window moved, started or dropped."""
    tags = tuple(tag for tag in tags if type(tag) is not SequenceOriginTag)
    axes = _axes(base, parts)
    if axes is None:
        return tags
    touched = [(axis, part) for axis, part in axes if not (part[0] == "slice" and _full(part[1]))]
    tag = base.tag(SequenceOriginTag)
    if tag is not None:
        if tag.axis is None and len(touched) == 1 and _batch_first_time_axis(base, touched[0][0], axes):
            # ``logits[:, :-1]`` of a layer's output of unknown rank: batch first, a window of time.
            tag = replace(tag, axis=1)
        moved = _move(base, tag, touched, node)
        if moved is not None and moved.axis is not None and any(kind in ("int", "none") for kind, _ in parts):
            moved = replace(moved, axis=None)
        return tags + ((moved,) if moved is not None else ())
    if len(touched) != 1 or touched[0][1][0] != "slice" or base.dtype not in ("int", None) or base is UNKNOWN_TENSOR:
        # ``UNKNOWN_TENSOR`` stands for any tensor the engine knows nothing of (``batch.input_ids.clone()``
        # and ``batch.labels.clone()`` alike): windows cut from it are of no one sequence.
        return tags
    axis, (_, bounds) = touched[0]
    if not (_is_last_axis(base, axis, len(axes)) or _batch_first_time_axis(base, axis, axes)):
        return tags
    window = _window(bounds, _axis_dim(base, axis))
    if window is None:
        return tags
    offset, length = window
    kept_axis = axis if axis is not None and axis >= 0 and not any(kind in ("int", "none") for kind, _ in parts) else None
    return tags + (SequenceOriginTag(source_of(interp, base), offset, length, True, node, kept_axis),)


def _move(base: TensorValue, tag: SequenceOriginTag, touched: list, node: cst.CSTNode) -> SequenceOriginTag | None:
    """Index a tensor that holds a window: along its time axis the offset moves; along another axis
    nothing changes; where the axis cannot be told, the tag is dropped."""
    for axis, (kind, value) in touched:
        dim = _axis_dim(base, axis)
        same = equal(dim, tag.length) if dim is not None and tag.length is not None else Truth.UNKNOWN
        if same is Truth.UNKNOWN and tag.axis is not None and axis is not None and axis >= 0:
            same = Truth.TRUE if axis == tag.axis else Truth.FALSE
        if same is Truth.FALSE:
            continue
        if same is Truth.UNKNOWN or kind != "slice":
            return None
        window = _window(value, dim)
        if window is None:
            return None
        start, length = window
        offset = tag.offset + start if tag.offset is not None and start is not None else None
        paths = tuple(
            replace(path, offset=path.offset + start if path.offset is not None and start is not None else None, sliced=True, node=node)
            for path in tag.paths
        )
        tag = replace(tag, offset=offset, length=length, sliced=True, node=node, paths=paths)
    return tag


def tag_model_inputs(interp: "Interpreter", call: "Call", frame: "Frame") -> "Call":
    """Ids given to a model of the file: tagged as a sequence of their own (offset 0) unless they are
    a window already, in the call and in the caller's variables, so that a target that is the same
    tensor (``labels=input_ids``, ``cross_entropy(logits, ids)``) is recognised as the input."""
    from shapecheck.engine.ops.base import Call

    tagged: dict[int, Value] = {}

    def tag(value: Value, arg_node: cst.CSTNode | None) -> Value:
        if not isinstance(value, TensorValue) or value.dtype not in ("int", None) or value.has(SequenceOriginTag):
            return value
        if id(value) not in tagged:
            length = value.shape.dims[-1] if value.shape is not None and value.shape.dims else None
            tagged[id(value)] = value.with_tag(SequenceOriginTag(source_of(interp, value), Dim.const(0), length, False, arg_node))
        result = tagged[id(value)]
        if isinstance(arg_node, cst.Name) and frame.env.get(arg_node.value) is value:
            frame.env[arg_node.value] = result
        return result

    args = tuple(tag(value, node) for value, node in zip(call.args, call.arg_nodes + (None,) * len(call.args)))
    kwargs = {key: tag(value, call.kwarg_nodes.get(key)) for key, value in call.kwargs.items()}
    return Call(call.node, args, kwargs, call.arg_nodes, call.kwarg_nodes)


def rows_gathered(interp: "Interpreter", result: Value, base: TensorValue, parts: list[Part]) -> None:
    """``x[idx]`` with a 1-D index tensor (``torch.randint(0, b, (n,))``, a boolean row mask) on the
    first axis of a token tensor that is no window yet: a sample of its rows, the same sequences
    position by position, so a window cut from either is a window of one sequence
    (``model(x[idx])`` against ``labels[idx]`` with ``labels = x[:, 1:]``). A tensor known to be 1-D
    is a stream of tokens, whose gather picks positions, not rows: not linked."""
    touched = [(i, part) for i, part in enumerate(parts) if not (part[0] == "slice" and _full(part[1]))]
    if len(touched) != 1 or parts[0][0] != "tensor":
        return
    index = touched[0][1][1]
    if not isinstance(index, TensorValue) or index.rank != 1 or index.dtype not in ("int", "bool"):
        return
    if base.shape is not None and not base.shape.variadic and base.shape.rank < 2:
        return
    same_tokens(interp, result, base, base.node)


def unfolded(source: TensorValue, tags: tuple[object, ...], axis: int | None, size: Dim | None) -> tuple[object, ...]:
    """Tags of ``source.unfold(axis, size, step)``: window ``w`` holds the positions ``offset + w *
    step`` to ``offset + w * step + size - 1`` of ``source``, along a new last axis. The window keeps
    the offset of its first window (the one a step-0 prediction meets); along the time axis the
    length becomes ``size``; along another axis it is kept; where the axis cannot be told the
    length is unknown. The time axis is found again by its size (``axis`` dropped)."""
    tag = source.tag(SequenceOriginTag)
    if tag is None:
        return tags
    time = _is_time_axis(source, tag, axis)
    length = size if time is Truth.TRUE else (tag.length if time is Truth.FALSE else None)
    moved = replace(tag, length=length, axis=None)
    return tuple(moved if type(t) is SequenceOriginTag else t for t in tags)


def padded(source: TensorValue, tags: tuple[object, ...], pads: list[tuple[int | None, Dim | None, Dim | None]] | None) -> tuple[object, ...]:
    """Tags of ``source`` padded (``F.pad``, ``pad_at_dim``): ``pads`` holds, per padded axis (None
    where it cannot be told), the amounts before and after; None when they are not known. Padding
    only after the values (``pad_right_at_dim(x, n, dim=1)``) leaves every token where it was, so a
    window keeps its offset, its time axis grown by the amount (its length unknown where the padded
    axis cannot be told apart from it); padding before may move them: the window is opaque."""
    tag = source.tag(SequenceOriginTag)
    if tag is None or not any(type(t) is SequenceOriginTag for t in tags):
        return tags
    right_only = pads is not None and all(before is not None and before.is_const and before.value == 0 for _, before, _ in pads)
    if not right_only:
        return positions_moved(tags)
    length = tag.length
    for axis, _, after in pads:  # type: ignore[union-attr]
        if after is not None and after.is_const and after.value == 0:
            continue
        time = _is_time_axis(source, tag, axis)
        if time is Truth.FALSE:
            continue
        try:
            length = length + after if time is Truth.TRUE and length is not None and after is not None else None
        except ArithmeticError:
            length = None
    moved = replace(tag, length=length, axis=None)
    return tuple(moved if type(t) is SequenceOriginTag else t for t in tags)


def _is_time_axis(source: TensorValue, tag: SequenceOriginTag, axis: int | None) -> Truth:
    """Is ``axis`` of ``source`` the time axis of its window: the axis kept by indexing, or the axis
    whose size is the window's length (and no other's)?"""
    if axis is None:
        return Truth.UNKNOWN
    if tag.axis is not None and axis >= 0:
        return Truth.TRUE if axis == tag.axis else Truth.FALSE
    dim = _axis_dim(source, axis)
    if dim is None or tag.length is None:
        return Truth.UNKNOWN
    return equal(dim, tag.length)


def positions_moved(tags: tuple[object, ...]) -> tuple[object, ...]:
    """Tags of a tensor whose tokens moved along an axis (``roll``, ``flip``): their window is
    no longer known."""
    return tuple(replace(tag, opaque=True, moves=()) if type(tag) is SequenceOriginTag else tag for tag in tags)
