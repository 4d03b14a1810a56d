"""The op dispatch layer: from a callee to its shape rule.

``call_qualified`` / ``call_method`` map a callee (``torch.nn.functional.softmax``, ``Tensor.view``)
to a canonical op name, and ``base.apply`` runs the op's rule and records an ``OpEvent``. Functional
and method forms share one rule: the receiver of a method becomes argument 0. Operators, attributes
and subscripts enter here too.

The rules themselves, one small function per op registered with ``base.register``, live in the modules of this
package by kind (``shapes``, ``elementwise``, ``factories``, ``joins``, ``products``, ``scalars``,
``nn_modules``), imported here so that they register themselves. They import only ``base``.
"""

from __future__ import annotations

import math

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.layers import NN_BASE
from shapecheck.engine.domain.tags import (
    DictValue,
    DtypeValue,
    FilledTag,
    FinfoValue,
    OpenTuple,
    ParameterTag,
    Repeated,
    SequenceOriginTag,
    SuperValue,
)
from shapecheck.engine.domain.values import (
    UNKNOWN,
    UNKNOWN_TENSOR,
    BoundMethod,
    ClassValue,
    ConstValue,
    EitherString,
    FloatValue,
    FunctionValue,
    IntValue,
    ModuleIdent,
    EitherModule,
    ModuleValue,
    ObjectValue,
    Opaque,
    ProjectionTag,
    QualifiedValue,
    Scale,
    ScaleTag,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    as_tensor,
    int_of,
    is_scalar,
    scale_of,
    either_string,
    string_options,
)
from shapecheck.engine.domain.joins import join_all
from shapecheck.engine.facts.records import OpEvent
from shapecheck.engine.ops import (  # noqa: F401 (registration)
    elementwise,
    factories,
    joins,
    library_layers,
    library_losses,
    library_masks,
    library_padding,
    nn_modules,
    products,
    scalars,
    sequences,
    windows,
    shapes,
    training,
)
from shapecheck.engine.ops.arithmetic import tensor_compare
from shapecheck.engine.ops.base import OPS, Call, apply, lineage, maybe_positional, traced, unknown_call
from shapecheck.engine.ops.indexing import index_value
from shapecheck.engine.symbolic.dims import Dim, Truth, equal

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

DTYPES = {
    "float": "float", "float16": "float", "float32": "float", "float64": "float", "half": "float",
    "double": "float", "bfloat16": "float", "bool": "bool", "long": "int", "int": "int",
    "int64": "int", "int32": "int", "int16": "int", "int8": "int", "uint8": "int", "short": "int",
}


TORCH_PREFIXES = ("torch.nn.functional.", "torch.Tensor.", "torch.special.", "torch.linalg.", "torch.")


def call_qualified(interp: "Interpreter", qualname: str, call: Call, frame: "Frame") -> Value:
    options = _pattern_options(qualname, call)
    if options is not None:
        # ``torch.einsum(f"{query_layout},{key_layout}-> b h t k", q, k)`` with a layout chosen on a
        # path the engine cannot decide: the call as each pattern makes it, joined.
        return join_all([call_qualified(interp, qualname, option, frame) for option in options])
    if qualname.startswith("torch.nn.") and not qualname.startswith("torch.nn.functional."):
        built = nn_modules.construct(interp, qualname[len("torch.nn.") :], call, frame)
        if isinstance(built, ModuleValue):
            training.adopt_children(list(call.args) + list(call.kwargs.values()), frame)
            training.track_new_model(built.ident, call.node, frame)
        return built
    special = QUALIFIED.get(qualname)
    if special is not None:
        return apply(interp, special, call, frame)
    qualname = library_layers.located(qualname, interp.home_path)
    qualname = library_layers.TORCH_EQUIVALENTS.get(qualname, qualname)
    layers = library_layers.torch_call(qualname, call)
    if layers is not None:
        return call_qualified(interp, layers[0], layers[1], frame)
    helped = library_layers.library_value(qualname, call)
    if helped is not None:
        return helped
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
    library = library_masks.library_op(qualname)
    if library is not None:
        return apply(interp, library, call, frame)
    loss = library_losses.torch_call(qualname, call)
    if loss is not None:
        return apply(interp, loss[0], loss[1], frame)
    padding = library_padding.torch_call(qualname, call)
    if padding is not None:
        return apply(interp, padding[0], padding[1], frame)
    fallback = registry_fallback(qualname.rsplit(".", 1)[-1], call)
    if fallback is not None:
        return fallback
    return unknown_call(call)


#: Lookups in a table of implementations with a fallback: ``table.get(key, default)`` and
#: transformers' ``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation, eager)``.
REGISTRY_LOOKUPS = ("get", "get_interface")


def registry_fallback(name: str, call: Call) -> Value | None:
    """A lookup in a table the engine cannot see, with a function of the project as its fallback:
    the fallback is the implementation the engine can follow (the eager, reference one), so calls
    of the result are analysed as calls of it."""
    if name not in REGISTRY_LOOKUPS or len(call.args) != 2 or call.kwargs:
        return None
    default = call.args[1]
    return default if isinstance(default, FunctionValue) else None


QUALIFIED = {
    "math.sqrt": "math.sqrt",
    "numpy.sqrt": "math.sqrt",
    "math.log": "math.log",
    "numpy.log": "math.log",
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
    "builtins.map": "builtins.map",
    "builtins.tuple": "builtins.tuple",
    "builtins.list": "builtins.list",
    "builtins.dict": "builtins.dict",
    "collections.OrderedDict": "collections.OrderedDict",
    "copy.deepcopy": "copy.deepcopy",
    "builtins.super": "builtins.super",
    "builtins.getattr": "builtins.getattr",
    "torch.finfo": "torch.finfo",
    "torch.concat": "cat",
    "torch.concatenate": "cat",
    "torch.nn.functional.scaled_dot_product_attention": "scaled_dot_product_attention",
    "torch.sqrt": "sqrt",
    "torch.rsqrt": "rsqrt",
    "torch.tensor": "tensor",
    "torch.as_tensor": "tensor",
}


#: Methods that move or cast a value and keep what it is: of an unknown value, the same unknown.
_MOVES = frozenset({"to", "cuda", "cpu", "long", "int", "detach", "contiguous"})


def call_method(interp: "Interpreter", receiver: Value, name: str, call: Call, frame: "Frame") -> Value:
    if isinstance(receiver, SuperValue):
        return call_super(interp, receiver, name, call, frame)
    if isinstance(receiver, DictValue):
        return _dict_method(receiver, name, call, frame)
    if training.is_mode_switch(receiver, name):
        return training.set_mode(receiver, name, call, frame)
    if training.returns_itself(receiver, name):
        return receiver  # ``model = Net().to(device)``: the same module
    if isinstance(receiver, ObjectValue):
        if name == "register_buffer" or name == "register_parameter":
            return nn_modules.register(interp, receiver, call, frame)
        if name == "add_module" and receiver.cls.is_module and name not in receiver.cls.methods:
            return _add_module(receiver, call)
        method = receiver.cls.methods.get(name)
        if method is not None:
            owner = receiver.cls.owner_of(name)
            return interp.inline(method, f"{owner.qualname}.{name}", owner, call, frame, receiver)
        if receiver.cls.is_module and name in nn_modules.RETURNS_SELF:
            return receiver  # Model(cfg).eval(), model.to(device)
        return unknown_call(call)
    if isinstance(receiver, ModuleValue):
        return nn_modules.call_module_method(interp, receiver, name, call, frame)
    if string_options(receiver) is not None and name == "replace":
        return _string_replace(string_options(receiver), call)
    if isinstance(receiver, (TupleValue, Repeated)) or isinstance(receiver, ConstValue):
        return UNKNOWN
    if isinstance(receiver, (IntValue, FloatValue)):
        return UNKNOWN
    if isinstance(receiver, FinfoValue):
        return UNKNOWN
    if receiver is UNKNOWN and name in _MOVES:
        return UNKNOWN  # ``helper(...).to(device)``: still whatever the helper returned
    in_place = name.endswith("_") and not name.endswith("__")
    if in_place:
        name = name[:-1]  # x.masked_fill_(...), x.unsqueeze_(0), x.mul_(s): the result replaces x
    if name in METHOD_ALIASES:
        name = METHOD_ALIASES[name]
    receiver_node = None
    if isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute):
        receiver_node = call.node.func.value
    if name == "where" and _where_operands(call) is not None:
        # ``x.where(cond, y)`` (or ``x.where(condition=cond, other=y)``) is ``torch.where(cond, x, y)``:
        # the op and its event see one order.
        # ``Tensor.where`` takes no other argument: its two operands are all the call has.
        (condition, condition_node), (other, other_node) = _where_operands(call)  # type: ignore[misc]
        canonical = Call(call.node, (condition, as_tensor(receiver), other), {}, (condition_node, receiver_node, other_node), {})
        result = apply(interp, name, canonical, frame)
    elif name in OPS:
        result = apply(interp, name, call.with_receiver(as_tensor(receiver), receiver_node), frame)
        if name == "masked_fill" and isinstance(receiver, Opaque):
            windows.same_tokens(interp, result, receiver, call.node)  # ``ids.masked_fill(...)`` of a parameter
    else:
        result = registry_fallback(name, call) or unknown_call(call.with_receiver(receiver, None))
    if in_place and isinstance(receiver_node, cst.Name) and isinstance(result, TensorValue):
        frame.env[receiver_node.value] = result
    return result


def _where_operands(call: Call) -> "tuple[tuple[Value, object], tuple[Value, object]] | None":
    """(value, node) of the condition and of the other operand of ``x.where(condition, other)``,
    each given by position or by keyword; None when one is missing."""
    found = []
    for position, keyword in ((0, "condition"), (1, "other")):
        if position < len(call.args):
            found.append((call.args[position], call.arg_nodes[position] if position < len(call.arg_nodes) else None))
        elif keyword in call.kwargs:
            found.append((call.kwargs[keyword], call.kwarg_nodes.get(keyword)))
        else:
            return None
    return found[0], found[1]


METHOD_ALIASES = {"swapaxes": "transpose", "swapdims": "transpose", "concat": "cat",
                  "add": "add_fn", "mul": "mul_fn", "div": "div_fn", "sub": "sub_fn",
                  "logical_not": "logical_not", "__matmul__": "matmul", "resize": "resize",
                  "unfold": "windows_unfold"}


def call_super(interp: "Interpreter", receiver: SuperValue, name: str, call: Call, frame: "Frame") -> Value:
    """``super().name(...)``: the parent class's method with the same instance, or for a subclass
    of a torch.nn layer its constructor (``super().__init__(d)``) and its forward."""
    instance, cls = receiver.instance, receiver.cls
    parent = cls.parent_with(name)
    if parent is not None:
        return interp.inline(parent.methods[name], f"{parent.qualname}.{name}", parent, call, frame, instance)
    if cls.nn_base is not None and name == "__init__":
        base = call_qualified(interp, cls.nn_base, call, frame)
        if isinstance(base, ModuleValue):
            instance.attrs[NN_BASE] = base
        return UNKNOWN
    base = instance.attrs.get(NN_BASE)
    if isinstance(base, ModuleValue) and name in ("forward", "__call__"):
        return call_module(interp, base, call, frame)
    # ``super().get(key, default)`` of a project table derived from a library mapping.
    return registry_fallback(name, call) or unknown_call(call)


#: Calls whose string argument is a pattern that decides the shapes.
_PATTERN_CALLS = ("torch.einsum", "torch.functional.einsum", "einops.einsum")


def _pattern_options(qualname: str, call: Call) -> list[Call] | None:
    """One call per string an ``EitherString`` argument of an einops or einsum call may be."""
    if not (qualname.startswith("einops.") or qualname in _PATTERN_CALLS):
        return None
    for index, value in enumerate(call.args):
        if isinstance(value, EitherString):
            return [
                Call(call.node, call.args[:index] + (ConstValue(option),) + call.args[index + 1 :], call.kwargs, call.arg_nodes, call.kwarg_nodes)
                for option in value.options
            ]
    for key, value in call.kwargs.items():
        if isinstance(value, EitherString):
            return [Call(call.node, call.args, {**call.kwargs, key: ConstValue(option)}, call.arg_nodes, call.kwarg_nodes) for option in value.options]
    return None


def _string_replace(texts: tuple[str, ...], call: Call) -> Value:
    """``layout.replace('t', 'k')`` of a known string, or of each string it may be (a pattern's key
    axis renamed)."""
    old, new = call.arg(0, "old"), call.arg(1, "new")
    if len(call.args) > 2 or call.kwargs:
        return UNKNOWN
    if not all(isinstance(v, ConstValue) and isinstance(v.value, str) for v in (old, new)):
        return UNKNOWN
    if "<f-string>" in texts:
        return ConstValue("<f-string>")
    return either_string([text.replace(old.value, new.value) for text in texts])  # type: ignore[union-attr]


def _add_module(receiver: ObjectValue, call: Call) -> Value:
    """``self.add_module("c", nn.Conv2d(...))``: the child is the attribute ``self.c``; in a subclass
    of ``nn.Sequential`` (timm's ``ConvNorm``: a conv, then a norm) it is also the next layer the
    forward runs."""
    key, child = call.arg(0, "name"), call.arg(1, "module")
    if not (isinstance(key, ConstValue) and isinstance(key.value, str)):
        layer = receiver.attrs.get(NN_BASE)
        if isinstance(layer, ModuleValue) and layer.kind == "Sequential":
            layer.params["__broken__"] = UNKNOWN  # a child the engine cannot name: the chain is unknown
        return ConstValue(None)
    receiver.attrs[key.value] = child
    layer = receiver.attrs.get(NN_BASE)
    if isinstance(layer, ModuleValue) and layer.kind == "Sequential" and not layer.repeated:
        layer.items = layer.items + (child,)
        layer.named = {**layer.named, key.value: child}
    return ConstValue(None)


def _dict_method(receiver: DictValue, name: str, call: Call, frame: "Frame") -> Value:
    """``kwargs.get("mask")``, ``kwargs.pop("mask", None)``, ``kwargs.update(context=c)`` on a dict
    of known keys (a ``**kwargs`` passed on by a wrapper); an update rebinds the name."""
    key = call.args[0].value if call.args and isinstance(call.args[0], ConstValue) and isinstance(call.args[0].value, str) else None
    holder = call.node.func.value if isinstance(call.node, cst.Call) and isinstance(call.node.func, cst.Attribute) else None
    if name in ("get", "pop") and key is not None:
        found = receiver.get(key)
        if name == "pop" and isinstance(holder, cst.Name):
            frame.env[holder.value] = DictValue(tuple((k, v) for k, v in receiver.entries if k != key))
        if found is not None:
            return found
        return call.args[1] if len(call.args) > 1 else (ConstValue(None) if name == "get" else UNKNOWN)
    if name == "update" and not call.args and "**" not in call.kwargs and isinstance(holder, cst.Name):
        merged = dict(receiver.entries)
        merged.update(call.kwargs)  # no ``*``: a starred argument would be in call.args
        frame.env[holder.value] = DictValue(tuple(merged.items()))
        return ConstValue(None)
    if name == "get" and key is None:
        return registry_fallback(name, call) or UNKNOWN  # ``table.get(impl, eager)``, impl unknown
    if isinstance(holder, cst.Name):
        frame.env[holder.value] = UNKNOWN  # a change the engine does not follow
    return UNKNOWN




def call_module(interp: "Interpreter", module: ModuleValue, call: Call, frame: "Frame") -> Value:
    conflicts_before = len(interp.facts.conflicts)
    if training.record_model_call(interp, module, call, frame):
        call = windows.tag_model_inputs(interp, call, frame)
        result = training.mark_output(nn_modules.forward(interp, module, call, frame), call)
    else:
        result = nn_modules.forward(interp, module, call, frame)
    return traced(interp, "module", call, result, conflicts_before)


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




# ------------------------------------------------------------------------------------ attributes


#: Named numbers of the libraries (``-np.inf`` fills a causal mask).
NUMBER_CONSTANTS = {
    "math.inf": math.inf, "numpy.inf": math.inf, "torch.inf": math.inf,
    "math.pi": math.pi, "numpy.pi": math.pi, "torch.pi": math.pi, "math.e": math.e,
}


def attribute(interp: "Interpreter", base: Value, attr: str, node: cst.CSTNode, frame: "Frame") -> Value:
    if isinstance(base, QualifiedValue):
        qualified = base.qualname + "." + attr
        if qualified.startswith("torch.") and attr in DTYPES and qualified.count(".") == 1:
            return DtypeValue(DTYPES[attr])
        if qualified in NUMBER_CONSTANTS:
            return FloatValue(Scale(NUMBER_CONSTANTS[qualified]))
        if qualified == "numpy.newaxis":
            return ConstValue(None)  # ``t[:, np.newaxis]`` is ``t[:, None]``
        return QualifiedValue(qualified)
    if isinstance(base, TensorValue):
        return tensor_attribute(interp, base, attr, node, frame)
    if isinstance(base, ObjectValue):
        if attr in base.attrs:
            return base.attrs[attr]
        layer = base.attrs.get(NN_BASE)
        if isinstance(layer, ModuleValue) and attr not in base.cls.methods and attr != "add_module":
            return nn_modules.module_attribute(interp, layer, attr, node, frame)  # self.weight of a Linear subclass
        method = base.cls.methods.get(attr)
        if method is not None:
            return FunctionValue(method, f"{base.cls.owner_of(attr).qualname}.{attr}", base)
        # (``train`` / ``eval`` are in RETURNS_SELF: ``training.is_mode_switch`` adds nothing here.)
        if attr in ("register_buffer", "register_parameter", "add_module") or (base.cls.is_module and attr in nn_modules.RETURNS_SELF) or training.returns_itself(base, attr):
            return BoundMethod(base, attr)
        if base.cls.is_dataclass and attr in base.cls.fields:
            return UNKNOWN
        return UNKNOWN
    if isinstance(base, ModuleValue):
        return nn_modules.module_attribute(interp, base, attr, node, frame)
    if isinstance(base, EitherModule):
        return join_all([attribute(interp, option, attr, node, frame) for option in base.options])
    if isinstance(base, Opaque):
        if attr in ("shape", "T", "mT", "ndim"):
            return tensor_attribute(interp, UNKNOWN_TENSOR, attr, node, frame)
        if attr in OPS or attr in METHOD_ALIASES:
            return BoundMethod(base, attr)  # a tensor method, or (config.dim) read as a named value
        return base.attribute(attr)
    if isinstance(base, FinfoValue) and attr == "min":
        return FloatValue(Scale(-3.4028234663852886e38))
    if isinstance(base, FinfoValue) and attr == "max":
        return FloatValue(Scale(3.4028234663852886e38))  # ``-torch.finfo(dtype).max``: a mask fill
    if isinstance(base, ClassValue):
        # ``MultiheadAttention.apply_sparse_mask(attn_weights, ...)``: a method read off its class
        # (fair-esm's, a static method or one written without ``self``) is a plain function,
        # called with the arguments as given. A class method or property is something else.
        method = base.info.methods.get(attr)
        if method is not None and all(
            isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in method.decorators
        ):
            return FunctionValue(method, f"{base.info.owner_of(attr).qualname}.{attr}")
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
            return maybe_positional(apply(interp, "matmul", call, frame), (left, right), node)
        call = Call(node, (left, right), {"operator": ConstValue(operator)}, _operand_nodes(node))
        return apply(interp, "binary", call, frame)
    return scalars.scalar_binary(operator, left, right, frame)


def _operand_nodes(node: cst.CSTNode) -> tuple[cst.CSTNode | None, ...]:
    if isinstance(node, cst.BinaryOperation):
        return (node.left, node.right)
    if isinstance(node, cst.AugAssign):
        return (node.target, node.value)
    return ()


def unary(interp: "Interpreter", operator: str, value: Value, node: cst.CSTNode, frame: "Frame") -> Value:
    if isinstance(value, TensorValue):
        if operator == "Not":
            # ``not mask`` is Python's ``not bool(mask)``: a bool of unknown value (torch raises for
            # more than one element), never a tensor. Only ``~mask`` negates elementwise.
            return UNKNOWN
        if operator == "BitInvert":
            # ``~mask`` is ``torch.bitwise_not(mask)``: recorded as that op (SC201 reads its dtype:
            # torch raises for a float tensor).
            operand = node.expression if isinstance(node, cst.UnaryOperation) else None
            return apply(interp, "bitwise_not", Call(node, (value,), {}, (operand,)), frame)
        if operator == "Minus":
            # ``-x2`` in rotary's ``rotate_half``: still the output of x's projection.
            projection = value.tag(ProjectionTag)
            return TensorValue(value.shape, value.dtype, lineage(value) + ((projection,) if projection else ()), node)
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
    if operator in ("Is", "IsNot"):
        same = None if interp.maybe_none(left, frame) or interp.maybe_none(right, frame) else _is_none(left, right)
        return ConstValue(same if operator == "Is" else not same) if same is not None else UNKNOWN
    if operator in _ELEMENTWISE_COMPARISONS and (
        (isinstance(left, Opaque) and is_scalar(right)) or (isinstance(right, Opaque) and is_scalar(left))
    ):
        # ``ids == pad_id`` with ``ids`` a parameter: if it is a tensor, this is a bool mask.
        return TensorValue(None, "bool", (), node)
    if isinstance(left, TensorValue) or isinstance(right, TensorValue):
        return tensor_compare(interp, operator, left, right, node, frame)
    if operator in ("In", "NotIn") and isinstance(right, DictValue):
        return _key_in_dict(operator, left, right)
    return _compare_sizes(operator, left, right, frame)


def _key_in_dict(operator: str, key: Value, mapping: DictValue) -> Value:
    """``'num_experts' in kwargs`` on a dict whose keys are all known (a ``dict(...)`` or a
    ``**kwargs`` of known keywords): decided, so an inlined factory follows the branch that runs."""
    if not (isinstance(key, ConstValue) and isinstance(key.value, str)):
        return UNKNOWN
    present = mapping.get(key.value) is not None
    return ConstValue(present if operator == "In" else not present)


def _compare_sizes(operator: str, left: Value, right: Value, frame: "Frame") -> Value:
    """``num_coordinates == 2``, ``n_rep == 1``, ``t > block_size`` on sizes: decided when the
    sizes are known or provably (un)equal (an inlined run then follows the branch that runs)."""
    if not all(isinstance(value, IntValue) or (isinstance(value, ConstValue) and type(value.value) is int) for value in (left, right)):
        return UNKNOWN
    a = left.dim if isinstance(left, IntValue) else Dim.const(left.value)  # type: ignore[union-attr]
    b = right.dim if isinstance(right, IntValue) else Dim.const(right.value)  # type: ignore[union-attr]
    if operator in ("Equal", "NotEqual"):
        same = equal(a, b, frame.assumptions)
        if same is Truth.UNKNOWN:
            return UNKNOWN
        return ConstValue((same is Truth.TRUE) == (operator == "Equal"))
    if a.is_const and b.is_const and operator in _ORDER:
        return ConstValue(_ORDER[operator](a.value, b.value))
    return UNKNOWN


_ORDER = {
    "LessThan": lambda x, y: x < y,
    "LessThanEqual": lambda x, y: x <= y,
    "GreaterThan": lambda x, y: x > y,
    "GreaterThanEqual": lambda x, y: x >= y,
}


#: Values that are certainly not None (a tensor, a number, a module ...).
_NOT_NONE = (TensorValue, IntValue, FloatValue, TupleValue, ModuleValue, ObjectValue, ShapeValue, FunctionValue, ClassValue)


def _is_none(left: Value, right: Value) -> bool | None:
    """``a is None``: known when one side is None and the other is known to be or not to be None."""
    for value, other in ((left, right), (right, left)):
        if isinstance(other, ConstValue) and other.value is None:
            if isinstance(value, ConstValue):
                return value.value is None
            if isinstance(value, _NOT_NONE) or isinstance(value, (Repeated, OpenTuple, DtypeValue)):
                return False
    return None


# ------------------------------------------------------------------------------------ subscripts


def subscript(interp: "Interpreter", base: Value, node: cst.Subscript, frame: "Frame") -> Value:
    return index_value(interp, base, node, frame)


def subscript_assign(interp: "Interpreter", target: cst.Subscript, value: Value, frame: "Frame", statement: cst.CSTNode) -> None:
    """``pe[:, 0::2] = torch.sin(...)``: the written tensor gains the lineage of what is written."""
    base_node = target.value
    if not isinstance(base_node, cst.Name):
        held = interp.eval(base_node, frame)
        if isinstance(held, DictValue) and isinstance(base_node, cst.Attribute):
            owner = interp.eval(base_node.value, frame)  # ``self.cfg['k'] = v`` on a dict attribute
            if isinstance(owner, ObjectValue):
                owner.attrs[base_node.attr.value] = _dict_with_item(interp, held, target, value, frame)
        return
    current = interp.lookup(base_node.value, frame)
    if isinstance(current, DictValue):
        frame.env[base_node.value] = _dict_with_item(interp, current, target, value, frame)
        return
    key = _index_key(interp, target, frame)
    interp.facts.events.append(
        OpEvent("setitem", statement, (current, value), {"index": ConstValue(key), "name": ConstValue(base_node.value)},
                UNKNOWN, frame.run, (base_node, getattr(statement, "value", None)), {}, frame.assumptions)
    )
    if isinstance(current, TensorValue):
        # Written into: no longer the tokens it was cut from (masked inputs, -100 labels).
        current = current.without(SequenceOriginTag)
        frame.env[base_node.value] = current
    if isinstance(current, TensorValue) and isinstance(value, TensorValue):
        # Tokens written into part of a tensor land at other positions (``shifted[:, 1:] = ids[:, :-1]``).
        extra = tuple(tag for tag in lineage(value) if type(tag) is not SequenceOriginTag)
        kept = tuple(t for t in current.tags if type(t) is not FilledTag)
        kinds = {type(t) for t in kept}
        frame.env[base_node.value] = replace(current, tags=kept + tuple(t for t in extra if type(t) not in kinds))


def subscript_delete(interp: "Interpreter", target: cst.Subscript, frame: "Frame") -> None:
    """``del kwargs['num_experts']``: a dict of known keys loses that key (any other deletion from
    it leaves its keys unknown)."""
    base_node = target.value
    if not isinstance(base_node, cst.Name):
        return
    current = interp.lookup(base_node.value, frame)
    if not isinstance(current, DictValue):
        return
    key = _string_key(interp, target, frame)
    if key is None:
        frame.env[base_node.value] = UNKNOWN
    else:
        frame.env[base_node.value] = DictValue(tuple((k, v) for k, v in current.entries if k != key))


def _dict_with_item(interp: "Interpreter", mapping: DictValue, target: cst.Subscript, value: Value, frame: "Frame") -> Value:
    """``kwargs['depthwise'] = True``: the dict with that key set; unknown when the key is not a
    string the engine reads (its keys are then no longer all known)."""
    key = _string_key(interp, target, frame)
    if key is None:
        return UNKNOWN
    return DictValue(tuple({**dict(mapping.entries), key: value}.items()))


def _string_key(interp: "Interpreter", target: cst.Subscript, frame: "Frame") -> str | None:
    """The key of ``d['k']`` when it is one string the engine reads (not ``d['a', 'b']``, a slice or
    a name it cannot read)."""
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    key = interp.eval(target.slice[0].slice.value, frame)
    return key.value if isinstance(key, ConstValue) and isinstance(key.value, str) else None


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


