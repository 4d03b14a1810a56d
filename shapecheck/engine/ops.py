"""The op dispatch layer: from a callee to its shape rule, plus the helpers every rule shares.

``call_qualified`` / ``call_method`` map a callee (``torch.nn.functional.softmax``, ``Tensor.view``)
to a canonical op name, and ``apply`` runs the op's rule and records an ``OpEvent``. Functional and
method forms share one rule: the receiver of a method becomes argument 0. Operators, attributes,
subscripts and unpacking enter here too.

The rules themselves, one small function per op registered with ``@op``, live in the ``op_*``
modules by kind: ``op_shapes``, ``op_elementwise``, ``op_factories``, ``op_joins``, ``op_products``
and ``op_scalars``, imported at the end of this module so that they register themselves.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.arguments import Arguments
from shapecheck.engine.dims import Dim, Truth, equal
from shapecheck.engine.facts import InternalError, OpEvent, ShapeConflict
from shapecheck.engine.shapes import Shape
from shapecheck.engine.tags import (  # re-exported: rules and engine modules imported them from here
    AttentionOutputTag,
    DtypeValue,
    FilledTag,
    FinfoValue,
    KeyTransposed,
    LayerOutputTag,
    ParameterTag,
    Repeated,
    SplitTuple,
)
from shapecheck.engine.values import (
    UNKNOWN,
    UNKNOWN_TENSOR,
    BoundMethod,
    ClassValue,
    ConstValue,
    FloatValue,
    FunctionValue,
    IntValue,
    ModuleIdent,
    ModuleValue,
    ObjectValue,
    Opaque,
    PositionTag,
    ProjectionTag,
    QualifiedValue,
    Scale,
    ScaleTag,
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
    except RecursionError:
        result = UNKNOWN  # a depth limit, not a bug
    except (ArithmeticError, ValueError, TypeError, IndexError, KeyError, AttributeError) as error:
        record_internal_error(interp, name, call.node, error)
        result = UNKNOWN
    interp.facts.events.append(
        OpEvent(name, call.node, call.args, call.kwargs, result, frame.run, call.arg_nodes, call.kwarg_nodes, frame.assumptions)
    )
    return result


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
    in_place = name.endswith("_") and not name.endswith("__")
    if in_place:
        name = name[:-1]  # x.masked_fill_(...), x.unsqueeze_(0), x.mul_(s): the result replaces x
    if name in METHOD_ALIASES:
        name = METHOD_ALIASES[name]
    receiver_node = None
    if isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute):
        receiver_node = call.node.func.value
    if name in OPS:
        result = apply(interp, name, call.with_receiver(as_tensor(receiver), receiver_node), frame)
    else:
        result = unknown_call(call.with_receiver(receiver, None))
    if in_place and isinstance(receiver_node, cst.Name) and isinstance(result, TensorValue):
        frame.env[receiver_node.value] = result
    return result


METHOD_ALIASES = {"swapaxes": "transpose", "swapdims": "transpose", "concat": "cat",
                  "add": "add_fn", "mul": "mul_fn", "div": "div_fn", "sub": "sub_fn",
                  "logical_not": "logical_not", "__matmul__": "matmul", "resize": "resize"}


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
    return result


def _callee_name(node: cst.Call) -> str:
    func = node.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


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
    return op_scalars.scalar_binary(operator, left, right, frame)


def _operand_nodes(node: cst.CSTNode) -> tuple[cst.CSTNode | None, ...]:
    if isinstance(node, cst.BinaryOperation):
        return (node.left, node.right)
    if isinstance(node, cst.AugAssign):
        return (node.target, node.value)
    return ()


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


# The op rules register themselves in OPS; they import from this module, so they come last.
from shapecheck.engine import op_elementwise, op_factories, op_joins, op_products, op_scalars, op_shapes  # noqa: E402,F401
