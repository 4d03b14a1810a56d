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
Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import PaddingTag
from shapecheck.engine.domain.values import ConstValue, TensorValue, Value
from shapecheck.engine.ops.arithmetic import tensor_binary
from shapecheck.engine.ops.base import Call, register, unknown_call

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


register(_padding_mask, "transformers.padding_mask")
register(_maybe_add_mask, "timm.maybe_add_mask")
