"""Shape transfer rules: one small function per op, found through tables.

``call_qualified`` / ``call_method`` map a callee (``torch.nn.functional.softmax``, ``Tensor.view``)
to a canonical op name, and ``apply`` runs the op's rule and records an ``OpEvent``. Functional and
method forms share one rule: the receiver of a method becomes argument 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine import frequencies
from shapecheck.engine import shapes as shape_ops
from shapecheck.engine.dims import Dim, Truth, equal, product
from shapecheck.engine.facts import OpEvent, ShapeConflict
from shapecheck.engine.shapes import Shape
from shapecheck.engine.values import (
    UNKNOWN,
    UNKNOWN_TENSOR,
    BoundMethod,
    ClassValue,
    ConstValue,
    FloatValue,
    FunctionValue,
    IntValue,
    MaskedTag,
    with_mask,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
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
    as_tensor,
    dim_of,
    int_of,
    is_scalar,
    scale_of,
)

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter import Frame, Interpreter


@dataclass(eq=False)
class Call:
    """Evaluated arguments of one call, with the nodes they came from."""

    node: cst.CSTNode
    args: tuple[Value, ...]
    kwargs: dict[str, Value]
    arg_nodes: tuple[cst.CSTNode | None, ...] = ()
    kwarg_nodes: dict[str, cst.CSTNode] = field(default_factory=dict)

    def arg(self, index: int, name: str | None = None) -> Value:
        if name is not None and name in self.kwargs:
            return self.kwargs[name]
        if 0 <= index < len(self.args):
            return self.args[index]
        return UNKNOWN

    def has(self, index: int, name: str | None = None) -> bool:
        return (name is not None and name in self.kwargs) or 0 <= index < len(self.args)

    def with_receiver(self, receiver: Value, receiver_node: cst.CSTNode | None) -> "Call":
        return Call(self.node, (receiver,) + self.args, self.kwargs, (receiver_node,) + self.arg_nodes, self.kwarg_nodes)

    def tensor(self, index: int, name: str | None = None) -> TensorValue:
        return as_tensor(self.arg(index, name))


@dataclass(frozen=True, slots=True)
class Repeated(Value):
    """A list built by a comprehension: every item is like ``element``."""

    element: Value


@dataclass(frozen=True, slots=True)
class DtypeValue(Value):
    """``torch.float32``, ``torch.bool`` ...: the dtype class it stands for."""

    dtype: str | None


@dataclass(frozen=True, slots=True)
class FinfoValue(Value):
    """``torch.finfo(dtype)``: its ``.min`` is a large negative number."""


OpRule = Callable[["Interpreter", Call, "Frame"], Value]
OPS: dict[str, OpRule] = {}


def op(*names: str) -> Callable[[OpRule], OpRule]:
    def register(rule: OpRule) -> OpRule:
        for name in names:
            OPS[name] = rule
        return rule

    return register


def apply(interp: "Interpreter", name: str, call: Call, frame: "Frame") -> Value:
    """Run op ``name``'s shape rule and record the event."""
    rule = OPS.get(name)
    if rule is None:
        return UNKNOWN
    try:
        result = rule(interp, call, frame)
    except (ArithmeticError, ValueError, TypeError, IndexError, RecursionError):
        result = UNKNOWN
    interp.facts.events.append(
        OpEvent(name, call.node, call.args, call.kwargs, result, frame.run, call.arg_nodes, call.kwarg_nodes, frame.assumptions)
    )
    return result


def conflict(interp: "Interpreter", kind: str, node: cst.CSTNode, detail: str, frame: "Frame", op_name: str = "") -> None:
    interp.facts.conflicts.append(ShapeConflict(kind, node, detail, op_name, frame.run))


# ------------------------------------------------------------------------------------ dispatch

DTYPES = {
    "float": "float", "float16": "float", "float32": "float", "float64": "float", "half": "float",
    "double": "float", "bfloat16": "float", "bool": "bool", "long": "int", "int": "int",
    "int64": "int", "int32": "int", "int16": "int", "int8": "int", "uint8": "int", "short": "int",
}
TORCH_PREFIXES = ("torch.nn.functional.", "torch.Tensor.", "torch.special.", "torch.linalg.", "torch.")


def call_qualified(interp: "Interpreter", qualname: str, call: Call, frame: "Frame") -> Value:
    from shapecheck.engine import nn_modules

    if qualname.startswith("torch.nn.") and not qualname.startswith("torch.nn.functional."):
        return nn_modules.construct(interp, qualname[len("torch.nn.") :], call, frame)
    special = QUALIFIED.get(qualname)
    if special is not None:
        return apply(interp, special, call, frame)
    for prefix in TORCH_PREFIXES:
        if qualname.startswith(prefix):
            name = qualname[len(prefix) :]
            if name in OPS:
                return apply(interp, name, call, frame)
            return unknown_call(call)
    if qualname.startswith("einops."):
        return apply(interp, "einops." + qualname.rsplit(".", 1)[-1], call, frame)
    if qualname.startswith("jaxtyping."):
        return UNKNOWN
    return unknown_call(call)


QUALIFIED = {
    "math.sqrt": "math.sqrt",
    "numpy.sqrt": "math.sqrt",
    "math.log": "math.log",
    "builtins.int": "builtins.int",
    "builtins.float": "builtins.float",
    "builtins.len": "builtins.len",
    "builtins.range": "builtins.range",
    "builtins.min": "builtins.min",
    "builtins.max": "builtins.max",
    "builtins.abs": "builtins.abs",
    "builtins.round": "builtins.int",
    "builtins.enumerate": "builtins.enumerate",
    "builtins.zip": "builtins.zip",
    "builtins.super": "builtins.super",
    "torch.finfo": "torch.finfo",
    "torch.concat": "cat",
    "torch.concatenate": "cat",
    "torch.nn.functional.scaled_dot_product_attention": "scaled_dot_product_attention",
    "torch.sqrt": "sqrt",
    "torch.rsqrt": "rsqrt",
    "torch.tensor": "tensor",
    "torch.as_tensor": "tensor",
}


def call_method(interp: "Interpreter", receiver: Value, name: str, call: Call, frame: "Frame") -> Value:
    from shapecheck.engine import nn_modules

    if isinstance(receiver, ObjectValue):
        if name == "register_buffer" or name == "register_parameter":
            return nn_modules.register(interp, receiver, call, frame)
        method = receiver.cls.methods.get(name)
        if method is not None:
            return interp.inline(method, f"{receiver.cls.qualname}.{name}", receiver.cls, call, frame, receiver)
        return unknown_call(call)
    if isinstance(receiver, ModuleValue):
        return nn_modules.call_module_method(interp, receiver, name, call, frame)
    if isinstance(receiver, (TupleValue, Repeated)) or isinstance(receiver, ConstValue):
        return UNKNOWN
    if isinstance(receiver, (IntValue, FloatValue)):
        return UNKNOWN
    if isinstance(receiver, FinfoValue):
        return UNKNOWN
    if name in METHOD_ALIASES:
        name = METHOD_ALIASES[name]
    if name in OPS:
        receiver_node = None
        if isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute):
            receiver_node = call.node.func.value
        return apply(interp, name, call.with_receiver(as_tensor(receiver), receiver_node), frame)
    return unknown_call(call.with_receiver(receiver, None))


METHOD_ALIASES = {"swapaxes": "transpose", "swapdims": "transpose", "concat": "cat", "masked_fill_": "masked_fill",
                  "add": "add_fn", "mul": "mul_fn", "div": "div_fn", "sub": "sub_fn", "tril_": "tril", "triu_": "triu",
                  "logical_not": "logical_not", "__matmul__": "matmul"}


def call_module(interp: "Interpreter", module: ModuleValue, call: Call, frame: "Frame") -> Value:
    from shapecheck.engine import nn_modules

    return nn_modules.forward(interp, module, call, frame)


def label_module(value: Value, label: str) -> None:
    if isinstance(value, ModuleValue) and value.ident.label.endswith("(...)"):
        value.ident.label = label
    elif isinstance(value, ModuleValue) and not value.ident.label.startswith("self."):
        value.ident.label = label
    elif isinstance(value, ObjectValue):
        value.ident.label = label
    elif isinstance(value, TensorValue):
        for tag in (value.tag(ProjectionTag), value.tag(ParameterTag)):
            ident = getattr(tag, "ident", None)
            if isinstance(ident, ModuleIdent) and not ident.label.startswith("self."):
                ident.label = label


def unknown_call(call: Call) -> Value:
    """A callee the engine cannot see (an imported helper, a layer it does not know) applied to
    tensors: the result may be a tensor that was scaled, normalised or given positions there, so it
    carries "maybe" tags that keep rules from concluding what the callee may have done."""
    tensors = [value for value in list(call.args) + list(call.kwargs.values()) if isinstance(value, TensorValue)]
    if not tensors:
        return UNKNOWN
    tags = lineage(*tensors)
    tags = tuple(tag for tag in tags if type(tag) is not PositionTag) + (
        PositionTag(call.node, "unknown"),
        ScaleTag(None, call.node),
    )
    return TensorValue(None, None, tags, call.node)


# ------------------------------------------------------------------------------------ attributes


def attribute(interp: "Interpreter", base: Value, attr: str, node: cst.CSTNode, frame: "Frame") -> Value:
    if isinstance(base, QualifiedValue):
        qualified = base.qualname + "." + attr
        if qualified.startswith("torch.") and attr in DTYPES and qualified.count(".") == 1:
            return DtypeValue(DTYPES[attr])
        return QualifiedValue(qualified)
    if isinstance(base, TensorValue):
        return tensor_attribute(interp, base, attr, node, frame)
    if isinstance(base, ObjectValue):
        if attr in base.attrs:
            return base.attrs[attr]
        method = base.cls.methods.get(attr)
        if method is not None:
            return FunctionValue(method, f"{base.cls.qualname}.{attr}", base)
        if attr in ("register_buffer", "register_parameter"):
            return BoundMethod(base, attr)
        if base.cls.is_dataclass and attr in base.cls.fields:
            return UNKNOWN
        return UNKNOWN
    if isinstance(base, ModuleValue):
        from shapecheck.engine import nn_modules

        return nn_modules.module_attribute(interp, base, attr, node, frame)
    if isinstance(base, Opaque):
        if attr in ("shape", "T", "mT", "ndim"):
            return tensor_attribute(interp, UNKNOWN_TENSOR, attr, node, frame)
        if attr in OPS or attr in METHOD_ALIASES:
            return BoundMethod(base, attr)  # a tensor method, or (config.dim) read as a named value
        return base.attribute(attr)
    if isinstance(base, FinfoValue) and attr == "min":
        return FloatValue(Scale(-3.4028234663852886e38))
    if isinstance(base, ClassValue):
        return UNKNOWN
    return BoundMethod(base, attr)


TENSOR_ATTRIBUTES = {"shape", "T", "mT", "ndim", "dtype", "size", "view", "reshape", "transpose", "permute",
                     "contiguous", "masked_fill", "softmax", "unsqueeze", "squeeze", "flatten", "expand", "float", "bool"}


def tensor_attribute(interp: "Interpreter", base: TensorValue, attr: str, node: cst.CSTNode, frame: "Frame") -> Value:
    if attr == "shape":
        receiver = node.value if isinstance(node, cst.Attribute) else None
        return ShapeValue(base.shape, receiver, base)
    if attr in ("T", "mT"):
        call = Call(node, (base,), {}, (node.value if isinstance(node, cst.Attribute) else None,))
        return apply(interp, "T" if attr == "T" else "mT", call, frame)
    if attr == "ndim":
        return IntValue(Dim.const(base.rank)) if base.rank is not None else UNKNOWN
    if attr == "dtype":
        return DtypeValue(base.dtype)
    if attr in ("device", "requires_grad", "is_cuda", "data_ptr"):
        return UNKNOWN
    if attr in ("data",):
        return base
    return BoundMethod(base, attr)


# ------------------------------------------------------------------------------------ helpers


def tensor_shape(value: Value) -> Shape | None:
    if isinstance(value, TensorValue):
        return value.shape
    return None


def dtype_class(value: Value | None) -> str | None:
    """``torch.bool`` / ``torch.float16`` / the builtin ``bool``, ``int``, ``float`` as a dtype class."""
    if isinstance(value, DtypeValue):
        return value.dtype
    if isinstance(value, QualifiedValue) and value.qualname in ("builtins.bool", "builtins.int", "builtins.float"):
        return value.qualname.split(".")[1]
    return None


def keep_scale(*tensors: TensorValue) -> tuple[object, ...]:
    """A ScaleTag for a value-linear combination (cat, sum, +) of tensors one of which was scaled:
    the factor when they all agree, else unknown. Precision first: "maybe scaled" silences SC101."""
    tags = [t.tag(ScaleTag) for t in tensors]
    present = [t for t in tags if t is not None]
    if not present:
        return ()
    factors = {t.factor for t in present}
    factor = present[0].factor if len(factors) == 1 and len(present) == len(tags) else None
    return (ScaleTag(factor, present[0].node),)


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


def norm_axis(axis: int, rank: int | None) -> int | None:
    if rank is None:
        return axis if axis < 0 else None
    if -rank <= axis < rank:
        return axis % rank
    return None


def lineage(*values: Value) -> tuple[object, ...]:
    """Tags that follow information through any computation: position and token provenance."""
    tags: list[object] = []
    kinds: set[type] = set()
    for value in values:
        if isinstance(value, TensorValue):
            for tag in value.tags:
                if type(tag) in (PositionTag, TokenEmbeddingTag) and type(tag) not in kinds:
                    kinds.add(type(tag))
                    tags.append(tag if type(tag) is not PositionTag else replace(tag, kind="added") if tag.kind == "index" else tag)
    return tuple(tags)


def same_values(value: TensorValue, shape: Shape | None = None, dtype: str | None | object = ...) -> TensorValue:
    """A shape-only op: same tags (provenance survives view / transpose / dropout)."""
    return replace(value, shape=shape, dtype=value.dtype if dtype is ... else dtype)  # type: ignore[arg-type]


def _dim_sum(dims: list[Dim | None]) -> Dim | None:
    total = Dim.const(0)
    for dim in dims:
        if dim is None:
            return None
        total = total + dim
    return total


def contradiction(actual: Shape, declared: Shape, assumptions: object) -> str | None:
    """Why ``actual`` cannot be ``declared`` (provably), or None when it may be."""
    if not actual.variadic and not declared.variadic and actual.rank != declared.rank:
        return f"rank {actual.rank} vs {declared.rank}"
    if not declared.variadic and actual.variadic and len(actual.dims) > len(declared.dims):
        return f"at least rank {len(actual.dims)} vs rank {declared.rank}"
    for offset in range(1, min(len(actual.dims), len(declared.dims)) + 1):
        a, d = actual.dims[-offset], declared.dims[-offset]
        if equal(a, d, assumptions) is Truth.FALSE:  # type: ignore[arg-type]
            axis = (actual.rank - offset) if actual.rank is not None else -offset
            return f"axis {axis} is {a}, expected {d}"
    return None


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


# ------------------------------------------------------------------------------------ reshapes


@op("view", "reshape")
def _view(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    if len(call.args) == 2 and isinstance(call.args[1], DtypeValue):
        return same_values(source, None, call.args[1].dtype)
    derived = _derived_view(interp, source, call, frame)
    if derived is not None:
        return derived
    sizes = size_args(call, 1, "shape")
    if sizes is None:
        return same_values(source, None)
    result = shape_ops.reshape(source.shape, sizes, frame.assumptions)
    if result.conflict is None and getattr(result, "mismatch", None) is not None and source.shape is not None:
        result = replace(result, conflict=result.mismatch)  # wrong unless a head count is 1
    if result.conflict is not None and source.shape is not None:
        heads = _uneven_head_split(source.shape, sizes)
        if heads is not None:
            width, count = heads
            conflict(
                interp,
                "heads",
                call.node,
                f"splitting the last dim {width} into {count} heads of {width} // {count} = {width // count} "
                f"loses {width % count} features: {width} is not divisible by {count}",
                frame,
                "view",
            )
            return same_values(source, None)
        conflict(
            interp,
            "reshape",
            call.node,
            f"cannot view a tensor of shape {source.shape} (numel {shape_ops.numel(source.shape)}) as "
            f"({', '.join(str(s) for s in sizes)}) (numel {shape_ops.numel(Shape(tuple(sizes)))})",
            frame,
            "view",
        )
    if result.conflict is None and source.shape is not None and not source.shape.variadic and result.shape is not None:
        _unify_numel(frame, source.shape.dims, result.shape.dims)
    return same_values(source, result.shape)


def _derived_view(interp: "Interpreter", source: TensorValue, call: Call, frame: "Frame") -> Value | None:
    """``x.view(x.size()[:-1] + (h, d))``: keep x's leading dims, check the split trailing ones."""
    target = call.arg(1, "shape") if len(call.args) == 2 or "shape" in call.kwargs else None
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
    if equal(old, new, frame.assumptions) is Truth.FALSE or equal(old, new, frame.assumptions, min_symbol=2) is Truth.FALSE:
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
    return same_values(source, Shape(kept + extra, source.shape.variadic))


def _uneven_head_split(source: Shape, sizes: list[Dim]) -> tuple[int, int] | None:
    """(width, heads) when a view splits a last dim D into (h, D // h) with D % h != 0."""
    last = source.dim(-1)
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


@op("flatten")
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


@op("unflatten")
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


@op("squeeze")
def _squeeze(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    shape = source.shape
    if shape is None or shape.variadic:
        return same_values(source, None)
    if not call.has(1, "dim"):
        if all(d.is_const for d in shape.dims):
            return same_values(source, Shape(tuple(d for d in shape.dims if d.value != 1)))
        return same_values(source, None)
    axis = int_of(call.arg(1, "dim"))
    a = norm_axis(axis, shape.rank) if axis is not None else None
    if a is None:
        return same_values(source, None)
    if shape.dims[a].is_const and shape.dims[a].value == 1:
        return same_values(source, Shape(shape.dims[:a] + shape.dims[a + 1 :]))
    if shape.dims[a].is_const:
        return source
    return same_values(source, None)


@op("unsqueeze")
def _unsqueeze(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    axis = int_of(call.arg(1, "dim"))
    shape = source.shape
    if shape is None or axis is None:
        return same_values(source, None)
    if shape.variadic:
        if axis < 0:
            position = len(shape.dims) + axis + 1
            if position < 0:
                return same_values(source, None)
            dims = shape.dims[:position] + (Dim.const(1),) + shape.dims[position:]
            return same_values(source, Shape(dims, variadic=True))
        return same_values(source, None)
    rank = len(shape.dims) + 1
    a = norm_axis(axis, rank)
    if a is None:
        return same_values(source, None)
    return same_values(source, Shape(shape.dims[:a] + (Dim.const(1),) + shape.dims[a:]))


@op("transpose")
def _transpose(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    i, j = int_of(call.arg(1, "dim0")), int_of(call.arg(2, "dim1"))
    if i is None or j is None:
        return same_values(source, None).without(KeyTransposed)
    rank = source.rank
    a, b = norm_axis(i, rank), norm_axis(j, rank)
    last_two = {a, b} == {rank - 2, rank - 1} if rank is not None and a is not None and b is not None else {i, j} == {-2, -1}
    shape = None
    if source.shape is not None:
        shape = shape_ops.transpose(source.shape, i, j)
    result = same_values(source, shape)
    return _mark_transposed(result, source, last_two)


@op("T")
def _dot_t(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    shape = source.shape
    if shape is None or shape.variadic:
        return same_values(source, None).without(KeyTransposed)
    result = same_values(source, Shape(tuple(reversed(shape.dims))))
    return _mark_transposed(result, source, shape.rank == 2)


@op("mT")
def _dot_mt(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    shape = shape_ops.transpose(source.shape, -2, -1) if source.shape is not None else None
    return _mark_transposed(same_values(source, shape), source, True)


@op("t")
def _dot_t_method(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return _dot_t(interp, call, frame)


@op("permute")
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
    shape = _with_rank(interp, shape, rank)
    new_shape = None
    if shape is not None and not shape.variadic and shape.rank == rank:
        new_shape = Shape(tuple(shape.dims[a] for a in normalized))  # type: ignore[index]
    result = same_values(source, new_shape)
    return _mark_transposed(result, source, swaps_last_two)


@dataclass(frozen=True, slots=True)
class KeyTransposed:
    """This tensor is ``source`` with its last two axes swapped (``k.transpose(-2, -1)``)."""

    source: TensorValue


def _mark_transposed(result: TensorValue, source: TensorValue, last_two: bool) -> TensorValue:
    previous = source.tag(KeyTransposed)
    result = result.without(KeyTransposed)
    scores = result.tag(ScoresTag)
    if scores is not None and last_two and scores.key_axis is not None:
        result = result.with_tag(replace(scores, key_axis=-1 if scores.key_axis == -2 else -2))
    if last_two:
        if previous is not None:
            return result  # transposed back
        return result.with_tag(KeyTransposed(source))
    return result


@op("contiguous", "clone", "detach", "cuda", "cpu", "requires_grad_", "pin_memory", "dropout", "alpha_dropout", "type_as_same")
def _identity(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return call.tensor(0)


@op("to", "type")
def _to(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    for value in list(call.args[1:]) + [call.kwargs.get("dtype", UNKNOWN)]:
        if isinstance(value, DtypeValue):
            return same_values(source, source.shape, value.dtype)
        if isinstance(value, TensorValue):
            return same_values(source, source.shape, value.dtype)
    return source


@op("type_as")
def _type_as(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return same_values(call.tensor(0), call.tensor(0).shape, call.tensor(1).dtype)


def _cast(dtype: str) -> OpRule:
    def rule(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
        source = call.tensor(0)
        return same_values(source, source.shape, dtype)

    return rule


for _name in ("float", "half", "double", "bfloat16"):
    OPS[_name] = _cast("float")
for _name in ("long", "int", "short", "byte"):
    OPS[_name] = _cast("int")
OPS["bool"] = _cast("bool")


@op("expand")
def _expand(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    sizes = size_args(call, 1)
    if sizes is None:
        return same_values(source, None)
    shape = source.shape
    dims = []
    offset = len(sizes) - shape.rank if shape is not None and shape.rank is not None else None
    for index, size in enumerate(sizes):
        if size.is_const and size.value == -1:
            # -1 keeps the size of the aligned (from the right) existing axis.
            if shape is None or shape.variadic or offset is None or index < offset:
                return same_values(source, None)
            dims.append(shape.dims[index - offset])
        else:
            dims.append(size)
    return same_values(source, Shape(tuple(dims)))


@op("expand_as", "view_as", "reshape_as")
def _as_other(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return same_values(call.tensor(0), call.tensor(1).shape)


@op("repeat")
def _repeat(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    sizes = size_args(call, 1, "repeats")
    shape = source.shape
    if sizes is None or shape is None or shape.variadic or len(sizes) < shape.rank:
        return same_values(source, None)
    padded = (Dim.const(1),) * (len(sizes) - shape.rank) + shape.dims
    return same_values(source, Shape(tuple(a * b for a, b in zip(padded, sizes))))


@op("repeat_interleave")
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


# ------------------------------------------------------------------------------------ size queries


@op("size")
def _size(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    if not call.has(1, "dim"):
        receiver = call.arg_nodes[0] if call.arg_nodes else None
        return ShapeValue(source.shape, receiver, source)
    axis = int_of(call.arg(1, "dim"))
    if axis is None or source.shape is None:
        return IntValue(fresh(interp, "size"))
    dim = source.shape.dim(axis)
    return IntValue(dim) if dim is not None else IntValue(fresh(interp, "size"))


@op("dim", "ndimension")
def _rank(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    rank = call.tensor(0).rank
    return IntValue(Dim.const(rank)) if rank is not None else UNKNOWN


@op("numel")
def _numel(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    shape = call.tensor(0).shape
    total = shape_ops.numel(shape) if shape is not None else None
    return IntValue(total) if total is not None else UNKNOWN


# ------------------------------------------------------------------------------------ elementwise


@op("relu", "gelu", "silu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "sin", "cos",
    "elu", "leaky_relu", "softplus", "mish", "erf", "square", "reciprocal", "sign", "clamp", "clip",
    "relu_", "gelu_", "nan_to_num", "log1p", "expm1", "hardtanh", "relu6", "selu", "celu", "glu_same",
    "sigmoid_", "tanh_", "pow_scalar", "round", "floor", "ceil", "cumsum", "cumprod", "roll", "flip",
    "layer_norm", "rms_norm", "normalize", "group_norm_same")
def _elementwise(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    result = TensorValue(source.shape, source.dtype, lineage(source), call.node)
    layer = source.tag(LayerOutputTag)
    if layer is not None:
        result = result.with_tag(layer)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if name == "exp":
        tag = frequencies.exp(source, call.node)
        return result.with_tag(tag) if tag is not None else result
    if name == "reciprocal":
        tag = frequencies.reciprocal(source)
        return result.with_tag(tag) if tag is not None else result
    if name in ("sin", "cos"):
        return result.with_tag(frequencies.Trig(name, source.tag(frequencies.Phase)))
    if name in ("normalize", "layer_norm", "rms_norm"):
        return result.with_tag(ScaleTag(None, call.node))  # cosine / QK-norm attention: own scale
    return result


@op("pow")
def _pow(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    from shapecheck.engine.tensor_arith import tensor_binary

    base, exponent = call.arg(0, "input"), call.arg(1, "exponent")
    result = tensor_binary(interp, "pow", base, exponent, call.node, frame)
    frequency = frequencies.combine("pow", base, exponent, call.node)
    if isinstance(result, TensorValue) and frequency is not None:
        result = result.without(*frequencies.FREQUENCY_TAGS).with_tag(frequency)
    return result


@op("logical_not", "bitwise_not")
def _logical_not(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return _negate(call.tensor(0), call.node)


def _negate(source: TensorValue, node: cst.CSTNode) -> TensorValue:
    triangle = source.tag(TriangleTag)
    result = TensorValue(source.shape, "bool" if source.dtype in ("bool", None) else source.dtype, lineage(source), node)
    if triangle is not None:
        result = result.with_tag(replace(triangle, negated=not triangle.negated))
    return result


@op("softmax", "log_softmax")
def _softmax(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    result = TensorValue(source.shape, "float", lineage(source), call.node)
    if source.has(ScoresTag):
        log = isinstance(call.node, cst.Call) and _callee_name(call.node) == "log_softmax"
        result = result.with_tag(ProbsTag(call.node, source, log))
    return result


@op("masked_fill")
def _masked_fill(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    mask = call.arg(1, "mask")
    fill = scale_of(call.arg(2, "value"))
    mask_tensor = as_tensor(mask)
    shape = source.shape
    if shape is not None and mask_tensor.shape is not None:
        result = shape_ops.broadcast(shape, mask_tensor.shape, frame.assumptions)
        if result.conflict is not None:
            _, a, b = result.conflict
            conflict(interp, "mask-broadcast", call.node,
                     f"mask of shape {mask_tensor.shape} cannot broadcast against {shape} ({b} vs {a})", frame, "masked_fill")
    triangle = mask_tensor.tag(TriangleTag)
    result_tensor = TensorValue(shape, source.dtype, source.tags + lineage(mask_tensor), call.node)
    if source.has(ScoresTag) or source.has(ProbsTag):
        result_tensor = with_mask(result_tensor, MaskedTag(call.node, mask_tensor, fill, True, triangle is not None and triangle.true_is_future is not None)
        )
    return result_tensor


@op("where")
def _where(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    condition, a, b = call.tensor(0), call.arg(1, "input"), call.arg(2, "other")
    if not call.has(1, "input"):
        return UNKNOWN
    ta, tb = as_tensor(a), as_tensor(b)
    base = ta if isinstance(a, TensorValue) else tb
    shape = base.shape
    for other in (condition, ta if base is tb else tb):
        if shape is not None and other.shape is not None:
            shape = shape_ops.broadcast(shape, other.shape, frame.assumptions).shape
        elif isinstance(other, TensorValue) and other is not UNKNOWN_TENSOR and other.shape is None:
            shape = None
    result = TensorValue(shape, base.dtype, base.tags + lineage(condition), call.node)
    scores = base if base.has(ScoresTag) else None
    if scores is not None:
        other = b if base is ta else a
        triangle = condition.tag(TriangleTag)
        result = with_mask(result, MaskedTag(call.node, condition, filled_value(other), base is tb, triangle is not None and triangle.true_is_future is not None)
        )
    return result


@op("tril", "triu")
def _triangle(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    name = "tril" if isinstance(call.node, cst.Call) and _callee_name(call.node).endswith("tril") else "triu"
    diagonal = int_of(call.arg(1, "diagonal")) if call.has(1, "diagonal") else 0
    full = None
    if source.shape is not None and source.shape.rank is not None and source.shape.rank >= 2:
        full = source.shape.dims[-1]
    node = call.node
    method = isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and bool(call.arg_nodes) and call.arg_nodes[0] is node.func.value
    filled = source.tag(FilledTag)
    additive = filled is not None and filled.value.is_large_negative
    tag = TriangleTag(lower=name == "tril", diagonal=diagonal, node=call.node, full_size=full, method_form=method, additive=additive)
    return TensorValue(source.shape, source.dtype, lineage(source), call.node).with_tag(tag)


def _callee_name(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


# ------------------------------------------------------------------------------------ factories


@dataclass(frozen=True, slots=True)
class LayerOutputTag:
    """The output of a width-changing layer (Linear, Embedding), through width-preserving ones
    (activations, dropout, norms): what the next layer's in_features must match."""

    label: str


@dataclass(frozen=True, slots=True)
class FilledTag:
    """Every element of this tensor is ``value`` (zeros, ones, full)."""

    value: Scale


def filled_value(value: Value) -> Scale | None:
    """A number, or the constant every element of a tensor holds."""
    if isinstance(value, TensorValue):
        tag = value.tag(FilledTag)
        return tag.value if tag is not None else None
    return scale_of(value)


@op("ones", "zeros", "empty", "rand", "randn", "full")
def _factory(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if name == "full":
        sizes = dims_from((call.arg(0, "size"),))
    else:
        sizes = size_args(call, 0)
    dtype_class = dtype_class_of_kwarg(call) or ("float" if name != "full" else None)
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


@op("ones_like", "zeros_like", "empty_like", "rand_like", "randn_like", "full_like")
def _factory_like(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    dtype = call.kwargs.get("dtype")
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    fill = {"ones_like": Scale(1.0), "zeros_like": Scale(0.0)}.get(name)
    if name == "full_like":
        fill = scale_of(call.arg(1, "fill_value"))
    tags = (FilledTag(fill),) if fill is not None else ()
    return TensorValue(source.shape, dtype.dtype if isinstance(dtype, DtypeValue) else source.dtype, tags, call.node)


@op("eye")
def _eye(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    n = dim_of(call.arg(0, "n"))
    m = dim_of(call.arg(1, "m")) if call.has(1, "m") else n
    dtype = dtype_class_of_kwarg(call) or "float"
    return TensorValue(Shape((n, m)) if n is not None and m is not None else None, dtype, (), call.node)


def dtype_class_of_kwarg(call: Call) -> str | None:
    return dtype_class(call.kwargs.get("dtype"))


@op("arange")
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
    start_value = call.kwargs.get("start", positional[0] if len(positional) >= 2 else None)
    index = frequencies.arange_index(start_value, step)
    if index is not None:
        tags += (index,)
    return TensorValue(shape, dtype_class, tags, call.node)


@op("tensor")
def _tensor(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    data = call.arg(0, "data")
    dtype = call.kwargs.get("dtype")
    if isinstance(data, (IntValue, FloatValue)):
        dtype_class = dtype.dtype if isinstance(dtype, DtypeValue) else ("float" if isinstance(data, FloatValue) else "int")
        return TensorValue(Shape(()), dtype_class, (), call.node)
    return TensorValue(None, dtype.dtype if isinstance(dtype, DtypeValue) else None, (), call.node)


@op("outer", "ger")
def _outer(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    a, b = call.tensor(0), call.tensor(1)
    shape = None
    if a.shape is not None and b.shape is not None and a.shape.rank == 1 and b.shape.rank == 1:
        shape = Shape((a.shape.dims[0], b.shape.dims[0]))
    return TensorValue(shape, a.dtype or b.dtype, lineage(a, b), call.node)


# ------------------------------------------------------------------------------------ join / split


@op("cat")
def _cat(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    items = _sequence_items(call.arg(0, "tensors"))
    axis = int_of(call.arg(1, "dim")) if call.has(1, "dim") else 0
    if items is None or axis is None:
        return _joined_unknown(call.arg(0, "tensors"), call.node)
    tensors = [as_tensor(item) for item in items]
    tags = lineage(*tensors) + keep_scale(*tensors)
    shapes = [t.shape for t in tensors]
    dtype = tensors[0].dtype if all(t.dtype == tensors[0].dtype for t in tensors) else None
    if any(s is None or s.variadic for s in shapes) or not shapes:
        result_shape = None
        if shapes and all(s is not None for s in shapes) and axis < 0:
            # With a variadic prefix the joined trailing axis is still known.
            try:
                total = _dim_sum([s.dim(axis) for s in shapes])  # type: ignore[union-attr]
                result_shape = shapes[0].with_dim(len(shapes[0].dims) + axis, total) if total is not None else None  # type: ignore[union-attr]
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
    return TensorValue(shapes[0].with_dim(a, total), dtype, tags, call.node)  # type: ignore[union-attr]


@op("stack")
def _stack(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    items = _sequence_items(call.arg(0, "tensors"))
    axis = int_of(call.arg(1, "dim")) if call.has(1, "dim") else 0
    if items is None or axis is None:
        return _joined_unknown(call.arg(0, "tensors"), call.node)
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


@dataclass(frozen=True, slots=True)
class SplitTuple(Value):
    """The pieces of ``split`` / ``chunk`` / ``unbind``: each piece knows its index."""

    pieces: tuple[Value, ...] | None  # None: the number of pieces is unknown
    template: TensorValue


def _piece(source: TensorValue, shape: Shape | None, index: int) -> TensorValue:
    piece = same_values(source, shape)
    projection = source.tag(ProjectionTag)
    if projection is not None:
        piece = piece.with_tag(ProjectionTag(projection.ident, projection.part + (index,), projection.source, projection.node))
    return piece


@op("split", "chunk", "tensor_split")
def _split(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
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
    if name == "chunk":
        count = int_of(size_value)
        if count is None:
            return SplitTuple(None, same_values(source, None))
        piece_dim = None
        if full is not None:
            try:
                piece_dim = frame.assumptions.simplify(full // count)
            except ArithmeticError:
                piece_dim = None
        pieces = tuple(_piece(source, shape.with_dim(_axis_index(shape, axis), piece_dim) if shape is not None and piece_dim is not None and _axis_index(shape, axis) is not None else None, i) for i in range(count))
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
    index = _axis_index(shape, axis) if shape is not None else None
    template_shape = shape.with_dim(index, size) if shape is not None and index is not None else None
    count = None
    if full is not None:
        try:
            quotient = frame.assumptions.simplify(full // size)
            count = quotient.value if quotient.is_const and equal(quotient * size, full, frame.assumptions) is Truth.TRUE else None
        except ArithmeticError:
            count = None
    if count is not None and 0 < count <= 64:
        return SplitTuple(tuple(_piece(source, template_shape, i) for i in range(count)), same_values(source, template_shape))
    return SplitTuple(None, same_values(source, template_shape))


def _axis_index(shape: Shape | None, axis: int) -> int | None:
    if shape is None:
        return None
    if shape.variadic:
        index = len(shape.dims) + axis if axis < 0 else None
        return index if index is not None and index >= 0 else None
    return norm_axis(axis, shape.rank)


@op("unbind")
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
    if count is not None and 0 < count <= 64:
        return SplitTuple(tuple(_piece(source, rest, i) for i in range(count)), same_values(source, rest))
    return SplitTuple(None, same_values(source, rest))


# ------------------------------------------------------------------------------------ reductions


@op("sum", "mean", "amax", "amin", "std", "var", "logsumexp", "prod", "norm", "all", "any", "argmax", "argmin", "max", "min", "count_nonzero")
def _reduce(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    dtype = "int" if name in ("argmax", "argmin", "count_nonzero") else ("bool" if name in ("all", "any") else source.dtype)
    if not call.has(1, "dim"):
        if name in ("max", "min") and call.has(1, "other"):
            return TensorValue(source.shape, source.dtype, lineage(source), call.node)
        return TensorValue(Shape(()), dtype, lineage(source), call.node)
    keepdim_value = call.arg(2, "keepdim")
    keepdim = isinstance(keepdim_value, ConstValue) and keepdim_value.value is True
    axes_value = call.arg(1, "dim")
    axes = [int_of(v) for v in axes_value.items] if isinstance(axes_value, TupleValue) else [int_of(axes_value)]
    shape = source.shape
    if shape is None or shape.variadic or None in axes:
        result: Value = TensorValue(None, dtype, lineage(source), call.node)
    else:
        normalized = {norm_axis(a, shape.rank) for a in axes}  # type: ignore[arg-type]
        if None in normalized:
            result = TensorValue(None, dtype, lineage(source), call.node)
        else:
            dims = tuple(
                (Dim.const(1) if keepdim else None) if i in normalized else d for i, d in enumerate(shape.dims)
            )
            result = TensorValue(Shape(tuple(d for d in dims if d is not None)), dtype, lineage(source), call.node)
    if name in ("sum", "mean") and isinstance(result, TensorValue):
        result = replace(result, tags=result.tags + keep_scale(source))
    if name in ("max", "min") and isinstance(result, TensorValue):
        return TupleValue((result, replace(result, dtype="int")))
    return result


# ------------------------------------------------------------------------------------ matmul


def _with_rank(interp: "Interpreter", shape: Shape | None, rank: int) -> Shape | None:
    """An op that only works at one rank (``permute`` with 4 axes, ``bmm``) fixes the rank of a
    shape known only by its trailing dims: the leading ones get fresh names."""
    if shape is None or not shape.variadic or len(shape.dims) > rank:
        return shape
    leading = tuple(Dim.sym(interp.fresh_name("n", use_target=False)) for _ in range(rank - len(shape.dims)))
    return Shape(leading + shape.dims)


@op("matmul", "bmm", "mm")
def _matmul(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    a, b = call.tensor(0), call.tensor(1)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if name in ("bmm", "mm"):
        rank = 3 if name == "bmm" else 2
        a = replace(a, shape=_with_rank(interp, a.shape, rank))
        b = replace(b, shape=_with_rank(interp, b.shape, rank))
    return matmul_values(interp, a, b, call.node, frame, "matmul")


def matmul_values(interp: "Interpreter", a: TensorValue, b: TensorValue, node: cst.CSTNode, frame: "Frame", name: str) -> TensorValue:
    shape = None
    if a.shape is not None and b.shape is not None:
        inner_a, inner_b = a.shape.dim(-1), b.shape.dim(-2) if (b.shape.rank or 2) >= 2 else b.shape.dim(-1)
        if inner_a is not None and inner_b is not None:
            unify(frame, inner_a, inner_b)
        result = shape_ops.matmul(a.shape, b.shape, frame.assumptions)
        shape = result.shape
        if result.conflict is not None:
            left, right = result.conflict
            conflict(
                interp,
                "matmul",
                node,
                f"matmul of {a.shape} and {b.shape}: inner dims {left} and {right} differ",
                frame,
                name,
            )
    tags: tuple[object, ...] = lineage(a, b)
    result_tensor = TensorValue(shape, a.dtype or b.dtype, tags, node)
    transposed = b.tag(KeyTransposed)
    if transposed is not None and not a.has(ProbsTag):
        head_dim = a.shape.dim(-1) if a.shape is not None else None
        result_tensor = result_tensor.with_tag(ScoresTag(node, a, transposed.source, head_dim))
        factor = _combined_scale(a, transposed.source, b)
        if factor is not None:
            result_tensor = result_tensor.with_tag(factor)
    elif a.has(ProbsTag):
        result_tensor = result_tensor.with_tag(AttentionOutputTag(node, a.tag(ProbsTag).node, -1))
    weight = _weight_projection(a, b, node)
    if weight is not None:
        result_tensor = result_tensor.with_tag(weight)
    return result_tensor


@dataclass(frozen=True, slots=True)
class AttentionOutputTag:
    """probs @ v: the attention output. ``softmax`` is the node that made the probabilities and
    ``key_axis`` the axis of the probabilities contracted with the values: the real key axis."""

    node: cst.CSTNode
    softmax: cst.CSTNode | None = None
    key_axis: int | None = None


@dataclass(frozen=True, slots=True)
class ParameterTag:
    """This tensor is a parameter or buffer of a module (a weight matrix); ``shape`` as declared."""

    ident: object
    shape: Shape | None = None

    @property
    def per_position(self) -> bool:
        """Declared as a table with one row per position: (max_len, d) or (1, max_len, d)."""
        shape = self.shape
        if shape is None or shape.variadic or shape.rank is None or shape.rank < 2:
            return False
        rows = shape.dims[-2]
        return not (rows.is_const and rows.value == 1)


def _weight_projection(a: TensorValue, b: TensorValue, node: cst.CSTNode | None = None) -> ProjectionTag | None:
    """x @ W (or W^T, or an einsum with W): the result is a projection by the parameter W."""
    for weight, other in ((b, a), (a, b)):
        parameter = weight.tag(ParameterTag)
        if parameter is not None and not other.has(ParameterTag):
            return ProjectionTag(parameter.ident, (), other, node)  # type: ignore[arg-type]
        transposed = weight.tag(KeyTransposed)
        if transposed is not None and transposed.source.has(ParameterTag) and not other.has(ParameterTag):
            return ProjectionTag(transposed.source.tag(ParameterTag).ident, (), other, node)
    return None


def _combined_scale(*tensors: TensorValue) -> ScaleTag | None:
    factor: Scale | None = Scale()
    node = None
    for tensor in tensors:
        tag = tensor.tag(ScaleTag)
        if tag is None:
            continue
        node = tag.node
        if tag.factor is None or factor is None:
            factor = None
        else:
            factor = factor * tag.factor
    if node is None:
        return None
    return ScaleTag(factor, node)


@op("baddbmm")
def _baddbmm(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    result = matmul_values(interp, call.tensor(1, "batch1"), call.tensor(2, "batch2"), call.node, frame, "baddbmm")
    alpha = call.kwargs.get("alpha")
    if alpha is not None and result.has(ScoresTag):
        result = result.with_tag(ScaleTag(scale_of(alpha), call.node))
    return result


@op("linear")
def _linear(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    x, weight = call.tensor(0), call.tensor(1, "weight")
    from shapecheck.engine import nn_modules

    out_features = in_features = None
    if weight.shape is not None and weight.shape.rank == 2:
        out_features, in_features = weight.shape.dims
    result = nn_modules.linear_output(interp, x, in_features, out_features, call.node, frame, "F.linear")
    parameter = weight.tag(ParameterTag)
    if parameter is not None:
        result = result.with_tag(ProjectionTag(parameter.ident, (), x, call.node))  # type: ignore[arg-type]
    return result


@op("einsum")
def _einsum(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    from shapecheck.engine.patterns import einsum

    return einsum(interp, call, frame)


@op("einops.rearrange", "einops.repeat", "einops.reduce")
def _einops(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    from shapecheck.engine.patterns import einops_call

    return einops_call(interp, call, frame)


@op("scaled_dot_product_attention")
def _sdpa(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    q, k, v = call.tensor(0, "query"), call.tensor(1, "key"), call.tensor(2, "value")
    shape = None
    if q.shape is not None and v.shape is not None and not q.shape.variadic and not v.shape.variadic:
        shape = Shape(q.shape.dims[:-1] + v.shape.dims[-1:])
    return TensorValue(shape, q.dtype, lineage(q, k, v), call.node).with_tag(AttentionOutputTag(call.node))


@op("multinomial")
def _multinomial(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return TensorValue(None, "int", (), call.node)


@op("cross_entropy", "nll_loss")
def _cross_entropy(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return TensorValue(None, "float", (), call.node)


@op("embedding")
def _embedding_fn(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    ids, weight = call.tensor(0), call.tensor(1, "weight")
    shape = None
    if ids.shape is not None and weight.shape is not None and weight.shape.rank == 2:
        shape = Shape(ids.shape.dims + weight.shape.dims[1:], ids.shape.variadic)
    if ids.has(PositionTag):
        rows = weight.shape.dims[0] if weight.shape is not None and weight.shape.rank == 2 else None
        return TensorValue(shape, "float", (PositionTag(call.node, "embedding", rows, sliced=True),), call.node)
    return TensorValue(shape, "float", (TokenEmbeddingTag(call.node),), call.node)


# ------------------------------------------------------------------------------------ scalars


@op("math.sqrt")
def _math_sqrt(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    scale = scale_of(call.arg(0))
    if scale is None:
        return UNKNOWN
    root = scale.power(Fraction(1, 2))
    return FloatValue(root) if root is not None else UNKNOWN


@op("sqrt_scalar")
def _sqrt_scalar(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return _math_sqrt(interp, call, frame)


@op("math.log")
def _math_log(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = scale_of(call.arg(0))
    number = value.value if value is not None else None
    if number is not None and number > 0:
        return FloatValue(Scale(math.log(number)))
    return UNKNOWN


@op("builtins.int")
def _int(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    if isinstance(value, IntValue):
        return value
    if isinstance(value, FloatValue):
        return _float_to_int(value.scale, frame)
    return UNKNOWN


def _float_to_int(scale: Scale, frame: "Frame") -> Value:
    if not scale.factors:
        if math.isfinite(scale.coef):
            return IntValue(Dim.const(int(scale.coef)))
        return UNKNOWN
    if any(e.denominator != 1 for _, e in scale.factors) or not float(scale.coef).is_integer():
        return UNKNOWN
    numerator = Dim.const(int(scale.coef))
    denominator = Dim.const(1)
    for base, exponent in scale.factors:
        if exponent > 0:
            numerator = numerator * base ** int(exponent)
        else:
            denominator = denominator * base ** int(-exponent)
    return IntValue(frame.assumptions.simplify(numerator // denominator))


@op("builtins.float")
def _float(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    if isinstance(value, ConstValue) and isinstance(value.value, str):
        text = value.value.strip().lower()
        if text in ("-inf", "-infinity"):
            return FloatValue(Scale(-math.inf))
        if text in ("inf", "infinity", "+inf"):
            return FloatValue(Scale(math.inf))
        try:
            return FloatValue(Scale(float(text)))
        except ValueError:
            return UNKNOWN
    scale = scale_of(value)
    return FloatValue(scale) if scale is not None else UNKNOWN


@op("builtins.len")
def _len(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    if isinstance(value, TupleValue):
        return IntValue(Dim.const(len(value.items)))
    if isinstance(value, TensorValue) and value.shape is not None and value.shape.rank:
        return IntValue(value.shape.dims[0])
    return UNKNOWN


@op("builtins.range")
def _range(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return Repeated(IntValue(fresh(interp, "i")))


@op("builtins.enumerate")
def _enumerate(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return Repeated(TupleValue((IntValue(fresh(interp, "i")), iteration_element(call.arg(0)))))


@op("builtins.zip")
def _zip(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return Repeated(TupleValue(tuple(iteration_element(a) for a in call.args)))


@op("builtins.min", "builtins.max", "builtins.abs")
def _minmax(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    values = [int_of(v) for v in call.args]
    if values and None not in values:
        name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
        fn = {"min": min, "max": max, "abs": lambda x: abs(x)}.get(name)
        if fn is not None:
            return IntValue(Dim.const(fn(*values)))  # type: ignore[operator]
    return UNKNOWN


@op("builtins.super")
def _super(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return UNKNOWN


@op("torch.finfo")
def _finfo(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return FinfoValue()


# ------------------------------------------------------------------------------------ operators


def _refreshed(value: Value, node: cst.CSTNode | None, frame: "Frame") -> Value:
    """A parameter read before the other operand refined it (``x + self.mlp(self.ln(x))``)."""
    if isinstance(value, Opaque) and isinstance(node, cst.Name):
        current = frame.env.get(node.value)
        if isinstance(current, TensorValue):
            return current
    return value


def binary(interp: "Interpreter", operator: str, left: Value, right: Value, node: cst.CSTNode, frame: "Frame") -> Value:
    operands = _operand_nodes(node)
    if len(operands) == 2:
        left, right = _refreshed(left, operands[0], frame), _refreshed(right, operands[1], frame)
    if operator in ("mul", "truediv") and (
        (left is UNKNOWN and is_scalar(right)) or (right is UNKNOWN and is_scalar(left) and operator == "mul")
    ):
        # An unknown value scaled by a number: if it is a tensor (``q = norm(q) * self.scale``),
        # it is now scaled; if it is a number, nothing reads these tags.
        factor = scale_of(right if left is UNKNOWN else left)
        if factor is not None and operator == "truediv":
            factor = Scale() / factor
        return TensorValue(None, None, (ScaleTag(factor, node),), node)
    if isinstance(left, TensorValue) or isinstance(right, TensorValue):
        if operator == "matmul":
            call = Call(node, (as_tensor(left), as_tensor(right)), {}, _operand_nodes(node))
            return apply(interp, "matmul", call, frame)
        call = Call(node, (left, right), {"operator": ConstValue(operator)}, _operand_nodes(node))
        return apply(interp, "binary", call, frame)
    return scalar_binary(operator, left, right, frame)


def _operand_nodes(node: cst.CSTNode) -> tuple[cst.CSTNode | None, ...]:
    if isinstance(node, cst.BinaryOperation):
        return (node.left, node.right)
    if isinstance(node, cst.AugAssign):
        return (node.target, node.value)
    return ()


def _concat_sizes(left: Value, right: Value) -> Value | None:
    """``x.size()[:-1] + (h, d)``: a size with dims appended."""
    if not isinstance(left, ShapeValue) or not isinstance(right, TupleValue):
        return None
    extra = [dim_of(item) for item in right.items]
    if any(d is None for d in extra):
        return UNKNOWN
    shape = Shape(left.shape.dims + tuple(extra), left.shape.variadic) if left.shape is not None else None  # type: ignore[arg-type]
    return ShapeValue(shape, left.source, left.base, left.dropped, left.extra + tuple(extra))  # type: ignore[arg-type]


def scalar_binary(operator: str, left: Value, right: Value, frame: "Frame") -> Value:
    if operator == "add":
        joined = _concat_sizes(left, right)
        if joined is not None:
            return joined
    a, b = dim_of(left), dim_of(right)
    if isinstance(left, IntValue) or isinstance(right, IntValue) or (a is not None and b is not None and operator in ("floordiv", "mod")):
        if a is not None and b is not None:
            try:
                if operator == "add":
                    return IntValue(a + b)
                if operator == "sub":
                    return IntValue(a - b)
                if operator == "mul":
                    return IntValue(a * b)
                if operator == "floordiv":
                    return IntValue(frame.assumptions.simplify(a // b))
                if operator == "mod":
                    return IntValue(frame.assumptions.simplify(a % b))
                if operator == "pow" and b.is_const and b.value >= 0:
                    return IntValue(a ** b.value)
            except ArithmeticError:
                return UNKNOWN
    x, y = scale_of(left), scale_of(right)
    if x is None or y is None:
        return UNKNOWN
    try:
        if operator == "mul":
            return FloatValue(x * y)
        if operator == "truediv":
            return FloatValue(x / y)
        if operator == "pow":
            exponent = y.value
            if exponent is None:
                return UNKNOWN
            powered = x.power(Fraction(exponent).limit_denominator(64))
            return FloatValue(powered) if powered is not None else UNKNOWN
        if operator in ("add", "sub"):
            xv, yv = x.value, y.value
            if xv is not None and yv is not None:
                return FloatValue(Scale(xv + yv if operator == "add" else xv - yv))
    except (ArithmeticError, ValueError):
        return UNKNOWN
    return UNKNOWN


@op("binary")
def _binary_tensor(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    from shapecheck.engine.tensor_arith import tensor_binary

    operator = call.kwargs["operator"].value  # type: ignore[union-attr]
    result = tensor_binary(interp, operator, call.args[0], call.args[1], call.node, frame)
    if isinstance(result, TensorValue):
        frequency = frequencies.combine(operator, call.args[0], call.args[1], call.node)
        result = result.without(*frequencies.FREQUENCY_TAGS)
        if frequency is not None:
            result = result.with_tag(frequency)
    return result


@op("add_fn", "mul_fn", "div_fn", "sub_fn")
def _binary_method(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    from shapecheck.engine.tensor_arith import tensor_binary

    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else "add"
    operator = {"add": "add", "mul": "mul", "div": "truediv", "sub": "sub"}.get(name, "add")
    return tensor_binary(interp, operator, call.arg(0), call.arg(1, "other"), call.node, frame)


def unary(interp: "Interpreter", operator: str, value: Value, node: cst.CSTNode, frame: "Frame") -> Value:
    if isinstance(value, TensorValue):
        if operator in ("BitInvert", "Not"):
            return _negate(value, node)
        if operator == "Minus":
            return TensorValue(value.shape, value.dtype, lineage(value), node)
        return value
    if operator == "Minus":
        if isinstance(value, IntValue):
            return IntValue(-value.dim)
        if isinstance(value, FloatValue):
            return FloatValue(Scale(-value.scale.coef, value.scale.factors))
    if operator == "Not" and isinstance(value, ConstValue):
        return ConstValue(not value.value)
    return UNKNOWN if operator != "Plus" else value


_ELEMENTWISE_COMPARISONS = {"Equal", "NotEqual", "LessThan", "GreaterThan", "LessThanEqual", "GreaterThanEqual"}


def compare(interp: "Interpreter", operator: str, left: Value, right: Value, node: cst.CSTNode, frame: "Frame") -> Value:
    if operator in _ELEMENTWISE_COMPARISONS and (
        (isinstance(left, Opaque) and is_scalar(right)) or (isinstance(right, Opaque) and is_scalar(left))
    ):
        # ``ids == pad_id`` with ``ids`` a parameter: if it is a tensor, this is a bool mask.
        return TensorValue(None, "bool", (), node)
    if isinstance(left, TensorValue) or isinstance(right, TensorValue):
        from shapecheck.engine.tensor_arith import tensor_compare

        return tensor_compare(interp, operator, left, right, node, frame)
    return UNKNOWN


# ------------------------------------------------------------------------------------ subscripts


def subscript(interp: "Interpreter", base: Value, node: cst.Subscript, frame: "Frame") -> Value:
    from shapecheck.engine.indexing import index_value

    return index_value(interp, base, node, frame)


def subscript_assign(interp: "Interpreter", target: cst.Subscript, value: Value, frame: "Frame", statement: cst.CSTNode) -> None:
    """``pe[:, 0::2] = torch.sin(...)``: the written tensor gains the lineage of what is written."""
    base_node = target.value
    if not isinstance(base_node, cst.Name):
        interp.eval(base_node, frame)
        return
    current = interp.lookup(base_node.value, frame)
    key = _index_key(interp, target, frame)
    interp.facts.events.append(
        OpEvent("setitem", statement, (current, value), {"index": ConstValue(key), "name": ConstValue(base_node.value)},
                UNKNOWN, frame.run, (base_node, getattr(statement, "value", None)), {}, frame.assumptions)
    )
    if isinstance(current, TensorValue) and isinstance(value, TensorValue):
        extra = lineage(value)
        kept = tuple(t for t in current.tags if type(t) is not FilledTag)
        kinds = {type(t) for t in kept}
        frame.env[base_node.value] = replace(current, tags=kept + tuple(t for t in extra if type(t) not in kinds))


def _index_key(interp: "Interpreter", target: cst.Subscript, frame: "Frame") -> tuple | None:
    """The index of ``t[...] = v`` as a comparable tuple of ints / slices, None if not constant."""
    key: list[object] = []
    for element in target.slice:
        part = element.slice
        if isinstance(part, cst.Index):
            value = int_of(interp.eval(part.value, frame))
            if value is None:
                return None
            key.append(value)
        elif isinstance(part, cst.Slice):
            bounds = []
            for bound in (part.lower, part.upper, part.step):
                if bound is None:
                    bounds.append(None)
                    continue
                value = int_of(interp.eval(bound, frame))
                if value is None:
                    return None
                bounds.append(value)
            key.append(("slice", *bounds))
    return tuple(key)


# ------------------------------------------------------------------------------------ iteration


def iteration_element(value: Value) -> Value:
    if isinstance(value, Repeated):
        return value.element
    if isinstance(value, ModuleValue) and value.items:
        return value.items[0] if len(value.items) == 1 or all(i is value.items[0] for i in value.items) else UNKNOWN
    if isinstance(value, TupleValue) and value.items:
        first = value.items[0]
        return first if all(item is first for item in value.items) else UNKNOWN
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
            return [_piece(value.template, value.template.shape, i) for i in range(count)]
        return [UNKNOWN] * count
    if isinstance(value, ShapeValue):
        shape = value.shape
        if shape is not None and not shape.variadic and shape.rank == count:
            return [IntValue(d) for d in shape.dims]
        if shape is not None and shape.variadic and len(shape.dims) <= count:
            missing = count - len(shape.dims)
            return [UNKNOWN] * missing + [IntValue(d) for d in shape.dims]
        return [UNKNOWN] * count
    if isinstance(value, TensorValue) and value.shape is not None and not value.shape.variadic and value.shape.rank:
        leading = value.shape.dims[0]
        if leading.is_const and leading.value == count:
            rest = Shape(value.shape.dims[1:])
            return [_piece(value, rest, i) for i in range(count)]
        return [UNKNOWN] * count
    if isinstance(value, Repeated):
        return [value.element] * count
    return [UNKNOWN] * count


def check_annotation(interp: "Interpreter", value: TensorValue, declared: TensorValue, node: cst.CSTNode, frame: "Frame", what: str) -> None:
    """Record an ``annotation`` conflict when an inferred shape contradicts a jaxtyping annotation."""
    if value.shape is None or declared.shape is None:
        return
    detail = contradiction(value.shape, declared.shape, frame.assumptions)
    if detail is not None:
        conflict(interp, "annotation", node, f"{what} has inferred shape {value.shape} but is annotated {declared.shape}: {detail}", frame, "annotation")
