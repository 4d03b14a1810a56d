"""Op rules that contract tensors: matmul / bmm / mm / baddbmm, ``outer``, ``F.linear``, einsum and
einops (through ``patterns``), scaled dot-product attention, embedding lookups and losses. Matmuls
tag attention scores, attention outputs and projections by a parameter. Registered in ``ops.OPS``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck.engine.domain.tags import (
    AttentionOutputTag,
    KernelLayout,
    KeyTransposed,
    LayerOutputTag,
    ParameterTag,
    Reordered,
    WrittenSplit,
)
from shapecheck.engine.domain.values import (
    ConstValue,
    PositionTag,
    ProbsTag,
    ProjectionTag,
    ScaleTag,
    ScoresTag,
    TensorValue,
    TokenEmbeddingTag,
    Value,
    as_tensor,
    scale_of,
)
from shapecheck.engine.facts.layouts import misplaced_key_transpose
from shapecheck.engine.ops import nn_modules
from shapecheck.engine.ops.base import (
    loss_lineage,
    Call,
    _callee_name,
    _with_rank,
    attended,
    attention_query,
    causes_of,
    combined_scale,
    conflict,
    lineage,
    maybe_positional,
    promoted,
    register,
    unify,
    weight_projection,
)
from shapecheck.engine.ops.patterns import einops_call, einops_einsum, einsum
from shapecheck.engine.symbolic import shapes as shape_ops
from shapecheck.engine.symbolic.annotations import fresh_anonymous
from shapecheck.engine.domain.joins import is_path_join
from shapecheck.engine.symbolic.dims import Dim, Truth, equal, exceeds_by_head_count
from shapecheck.engine.symbolic.shapes import Shape

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter


# ------------------------------------------------------------------------------------ matmul


def _matmul(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    name = _callee_name(call.node) if isinstance(call.node, cst.Call) else ""
    # torch names the operands ``input`` / ``other`` (``matmul``), ``input`` / ``mat2`` (``bmm``, ``mm``).
    operands = (call.arg(0, "input"), call.arg(1, "mat2" if name in ("bmm", "mm") else "other"))
    a, b = as_tensor(operands[0]), as_tensor(operands[1])
    if name in ("bmm", "mm"):
        rank = 3 if name == "bmm" else 2
        a = replace(a, shape=_with_rank(interp, a.shape, rank))
        b = replace(b, shape=_with_rank(interp, b.shape, rank))
    return maybe_positional(matmul_values(interp, a, b, call.node, frame, "matmul"), operands, call.node)


def matmul_values(interp: "Interpreter", a: TensorValue, b: TensorValue, node: cst.CSTNode, frame: "Frame", name: str) -> TensorValue:
    shape = None
    if a.shape is not None and b.shape is not None:
        inner_a, inner_b = a.shape.dim(-1), b.shape.dim(-2) if (b.shape.rank or 2) >= 2 else b.shape.dim(-1)
        misplaced_key = misplaced_key_transpose(a, b, frame.assumptions)
        if misplaced_key is not None and equal(inner_a, inner_b, frame.assumptions) is Truth.UNKNOWN:
            # The shapes may still fit (the head count equal to the head dim), but the key's
            # feature axis is not the one contracted: scores over the wrong axes (SC504).
            conflict(
                interp,
                "key-transpose",
                node,
                f"matmul of {a.shape} and {b.shape}: the key is transposed over the wrong axes; "
                f"it contracts {inner_a} with {inner_b}",
                frame,
                name,
            )
            inner_a = inner_b = None
        elif (
            misplaced_key is None
            and not any(x.has(ProbsTag) or x.has(ScoresTag) for x in (a, b))
            and not _after_a_conflict(interp, a, b)
            and _untransposed_right(interp, a.shape, b.shape, frame, _activations_alike(interp, a, b, frame), b.has(ParameterTag))
        ):  # attention weights, or shapes that follow from a conflict, are not a query and a key
            conflict(
                interp,
                "matmul",
                node,
                f"matmul of {a.shape} and {b.shape}: both end in {inner_a}, so the right operand is not "
                f"transposed; it contracts {inner_a} with {inner_b}",
                frame,
                name,
            )
            inner_a = inner_b = None  # no assumption that the key length is the head dim
        if (
            inner_a is not None
            and inner_b is not None
            and not a.has(ProbsTag)
            and _head_dims_apart(interp, a, b, frame, (inner_a, inner_b), name)
        ):
            # ``q @ k.transpose(-2, -1)`` after a head split that used the head count once too
            # often: reported at that split; no assumption that the head count is 1.
            inner_a = inner_b = None
        if inner_a is not None and inner_b is not None and _token_contraction(a, b, inner_a, inner_b, frame):
            # A query's features against the token axis of a key that was reordered but not
            # transposed: a product over the wrong axes, whose shapes cannot be trusted downstream.
            inner_a = inner_b = None
            result = shape_ops.MatmulResult(None)
        else:
            if inner_a is not None and inner_b is not None:
                unify(frame, inner_a, inner_b)
            result = shape_ops.matmul(a.shape, b.shape, frame.assumptions, presume_fit=interp.is_invented)
        shape = result.shape
        if result.conflict is not None:
            left, right = result.conflict
            # Keys transposed over the wrong axes explain the mismatch (SC504, not SC505).
            misplaced = misplaced_key_transpose(a, b, frame.assumptions) is not None
            conflict(
                interp,
                "key-transpose" if misplaced else "matmul",
                node,
                f"matmul of {a.shape} and {b.shape}: inner dims {left} and {right} differ",
                frame,
                name,
            )
    elif a.shape is None and b.shape is not None and b.shape.rank is not None and b.shape.rank >= 2:
        # Only the right operand is known, (..., k, m): whatever the left's rank, the product ends in
        # m, after at least b's batch dims (a 1-D left operand drops its row dim).
        batch = tuple(fresh_anonymous() for _ in range(b.shape.rank - 2))
        shape = Shape(batch + b.shape.dims[-1:], variadic=True)
    tags: tuple[object, ...] = lineage(a, b)
    result_tensor = TensorValue(shape, a.dtype or b.dtype, tags, node)
    transposed = b.tag(KeyTransposed)
    if b.has(ProbsTag) and not a.has(ProbsTag):
        # ``v @ attn.transpose(-2, -1)``: values laid out channel first, ``(b, c, n)``, weighted by
        # the probabilities on the right (iformer). The axis contracted is the probabilities' -2,
        # their key axis -1 when the product transposed them.
        probs = b.tag(ProbsTag)
        key_axis = -1 if transposed is not None and transposed.source.tag(ProbsTag) == probs else -2
        if b.has(Reordered) and transposed is None:
            key_axis = None  # reordered otherwise: which axis is which is not followed here
        result_tensor = result_tensor.with_tag(AttentionOutputTag(node, probs.node, key_axis))
        result_tensor = attended(result_tensor, attention_query(b), probs.node)
    elif transposed is not None and not a.has(ProbsTag):
        head_dim = a.shape.dim(-1) if a.shape is not None else None
        if head_dim is None and b.shape is not None and b.shape.rank is not None and b.shape.rank >= 2:
            head_dim = b.shape.dim(-2)  # the contracted dim of the transposed key
        result_tensor = result_tensor.with_tag(ScoresTag(node, a, transposed.source, head_dim))
        # The key's scale once: taken from the transposed key (a scale applied before the
        # transpose rides on it), else from the key it transposes.
        factor = combined_scale(a, b if b.has(ScaleTag) else transposed.source)
        if factor is not None:
            result_tensor = result_tensor.with_tag(factor)
    elif a.has(ProbsTag):
        result_tensor = result_tensor.with_tag(AttentionOutputTag(node, a.tag(ProbsTag).node, -1))
        result_tensor = attended(result_tensor, attention_query(a), a.tag(ProbsTag).node)
    elif _channel_first_scores(a, b):
        # ``q.transpose(-2, -1) @ k`` with ``q`` and ``k`` laid out ``(..., d, n)``, features before
        # tokens (a conv's channels, EfficientFormer's and iformer's attention): the query is the
        # operand transposed, the product is ``q^T k`` over the features, as ``q @ k^T`` is.
        head_dim = a.shape.dim(-1) if a.shape is not None and a.shape.rank != 0 else None
        if head_dim is None and b.shape is not None and b.shape.rank is not None and b.shape.rank >= 2:
            head_dim = b.shape.dim(-2)
        result_tensor = result_tensor.with_tag(ScoresTag(node, a, b, head_dim))
        factor = combined_scale(a, b)
        if factor is not None:
            result_tensor = result_tensor.with_tag(factor)
    weight = weight_projection(a, b, node)
    if weight is not None:
        result_tensor = result_tensor.with_tag(weight)
    return result_tensor


def _channel_first_scores(a: TensorValue, b: TensorValue) -> bool:
    """``a.transpose(-2, -1) @ b`` of two activations, neither transposed back nor already
    attention scores or weights, nor a module's weight: a product over the features of two
    channel-first tensors."""
    if not a.has(KeyTransposed) or b.has(KeyTransposed):
        return False
    if any(x.has(ProbsTag) or x.has(ScoresTag) or x.has(ParameterTag) for x in (a, b)):
        return False
    return b.shape is None or b.shape.rank is None or b.shape.rank >= 2


def _token_contraction(a: TensorValue, b: TensorValue, inner_a: Dim, inner_b: Dim, frame: "Frame") -> bool:
    """``q @ k.transpose(1, 2)``: the right operand reordered with its features still last, so the
    axis contracted is one of its token or head axes, not provably the left operand's feature size
    (the left operand is not attention weights, whose last axis is key positions)."""
    layout = b.tag(Reordered)
    if layout is None or layout.rank < 3 or layout.order[-1] != layout.rank - 1 or a.has(ProbsTag):
        return False
    return equal(inner_a, inner_b, frame.assumptions) is not Truth.TRUE


def _after_a_conflict(interp: "Interpreter", *tensors: TensorValue) -> bool:
    """Computed from an op whose shapes conflicted (its ``CauseTag`` names it): their shapes are the
    echo of that finding. A concatenation alone (rotary's ``rotate_half`` joins the two halves it
    cut) is not enough."""
    suspects = causes_of(*tensors)
    return bool(suspects) and any(recorded.node in suspects for recorded in interp.facts.conflicts)


def _untransposed_right(
    interp: "Interpreter", a: Shape, b: Shape, frame: "Frame", alike: bool, weight: bool
) -> bool:
    """``q @ k`` with ``q`` (..., t, d) and ``k`` (..., s, d): both operands end in the same dim,
    and the right one's rows are another size the code named, so the product runs only if the key
    length happens to equal the head dim: the right operand was meant to be transposed. The rows
    must be a size the code named (the head dim may be a number, or differ between paths). A square right operand,
    ``(d, d)``, or rows of unknown size stay unjudged."""
    if len(a.dims) < 2 or len(b.dims) < 2:
        return False
    last_a, last_b, rows_b = a.dims[-1], b.dims[-1], b.dims[-2]
    if equal(last_a, last_b, frame.assumptions) is not Truth.TRUE:
        return False
    if equal(last_a, rows_b, frame.assumptions) is not Truth.UNKNOWN:
        return False
    rows_a = a.dims[-2]  # the query's own rows are known too: a made-up shape says nothing
    rows_known = _rows(interp, rows_b) or alike  # a key of the query's layout: rows are positions
    # Against a parameter (``x @ self.embedding.weight``, rows the constructor named), the left
    # operand's rows may be any count (``x.view(-1, d)``): the weight is not a query.
    # Two layer outputs laid out alike whose rows are one and the same size (pieces of one tensor:
    # ``q, k, v = qkv.chunk(3, dim=-1)`` of ``(N, h, H * W, 3 * d)``): the rows are that tensor's
    # token axis in both, even when the engine made its size up (a conv's output of unseen size).
    same_rows = alike and rows_a == rows_b
    rows_a_known = rows_a.is_const or _rows(interp, rows_a) or (weight and _named(interp, rows_b)) or same_rows
    return _feature_size(interp, last_a) and rows_known and rows_a_known


def _activations_alike(interp: "Interpreter", a: TensorValue, b: TensorValue, frame: "Frame") -> bool:
    """Two layer outputs laid out alike, ``(bsz * heads, t, d)`` and ``(bsz * heads, s, d)``: the same
    rank (3 or more) and the same batch dims, sizes the code computed. The right one's rows are then
    key positions even where the engine lost their count (a cache joined on some paths), never a
    square weight's rows."""
    if a.shape is None or b.shape is None or a.shape.variadic or b.shape.variadic:
        return False
    if a.shape.rank != b.shape.rank or (a.shape.rank or 0) < 3:
        return False
    if not all(x.has(LayerOutputTag) and not x.has(ParameterTag) for x in (a, b)):
        return False
    batch = list(zip(a.shape.dims[:-2], b.shape.dims[:-2]))
    return all(
        equal(left, right, frame.assumptions) is Truth.TRUE and (left.is_const or _named(interp, left)) for left, right in batch
    )


def _feature_size(interp: "Interpreter", dim: Dim) -> bool:
    """The size both operands end in: a number, or sizes the code computed, on every path
    (``head_dim or dim // num_heads`` joins two named sizes: still the head dim, not a made-up one)."""
    return dim.is_const or (bool(dim.symbols()) and not interp.facts.made_up(dim))


def _rows(interp: "Interpreter", dim: Dim) -> bool:
    """Rows a query or key is known to have: a size the code named, or a sequence length of the
    head layout the code spells out (``Interpreter.sequence_sizes``: made up, but a length, not a
    feature width)."""
    return _named(interp, dim) or interp.is_sequence_length(dim)


def _named(interp: "Interpreter", dim: Dim) -> bool:
    """A size the code named (``N``, ``C // H``, ``config.hidden_size``): not a number, not one the
    engine made up (``FileFacts.made_up``), and not a join of two paths' sizes (``a|b``)."""
    if dim.is_const or not dim.symbols():
        return False
    return not interp.facts.made_up(dim) and not is_path_join(dim)


def _baddbmm(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    result = matmul_values(interp, call.tensor(1, "batch1"), call.tensor(2, "batch2"), call.node, frame, "baddbmm")
    alpha = call.kwargs.get("alpha")
    if alpha is not None and result.has(ScoresTag):
        result = result.with_tag(ScaleTag(scale_of(alpha), call.node))
    return result


def _outer(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    a, b = call.tensor(0), call.tensor(1)
    shape = None
    if a.shape is not None and b.shape is not None and a.shape.rank == 1 and b.shape.rank == 1:
        shape = Shape((a.shape.dims[0], b.shape.dims[0]))
    # torch promotes: ``outer(arange(n), inv_freq)`` (int64 and float32) is float32.
    return TensorValue(shape, promoted({a.dtype, b.dtype}), lineage(a, b), call.node)


def _linear(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    x, weight = call.tensor(0, "input"), call.tensor(1, "weight")

    out_features = in_features = None
    if weight.shape is not None and weight.shape.rank == 2:
        out_features, in_features = weight.shape.dims
    result = nn_modules.linear_output(interp, x, in_features, out_features, call.node, frame, "F.linear")
    parameter = weight.tag(ParameterTag)
    if parameter is not None:
        rows = (parameter.rows,) if parameter.rows is not None else ()
        result = result.with_tag(ProjectionTag(parameter.ident, rows, x, call.node))  # type: ignore[arg-type]
    return result


# ------------------------------------------------------------------------------------ patterns


def _einsum(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    operands = [value for value in call.args if not (isinstance(value, ConstValue) and isinstance(value.value, str))]
    return maybe_positional(einsum(interp, call, frame), operands, call.node)


def _einops_einsum(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    operands = [value for value in call.args if not (isinstance(value, ConstValue) and isinstance(value.value, str))]
    return maybe_positional(einops_einsum(interp, call, frame), operands, call.node)


def _einops(interp: "Interpreter", call: Call, frame: "Frame") -> Value:

    return einops_call(interp, call, frame)


# ------------------------------------------------------------------------------------ attention, embeddings, losses


def _sdpa(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    q, k, v = call.tensor(0, "query"), call.tensor(1, "key"), call.tensor(2, "value")
    _head_dims_apart(interp, q, k, frame)
    shape = None
    if q.shape is not None and v.shape is not None and not q.shape.variadic and not v.shape.variadic:
        shape = Shape(q.shape.dims[:-1] + v.shape.dims[-1:])
    out = TensorValue(shape, q.dtype, lineage(q, k, v), call.node).with_tag(AttentionOutputTag(call.node))
    return attended(out, q, call.node).with_tag(KernelLayout(call.node))  # its strides depend on the backend


def _head_dims_apart(
    interp: "Interpreter",
    q: TensorValue,
    k: TensorValue,
    frame: "Frame",
    dims: "tuple[Dim | None, Dim | None] | None" = None,
    op: str = "scaled_dot_product_attention",
) -> bool:
    """``scaled_dot_product_attention`` contracts the query's and the key's last dims (``q @ k``
    the query's last with the transposed key's rows, ``dims``): when one is the other times a
    power of the head count (once every floor division is exact) and a head split wrote it
    (``view(b, -1, h, h * (e // h))``, ``WrittenSplit``), that split used the head count once too
    often. Reported at the view, as SC403 reports a view whose sizes do not fit. True when found."""
    if dims is not None:
        qd, kd = dims
    else:
        qd = q.shape.dim(-1) if q.shape is not None else None
        kd = k.shape.dim(-1) if k.shape is not None else None
    if qd is None or kd is None or interp.facts.made_up(qd) or interp.facts.made_up(kd):
        return False
    for wider, width, other, name in ((q, qd, kd, "query"), (k, kd, qd, "key")):
        split = wider.tag(WrittenSplit)
        if split is None or split.size != width or not exceeds_by_head_count(width, other, frame.assumptions):
            continue
        conflict(
            interp,
            "reshape",
            split.node,
            f"this view makes the {name}'s head dim {width}, the {'key' if name == 'query' else 'query'}'s "
            f"{other} times a power of the head count: {op} contracts the two",
            frame,
            "view",
        )
        return True
    return False


def _embedding_fn(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    ids, weight = call.tensor(0), call.tensor(1, "weight")
    shape = None
    if weight.shape is not None and weight.shape.rank == 2:
        if ids.shape is not None:
            shape = Shape(ids.shape.dims + weight.shape.dims[1:], ids.shape.variadic)
        else:
            shape = Shape(weight.shape.dims[1:], variadic=True)  # whatever the ids, (..., width)
    if ids.has(PositionTag):
        rows = weight.shape.dims[0] if weight.shape is not None and weight.shape.rank == 2 else None
        return TensorValue(shape, "float", (PositionTag(call.node, "embedding", rows, sliced=True),), call.node)
    width = weight.shape.dims[1] if weight.shape is not None and weight.shape.rank == 2 else None
    return TensorValue(shape, "float", (TokenEmbeddingTag(call.node, width),), call.node)


def _cross_entropy(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return TensorValue(None, "float", loss_lineage(call.tensor(0, "input")), call.node)


def _regression_loss(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``F.mse_loss(pred, target)`` and the like: a loss of the prediction (argument 0) against the
    target (argument 1), recorded so that the rules can compare the two (SC603)."""
    return TensorValue(None, "float", loss_lineage(call.tensor(0, "input")), call.node)


def _multinomial(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    return TensorValue(None, "int", (), call.node)


# ------------------------------------------------------------------------------------ registration
# One line per rule, after the definitions, so that the registry holds each module-level function (no
# decorator: mutation testing can then reach the rule bodies, see benchmarks/mutation_testing.py).

register(_matmul, "matmul", "bmm", "mm")
register(_baddbmm, "baddbmm")
register(_outer, "outer", "ger")
register(_linear, "linear")
register(_einsum, "einsum")
register(_einops_einsum, "einops.einsum")
register(_einops, "einops.rearrange", "einops.repeat", "einops.reduce")
register(_sdpa, "scaled_dot_product_attention")
register(_embedding_fn, "embedding")
register(_cross_entropy, "cross_entropy", "nll_loss")
register(_regression_loss, "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")
register(_multinomial, "multinomial")
