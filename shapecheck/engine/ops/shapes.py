"""Op rules that move elements without computing: view / reshape, flatten, (un)squeeze, transpose,
permute, expand / repeat, identity ops and dtype casts, and the size queries (``size``, ``dim``,
``numel``). Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import (
    DtypeValue,
    FilledTag,
    KernelLayout,
    KeyTransposed,
    LeadingOfUnknownRank,
    Permuted,
    Reordered,
    WrittenSplit,
)
from shapecheck.engine.domain.values import (
    UNKNOWN,
    IntValue,
    Origin,
    PositionTag,
    ProjectionTag,
    ScoresTag,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    dim_of,
    int_of,
    scale_of,
)
from shapecheck.engine.ops import windows
from shapecheck.engine.ops.base import (
    OPS,
    Call,
    _axis_index,
    _with_rank,
    conflict,
    dims_from,
    lineage,
    norm_axis,
    register,
    read_trailing_size,
    same_values,
    size_args,
    unify,
)
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.dims import Dim, Truth, equal, product
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


# ------------------------------------------------------------------------------------ reshapes


def _view(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    dtype = call.arg(1, "dtype")
    if isinstance(dtype, DtypeValue):  # ``view(torch.float16)`` / ``view(dtype=...)``: the bytes reread
        return same_values(source, None, dtype.dtype)
    derived = _derived_view(interp, source, call, frame)
    if derived is not None:
        return derived
    keyword = _size_keyword(call)
    sizes = size_args(call, 1, keyword)
    if sizes is None:
        target = call.arg(1, keyword) if len(call.args) == 2 or keyword in call.kwargs else None
        if not isinstance(target, ShapeValue) or target.base is None or not target.extra:
            return same_values(source, None)
        leading = interp.presumed_leading.get(id(target.base))
        if leading is None:
            return _view_of_unknown_leading(source, target, frame)
        sizes = list(leading[1]) + list(target.extra)  # ``reshape(*input_shape, -1)`` after the split
        if source.shape is not None and source.shape.variadic and len(source.shape.dims) == target.dropped:
            # ``self.k_proj(x).view(hidden_shape)``: a layer kept x's leading dims.
            source = source.with_shape(Shape(leading[1] + source.shape.dims))
    result = shape_ops.reshape(source.shape, sizes, frame.assumptions)
    if result.exact is not None:
        # ``view(B, N, h, -1)`` of (B, N, d) runs only if h divides d: from here on ``d // h`` is
        # the head dim the view made (the scale ``(d // h) ** -0.5`` is that head dim's).
        frame.assumptions.add_divisible(*result.exact)
    if result.shape is None and result.conflict is None and (source.shape is None or source.shape.variadic):
        # The element count is unknown: the target rank and its written sizes still hold.
        result = replace(result, shape=_target_of_unknown(sizes))
    if (
        result.conflict is None
        and getattr(result, "mismatch", None) is not None
        and source.shape is not None
        # of a tensor known by its width only, the sizes before the -1 play no part
        and not _unnamed(interp, result.mismatch if source.shape.variadic else tuple(source.shape.dims) + tuple(sizes))
    ):
        result = replace(result, conflict=result.mismatch)  # wrong unless a head count is 1
    if result.conflict is not None and source.shape is not None:
        heads = _uneven_head_split(source.shape, sizes, frame.assumptions)
        if heads is not None:
            width, count = heads
            origin = _origin_of(call, count)
            named = f" ({origin.label})" if origin is not None else ""
            before = len(interp.facts.conflicts)
            conflict(
                interp,
                "heads",
                call.node,
                f"the width {width} is not divisible by {count}, the head count{named}: {count} heads of "
                f"{width} // {count} = {width // count} lose {width % count} features",
                frame,
                "view",
            )
            if origin is not None:
                interp.facts.conflicts[before] = replace(interp.facts.conflicts[before], at=origin.node)
            return same_values(source, None)
        written = ", ".join(str(s) for s in sizes)
        if source.shape.variadic:
            width, split = result.conflict
            detail = (
                f"the sizes after the -1 of view({written}) split the width {width} of a tensor of shape "
                f"{source.shape} into {split} elements, the width times a power of the head count: the -1 "
                f"would take the rest from the leading dims"
            )
        elif any(s.is_const and s.value == -1 for s in sizes):
            total, known = result.conflict
            detail = (
                f"cannot view a tensor of shape {source.shape} (numel {total}) as ({written}): the other sizes "
                f"multiply to {known}, so the -1 would be ({total}) / ({known})"
            )
        else:
            detail = (
                f"cannot view a tensor of shape {source.shape} (numel {shape_ops.numel(source.shape)}) as "
                f"({written}) (numel {shape_ops.numel(Shape(tuple(sizes)))})"
            )
        conflict(interp, "reshape", call.node, detail, frame, "view")
    if result.conflict is None and source.shape is not None and not source.shape.variadic and result.shape is not None:
        _unify_numel(frame, source.shape.dims, result.shape.dims)
    out = same_values(source, result.shape).without(WrittenSplit)
    if result.conflict is None and result.shape is not None and len(result.shape.dims) >= 3:
        out = out.with_tag(WrittenSplit(call.node, result.shape.dims[-1]))
    return out


def _size_keyword(call: Call) -> str:
    """The keyword of the sizes: ``view(size=...)``, ``reshape(shape=...)``."""
    return "size" if "size" in call.kwargs else "shape"


def _unnamed(interp: "Interpreter", dims: tuple[Dim, ...]) -> bool:
    """Some size is one nobody knows (unnamed, or made up by the engine): it may be 1."""
    return any(interp.facts.made_up(dim) for dim in dims)


def _derived_view(interp: "Interpreter", source: TensorValue, call: Call, frame: "Frame") -> Value | None:
    """``x.view(x.size()[:-1] + (h, d))``: keep x's leading dims, check the split trailing ones."""
    keyword = _size_keyword(call)
    target = call.arg(1, keyword) if len(call.args) == 2 or keyword in call.kwargs else None
    if not isinstance(target, ShapeValue) or target.base is not source or source.shape is None:
        return None
    dims = source.shape.dims
    if target.dropped > len(dims):
        return None
    kept = dims[: len(dims) - target.dropped]
    split = dims[len(dims) - target.dropped :]
    extra = target.extra
    if any(d.is_const and d.value == -1 for d in extra):
        # ``x.size()[:-1] + (h, -1)``: the -1 is what is left of the split dims.
        resolved = shape_ops.reshape(Shape(split), list(extra), frame.assumptions)
        if resolved.shape is None or resolved.conflict is not None:
            return same_values(source, None)
        extra = resolved.shape.dims
    old, new = product(split), product(extra)
    if equal(old, new, frame.assumptions, min_symbol=2) is Truth.FALSE:  # (FALSE for sizes >= 1 implies it)
        heads = _uneven_head_split(Shape(split), list(extra)) if len(split) == 1 else None
        conflict(
            interp,
            "heads" if heads is not None else "reshape",
            call.node,
            f"cannot view the trailing dims ({', '.join(map(str, split))}) of {source.shape} as "
            f"({', '.join(map(str, extra))}): {old} elements vs {new}",
            frame,
            "view",
        )
        return same_values(source, None)
    unify(frame, old, new) if len(split) == 1 and len(extra) == 1 else None
    result = same_values(source, Shape(kept + extra, source.shape.variadic))
    if source.shape.variadic and target.dropped == 1 and len(extra) == 2:
        result = result.with_tag(LeadingOfUnknownRank(source))  # the head split, for ``presumed_leading``
    return result


def _view_of_unknown_leading(source: TensorValue, target: ShapeValue, frame: "Frame") -> TensorValue:
    """``y.view(*x.shape[:-1], -1, head_dim)`` where the rank of x is unknown: the sizes written
    after the leading dims hold (a ``-1`` is what is left of y's last dim, the leading dims being
    x's, as the idiom means). A split of one axis in two is marked, for ``presumed_leading``."""
    extra = list(target.extra)
    last = source.shape.dim(-1) if source.shape is not None else None
    dims = None
    if last is not None and target.dropped == 1:
        resolved = shape_ops.reshape(Shape((last,)), extra, frame.assumptions)
        if resolved.shape is not None and resolved.conflict is None:
            dims = resolved.shape.dims
    if dims is None:
        known = _target_of_unknown(extra)
        if known is None:
            return same_values(source, None)
        dims = known.dims
    result = same_values(source, Shape(tuple(dims), variadic=True))
    if len(extra) == 2 and target.dropped == 1:
        result = result.with_tag(LeadingOfUnknownRank(target.base))
    return result


def presumed_leading(interp: "Interpreter", split: TensorValue) -> TensorValue:
    """``split`` (a ``LeadingOfUnknownRank`` view ``(*leading, h, d)``) with two leading dims, batch
    and sequence, when a reordering needs them: the head move ``transpose(1, 2)`` of a batch-first
    ``(b, t, h, d)`` (with one leading dim the move would put the head dim before the heads; with
    three it would not reach the heads at all), or a ``permute`` of four axes (which fixes them at
    two). The dims
    are made up (never the ground of a finding) and shared by every view of the same tensor's
    leading dims, so queries, keys and values agree on them, and the merge
    ``reshape(*input_shape, -1)`` gets them back."""
    tag = split.tag(LeadingOfUnknownRank)
    if tag is None or split.shape is None or not split.shape.variadic:
        return split
    owner = _leading_owner(tag.base)
    entry = interp.presumed_leading.get(id(owner))
    if entry is None:
        leading = (Dim.sym(interp.fresh_name("batch", use_target=False)), Dim.sym(interp.fresh_name("seq", use_target=False)))
        entry = interp.presumed_leading[id(owner)] = (owner, leading)
        interp.sequence_sizes.add(leading[1].name)  # type: ignore[arg-type]
    return split.with_shape(Shape(entry[1] + split.shape.dims))


def _leading_owner(base: Value) -> Value:
    """The tensor whose leading dims ``base`` has: a projection's input (a Linear keeps every dim
    but the last), followed back, so that ``self.query(x)`` and ``self.key(x)`` split on their own
    (BERT's ``transpose_for_scores``) share the batch and sequence dims of ``x``."""
    while isinstance(base, TensorValue):
        projection = base.tag(ProjectionTag)
        if projection is None or not isinstance(projection.source, TensorValue):
            break
        base = projection.source  # an earlier value: the chain ends
    return base


def _origin_of(call: Call, count: int) -> Origin | None:
    """Where the head count among a view's sizes was written (a configuration default)."""
    values = list(call.args[1:])
    if len(values) == 1 and isinstance(values[0], TupleValue):
        values = list(values[0].items)
    for value in values:
        if isinstance(value, IntValue) and value.origin is not None and value.dim.is_const and value.dim.value == count:
            return value.origin
    return None


def _uneven_head_split(source: Shape, sizes: list[Dim], assumptions: object = None) -> tuple[int, int] | None:
    """(width, heads) when a view splits a last dim D into (h, D // h) with D % h != 0 (D known, or
    a symbol such as ``C`` that this path binds to a number)."""
    last = source.dim(-1)
    bindings = getattr(assumptions, "bindings", None)
    if last is not None and not last.is_const and bindings:
        last = last.substitute(bindings)
    if last is None or not last.is_const or len(sizes) < 2:
        return None
    count, size = sizes[-2], sizes[-1]
    if not (count.is_const and size.is_const) or count.value <= 1:
        return None
    width = last.value
    if width % count.value and width // count.value == size.value:
        return width, count.value
    return None


def _unify_numel(frame: "Frame", source: tuple[Dim, ...], target: tuple[Dim, ...]) -> None:
    """A view ran, so both sides hold as many elements: cancel the dims they share and assume the
    rest equal (``view(B, T, h, H // h)`` of ``(B, T, H)`` teaches ``H == h * (H // h)``)."""
    rest = list(target)
    left = []
    for dim in source:
        if dim in rest:
            rest.remove(dim)
        else:
            left.append(dim)
    if not left or not rest:
        return
    try:
        a, b = product(left), product(rest)
    except ArithmeticError:
        return
    if equal(a, b, frame.assumptions) is Truth.UNKNOWN:
        frame.assumptions.add_equal(a, b)


def _resize(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.resize_(4, 5)``: the new sizes, whatever the old number of elements."""
    source = call.tensor(0)
    sizes = size_args(call, 1)
    return same_values(source, Shape(tuple(sizes)) if sizes is not None else None)


def _flatten(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    start = int_of(call.arg(1, "start_dim"))
    end = int_of(call.arg(2, "end_dim"))
    start = 0 if start is None and not call.has(1, "start_dim") else start
    end = -1 if end is None and not call.has(2, "end_dim") else end
    shape = source.shape
    if shape is None or shape.variadic or start is None or end is None:
        return same_values(source, None)
    rank = shape.rank
    s, e = norm_axis(start, rank), norm_axis(end, rank)
    if s is None or e is None or s > e:
        return same_values(source, None)
    merged = product(shape.dims[s : e + 1])
    return same_values(source, Shape(shape.dims[:s] + (merged,) + shape.dims[e + 1 :]))


def _unflatten(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    axis = int_of(call.arg(1, "dim"))
    sizes = dims_from((call.arg(2, "sizes"),))
    shape = source.shape
    if shape is None or axis is None or sizes is None:
        return same_values(source, None)
    index = _axis_index(shape, axis)
    if index is None:
        return same_values(source, None)
    sub = shape_ops.reshape(Shape((shape.dims[index],)), sizes, frame.assumptions)
    if sub.conflict is not None:
        heads = _uneven_head_split(Shape((shape.dims[index],)), sizes)
        kind = "heads" if heads is not None else "reshape"
        conflict(interp, kind, call.node,
                 f"cannot unflatten axis {axis} of size {shape.dims[index]} into ({', '.join(map(str, sizes))})", frame, "unflatten")
        return same_values(source, None)
    if sub.shape is None:
        return same_values(source, None)
    return same_values(source, Shape(shape.dims[:index] + sub.shape.dims + shape.dims[index + 1 :], shape.variadic))


def _squeeze(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.squeeze()`` / ``x.squeeze(dim)`` / ``x.squeeze((d0, d1))``: the shape algebra's
    :func:`shapes.squeeze` (a dim that may or may not be 1 gives an unknown shape)."""
    source = call.tensor(0)
    if source.shape is None:
        return same_values(source, None)
    dims: int | list[int] | None = None
    if call.has(1, "dim"):
        given = call.arg(1, "dim")
        axes = [int_of(item) for item in given.items] if isinstance(given, TupleValue) else [int_of(given)]
        if None in axes:
            return same_values(source, None)
        dims = axes[0] if not isinstance(given, TupleValue) else axes  # type: ignore[assignment]
    shape = shape_ops.squeeze(source.shape, dims, frame.assumptions)
    if shape == source.shape:
        return source
    return same_values(source, shape)


def _unsqueeze(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.unsqueeze(dim)``: the shape algebra's :func:`shapes.unsqueeze`."""
    source = call.tensor(0)
    axis = int_of(call.arg(1, "dim"))
    shape = source.shape if source.shape is not None else Shape((), variadic=True)  # unknown: (*, 1) stays known
    if axis is None:
        return same_values(source, None)
    return same_values(source, shape_ops.unsqueeze(shape, axis))


# ------------------------------------------------------------------------------------ axis order


def _transpose(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    i, j = int_of(call.arg(1, "dim0")), int_of(call.arg(2, "dim1"))
    if i is None or j is None:
        return same_values(source, None).without(KeyTransposed)
    if {i, j} == {1, 2} and source.shape is not None and source.shape.variadic and len(source.shape.dims) == 2:
        source = presumed_leading(interp, source)
    rank = source.rank
    a, b = norm_axis(i, rank), norm_axis(j, rank)
    last_two = {a, b} == {rank - 2, rank - 1} if rank is not None and a is not None and b is not None else {i, j} == {-2, -1}
    shape = None
    if source.shape is not None:
        shape = shape_ops.transpose(source.shape, i, j)
    result = same_values(source, shape)
    order = None
    if rank is not None and a is not None and b is not None:
        swapped = list(range(rank))
        swapped[a], swapped[b] = b, a
        order = tuple(swapped)
    return _mark_transposed(result, source, last_two, order, call.node)


def _dot_t(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    shape = source.shape
    if shape is None or shape.variadic:
        return same_values(source, None).without(KeyTransposed)
    result = same_values(source, Shape(tuple(reversed(shape.dims))))
    order = tuple(reversed(range(shape.rank)))  # type: ignore[arg-type]
    return _mark_transposed(result, source, shape.rank == 2, order, call.node)


def _dot_mt(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    shape = shape_ops.transpose(source.shape, -2, -1) if source.shape is not None else None
    rank = source.rank
    order = tuple(range(rank - 2)) + (rank - 1, rank - 2) if rank is not None and rank >= 2 else None
    return _mark_transposed(same_values(source, shape), source, True, order, call.node)


def _dot_t_method(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return _dot_t(interp, call, frame)


def _target_of_unknown(sizes) -> Shape | None:
    """``y.view(b, n, h, -1)`` of a tensor of unknown shape: the target rank and the sizes given;
    the ``-1`` is an unnamed dim."""
    dims = []
    for size in sizes:
        if size.is_const and size.value == -1:
            dims.append(fresh_anonymous())
        elif size.is_const and size.value < 0:
            return None
        else:
            dims.append(size)
    return Shape(tuple(dims))


def _permute(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    order = size_args(call, 1, "dims")
    if order is None or not all(d.is_const for d in order):
        return same_values(source, None).without(KeyTransposed)
    axes = [d.value for d in order]
    shape = source.shape
    rank = len(axes)
    normalized = [a % rank if -rank <= a < rank else None for a in axes]
    if None in normalized or sorted(normalized) != list(range(rank)):  # type: ignore[type-var]
        return same_values(source, None)
    swaps_last_two = normalized[:-2] == list(range(rank - 2)) and normalized[-2:] == [rank - 1, rank - 2]
    if shape is not None and shape.variadic and rank - len(shape.dims) == 2:
        shape = presumed_leading(interp, source).shape
    shape = _with_rank(interp, shape if shape is not None else Shape((), variadic=True), rank)
    new_shape = shape_ops.permute(shape, normalized) if shape is not None else None  # type: ignore[arg-type]
    result = same_values(source, new_shape)
    return _mark_transposed(result, source, swaps_last_two, tuple(normalized), call.node)  # type: ignore[arg-type]


def _mark_transposed(
    result: TensorValue, source: TensorValue, last_two: bool, order: tuple[int, ...] | None = None, node=None
) -> TensorValue:
    previous = source.tag(KeyTransposed)
    result = result.without(KeyTransposed)
    if order is not None and node is not None:
        result = _reorder(result, source, order, node)
    scores = result.tag(ScoresTag)
    if scores is not None and last_two and scores.key_axis is not None:
        result = result.with_tag(replace(scores, key_axis=-1 if scores.key_axis == -2 else -2))
    if last_two:
        if previous is not None:
            return result  # transposed back
        return result.with_tag(KeyTransposed(source))
    return result


def _reorder(result: TensorValue, source: TensorValue, order: tuple[int, ...], node) -> TensorValue:
    """The memory layout after reordering ``source``'s axes by ``order`` (composed with any
    reordering already applied; the identity means contiguous again). ``permute(0, 1, 2, 3)``
    reorders nothing: the tensor keeps the layout it had."""
    if order == tuple(range(len(order))):
        return result
    result = result.with_tag(Reordered(order, node, source))
    if source.has(KernelLayout):
        return result  # the strides are the kernel's: unknown
    earlier = source.tag(Permuted)
    if earlier is not None:
        if earlier.rank != len(order):
            return result
        order = tuple(earlier.order[a] for a in order)
    if order == tuple(range(len(order))):
        return result
    return result.with_tag(Permuted(order, node))


# ------------------------------------------------------------------------------------ identity and casts


def _same_tensor(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """Ops that return the very tensor (or a view with the same strides)."""
    return call.tensor(0)


# ------------------------------------------------------------------------------------ identity and casts


def _identity(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """Same values; the layout may be new, so a reordering is forgotten (never guessed)."""
    source = call.tensor(0)
    return source.without(Permuted) if source.has(Permuted) else source


def _scatter(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``mask.scatter(1, idx, True)``: some elements replaced, the shape and dtype kept."""
    source = call.tensor(0)
    return TensorValue(source.shape, source.dtype, lineage(source), call.node)


def _fill(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``t.fill_(value)``: the same shape, every element ``value`` (a causal mask built as
    ``torch.empty(n, n).fill_(-inf).triu_(1)``)."""
    source = call.tensor(0)
    value = scale_of(call.arg(1, "value"))
    filled = TensorValue(source.shape, source.dtype, (), call.node)
    return filled.with_tag(FilledTag(value)) if value is not None else filled


def _contiguous(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """Same values in row-major memory: whatever layout the tensor had is gone."""
    return call.tensor(0).without(Permuted, KernelLayout)


def _to(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    for value in list(call.args[1:]) + [call.kwargs.get("dtype", UNKNOWN)]:
        if isinstance(value, DtypeValue):
            return same_values(source, source.shape, value.dtype)
        if isinstance(value, TensorValue):
            return same_values(source, source.shape, value.dtype)
    return source


def _type_as(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``x.type_as(other)``: x's shape in ``other``'s dtype class (``other`` by position or keyword)."""
    source = call.tensor(0)
    return same_values(source, source.shape, call.tensor(1, "other").dtype)


def _cast(interp: "Interpreter", call: Call, frame: "Frame", dtype: str) -> Value:
    """``x.float()``, ``x.long()``, ``x.bool()``...: the same shape in another dtype class (a plain
    function bound with ``partial``, not a closure, so that mutation testing reaches its body)."""
    source = call.tensor(0)
    return same_values(source, source.shape, dtype)


for _name in ("float", "half", "double", "bfloat16"):
    OPS[_name] = partial(_cast, dtype="float")


for _name in ("long", "int", "short", "byte"):
    OPS[_name] = partial(_cast, dtype="int")


OPS["bool"] = partial(_cast, dtype="bool")


# ------------------------------------------------------------------------------------ broadcasts and repeats


def _expand(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    sizes = size_args(call, 1)
    if sizes is None:
        sizes = _sizes_some_unseen(call)
    if sizes is None:
        return same_values(source, None)
    shape = source.shape
    dims = []
    offset = len(sizes) - shape.rank if shape is not None and shape.rank is not None else None
    for index, size in enumerate(sizes):
        if size.is_const and size.value == -1:
            # -1 keeps the size of the aligned (from the right) existing axis.
            if shape is None:
                # Of a tensor of unknown shape (a table an unseen helper resampled): the rank is
                # the sizes', the kept sizes unknown (``expand(b, -1, -1)`` is a batch of them).
                dims.append(fresh_anonymous())
                continue
            if shape.variadic or offset is None or index < offset:
                return same_values(source, None)
            dims.append(shape.dims[index - offset])
        else:
            dims.append(size)
    return same_values(source, Shape(tuple(dims)))


def _sizes_some_unseen(call: Call) -> list[Dim] | None:
    """``expand(x.shape[0], -1, -1)`` with ``x`` unseen: one size per argument, an unknown one
    anonymous (a batch expanded to is not a size the code named, nor 1). A lone argument may be a
    whole shape, so it stays unknown."""
    values = call.args[1:]
    if len(values) < 2 or call.kwargs or any(isinstance(value, (TupleValue, ShapeValue, TensorValue)) for value in values):
        return None
    return [dim if dim is not None else fresh_anonymous() for dim in (dim_of(value) for value in values)]


def _as_other(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return same_values(call.tensor(0), call.tensor(1).shape)


def _repeat(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    sizes = size_args(call, 1, "repeats")
    shape = source.shape
    if sizes is None or shape is None or shape.variadic or len(sizes) < shape.rank:
        return same_values(source, None)
    padded = (Dim.const(1),) * (len(sizes) - shape.rank) + shape.dims
    return same_values(source, Shape(tuple(a * b for a, b in zip(padded, sizes))))


def _repeat_interleave(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    repeats = dim_of(call.arg(1, "repeats"))
    axis = int_of(call.arg(2, "dim"))
    shape = source.shape
    if repeats is None or axis is None or shape is None:
        return same_values(source, None)
    a = norm_axis(axis, shape.rank)
    if shape.variadic:
        if axis >= 0:
            return same_values(source, None)
        index = len(shape.dims) + axis
        if index < 0:
            return same_values(source, None)
        return same_values(source, shape.with_dim(index, shape.dims[index] * repeats))
    if a is None:
        return same_values(source, None)
    return same_values(source, shape.with_dim(a, shape.dims[a] * repeats))


def _pad(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``F.pad(x, (left, right, top, bottom, ...))``: the last axes grown by the amounts given for
    them, last axis first; the other axes, the dtype and where the values came from kept (a padded
    id tensor is still ids, a padded token stream still tokens). Where the tokens sit along a padded
    axis may have moved, so their window is forgotten."""
    source = call.tensor(0)
    amounts = call.arg(1, "pad")
    shape = source.shape
    items = amounts.items if isinstance(amounts, TupleValue) else None
    pads = None
    if items is not None and len(items) % 2 == 0:
        rank = shape.rank if shape is not None and not shape.variadic else None
        pads = [
            (rank - 1 - i if rank is not None else -1 - i, dim_of(items[2 * i]), dim_of(items[2 * i + 1]))
            for i in range(len(items) // 2)
        ]
    result = TensorValue(None, source.dtype, _padded_tags(source, pads), call.node)
    if shape is None or shape.variadic:
        return result
    if items is None or len(items) % 2 or len(items) // 2 > shape.rank:
        # amounts not known (or more axes padded than there are, where torch raises): the rank stays
        return replace(result, shape=Shape(tuple(Dim.sym(interp.fresh_name("n", use_target=False)) for _ in shape.dims)))
    padded = len(items) // 2
    dims = list(shape.dims)
    for i in range(padded):
        before, after = dim_of(items[2 * i]), dim_of(items[2 * i + 1])
        axis = shape.rank - 1 - i
        if before is None or after is None:
            dims[axis] = Dim.sym(interp.fresh_name("n", use_target=False))
        else:
            dims[axis] = dims[axis] + before + after
    return replace(result, shape=Shape(tuple(dims)))


def _padded_tags(source: TensorValue, pads: list | None) -> tuple[object, ...]:
    """What a padded tensor carries: the source's values and positions, its window moved only where
    tokens were padded before (``windows.padded``)."""
    tags = windows.padded(source, lineage(source), pads)
    return tuple(tag if type(tag) is not PositionTag else source.tag(PositionTag) for tag in tags)


def _pad_at_dim(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``pad_at_dim(t, (before, after), dim=-1, value=0.)`` of torch-einops-utils (and its
    ``pad_left_at_dim(t, n, dim=...)`` / ``pad_right_at_dim(t, n, dim=...)``, given here as
    ``(n, 0)`` / ``(0, n)``): ``F.pad`` of the one axis ``dim`` (checked against the source of
    torch-einops-utils 0.2.0: ``F.pad(t, (*zeros, *pad), value=value)`` with a pair of zeros per axis
    after ``dim``). The axis grows by both amounts; the other axes, the dtype and the values are kept."""
    source = call.tensor(0)
    amounts = call.arg(1, "pad")
    axis = int_of(call.arg(2, "dim")) if call.has(2, "dim") else -1
    items = amounts.items if isinstance(amounts, TupleValue) else None
    shape = source.shape
    rank = shape.rank if shape is not None and not shape.variadic else None
    if axis is None or items is None or len(items) != 2:
        return TensorValue(
            Shape(tuple(Dim.sym(interp.fresh_name("n", use_target=False)) for _ in shape.dims)) if rank is not None else None,  # type: ignore[union-attr]
            source.dtype, _padded_tags(source, None), call.node,
        )
    before, after = dim_of(items[0]), dim_of(items[1])
    a = norm_axis(axis, rank)
    result = TensorValue(None, source.dtype, _padded_tags(source, [(a, before, after)]), call.node)
    if rank is None or a is None:
        return result
    dims = list(shape.dims)  # type: ignore[union-attr]
    try:
        dims[a] = dims[a] + before + after if before is not None and after is not None else Dim.sym(interp.fresh_name("n", use_target=False))
    except ArithmeticError:
        dims[a] = Dim.sym(interp.fresh_name("n", use_target=False))
    return replace(result, shape=Shape(tuple(dims)))


def _unfold(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``t.unfold(dimension, size, step)``: the windows of ``size`` positions every ``step`` along
    ``dimension``; that axis becomes the count of windows, ``(L - size) // step + 1``, and a new last
    axis of ``size`` holds each window's positions (torch 2: ``(b, L, d).unfold(1, s, 1)`` is
    ``(b, L - s + 1, d, s)``). A window of a token sequence keeps the offset of its first window
    (``windows.unfolded``)."""
    source = call.tensor(0)
    axis = int_of(call.arg(1, "dimension"))
    size = dim_of(call.arg(2, "size"))
    step = dim_of(call.arg(3, "step"))
    shape = source.shape
    rank = shape.rank if shape is not None and not shape.variadic else None
    a = norm_axis(axis, rank) if axis is not None else None
    result = TensorValue(None, source.dtype, windows.unfolded(source, lineage(source), a if a is not None else axis, size), call.node)
    if rank is None or a is None or size is None or step is None:
        return result
    dims = list(shape.dims)  # type: ignore[union-attr]
    try:
        dims[a] = (dims[a] - size) // step + 1
    except ArithmeticError:
        dims[a] = Dim.sym(interp.fresh_name("n", use_target=False))
    return replace(result, shape=Shape((*dims, size)))


# ------------------------------------------------------------------------------------ size queries


def _size(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    if not call.has(1, "dim"):
        receiver = call.arg_nodes[0] if call.arg_nodes else None
        return ShapeValue(source.shape, receiver, source)
    axis = int_of(call.arg(1, "dim"))
    dim = source.shape.dim(axis) if axis is not None and source.shape is not None else None
    if dim is not None:
        return IntValue(dim)
    receiver = call.arg_nodes[0] if call.arg_nodes else None
    return IntValue(read_trailing_size(interp, ShapeValue(source.shape, receiver, source), axis, frame))


def _rank(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    rank = call.tensor(0).rank
    return IntValue(Dim.const(rank)) if rank is not None else UNKNOWN


def _numel(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    shape = call.tensor(0).shape
    total = shape_ops.numel(shape) if shape is not None else None
    return IntValue(total) if total is not None else UNKNOWN


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_view, "view", "reshape")
register(_resize, "resize")
register(_flatten, "flatten")
register(_unflatten, "unflatten")
register(_squeeze, "squeeze")
register(_unsqueeze, "unsqueeze")
register(_transpose, "transpose")
register(_dot_t, "T")
register(_dot_mt, "mT")
register(_dot_t_method, "t")
register(_permute, "permute")
register(_same_tensor, "detach", "requires_grad_")
register(_identity, "clone", "cuda", "cpu", "pin_memory", "dropout", "alpha_dropout", "type_as_same")
register(
    _scatter,
    "scatter", "scatter_", "scatter_add", "scatter_add_", "index_fill", "index_fill_", "masked_scatter",
)
register(_fill, "fill_", "fill")
register(_contiguous, "contiguous")
register(_to, "to", "type")
register(_type_as, "type_as")
register(_expand, "expand")
register(_as_other, "expand_as", "view_as", "reshape_as")
register(_repeat, "repeat")
register(_repeat_interleave, "repeat_interleave")
register(_pad, "pad")
register(_pad_at_dim, "torch_einops_utils.pad_at_dim")
register(_unfold, "windows_unfold")
register(_size, "size")
register(_rank, "dim", "ndimension")
register(_numel, "numel")
