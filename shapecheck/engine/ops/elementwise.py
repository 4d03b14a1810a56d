"""Op rules that compute per element or along an axis: activations and math functions (with the
frequency hooks of ``exp`` / ``sin`` / ``cos``), tensor arithmetic, softmax, masking (``masked_fill``,
``where``, ``tril`` / ``triu``) and reductions. Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import FilledTag, LayerOutputTag, NormalisedTag
from shapecheck.engine.domain.values import (
    UNKNOWN,
    UNKNOWN_TENSOR,
    ConstValue,
    FloatValue,
    IntValue,
    MaskedTag,
    Opaque,
    PositionTag,
    ProbsTag,
    Scale,
    ScaleTag,
    ScoresTag,
    TensorValue,
    TriangleTag,
    TupleValue,
    Value,
    as_tensor,
    int_of,
    scale_of,
    with_mask,
)
from shapecheck.engine.ops import frequencies, windows
from shapecheck.engine.ops.arithmetic import tensor_binary
from shapecheck.engine.ops.base import (
    Call,
    _callee_name,
    broadcast_with_unknown,
    _negate,
    conflict,
    dtype_class,
    keep_scale,
    lineage,
    norm_axis,
    register,
)
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.dims import Dim
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


# ------------------------------------------------------------------------------------ elementwise


#: Elementwise functions whose result is floating point whatever the input's dtype.
FLOAT_VALUED = {
    "sqrt", "rsqrt", "exp", "log", "sigmoid", "tanh", "sin", "cos", "erf", "log1p", "expm1", "reciprocal",
    "softplus", "gelu", "silu", "mish", "elu", "selu", "celu", "normalize", "layer_norm", "rms_norm",
}


def _elementwise(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    dtype = source.dtype
    if name in FLOAT_VALUED and dtype in ("int", "bool"):
        dtype = "float"  # sqrt, exp, sigmoid ... of integers are floating point in torch
    elif name in ("cumsum", "cumprod") and dtype == "bool":
        dtype = "int"
    tags = lineage(source)
    if name in ("roll", "flip", "cumsum", "cumprod"):
        tags = windows.positions_moved(tags)  # the tokens are no longer where they were
    result = TensorValue(source.shape, dtype, tags, call.node)
    if name == "cumsum" and source.dtype in ("int", "bool", None) and _along_tokens(source, call) and not result.has(PositionTag):
        # ``torch.cumsum(attention_mask, dim=1)`` / ``cumsum(ids.ne(pad).int(), dim=1)``: the
        # position of each token counted past the padding (OPT, RoBERTa), positions as an arange is.
        result = result.with_tag(PositionTag(call.node, "index"))
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
    if name == "tanh" and source.has(ScaleTag):
        # Softcapping (``cap * tanh(scores / cap)``, Gemma 2, VideoPrism) keeps small scores as
        # they are: the scale they carry is still theirs, and ``/ cap`` then ``* cap`` cancel.
        return result.with_tag(source.tag(ScaleTag))
    return result


def _along_tokens(source: TensorValue, call: Call) -> bool:
    """A running count along an axis after the batch axis (``dim=1`` or ``-1`` of ``(b, t)``), not
    down the batch."""
    axis = int_of(call.arg(1, "dim"))
    if axis is None:
        return False
    rank = source.shape.rank if source.shape is not None and not source.shape.variadic else None
    return axis != 0 and (rank is None or axis % rank != 0)


def _pow(interp: "Interpreter", call: Call, frame: "Frame") -> Value:

    base, exponent = call.arg(0, "input"), call.arg(1, "exponent")
    result = tensor_binary(interp, "pow", base, exponent, call.node, frame)
    frequency = frequencies.combine("pow", base, exponent, call.node)
    if isinstance(result, TensorValue) and frequency is not None:
        result = result.without(*frequencies.FREQUENCY_TAGS).with_tag(frequency)
    return result


def _binary_tensor(interp: "Interpreter", call: Call, frame: "Frame") -> Value:

    operator = call.kwargs["operator"].value  # type: ignore[union-attr]
    result = tensor_binary(interp, operator, call.args[0], call.args[1], call.node, frame)
    if isinstance(result, TensorValue):
        frequency = frequencies.combine(operator, call.args[0], call.args[1], call.node)
        result = result.without(*frequencies.FREQUENCY_TAGS)
        if frequency is not None:
            result = result.with_tag(frequency)
    return result


def _binary_method(interp: "Interpreter", call: Call, frame: "Frame") -> Value:

    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else "add"
    operator = {"add": "add", "mul": "mul", "div": "truediv", "sub": "sub"}.get(name, "add")
    return tensor_binary(interp, operator, call.arg(0), call.arg(1, "other"), call.node, frame)


def _logical_not(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``torch.logical_not(x)``: bool whatever x's dtype (a float 0/1 mask included)."""
    result = _negate(call.tensor(0), call.node)
    return result.with_dtype("bool") if result.dtype != "bool" else result


def _bitwise_not(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``~x`` / ``torch.bitwise_not(x)``: bool or integer as x. Torch raises for a float x (SC201
    reports it), so what would follow has no dtype: one root cause, one finding."""
    result = _negate(call.tensor(0), call.node)
    return result.with_dtype(None) if result.dtype == "float" else result


def _softmax(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0, "input")
    result = TensorValue(source.shape, "float", lineage(source), call.node)
    if not result.has(NormalisedTag):
        result = result.with_tag(NormalisedTag(call.node))
    if source.has(ScoresTag):
        log = isinstance(call.node, cst.Call) and _callee_name(call.node) == "log_softmax"
        result = result.with_tag(ProbsTag(call.node, source, log))
    return result


# ------------------------------------------------------------------------------------ masking


def _masked_fill(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0, "input")
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
    windows.same_tokens(interp, result_tensor, call.arg(0, "input"), call.node)
    return result_tensor


def filled_value(value: Value) -> Scale | None:
    """A number, or the constant every element of a tensor holds."""
    if isinstance(value, TensorValue):
        tag = value.tag(FilledTag)
        return tag.value if tag is not None else None
    return scale_of(value)


def _where(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    condition, a, b = call.tensor(0), call.arg(1, "input"), call.arg(2, "other")
    if not call.has(1, "input"):
        return UNKNOWN
    if all(isinstance(value, (IntValue, FloatValue)) for value in (a, b)):
        # ``torch.where(allowed, 0.0, float("-inf"))``: two numbers, chosen element by element of
        # the condition, make a tensor of the condition's shape.
        dtype = "float" if any(isinstance(value, FloatValue) for value in (a, b)) else "int"
        return TensorValue(condition.shape, dtype, lineage(condition), call.node)
    ta, tb = as_tensor(a), as_tensor(b)
    base = ta if isinstance(a, TensorValue) else tb
    shape = base.shape
    for other in (condition, ta if base is tb else tb):
        if shape is not None and other.shape is not None:
            shape = shape_ops.broadcast(shape, other.shape, frame.assumptions, presume_fit=interp.is_invented).shape
        elif isinstance(other, TensorValue) and other is not UNKNOWN_TENSOR and other.shape is None:
            shape = broadcast_with_unknown(shape, base.has(ScoresTag))  # a condition of unknown shape presumed to fit
    result = TensorValue(shape, base.dtype, base.tags + lineage(condition), call.node)
    scores = base if base.has(ScoresTag) else None
    if scores is not None:
        other = b if base is ta else a
        triangle = condition.tag(TriangleTag)
        result = with_mask(result, MaskedTag(call.node, condition, filled_value(other), base is tb, triangle is not None and triangle.true_is_future is not None)
        )
    kept = [value for value in (a, b) if isinstance(value, (TensorValue, Opaque))]
    if len(kept) == 1:
        windows.same_tokens(interp, result, kept[0], call.node)  # ``where(ids == ignore, pad, ids)``
    return result


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


# ------------------------------------------------------------------------------------ reductions


def _reduce(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    source = call.tensor(0)
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    dtype = "int" if name in ("argmax", "argmin", "count_nonzero") else ("bool" if name in ("all", "any") else source.dtype)
    if name in ("sum", "prod") and dtype == "bool":
        dtype = "int"  # torch sums booleans as int64
    requested = dtype_class(call.kwargs.get("dtype"))
    if requested is not None:
        dtype = requested
    if name in ("max", "min") and (isinstance(call.arg(1, "other"), TensorValue)):
        # torch.max(a, b): elementwise, not a reduction.
        other = call.tensor(1, "other")
        shape = None
        if source.shape is not None and other.shape is not None:
            shape = shape_ops.broadcast(source.shape, other.shape, frame.assumptions).shape
        return TensorValue(shape, source.dtype if source.dtype == other.dtype else None, lineage(source, other), call.node)
    # Positional layouts differ: norm(input, p, dim, keepdim); std / var(input, dim, unbiased, keepdim).
    dim_index, keepdim_index = (2, 3) if name == "norm" else (1, 2)
    if name in ("std", "var") and isinstance(call.arg(2), ConstValue) and len(call.args) >= 3:
        keepdim_index = 3
    if not call.has(dim_index, "dim"):
        return TensorValue(Shape(()), dtype, lineage(source), call.node)
    keepdim_value = call.arg(keepdim_index, "keepdim")
    keepdim = isinstance(keepdim_value, ConstValue) and keepdim_value.value is True
    axes_value = call.arg(dim_index, "dim")
    axes = [int_of(v) for v in axes_value.items] if isinstance(axes_value, TupleValue) else [int_of(axes_value)]
    shape = source.shape
    if shape is not None and shape.variadic and None not in axes and all(a < 0 and -a <= len(shape.dims) for a in axes):  # type: ignore[operator]
        # ``x.mean(-1, keepdim=True)`` of ``(*, h, d)``: the axes counted from the end are known.
        trailing = len(shape.dims)
        kept = tuple(
            (Dim.const(1) if keepdim else None) if i - trailing in axes else d for i, d in enumerate(shape.dims)
        )
        result: Value = TensorValue(Shape(tuple(d for d in kept if d is not None), variadic=True), dtype, lineage(source), call.node)
    elif shape is None or shape.variadic or None in axes:
        result = TensorValue(None, dtype, lineage(source), call.node)
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


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(
    _elementwise,
    "relu", "gelu", "silu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "sin", "cos",
    "elu", "leaky_relu", "softplus", "mish", "erf", "square", "reciprocal", "sign", "clamp", "clip",
    "relu_", "gelu_", "nan_to_num", "log1p", "expm1", "hardtanh", "relu6", "selu", "celu", "glu_same",
    "sigmoid_", "tanh_", "pow_scalar", "round", "floor", "ceil", "cumsum", "cumprod", "roll", "flip",
    "layer_norm", "rms_norm", "normalize", "group_norm_same",
)
register(_pow, "pow")
register(_binary_tensor, "binary")
register(_binary_method, "add_fn", "mul_fn", "div_fn", "sub_fn")
register(_logical_not, "logical_not")
register(_bitwise_not, "bitwise_not")
register(_softmax, "softmax", "log_softmax")
register(_masked_fill, "masked_fill")
register(_where, "where")
register(_triangle, "tril", "triu")
register(
    _reduce,
    "sum", "mean", "amax", "amin", "std", "var", "logsumexp", "prod", "norm", "all", "any", "argmax",
    "argmin", "max", "min", "count_nonzero",
)
