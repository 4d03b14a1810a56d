"""Arithmetic and comparisons with tensors: broadcasting, and what they mean for provenance.

Multiplying or dividing attention scores (or a query / key before the product) by a scalar records
a scale factor; adding a tensor to scores records an additive mask or bias; adding a positional
table or embedding to token embeddings records positional information.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import LayerOutputTag, LeadingOfUnknownRank, PaddingTag, ParameterTag
from shapecheck.engine.domain.values import (
    UNKNOWN,
    ConstValue,
    FloatValue,
    MaskedTag,
    Opaque,
    OptionalNumber,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    Scale,
    ScaleTag,
    ScoresTag,
    TensorValue,
    TokenEmbeddingTag,
    TriangleTag,
    Value,
    as_tensor,
    dim_of,
    is_scalar,
    scale_of,
    with_mask,
)
from shapecheck.engine.ops.base import Call, _callee_name, broadcast_with_unknown, conflict, keep_scale, lineage, promoted, register, unseen
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
           "and": "&", "or": "|", "xor": "^"}


def _nothing_known(shape: Shape | None) -> bool:
    """No dim known: an unknown shape, or one of unknown rank with no trailing dim (``(*)``, a
    0-dim tensor times a parameter)."""
    return shape is None or (shape.variadic and not shape.dims)


def _is_scalar_like(value: Value) -> bool:
    """A number, a named unknown parameter, the result of a call the engine cannot see (``q / scale``
    with ``scale = helper(q)``), or a 0-dim tensor: scaling, not broadcasting."""
    if is_scalar(value) or isinstance(value, Opaque) or value is UNKNOWN:
        return True
    if isinstance(value, TensorValue):
        return value.shape is not None and value.shape.rank == 0
    return False


def _scaled_parameter(left: Value, right: Value, a: TensorValue, b: TensorValue, operator: str) -> ParameterTag | None:
    """A parameter times (or divided by) a single number is still that parameter's table, scaled:
    ``(1 - self.gate.tanh()) * self.embedding`` is a gated positional table (Mllama), ``self.scale *
    self.pos_embed`` a scaled one."""
    for side, other in ((a, right), (b, left)):
        if side is b and operator == "truediv":
            continue  # a number divided by a table is not the table
        parameter = side.tag(ParameterTag)
        if parameter is not None and _single_number(other):
            return parameter
    return None


def _single_number(value: Value) -> bool:
    """A Python number, or a tensor of exactly one element (``nn.Parameter(torch.zeros(1))``)."""
    if is_scalar(value):
        return True
    if isinstance(value, TensorValue) and value.shape is not None and not value.shape.variadic:
        return all(dim.is_const and dim.value == 1 for dim in value.shape.dims)
    return False


def _scaling(a: TensorValue, b: TensorValue, left: Value, right: Value, operator: str) -> tuple[TensorValue, Scale | None] | None:
    """(the scaled tensor, the factor) when this product / quotient scales one tensor by a scalar."""
    left_tensor, right_tensor = isinstance(left, TensorValue), isinstance(right, TensorValue)
    if left_tensor and (not right_tensor or _is_scalar_like(right)):
        factor = scale_of(right) if not right_tensor else None
        if factor is not None and operator == "truediv":
            factor = Scale() / factor
        return a, factor
    if right_tensor and operator == "mul" and (not left_tensor or _is_scalar_like(left)):
        return b, scale_of(left) if not left_tensor else None
    return None


def _blank(tensor: TensorValue) -> bool:
    """A tensor of unknown shape that carries nothing the engine knows (computed from an unseen value
    by ops that keep no provenance)."""
    return tensor.shape is None and not tensor.tags


def _one_projection(a: TensorValue, b: TensorValue) -> ProjectionTag | None:
    """The projection an elementwise combination of two tensors is still the output of: the one
    both come from, or the one of the side that comes from a projection when the other does not
    (rotary tables, a gate). Two different projections make neither."""
    tags = [t.tag(ProjectionTag) for t in (a, b)]
    present = [tag for tag in tags if tag is not None]
    if not present or any(tag != present[0] for tag in present):
        return None
    return present[0]


def tensor_binary(
    interp: "Interpreter", operator: str, left: Value, right: Value, node: cst.CSTNode, frame: "Frame"
) -> Value:
    a, b = as_tensor(left), as_tensor(right)
    left_tensor, right_tensor = isinstance(left, TensorValue), isinstance(right, TensorValue)
    shape = _result_shape(interp, operator, left, right, a, b, node, frame)
    dtype = _result_dtype(operator, left, right, a, b)
    # The operands as given: a number beside position ids keeps them positions (``arange(t) + offset``).
    result = TensorValue(shape, dtype, lineage(left, right), node)
    split = next((t for t in (a, b) if t.has(LeadingOfUnknownRank) and t.shape == shape), None)
    if split is not None:
        result = result.with_tag(split.tag(LeadingOfUnknownRank))  # a norm of the split heads: the same leading dims
    if operator in ("add", "sub", "mul", "truediv") and left_tensor and right_tensor:
        for side, other in ((a, b), (b, a)):
            if side.has(TokenEmbeddingTag) and not other.has(TokenEmbeddingTag) and _broadcasts_over(side, other):
                # An embedding broadcast over the other's axes (a per-tile or per-example
                # embedding, ``(n, tiles, 1, d)`` added to patches, or one token's embedding
                # gating every position) is a bias or a gain, not the tokens.
                result = result.without(TokenEmbeddingTag)
    if operator == "mul" and not result.has(PositionTag) and any(_blank(t) for t in (a, b) if isinstance(t, TensorValue)):
        # Times a tensor the engine knows nothing of (``q_rot * cos`` with ``cos`` from rotary tables
        # passed in, unsqueezed): that may carry positions, as an unseen value may.
        result = result.with_tag(PositionTag(node, "unknown"))
    if operator in ("add", "sub") and not result.has(PositionTag) and any(unseen(v) for v in (left, right)):
        # Added to something the engine cannot see (a parameter, an unknown call's result): that
        # may carry positions (a positional table passed in, a relative bias), so say "maybe".
        result = result.with_tag(PositionTag(node, "unknown"))
    if operator in ("add", "sub") and left_tensor and right_tensor:
        result = replace(result, tags=result.tags + keep_scale(a, b))
    layer = a.tag(LayerOutputTag) or b.tag(LayerOutputTag)
    if layer is not None:
        result = result.with_tag(layer)  # a gated product (SwiGLU) keeps the layer width
    projection = _one_projection(a, b) if left_tensor and right_tensor else None
    if projection is not None:
        result = result.with_tag(projection)  # RoPE: ``q * cos + rotate_half(q) * sin`` is still q
    if operator in ("mul", "truediv"):
        scaled = _scaled_parameter(left, right, a, b, operator)
        if scaled is not None:
            result = result.with_tag(scaled)

    # Scaling of scores, or of a query / key before the product: a tensor times a non-tensor (a
    # number, a parameter, anything not known to be a tensor) or a 0-dim tensor.
    if operator in ("mul", "truediv"):
        scaled = _scaling(a, b, left, right, operator)
        if scaled is not None:
            tensor, factor = scaled
            other = right if tensor is a else left
            origin = other.node if isinstance(other, FloatValue) else None
            previous = tensor.tag(ScaleTag)
            written = None
            first = (factor, origin) if origin is not None and factor is not None else None
            if previous is not None:
                written = _times(previous.readable, factor) if previous.factor is None or factor is None else None
                factor = previous.factor * factor if previous.factor is not None and factor is not None else None
                first = previous.first
                if previous.readable is not None:
                    origin = None  # two applications make the factor: no one place to edit
                if origin is None and first is not None and factor is not None and factor == first[0]:
                    origin = first[1]  # later applications cancelled out: the first factor's place
            # The shape is ``_result_shape``'s: a number keeps the tensor's; a value that may be a
            # tensor (a parameter, an unknown) may broadcast it to something larger.
            kept = replace(tensor, shape=shape, dtype=dtype, node=node)
            if unseen(other) and not kept.has(PositionTag):
                kept = kept.with_tag(PositionTag(node, "unknown"))  # ``q * cos``: rotary tables passed in
            return kept.with_tag(ScaleTag(factor, node, origin, written, explicit=True, first=first))
        if operator == "truediv" and left_tensor and right_tensor and _nothing_known(b.shape):
            # ``q / scale`` with ``scale`` a tensor of unknown shape (a helper's
            # ``sqrt(tensor(d) * factor)``): a division is almost always a scale, so "maybe scaled",
            # whether ``q`` was scaled before or not (``q / scale / temperature``).
            result = result.with_tag(ScaleTag(None, node))
        elif left_tensor and right_tensor and (_written_scale(a, b) or _written_scale(b, a)):
            # A scaled tensor times or over another tensor (``q * d ** -0.5`` then ``/ temperature``
            # or ``* self.temp.exp()``, or a rotary table): still scaled, by a factor no longer
            # known. Only a scale the code wrote counts: hidden states "maybe scaled" by a residual
            # that added an attention output are not a scaled query, and an RMSNorm of them sets no
            # scale.
            result = result.with_tag(ScaleTag(None, node, explicit=True))

    scores_side = a if a.has(ScoresTag) else (b if b.has(ScoresTag) else None)
    if scores_side is not None and operator in ("add", "sub"):
        other = b if scores_side is a else a
        kept = replace(scores_side, shape=shape, dtype=dtype, node=node, tags=scores_side.tags + lineage(other))
        if result.has(PositionTag) and not kept.has(PositionTag):
            kept = kept.with_tag(result.tag(PositionTag))
        triangle = other.tag(TriangleTag)
        return with_mask(kept, MaskedTag(node, other, None, None, triangle is not None))
    if scores_side is not None and operator == "mul" and isinstance(left, TensorValue) and isinstance(right, TensorValue):
        other = b if scores_side is a else a
        kept = replace(scores_side, shape=shape, dtype=dtype, node=node)
        triangle = other.tag(TriangleTag)
        return with_mask(kept, MaskedTag(node, other, Scale(0.0), False, triangle is not None))

    # Probabilities masked after softmax keep their role (the rule reads the event).
    probs_side = a if a.has(ProbsTag) else (b if b.has(ProbsTag) else None)
    if probs_side is not None and operator in ("mul", "add", "sub") and left_tensor and right_tensor:
        other = b if probs_side is a else a
        kept = replace(probs_side, shape=shape, dtype=dtype, node=node)
        triangle = other.tag(TriangleTag)
        return with_mask(kept, MaskedTag(node, other, Scale(0.0) if operator == "mul" else None, False, triangle is not None))
    if a.has(ProbsTag) and operator in ("add", "sub") and left_tensor and unseen(right):
        # ``attn + attn_mask`` after the softmax, the mask a parameter: still the probabilities,
        # met by something that may be a mask or a bias (SC104 reads it).
        kept = replace(a, shape=shape, dtype=dtype, node=node)
        return with_mask(kept, MaskedTag(node, TensorValue(None, None, (), node), None, False, False))
    if a.has(ProbsTag) and operator == "truediv" and left_tensor:
        # Renormalised (``attn / attn.sum(-1, keepdim=True)``, after a gate mixed them with another
        # distribution): still the weights that reach the values.
        return replace(a, shape=shape, dtype=dtype, node=node)

    # A mask turned into an additive one: (1 - mask) * -1e9, mask * float("-inf"), ...
    for side, other in ((a, right), (b, left)):
        triangle = side.tag(TriangleTag)
        if triangle is not None and operator in ("mul", "sub", "add"):
            result = result.with_tag(replace(triangle, additive=True) if operator == "mul" else triangle)
            break

    # Positional information added to token embeddings.
    if operator == "add" and left_tensor and right_tensor:
        token_side = a if a.has(TokenEmbeddingTag) else (b if b.has(TokenEmbeddingTag) else None)
        if token_side is not None:
            other = b if token_side is a else a
            position = other.tag(PositionTag)
            parameter = other.tag(ParameterTag)
            if position is None and parameter is not None and parameter.per_position:
                # A per-position parameter added to token embeddings: a learned positional table.
                position = PositionTag(node, "learned", _sequence_length(other.shape), sliced=False)
            if position is not None:
                result = result.with_tag(PositionTag(node, "added", position.full_length, position.sliced))
    return result


def _positional_table(tensor: TensorValue) -> bool:
    """A positional table: its broadcast failure is the table's (SC302), not a residual's."""
    tag = tensor.tag(PositionTag)
    if tag is not None and tag.kind == "table":
        return True
    parameter = tensor.tag(ParameterTag)
    return parameter is not None and parameter.per_position


def _sequence_length(shape: Shape | None) -> object:
    if shape is None or shape.variadic or shape.rank is None or shape.rank < 2:
        return None
    return shape.dims[-2]


def _attention_weights(tensor: TensorValue) -> bool:
    """Attention scores, or the probabilities a softmax made of them: what is added to them or
    multiplied with them (a bias, a mask, a head mask) broadcasts into them, keeping their rank."""
    if tensor.has(ScoresTag):
        return True
    probs = tensor.tag(ProbsTag)
    return probs is not None and not probs.log and isinstance(probs.scores, TensorValue) and probs.scores.has(ScoresTag)


def _result_shape(
    interp: "Interpreter",
    operator: str,
    left: Value,
    right: Value,
    a: TensorValue,
    b: TensorValue,
    node: cst.CSTNode,
    frame: "Frame",
) -> Shape | None:
    left_tensor, right_tensor = isinstance(left, TensorValue), isinstance(right, TensorValue)
    if left_tensor and right_tensor:
        if a.shape is None or b.shape is None:
            known = a if a.shape is not None else b
            return broadcast_with_unknown(known.shape, _attention_weights(known) and operator in ("add", "sub", "mul"), operator == "mul")
        result = shape_ops.broadcast(a.shape, b.shape, frame.assumptions, presume_fit=interp.is_invented)
        problem = result.conflict
        if problem is None and operator in ("add", "sub") and result.mismatch is not None:
            # Provably different symbolic sizes (d vs 4 * d) broadcast only if one is 1: for a
            # residual connection that is a mismatch as well.
            _, x, y = result.mismatch
            if not x.is_const and not y.is_const:
                problem = result.mismatch
        if problem is not None:
            _, x, y = problem
            positional = any(_positional_table(t) for t in (a, b))
            # Scores combined with something of the wrong shape: an additive or multiplicative mask
            # (or bias) that does not fit the scores is a mask-shape problem, not a residual one.
            on_scores = operator in ("add", "sub", "mul") and (a.has(ScoresTag) or b.has(ScoresTag))
            kind = "positional-broadcast" if positional else "mask-broadcast" if on_scores else "broadcast"
            conflict(
                interp,
                kind,
                node,
                f"`{_SYMBOL.get(operator, operator)}` of shapes {a.shape} and {b.shape}: {x} vs {y} cannot broadcast",
                frame,
                operator,
            )
            if kind == "broadcast" and problem[0] == -1:
                _at_the_layer_out_of_width(interp, a, b, frame)
        return result.shape
    tensor = a if left_tensor else b
    other = right if left_tensor else left
    if is_scalar(other) or (isinstance(other, ConstValue) and isinstance(other.value, (int, float, bool))):
        return tensor.shape
    if isinstance(other, OptionalNumber):
        return tensor.shape  # ``scores / softcap`` with ``softcap: float | None``: a number here
    if _size_of_an_axis(other, tensor.shape):
        return tensor.shape
    if isinstance(other, Opaque) or other is UNKNOWN:
        # A parameter or the result of a call the engine cannot see (``self.act_fn(gate(x)) *
        # up(x)``): a number or a tensor, which broadcasts with this one. Added to attention scores
        # (``attn + rel_pos_bias``), it is a bias or a mask that fits them, as a tensor would.
        onto_scores = _attention_weights(tensor) and operator in ("add", "sub", "mul")
        return broadcast_with_unknown(tensor.shape, onto_scores, gain=operator == "mul")
    return None


def _size_of_an_axis(other: Value, shape: Shape | None) -> bool:
    """``other`` is a named unknown that is the size of one of the tensor's own axes
    (``(2 * (i // 2)) / d_model_size`` with ``i = arange(d_model_size)[None]``, CTRL's sinusoid
    table): a number, since it was read as a size, so it scales the tensor and keeps its shape."""
    if not isinstance(other, Opaque) or shape is None:
        return False
    size = other.as_dim()
    return any(dim == size for dim in shape.dims)


def _result_dtype(operator: str, left: Value, right: Value, a: TensorValue, b: TensorValue) -> str | None:
    if operator in ("and", "or", "xor"):
        if a.dtype == "bool" and (b.dtype == "bool" or isinstance(right, ConstValue)):
            return "bool"
        return a.dtype if a.dtype == b.dtype else None
    if operator == "truediv":
        return "float"
    dtypes = {t.dtype for t, v in ((a, left), (b, right)) if isinstance(v, TensorValue)}
    if isinstance(left, FloatValue) or isinstance(right, FloatValue):
        dtypes.add("float")
    if "float" in dtypes:
        return "float"
    if None in dtypes:
        return None
    if dtypes == {"bool"}:
        if isinstance(left, TensorValue) and isinstance(right, TensorValue):
            return "bool"  # bool (+|*) bool stays bool in torch
        return "int"  # bool (+|*) an int number is int64
    return promoted(dtypes)


_NEGATING = {"Equal": True, "NotEqual": False, "GreaterThan": False, "LessThanEqual": True}


def tensor_compare(
    interp: "Interpreter", operator: str, left: Value, right: Value, node: cst.CSTNode, frame: "Frame"
) -> Value:
    a, b = as_tensor(left), as_tensor(right)
    shape = None
    if isinstance(left, TensorValue) and isinstance(right, TensorValue):
        if a.shape is not None and b.shape is not None:
            shape = shape_ops.broadcast(a.shape, b.shape, frame.assumptions).shape
    else:
        shape = a.shape if isinstance(left, TensorValue) else b.shape
    result = TensorValue(shape, "bool", lineage(a, b), node)
    tensor, other = (a, right) if isinstance(left, TensorValue) else (b, left)
    triangle = tensor.tag(TriangleTag)
    zero = scale_of(other)
    if triangle is not None and zero is not None and zero.value == 0 and operator in _NEGATING:
        result = result.with_tag(replace(triangle, negated=triangle.negated != _NEGATING[operator]))
    elif triangle is not None and zero is not None and zero.value == 1 and operator in ("Equal",):
        result = result.with_tag(triangle)
    elif triangle is None and operator in ("Equal", "NotEqual") and is_scalar(other) and tensor.dtype == "int":
        result = result.with_tag(PaddingTag(node))  # integer ids == pad_id: a padding mask, not a causal one
    return result


_COMPARISON_METHODS = {"eq": "Equal", "ne": "NotEqual", "lt": "LessThan", "gt": "GreaterThan", "le": "LessThanEqual", "ge": "GreaterThanEqual"}


def _compare_method(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``ids.eq(pad_id)``, ``torch.ne(a, b)``: the comparison operators as calls."""
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    operator = _COMPARISON_METHODS.get(name)
    if operator is None:
        return UNKNOWN
    return tensor_compare(interp, operator, call.args[0] if call.args else UNKNOWN, call.arg(1, "other"), call.node, frame)


def _at_the_layer_out_of_width(interp: "Interpreter", a: TensorValue, b: TensorValue, frame: "Frame") -> None:
    """A residual ``x + self.proj(x)`` whose widths differ, where exactly one side is the output of
    a Linear the file built that is not known to keep the width it is given (``in_features`` is not
    ``out_features``: a layer that takes the residual's width and gives another, or a sublayer's
    last projection, ``inner -> 2 * dim``): the layer changes the stream's width, so the fix goes to
    its constructor, and the last conflict points there. A square layer added to a residual of
    another width (``features + self.out(h)``) leaves the residual suspect: reported at the
    addition."""
    layers = [_linear_out(interp, t) for t in (a, b)]
    if sum(layer is not None for layer in layers) != 1:
        return
    index = 0 if layers[0] is not None else 1
    site, label, width, fed = layers[index]  # type: ignore[misc]
    other = (b if index == 0 else a).shape.dim(-1)  # type: ignore[union-attr]
    if equal(width, fed, frame.assumptions) is Truth.TRUE:
        return  # a square layer beside a residual of another width: the residual may be the wrong one
    who = "module-level code" if frame.run.qualname == "<module>" else f"`{frame.run.qualname}`"
    recorded = interp.facts.conflicts[-1]
    interp.facts.conflicts[-1] = replace(
        recorded,
        at=site,
        detail=f"{label} outputs {width} features, and {who} adds them to a residual of {other} features "
        f"({recorded.detail})",
        hint=f"build {label} with out_features={other}, or add it to a tensor of width {width}",
    )


def _linear_out(interp: "Interpreter", tensor: TensorValue) -> "tuple[cst.CSTNode, str, object, object] | None":
    """(where it was built, its label, its width, its in_features) when ``tensor`` is, at its last
    axis, the output of an ``nn.Linear`` the file built (its ``out_features``)."""
    tag = tensor.tag(ProjectionTag)
    if tag is None or tensor.shape is None or not tensor.has(LayerOutputTag):
        return None
    from shapecheck.engine.ops.nn_modules import layer_built  # nn_modules registers after this module

    built = layer_built(interp, tag.ident)
    if built is None:
        return None  # a product with a parameter: no layer built
    width = dim_of(built[1].params.get("out_features"))
    last = tensor.shape.dim(-1)
    if width is None or last is None or width != last:
        return None
    return built[0], tensor.tag(LayerOutputTag).label, width, dim_of(built[1].params.get("in_features"))


def _written_scale(tensor: TensorValue, other: TensorValue | None = None) -> bool:
    """Scaled by a factor the code wrote on this tensor: readable, or an explicit product with a
    scalar the engine cannot read (``q * scale``, ``scale = default(self.scale, d ** -0.5)``).
    An unreadable factor on a positional table (Hugging Face's rotary ``cos = emb.cos() *
    self.attention_scaling``, then ``q * cos`` and ``rotate_half(q) * sin``) is the table's, not the
    query's scale: it is kept when it rides on the other side (local-attention's ``q * scale``, then
    the xpos table), not when it rides on a table known to hold positions (built from positions, not
"maybe positional") that is no projection's output."""
    tag = tensor.tag(ScaleTag)
    if tag is None:
        return False
    if tag.readable is not None:
        return True
    position = tensor.tag(PositionTag)
    if other is not None and position is not None and position.kind != "unknown" and not (
        tensor.has(ProjectionTag) or tensor.has(TokenEmbeddingTag)
    ):
        return False  # a table the engine knows to hold positions, scaled by its own factor
    return tag.explicit


def _times(a: Scale | None, b: Scale | None) -> Scale | None:
    """The product of the readable factors; None when neither is readable."""
    if a is None:
        return b
    return a if b is None else a * b


def _broadcasts_over(side: TensorValue, other: TensorValue) -> bool:
    """``side`` has a size-1 axis where ``other`` has a size known not to be 1 (aligned from the
    right): adding it repeats it along that axis."""
    if side.shape is None or other.shape is None:
        return False
    for mine, theirs in zip(reversed(side.shape.dims), reversed(other.shape.dims)):
        if mine.is_const and mine.value == 1 and not (theirs.is_const and theirs.value == 1):
            return True
    return False


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_compare_method, *_COMPARISON_METHODS)
