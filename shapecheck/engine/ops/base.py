"""What every op rule shares: the ``Call`` of evaluated arguments, the ``OPS`` registry and
``register``, ``apply`` (run a rule and record its ``OpEvent``), conflicts, and the small helpers
the rules use (axes, lineage of provenance tags, unification, pieces of split tensors).

This module sits below every op rule and below ``dispatch``: it imports none of them.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.arguments import Arguments
from shapecheck.engine.domain.layers import SHAPE_PRESERVING
from shapecheck.engine.domain.tags import (
    CauseTag,
    DtypeValue,
    KeyTransposed,
    LeadingOfUnknownRank,
    ModelOutputTag,
    NormalisedTag,
    PaddingTag,
    ParameterTag,
    Permuted,
    Reordered,
    Repeated,
    SequenceOriginTag,
    SplitTuple,
    StreamTag,
    joined_moves,
    moved_by,
)
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    IntValue,
    ModuleValue,
    Opaque,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    QualifiedValue,
    Scale,
    ScaleTag,
    ScoresTag,
    ShapeValue,
    TensorValue,
    TokenEmbeddingTag,
    TriangleTag,
    TupleValue,
    Value,
    dim_of,
    is_scalar,
    own_instance,
)
from shapecheck.engine.facts.records import InternalError, OpEvent, ShapeConflict
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.symbolic.dims import Dim, Truth, equal
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


@dataclass(eq=False)
class Call(Arguments):
    """Evaluated arguments of one call, with the nodes they came from."""

    node: cst.CSTNode
    args: tuple[Value, ...]
    kwargs: dict[str, Value]
    arg_nodes: tuple[cst.CSTNode | None, ...] = ()
    kwarg_nodes: dict[str, cst.CSTNode] = field(default_factory=dict)

    def with_receiver(self, receiver: Value, receiver_node: cst.CSTNode | None) -> "Call":
        return Call(self.node, (receiver,) + self.args, self.kwargs, (receiver_node,) + self.arg_nodes, self.kwarg_nodes)


OpRule = Callable[["Interpreter", Call, "Frame"], Value]


OPS: dict[str, OpRule] = {}


def register(rule: OpRule, *names: str) -> None:
    """Make ``rule`` the shape rule of each op in ``names``. Rule modules call it once per rule, after
    their definitions, rather than decorating the rules: mutmut does not mutate decorated functions,
    and the registry must hold the module-level function (mutmut's trampoline when it runs)."""
    for name in names:
        OPS[name] = rule


def apply(interp: "Interpreter", name: str, call: Call, frame: "Frame") -> Value:
    """Run op ``name``'s shape rule and record the event."""
    rule = OPS.get(name)
    if rule is None:
        return UNKNOWN
    conflicts_before = len(interp.facts.conflicts)
    try:
        result = rule(interp, call, frame)
    except RecursionError:
        result = UNKNOWN  # a depth limit, not a bug
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError) as error:
        record_internal_error(interp, name, call.node, error)
        result = UNKNOWN
    result = traced(interp, name, call, result, conflicts_before)
    carry_front_sizes(interp, name, call, result, frame)
    interp.facts.events.append(
        OpEvent(name, call.node, call.args, call.kwargs, result, frame.run, call.arg_nodes, call.kwarg_nodes, frame.assumptions)
    )
    return result


#: Ops whose result has the shape of the tensor they are given, whatever that shape is: casts and
#: moves, copies, dropout, activations, layer norms (over the trailing axis).
KEEPS_SHAPE = frozenset({
    "float", "half", "double", "bfloat16", "to", "type", "contiguous", "detach", "clone", "cuda", "cpu",
    "dropout", "alpha_dropout", "module.LayerNorm", "module.RMSNorm",
    *("module." + kind for kind in SHAPE_PRESERVING),
})


def carry_front_sizes(interp: "Interpreter", name: str, call: Call, result: Value, frame: "Frame") -> None:
    """A size read off an axis of a tensor of unknown shape (``T = x.shape[1]``, ``front_sizes``) is
    that axis's size in a result of the same shape (``h = self.ln(x)``, ``x.float()``), so that what
    the size says about the axis (a mask built from it) holds for the result too. The tensor is the
    value given, or the one its name is bound to (a parameter the engine cannot see, read as a
    tensor for a method call)."""
    if name not in KEEPS_SHAPE or not isinstance(result, TensorValue) or not (result.shape is None or result.shape.variadic):
        return
    position = 1 if name.startswith("module.") else 0
    if len(call.args) <= position:
        return
    sources = [call.args[position]]
    node = call.arg_nodes[position] if len(call.arg_nodes) > position else None
    if isinstance(node, cst.Name) and node.value in frame.env:
        sources.append(frame.env[node.value])
    for axis in range(4):
        for source in sources:
            entry = interp.front_sizes.get((id(source), axis))
            if entry is not None and entry[0] is source and (id(result), axis) not in interp.front_sizes:
                interp.front_sizes[(id(result), axis)] = (result, entry[1])


def record_internal_error(interp: "Interpreter", name: str, node: cst.CSTNode, error: Exception) -> None:
    """Count an exception an op rule raised (``SHAPECHECK_DEBUG=1`` raises it instead)."""
    if os.environ.get("SHAPECHECK_DEBUG"):
        raise error
    frames = traceback.extract_tb(error.__traceback__)
    where = f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "?"
    text = str(error).strip().splitlines()
    detail = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    interp.facts.internal_errors.append(InternalError(name, node, detail, where))


def conflict(interp: "Interpreter", kind: str, node: cst.CSTNode, detail: str, frame: "Frame", op_name: str = "") -> None:
    interp.facts.conflicts.append(ShapeConflict(kind, node, detail, op_name, frame.run))


# ------------------------------------------------------------------------------------ helpers


def dtype_class(value: Value | None) -> str | None:
    """``torch.bool`` / ``torch.float16`` / the builtin ``bool``, ``int``, ``float`` as a dtype class."""
    if isinstance(value, DtypeValue):
        return value.dtype
    if isinstance(value, QualifiedValue) and value.qualname in ("builtins.bool", "builtins.int", "builtins.float"):
        return value.qualname.split(".")[1]
    return None


#: torch's type promotion between the engine's dtype classes, widest first.
PROMOTION_ORDER = ("float", "int", "bool")


def promoted(kinds: "set[str | None] | frozenset[str | None]") -> str | None:
    """The dtype class torch promotes a mix of ``kinds`` to: float if any is a float, else int if
    any is an int, else bool (``ids * bool_mask`` is int64, ``torch.tensor([True, 1])`` too); None
    when no kind is known. Never depends on the order of a set."""
    return next((kind for kind in PROMOTION_ORDER if kind in kinds), None)


def keep_scale(*tensors: TensorValue) -> tuple[object, ...]:
    """A ScaleTag for a value-linear combination (cat, sum, +) of tensors one of which was scaled:
    the factor when they all agree, else unknown. Precision first: "maybe scaled" silences SC101."""
    tags = [t.tag(ScaleTag) for t in tensors]
    present = [t for t in tags if t is not None]
    if not present:
        return ()
    factors = {t.factor for t in present}
    agree = len(present) == len(tags)
    factor = present[0].factor if len(factors) == 1 and agree else None
    explicit = agree and all(t.explicit for t in present)
    return (ScaleTag(factor, present[0].node, present[0].origin if factor is not None else None, explicit=explicit),)


def dims_from(values: tuple[Value, ...]) -> list[Dim] | None:
    """Sizes given as ``view(b, t, h, d)`` or ``view((b, t, h, d))`` or ``view(x.shape)``."""
    if len(values) == 1 and isinstance(values[0], (TupleValue, ShapeValue)):
        inner = values[0]
        if isinstance(inner, ShapeValue):
            return list(inner.shape.dims) if inner.shape is not None and not inner.shape.variadic else None
        values = inner.items
    dims = []
    for value in values:
        if isinstance(value, TupleValue) or isinstance(value, ShapeValue):
            return None
        dim = dim_of(value)
        if dim is None:
            return None
        dims.append(dim)
    return dims


def size_args(call: Call, start: int, name: str = "size") -> list[Dim] | None:
    if name in call.kwargs:
        return dims_from((call.kwargs[name],))
    return dims_from(call.args[start:])


def size_args_inventing(interp: "Interpreter", call: Call, start: int) -> list[Dim] | None:
    """``size_args`` of a factory, where an unknown scalar among several sizes
    (``zeros(1, num_patches, d)`` with ``num_patches`` unseen) becomes a made-up size instead of
    erasing the shape: the rank and the other sizes are still known. A lone unknown argument may
    be a whole shape, and a starred one any number of sizes, so those stay unknown."""
    sizes = size_args(call, start)
    if sizes is not None or "size" in call.kwargs or "*" in call.kwargs:
        return sizes
    values = call.args[start:]
    if len(values) < 2 or any(isinstance(value, (TupleValue, ShapeValue, TensorValue)) for value in values):
        return None
    dims = []
    for value in values:
        dim = dim_of(value)
        if dim is None:  # torch takes a shape alone, so each of several arguments is one size
            dim = Dim.sym(interp.fresh_name("n", use_target=False))
        dims.append(dim)
    return dims


def norm_axis(axis: int, rank: int | None) -> int | None:
    if rank is None:
        return axis if axis < 0 else None
    if -rank <= axis < rank:
        return axis % rank
    return None


def _axis_index(shape: Shape | None, axis: int) -> int | None:
    if shape is None:
        return None
    if shape.variadic:
        index = len(shape.dims) + axis if axis < 0 else None
        return index if index is not None and index >= 0 else None
    return norm_axis(axis, shape.rank)


def _with_rank(interp: "Interpreter", shape: Shape | None, rank: int) -> Shape | None:
    """An op that only works at one rank (``permute`` with 4 axes, ``bmm``) fixes the rank of a
    shape known only by its trailing dims: the leading ones get fresh names."""
    if shape is None or not shape.variadic or len(shape.dims) > rank:
        return shape
    leading = tuple(Dim.sym(interp.fresh_name("n", use_target=False)) for _ in range(rank - len(shape.dims)))
    return Shape(leading + shape.dims)


def lineage(*values: Value) -> tuple[object, ...]:
    """Tags that follow information through any computation: position and token provenance, what
    was computed from a softmax (``NormalisedTag``), and
    the suspect ops a value was computed from (``CauseTag``, merged), and which tokens of which
    sequence a tensor was computed from (position by position)."""
    tags: list[object] = []
    kinds: set[type] = set()
    causes: frozenset = frozenset()
    sites: frozenset = frozenset()
    alone = _positions_alone(values)
    for value in values:
        if isinstance(value, TensorValue):
            for tag in value.tags:
                if type(tag) is SequenceOriginTag and type(tag) in kinds:
                    # Two windows of one sequence met (``cat((latent[:, :-1], next_tokens[:, 1:]))``):
                    # computed from both, the result is at neither's offset.
                    index = next(i for i, kept in enumerate(tags) if type(kept) is SequenceOriginTag)
                    tags[index] = mixed_windows(tags[index], tag)  # type: ignore[arg-type]
                elif type(tag) in (PositionTag, TokenEmbeddingTag, SequenceOriginTag, ModelOutputTag, NormalisedTag) and type(tag) not in kinds:
                    kinds.add(type(tag))
                    if type(tag) is SequenceOriginTag and tag.axis is not None:
                        tag = replace(tag, axis=None)  # the layout may change: find the axis by its size
                    moved = type(tag) is PositionTag and tag.kind == "index" and not alone
                    tags.append(replace(tag, kind="added") if moved else tag)
                elif type(tag) is CauseTag:
                    causes |= tag.nodes
                elif type(tag) is StreamTag:
                    sites |= tag.sites
    if causes:
        tags.append(CauseTag(causes))
    if sites:
        tags.append(StreamTag(sites))
    return tuple(tags)


def mixed_windows(kept: SequenceOriginTag, other: SequenceOriginTag) -> SequenceOriginTag:
    """The window of a value computed from two windows: ``kept`` (the first operand's), unless
    ``other`` is another window of the same sequence (another offset, or offsets not known to be
    equal), where the result holds no one offset (None). Windows of different sequences keep the
    first operand's, as before."""
    if kept.source is not other.source:
        return kept
    moved = joined_moves(kept, other)
    if moved is not kept:
        return replace(moved, offset=None, paths=())
    if kept.paths == other.paths and kept.offset is not None and other.offset is not None and equal(kept.offset, other.offset) is Truth.TRUE:
        return kept
    return replace(kept, offset=None, paths=())


def _positions_alone(values: tuple[Value, ...]) -> bool:
    """Computed from positions and nothing else: position ids, or what was computed from them and
    other positions alone (``arange(t) + offset``, ``einsum('i,j->ij', pos, inv_freq)`` with
    frequencies from ``arange`` too, their ``sin``/``cos``), scaled by a gain of one element
    (``emb * self.scale``, a ``(1,)`` parameter) or by numbers. Such a result is still positions
    (kind "index": a float one is a positional encoding, as sinusoids are), not a stream positions
    were added to. A float tensor without provenance may be a stream (``torch.randn(2, 3) +
    torch.arange(3)``); an integer one or a value the engine cannot see may be one beside float
    positions, not beside integer position ids (ids are shifted: ``arange(t) + offset``,
    ``positions + offsets.view(-1, 1, 1)``)."""
    index, ids, others = False, True, False
    for value in values:
        if isinstance(value, TensorValue):
            position = value.tag(PositionTag)
            if value.has(TokenEmbeddingTag) or value.has(SequenceOriginTag):
                return False
            if position is not None and position.kind in ("index", "table", "embedding", "learned"):
                index = index or position.kind == "index"
                ids = ids and value.dtype != "float"
            elif position is not None:
                return False
            elif value.dtype != "int" and not _one_element(value):
                return False  # a float (or unknown) tensor of no provenance may be a stream
            elif not _one_element(value):
                others = True
        elif unseen(value):
            others = True
    return index and (ids or not others)


def _one_element(tensor: TensorValue) -> bool:
    """A tensor of one element (``(1,)``, ``(1, 1)``, a 0-d scalar), as computed or as the parameter
    it is was declared: broadcast, it holds no sequence."""
    parameter = tensor.tag(ParameterTag)
    shapes = (tensor.shape, parameter.shape if parameter is not None else None)
    return any(
        shape is not None and not shape.variadic and all(dim.is_const and dim.value == 1 for dim in shape.dims)
        for shape in shapes
    )


def attended(output: TensorValue, query: TensorValue, site: cst.CSTNode) -> TensorValue:
    """An attention output: it continues the query's stream, through this site (see StreamTag)."""
    before = query.tag(StreamTag)
    sites = (before.sites if before is not None else frozenset()) | {site}
    kept = tuple(tag for tag in output.tags if type(tag) is not StreamTag)
    return replace(output, tags=kept + (StreamTag(sites),))


def attention_query(probs: TensorValue) -> TensorValue:
    """The query side of attention probabilities (their scores' query), else the probabilities."""
    tag = probs.tag(ProbsTag)
    scores = tag.scores.tag(ScoresTag) if tag is not None and isinstance(tag.scores, TensorValue) else None
    return scores.query if scores is not None and isinstance(scores.query, TensorValue) else probs


def causes_of(*values: Value) -> frozenset:
    """The suspect ops these values were computed from."""
    nodes: frozenset = frozenset()
    for value in values:
        if isinstance(value, TensorValue):
            tag = value.tag(CauseTag)
            if tag is not None:
                nodes |= tag.nodes
    return nodes


#: Ops whose result is a suspect in itself: a concatenation changes a width on purpose or by mistake
#: (a positional encoding concatenated instead of added); what is computed from it inherits that.
SUSPECT_OPS = frozenset({"cat", "stack", "hstack", "vstack", "column_stack"})


def traced(interp: "Interpreter", name: str, call: Call, result: Value, conflicts_before: int) -> Value:
    """Give the conflicts this op recorded the causes found in its inputs, and mark its result as
    computed from a suspect when it conflicted or is a concatenation."""
    new = interp.facts.conflicts[conflicts_before:]
    if not new and name not in SUSPECT_OPS:
        return result
    inputs = causes_of(*call.args, *call.kwargs.values())
    for index, recorded in enumerate(new, start=conflicts_before):
        if not recorded.causes:
            interp.facts.conflicts[index] = replace(recorded, causes=inputs)
    if isinstance(result, TensorValue):
        merged = causes_of(result) | inputs | {call.node}
        result = result.with_tag(CauseTag(frozenset(merged)))
    return result


def same_values(value: TensorValue, shape: Shape | None = None, dtype: str | None | object = ...) -> TensorValue:
    """A shape-only op: same provenance tags (they survive view / transpose / dropout); the memory
    layout (``Permuted``, ``Reordered``) is the op's own business, so it is dropped here, and so is
    where the leading dims came from (``LeadingOfUnknownRank``) unless the shape stays the same."""
    tags = value.tags
    dropped = (Permuted, Reordered) if shape == value.shape else (Permuted, Reordered, LeadingOfUnknownRank)
    if any(type(t) in dropped for t in tags):
        tags = tuple(t for t in tags if type(t) not in dropped)
    return replace(value, shape=shape, dtype=value.dtype if dtype is ... else dtype, tags=tags)  # type: ignore[arg-type]


def _piece(source: TensorValue, shape: Shape | None, index: int) -> TensorValue:
    piece = same_values(source, shape)
    projection = source.tag(ProjectionTag)
    if projection is not None:
        piece = piece.with_tag(ProjectionTag(projection.ident, projection.part + (index,), projection.source, projection.node))
    return piece


def _negate(source: TensorValue, node: cst.CSTNode) -> TensorValue:
    triangle = source.tag(TriangleTag)
    result = TensorValue(source.shape, "bool" if source.dtype in ("bool", None) else source.dtype, lineage(source), node)
    if triangle is not None:
        result = result.with_tag(replace(triangle, negated=not triangle.negated))
    padding = source.tag(PaddingTag)
    if padding is not None:
        result = result.with_tag(padding)  # ~(ids == pad) still only hides padding
    return result


def _callee_name(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""




def unify(frame: "Frame", a: Dim, b: Dim) -> None:
    """An op that only runs when two dims are equal (a Linear's input, a matmul's inner dims): when
    their equality is unknown and one is a plain symbol, assume it on this path. Code after the op
    only runs if it held."""
    if equal(a, b, frame.assumptions) is not Truth.UNKNOWN:
        return
    if a.name is not None or b.name is not None:
        frame.assumptions.add_equal(a, b)


def fresh(interp: "Interpreter", hint: str) -> Dim:
    return Dim.sym(interp.fresh_name(hint))


def loop_index(interp: "Interpreter") -> Dim:
    """The index of a loop over ``range(n)`` or ``enumerate(xs)``: ``i - 1`` of a new positive
    symbol (sizes are at least 1; an index may be 0), so ``i == 0`` stays undecided in a body the
    engine runs once for every iteration."""
    return fresh(interp, "i") - 1


def read_size(interp: "Interpreter") -> Dim:
    """A size read at run time from a tensor whose shape is not known there (``x.shape[1]``,
    ``x.size(1)``): a fresh symbol, recorded as such, because it is the input's own size and so
    says nothing about a mismatch with the input (a mask built at this size fits by construction)."""
    dim = fresh(interp, "size")
    interp.facts.read_sizes.add(dim)
    return dim


def read_trailing_size(interp: "Interpreter", sizes: ShapeValue, position: int | None, frame: "Frame") -> Dim:
    """``x.shape[-k]`` / ``x.size(-k)`` of a local tensor known only by fewer than ``k`` trailing
    sizes (or not at all): a size read at run time (:func:`read_size`), and ``x`` is refined to
    ``(*, size, ...)``, so that later views of ``x`` know its width (``inner_dim = key.shape[-1]``
    then ``key.view(b, -1, heads, inner_dim // heads)``). Sizes counted from the front say nothing
    about the rank, so they refine nothing; but one tensor's size at one position is one size, the
    same each time it is read (``reshape(B, x.shape[1], h, d)`` then ``reshape(B, x.shape[1], e)``)."""
    source, base = sizes.source, sizes.base
    front = position is not None and position >= 0 and not sizes.dropped and not sizes.extra
    bound = frame.env.get(source.value) if isinstance(source, cst.Name) else None
    # The tensor read: the value the name is bound to (a parameter the engine cannot see is an
    # ``Opaque``, the same object however often it is read, until the name is bound again).
    owner = bound if bound is not None and (bound is base or isinstance(bound, Opaque)) else None
    if front and isinstance(base, TensorValue) and owner is not None:
        known = interp.front_sizes.get((id(owner), position))
        if known is not None and known[0] is owner:
            return known[1]
        dim = read_size(interp)
        interp.front_sizes[(id(owner), position)] = (owner, dim)
        return dim
    dim = read_size(interp)
    if position is None or position >= 0 or sizes.dropped or sizes.extra or not isinstance(source, cst.Name):
        return dim
    current = frame.env.get(source.value)
    if sizes.shape is not None and not sizes.shape.variadic:
        return dim
    if current is not base and not (isinstance(base, TensorValue) and base.shape is None and (current is UNKNOWN or isinstance(current, Opaque))):
        return dim  # a global, or rebound since
    known = sizes.shape.dims if sizes.shape is not None else ()
    missing = -position - len(known)
    if missing < 1:
        return dim
    trailing = (dim,) + tuple(fresh_anonymous() for _ in range(missing - 1)) + tuple(known)
    shape = Shape(trailing, variadic=True)
    if isinstance(current, TensorValue):
        frame.env[source.value] = current.with_shape(shape)
    else:
        frame.env[source.value] = TensorValue(shape, None, (), source)
    return dim


# ------------------------------------------------------------------------------------ iteration


def known_items(value: Value) -> tuple[Value, ...] | None:
    """The items of a tuple, a split or a container module whose length is known and small."""
    items = None
    if isinstance(value, TupleValue):
        items = value.items
    elif isinstance(value, SplitTuple) and value.pieces is not None:
        items = value.pieces
    elif isinstance(value, ModuleValue) and value.items and not value.repeated and not value.named:
        items = value.items
    return items if items is not None and 0 < len(items) <= 16 else None


def iteration_element(value: Value, interp: "Interpreter | None" = None) -> Value:
    if isinstance(value, TensorValue) and interp is not None and value.dtype == "int" and value.rank == 1:
        return IntValue(element_symbol(interp, value))  # ``for i in ix``: one start index
    if isinstance(value, Repeated):
        return value.element
    if isinstance(value, ModuleValue) and value.named:
        return UNKNOWN  # iterating a ModuleDict gives its keys
    if isinstance(value, ModuleValue) and value.items:
        if value.repeated:
            return value.items[0]
        return value.items[0] if len(value.items) == 1 or all(i is value.items[0] for i in value.items) else UNKNOWN
    if isinstance(value, TupleValue) and value.items:
        first = value.items[0]
        if all(item is first for item in value.items):
            return first
        if isinstance(first, TupleValue) and all(
            isinstance(item, TupleValue) and len(item.items) == len(first.items) for item in value.items
        ):
            # ``zip`` / ``enumerate`` of known items: what every row agrees on, column by column.
            columns = zip(*(item.items for item in value.items))  # type: ignore[union-attr]
            return TupleValue(tuple(iteration_element(TupleValue(column)) for column in columns))
        return UNKNOWN
    if isinstance(value, SplitTuple):
        return value.template
    return UNKNOWN


def unpack(value: Value, count: int) -> list[Value]:
    if isinstance(value, TupleValue) and len(value.items) == count:
        return list(value.items)
    if isinstance(value, SplitTuple):
        if value.pieces is not None and len(value.pieces) == count:
            return list(value.pieces)
        if value.pieces is None:
            # Unknown count: the last piece is shorter unless the split is known to be even.
            last = value.template.shape if value.exact else None
            return [_piece(value.template, value.template.shape if i < count - 1 else last, i) for i in range(count)]
        return [UNKNOWN] * count
    if isinstance(value, ShapeValue):
        shape = value.shape
        if shape is not None and not shape.variadic and shape.rank == count:
            return [IntValue(d) for d in shape.dims]
        if shape is not None and shape.variadic and len(shape.dims) <= count:
            missing = count - len(shape.dims)
            return [UNKNOWN] * missing + [IntValue(d) for d in shape.dims]
        return [UNKNOWN] * count
    if isinstance(value, TensorValue) and value.shape is None:
        # ``x, cache = layer(x)`` with ``layer`` a callee the engine cannot see: a tuple or a tensor
        # split along its first axis, either way each item is computed from what went in.
        return [TensorValue(None, None, value.tags, value.node) for _ in range(count)]
    if isinstance(value, TensorValue) and value.shape is not None and not value.shape.variadic and value.shape.rank:
        leading = value.shape.dims[0]
        if leading.is_const and leading.value == count:
            rest = Shape(value.shape.dims[1:])
            return [_piece(value, rest, i) for i in range(count)]
        return [UNKNOWN] * count
    if isinstance(value, Repeated):
        # Items of a comprehension are alike; modules among them are distinct instances.
        return [own_instance(value.element, i) for i in range(count)]
    if isinstance(value, ModuleValue) and value.items and not value.named:
        # ``for attn, ff in self.layers``: each layer is a ModuleList of its parts.
        if value.repeated:
            return [value.item(i) for i in range(count)]
        return list(value.items) if len(value.items) == count else [UNKNOWN] * count
    return [UNKNOWN] * count


def check_annotation(interp: "Interpreter", value: TensorValue, declared: TensorValue, node: cst.CSTNode, frame: "Frame", what: str) -> TensorValue:
    """Record an ``annotation`` conflict when an inferred shape contradicts a jaxtyping annotation.

    Returns the value analysis goes on with: after a violation, the annotated shape (what the code
    after it was written for), marked as following from this node so that what breaks downstream
    is not reported again."""
    if value.shape is None or declared.shape is None:
        return value
    detail = shape_ops.contradiction(value.shape, declared.shape, frame.assumptions)
    if detail is None:
        return value
    before = len(interp.facts.conflicts)
    conflict(interp, "annotation", node, f"{what} has inferred shape {value.shape} but is annotated {declared.shape}: {detail}", frame, "annotation")
    interp.facts.conflicts[before] = replace(interp.facts.conflicts[before], causes=causes_of(value))
    return replace(value, shape=declared.shape).with_tag(CauseTag(causes_of(value) | {node}))


#: The rank from which a tensor combined with one of unknown shape keeps its rank (see below).
FULL_RANK = 4


def broadcast_with_unknown(known: Shape | None, onto_scores: bool = False, gain: bool = False) -> Shape | None:
    """``known`` broadcast with a tensor of unknown shape: at least as many dims, after an unknown
    prefix. A size other than 1 stays: the other side is presumed to fit it, as a reader of
    ``scores + mask`` presumes (a constant > 1 is certain); a 1 becomes a fresh size. The other side
    is presumed to fit into it, so it keeps its rank, when it is attention scores (a mask or a bias,
    ``onto_scores``) or multiplies (``gain``) a tensor of ``FULL_RANK`` dims or more: the
    ``(b, h, t, d)`` heads are a model's largest tensors, and the tables multiplied into them
    (rotary ``q * cos``, gains) broadcast into them."""
    if known is None:
        return None
    dims = tuple(fresh_anonymous() if d.is_const and d.value == 1 else d for d in known.dims)
    keeps_rank = not known.variadic and (onto_scores or (gain and len(dims) >= FULL_RANK))
    return Shape(dims, variadic=not keeps_rank)


def unseen(value: Value) -> bool:
    """A value the engine cannot see into, used where a tensor goes: a parameter or an unknown
    result (not a number, not a known tensor)."""
    if isinstance(value, TensorValue) or is_scalar(value):
        return False
    return not (isinstance(value, ConstValue) and isinstance(value.value, (int, float, bool, str)))


def maybe_positional(result: Value, operands: "tuple[Value, ...] | list[Value]", node: cst.CSTNode) -> Value:
    """``result`` computed with an operand the engine cannot see, which may carry positions (a
    positional table or a relative bias passed in, rotary tables): mark it "maybe positional"."""
    if isinstance(result, TensorValue) and not result.has(PositionTag) and any(unseen(v) for v in operands):
        return result.with_tag(PositionTag(node, "unknown"))
    return result


def unknown_call(call: Call) -> Value:
    """A callee the engine cannot see (an imported helper, a layer it does not know) applied to
    tensors: the result may be a tensor that was scaled, normalised or given positions there, so it
    carries "maybe" tags that keep rules from concluding what the callee may have done."""
    tensors = [value for value in list(call.args) + list(call.kwargs.values()) if isinstance(value, TensorValue)]
    if not tensors:
        return UNKNOWN
    tags = lineage(*tensors)
    tags = tuple(
        moved_by(tag, call.node) if type(tag) is SequenceOriginTag else tag
        for tag in tags
        if type(tag) is not PositionTag
    )
    if all(positions_only(tensor) for tensor in tensors):
        # Computed from positions alone (``create_sin_embedding(positions, dim)``,
        # ``resample_abs_pos_embed(self.pos_embed, new_size)``): a positional table. A table
        # declared ``(1, N, d)`` stays that parameter, resampled (its shape here is unknown).
        tables = [tensor.tag(ParameterTag) for tensor in tensors if tensor.has(ParameterTag)]
        kept = (tables[0],) if len(tables) == 1 else ()
        return TensorValue(None, None, tags + kept + (PositionTag(call.node, "table"), ScaleTag(None, call.node)), call.node)
    return TensorValue(None, None, tags + (PositionTag(call.node, "unknown"), ScaleTag(None, call.node)), call.node)


def positions_only(tensor: TensorValue) -> bool:
    """A tensor of positions and nothing else: integer position ids (``arange``-derived), a
    positional table or embedding, or a parameter declared as a per-token table made to be
    broadcast over a batch, ``(1, N, d)`` with ``N`` not 1. Not a stream positions were added to
    (nor anything that came out of a callee the engine cannot see)."""
    if tensor.has(TokenEmbeddingTag):
        return False
    position = tensor.tag(PositionTag)
    if position is not None:
        if position.kind in ("table", "embedding", "learned", "index"):
            return True
        return position.kind == "added" and tensor.dtype == "int"  # ids moved: ``arange(t) + offset``
    parameter = tensor.tag(ParameterTag)
    declared = parameter.shape if parameter is not None and parameter.rows is None else None
    if declared is None or declared.variadic or declared.rank is None or declared.rank < 3:
        return False
    first, rows = declared.dims[0], declared.dims[-2]
    return first.is_const and first.value == 1 and not (rows.is_const and rows.value == 1)


def weight_projection(a: TensorValue, b: TensorValue, node: cst.CSTNode | None = None) -> ProjectionTag | None:
    """x @ W (or W^T, or an einsum with W): the result is a projection by the parameter W."""
    for weight, other in ((b, a), (a, b)):
        parameter = weight.tag(ParameterTag)
        if parameter is not None and not other.has(ParameterTag):
            rows = (parameter.rows,) if parameter.rows is not None else ()
            return ProjectionTag(parameter.ident, rows, other, node)  # type: ignore[arg-type]
        transposed = weight.tag(KeyTransposed)
        if transposed is not None and transposed.source.has(ParameterTag) and not other.has(ParameterTag):
            return ProjectionTag(transposed.source.tag(ParameterTag).ident, (), other, node)
    return None


def combined_scale(*tensors: TensorValue) -> ScaleTag | None:
    factor: Scale | None = Scale()
    written: Scale | None = None
    node = None
    origins = []
    for tensor in tensors:
        tag = tensor.tag(ScaleTag)
        if tag is None:
            continue
        node = tag.node
        readable = tag.readable
        if readable is not None:
            origins.append(tag.origin)  # a norm's own gain is nowhere a user edits the scale
        if readable is not None:
            written = readable if written is None else written * readable
        if tag.factor is None or factor is None:
            factor = None
        else:
            factor = factor * tag.factor
    if node is None:
        return None
    return ScaleTag(factor, node, origins[0] if len(origins) == 1 else None, written if factor is None else None)


def element_symbol(interp: "Interpreter", tensor: TensorValue) -> Dim:
    """The symbol for "an element of this 1-D int tensor": the same for every loop or comprehension
    over the same tensor, so that ``data[i:i+T]`` and ``data[i+1:i+T+1]`` share their ``i``."""
    table = interp.__dict__.setdefault("_element_symbols", {})
    entry = table.get(id(tensor))
    if entry is None or entry[0] is not tensor:
        entry = (tensor, Dim.sym(interp.fresh_name("item", use_target=False)))
        table[id(tensor)] = entry
    return entry[1]


def loss_lineage(logits: TensorValue) -> tuple[object, ...]:
    """What a loss keeps of its logits: which forward call of a script's model they came from."""
    return tuple(tag for tag in logits.tags if type(tag) is ModelOutputTag)
