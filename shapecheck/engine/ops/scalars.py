"""Op rules for Python numbers: ``math.sqrt`` / ``math.log``, the builtins (``int``, ``float``,
``len``, ``range``, ``min`` / ``max``, ``super``, ``getattr``), ``torch.finfo``, and
``scalar_binary``, arithmetic on sizes and scale factors. Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import FinfoValue, OpenTuple, Repeated, SuperValue, leading_items, open_tuple
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ClassInfo,
    ClassValue,
    ConstValue,
    FloatValue,
    IntValue,
    Opaque,
    Scale,
    ShapeValue,
    TensorValue,
    TupleValue,
    Value,
    dim_of,
    int_of,
    scale_of,
)
from shapecheck.engine.ops.base import Call, _callee_name, loop_index, register
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


# ------------------------------------------------------------------------------------ math


def _math_sqrt(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    scale = scale_of(call.arg(0))
    if scale is None:
        return UNKNOWN
    root = scale.power(Fraction(1, 2))
    return FloatValue(root) if root is not None else UNKNOWN


def _math_log(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = scale_of(call.arg(0))
    number = value.value if value is not None else None
    if number is not None and number > 0:
        return FloatValue(Scale(math.log(number)))
    if isinstance(call.arg(0), (Opaque, IntValue, FloatValue)):
        return Opaque("log")  # a number, never a tensor (math / numpy), of unknown value
    return UNKNOWN


# ------------------------------------------------------------------------------------ builtins


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
    numerator = Scale(scale.coef, tuple((b, e) for b, e in scale.factors if e > 0)).integer_dim()
    denominator = Scale(1.0, tuple((b, -e) for b, e in scale.factors if e < 0)).integer_dim()
    if numerator is None or denominator is None:
        return UNKNOWN
    return IntValue(frame.assumptions.simplify(numerator // denominator))


def _float(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    if isinstance(value, ConstValue) and isinstance(value.value, str):
        try:  # Python's float reads "-inf", "+Infinity", " 1e-4 " (any case, spaces around) itself
            return FloatValue(Scale(float(value.value)))
        except ValueError:
            return UNKNOWN
    scale = scale_of(value)
    return FloatValue(scale) if scale is not None else UNKNOWN


def _len(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    value = call.arg(0)
    if isinstance(value, TupleValue):
        return IntValue(Dim.const(len(value.items)))
    if isinstance(value, TensorValue) and value.shape is not None and value.shape.rank:
        return IntValue(value.shape.dims[0])
    return UNKNOWN


def _range(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return Repeated(IntValue(loop_index(interp)))


def _minmax(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    values = [int_of(v) for v in call.args]
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    if values and None not in values:
        fn = {"min": min, "max": max, "abs": lambda x: abs(x)}.get(name)
        if fn is not None:
            return IntValue(Dim.const(fn(*values)))  # type: ignore[operator]
    if name in ("min", "max") and len(call.args) >= 2 and not call.kwargs:
        return _extreme_size(interp, name, call.args)
    return UNKNOWN


def _extreme_size(interp: "Interpreter", name: str, args: tuple[Value, ...]) -> Value:
    """``max(num_frames, height, width)`` of sizes the code named: a size of its own (a symbol
    named by the call, the same for the same sizes), so that ``torch.arange(max(...))`` has a
    length and ``[:height]`` of it is ``height`` rows. Sizes the engine made up give nothing."""
    dims = [dim_of(arg) if isinstance(arg, (IntValue, Opaque)) else None for arg in args]
    if any(dim is None or interp.facts.made_up(dim) for dim in dims):
        return UNKNOWN
    unique = sorted({str(dim): dim for dim in dims}.items())  # type: ignore[union-attr]
    if len(unique) == 1:
        return IntValue(unique[0][1])  # type: ignore[arg-type]
    return IntValue(Dim.sym(f"{name}({','.join(text for text, _ in unique)})"))


def _super(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``super()`` in a method: the instance seen through its class's parents. The older spelling
    ``super(Attention, self)`` names the class the lookup starts after: the method's own class or
    one of its parents, with the method's own instance."""
    cls = frame.run.cls  # every frame has its run (a module's top level is the ``<module>`` run)
    if frame.self_value is None or cls is None:
        return UNKNOWN
    if not call.args:
        return SuperValue(frame.self_value, cls)
    if len(call.args) == 2 and isinstance(call.args[0], ClassValue) and call.args[1] is frame.self_value:
        start = call.args[0].info
        if start is cls or _derives_from(cls, start):
            return SuperValue(frame.self_value, start)
    return UNKNOWN


def _derives_from(cls: ClassInfo, ancestor: ClassInfo) -> bool:
    """``ancestor`` is among the project parents of ``cls``, at any depth."""
    return any(parent is ancestor or _derives_from(parent, ancestor) for parent in cls.parents)


def _getattr(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``getattr(config, "head_dim", default)``: the attribute where the engine can read it (a
    configuration it does not see has every attribute, as ``config.head_dim`` does, of the default's
    kind), else the default (an object of the file without that attribute)."""
    name = call.arg(1)
    if not (isinstance(name, ConstValue) and isinstance(name.value, str)):
        return UNKNOWN
    value = interp.member(call.arg(0), name.value, call.node, frame)
    default = call.arg(2) if len(call.args) > 2 else None
    if value is UNKNOWN and default is not None:
        return default
    if isinstance(value, Opaque) and isinstance(default, IntValue):
        return IntValue(value.as_dim())  # a size, as its default is: ``heads * head_dim`` is a size
    return value


def _finfo(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return FinfoValue()


# ------------------------------------------------------------------------------------ operators


def scalar_binary(operator: str, left: Value, right: Value, frame: "Frame") -> Value:
    if operator == "add":
        joined = _concat_sizes(left, right)
        if joined is None:
            joined = _concat_sequences(left, right)
        if joined is not None:
            return joined
    a, b = dim_of(left), dim_of(right)
    if isinstance(left, IntValue) or isinstance(right, IntValue) or (a is not None and b is not None and operator in ("floordiv", "mod")) or (
        operator in ("add", "sub") and _configuration_sizes(left, right, frame)
    ):
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
            fraction = Fraction(exponent)
            small = fraction.limit_denominator(64)
            if float(small) == exponent:
                fraction = small  # the float of 1/3 or -1/2 (a literal, 1 / 3): the fraction it stands for
            elif x.factors:
                return UNKNOWN  # sizes to a power that is no small fraction (1/65): no size the engine names
            powered = x.power(fraction)
            return FloatValue(powered) if powered is not None else UNKNOWN
        if operator in ("add", "sub"):
            xv, yv = x.value, y.value
            if xv is not None and yv is not None:
                return FloatValue(Scale(xv + yv if operator == "add" else xv - yv))
    except (ArithmeticError, ValueError):
        return UNKNOWN
    return UNKNOWN


def _configuration_sizes(left: Value, right: Value, frame: "Frame") -> bool:
    """``self.qk_head_dim = config.qk_nope_head_dim + config.qk_rope_head_dim`` in a constructor:
    fields of a configuration the engine cannot see, added, make a size (as ``//`` of them already
    does). Only in ``__init__`` and only attributes read off an unseen object: elsewhere two unseen
    values added may be tensors. The same fields kept by the constructor and added in another method
    (``self.qk_nope_head_dim + self.v_head_dim`` in ``forward``) are those sizes too: the object they
    were read off is none of this function's names (an object this function holds, such as a model
    output, may carry tensors)."""
    if not (isinstance(left, Opaque) and isinstance(right, Opaque) and "." in left.name and "." in right.name):
        return False
    node = frame.run.node if frame.run is not None else None
    if isinstance(node, cst.FunctionDef) and node.name.value == "__init__":
        return True
    return not any(_root(value.name) in frame.env for value in (left, right))


def _root(name: str) -> str:
    """The object an unseen value's name was read off: ``config`` of ``config.hidden_size``."""
    return name.split(".", 1)[0].split("[", 1)[0]


def _concat_sizes(left: Value, right: Value) -> Value | None:
    """``x.size()[:-1] + (h, d)``: a size with dims appended."""
    if not isinstance(left, ShapeValue) or not isinstance(right, TupleValue):
        return None
    extra = [dim_of(item) for item in right.items]
    if any(d is None for d in extra):
        return UNKNOWN
    shape = Shape(left.shape.dims + tuple(extra), left.shape.variadic) if left.shape is not None else None  # type: ignore[arg-type]
    return ShapeValue(shape, left.source, left.base, left.dropped, left.extra + tuple(extra))  # type: ignore[arg-type]


def _concat_sequences(left: Value, right: Value) -> Value | None:
    """``(sequence_output, pooled_output) + encoder_outputs[1:]``: two known tuples are one; a
    known tuple followed by a sequence the engine cannot see starts with the known items (the
    ``+`` ran, so the right side is a sequence). None: not a concatenation of sequences."""
    if isinstance(left, TupleValue) and isinstance(right, TupleValue):
        return TupleValue(left.items + right.items)
    items = leading_items(left)
    if items is not None and (right is UNKNOWN or isinstance(right, (TupleValue, OpenTuple, Repeated))):
        return open_tuple(items)
    return None


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_math_sqrt, "math.sqrt")
register(_math_log, "math.log")
register(_int, "builtins.int")
register(_float, "builtins.float")
register(_len, "builtins.len")
register(_range, "builtins.range")
register(_minmax, "builtins.min", "builtins.max", "builtins.abs")
register(_super, "builtins.super")
register(_getattr, "builtins.getattr")
register(_finfo, "torch.finfo")
