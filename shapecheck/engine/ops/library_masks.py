"""Op rules for the attention-mask builders of Hugging Face transformers, whose code the engine
does not read (``transformers.masking_utils``, ``modeling_attn_mask_utils``).

``create_bidirectional_mask(config=..., input_embeds=..., attention_mask=...)`` turns the padding
mask a caller gives into the 4-D mask the attention implementation wants. It hides padding and
nothing else: it carries no positions and no causal triangle. Without this rule its result is an
unknown call's, which "may carry positions" (a relative bias passed in), and keeps SC303 from
seeing token embeddings that reach attention with no positional encoding.

The causal builders (``create_causal_mask`` and its kinds) stay unknown calls: a causal mask does
tell positions apart, and its layout (boolean or additive, which side is True) depends on the
attention implementation.

timm's ``maybe_add_mask(scores, attn_mask=None)`` (``timm/layers/attention.py``, read in timm
1.0.31: ``return scores if attn_mask is None else scores + attn_mask``) is that addition: the
scores stay scores, met by an additive mask, so what reaches the softmax after it is still judged
(SC101 / SC102 on EVA's and ViT's eager paths). Before, it was an unknown call, "maybe scaled".

timm's rotary helpers (``timm/layers/pos_embed_sincos.py``, read in timm 1.0.31):
``apply_rot_embed(x, sin_emb, cos_emb, half=False)`` is ``(x * cos_emb + rot(x) * sin_emb).to(x.dtype)``
(``rot`` / ``rope_rotate_half`` move and negate x's own elements), and ``apply_rot_embed_cat(x, emb,
half=False)`` is the same with ``sin_emb, cos_emb = emb.chunk(2, -1)``. The result is x rotated: x's
shape, dtype and projection, times tables (tensors, never a scalar) that carry positions. So a query
that went through it is not "maybe scaled", as it was after an unknown call: its missing scale is
judged (SC101 on EVA). The tables' own shapes are not read (they broadcast into x by contract).
Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import PaddingTag
from shapecheck.engine.domain.values import ConstValue, TensorValue, Value
from shapecheck.engine.ops.arithmetic import tensor_binary
from shapecheck.engine.ops.base import Call, lineage, register, unknown_call

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

#: Qualified names (after the package, or after the dots of a relative import inside it) of the
#: mask builders, and the op that models each.
MASK_BUILDERS = {
    "masking_utils.create_bidirectional_mask": "transformers.padding_mask",
    "modeling_attn_mask_utils._prepare_4d_attention_mask": "transformers.padding_mask",
    "modeling_attn_mask_utils._prepare_4d_attention_mask_for_sdpa": "transformers.padding_mask",
}


#: timm's helpers, by their absolute names and relative to the package (``from ..layers import``).
TIMM_HELPERS = {
    "layers.maybe_add_mask": "timm.maybe_add_mask",
    "layers.attention.maybe_add_mask": "timm.maybe_add_mask",
    "layers.apply_rot_embed": "timm.apply_rot_embed",
    "layers.pos_embed_sincos.apply_rot_embed": "timm.apply_rot_embed",
    "layers.apply_rot_embed_cat": "timm.apply_rot_embed_cat",
    "layers.pos_embed_sincos.apply_rot_embed_cat": "timm.apply_rot_embed_cat",
}


def library_op(qualname: str) -> str | None:
    """The op of a transformers mask builder named ``qualname``: imported absolutely
    (``transformers.masking_utils.create_bidirectional_mask``) or relatively from inside the package
    (``...masking_utils.create_bidirectional_mask``)."""
    if qualname.startswith("timm."):
        return TIMM_HELPERS.get(qualname[len("timm.") :])
    if qualname.startswith("transformers."):
        local = qualname[len("transformers.") :]
    elif qualname.startswith("."):
        local = qualname.lstrip(".")
    else:
        return None
    return MASK_BUILDERS.get(local) or TIMM_HELPERS.get(local)


def _padding_mask(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """A mask that hides padding: its layout depends on the attention implementation (4-D float or
    boolean, or None when nothing is padded), so only what it is is known."""
    return TensorValue(None, None, (PaddingTag(call.node),), call.node)


def _maybe_add_mask(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``scores if attn_mask is None else scores + attn_mask`` (the mask left out is None)."""
    scores, mask = call.arg(0, "scores"), call.arg(1, "attn_mask")
    if not isinstance(scores, TensorValue):
        return unknown_call(call)
    if not call.has_arg(1, "attn_mask") or (isinstance(mask, ConstValue) and mask.value is None):
        return scores
    return tensor_binary(interp, "add", scores, mask, call.node, frame)


def _apply_rot_embed(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``apply_rot_embed(x, sin_emb, cos_emb)``: ``x * cos_emb + rot(x) * sin_emb`` in x's dtype."""
    return _rotated(interp, call, frame, [call.arg(1, "sin_emb"), call.arg(2, "cos_emb")])


def _apply_rot_embed_cat(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """``apply_rot_embed_cat(x, emb)``: the same, with ``sin_emb, cos_emb = emb.chunk(2, -1)``."""
    return _rotated(interp, call, frame, [call.arg(1, "emb")])


def _rotated(interp: "Interpreter", call: Call, frame: "Frame", tables: list[Value]) -> Value:
    x = call.arg(0, "x")
    if not isinstance(x, TensorValue):
        return unknown_call(call)
    # The tables are tensors by contract (a scalar would be no rotation): a tensor of unknown shape
    # that keeps what they carry (positions), so the product is a rotary one, never a scale.
    table = TensorValue(None, None, lineage(*tables), call.node)
    turned = tensor_binary(interp, "mul", x, table, call.node, frame)
    if not isinstance(turned, TensorValue):
        return unknown_call(call)
    return replace(turned, shape=x.shape, dtype=x.dtype)


register(_apply_rot_embed, "timm.apply_rot_embed")
register(_apply_rot_embed_cat, "timm.apply_rot_embed_cat")
register(_padding_mask, "transformers.padding_mask")
register(_maybe_add_mask, "timm.maybe_add_mask")
