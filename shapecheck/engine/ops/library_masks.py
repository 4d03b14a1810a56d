"""Op rules for the attention-mask builders of Hugging Face transformers, whose code the engine
does not read (``transformers.masking_utils``, ``modeling_attn_mask_utils``).

``create_bidirectional_mask(config=..., input_embeds=..., attention_mask=...)`` turns the padding
mask a caller gives into the 4-D mask the attention implementation wants. It hides padding and
nothing else: it carries no positions and no causal triangle. Without this rule its result is an
unknown call's, which "may carry positions" (a relative bias passed in), and keeps SC303 from
seeing token embeddings that reach attention with no positional encoding.

The causal builders (``create_causal_mask`` and its kinds) stay unknown calls: a causal mask does
tell positions apart, and its layout (boolean or additive, which side is True) depends on the
attention implementation. Registered in ``ops.OPS`` on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shapecheck.engine.domain.tags import PaddingTag
from shapecheck.engine.domain.values import TensorValue, Value
from shapecheck.engine.ops.base import Call, register

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.engine.interpreter.core import Frame, Interpreter

#: Qualified names (after the package, or after the dots of a relative import inside it) of the
#: mask builders, and the op that models each.
MASK_BUILDERS = {
    "masking_utils.create_bidirectional_mask": "transformers.padding_mask",
    "modeling_attn_mask_utils._prepare_4d_attention_mask": "transformers.padding_mask",
    "modeling_attn_mask_utils._prepare_4d_attention_mask_for_sdpa": "transformers.padding_mask",
}


def library_op(qualname: str) -> str | None:
    """The op of a transformers mask builder named ``qualname``: imported absolutely
    (``transformers.masking_utils.create_bidirectional_mask``) or relatively from inside the package
    (``...masking_utils.create_bidirectional_mask``)."""
    if qualname.startswith("transformers."):
        local = qualname[len("transformers.") :]
    elif qualname.startswith("."):
        local = qualname.lstrip(".")
    else:
        return None
    return MASK_BUILDERS.get(local)


def _padding_mask(interp: "Interpreter", call: Call, frame: "Frame") -> Value:
    """A mask that hides padding: its layout depends on the attention implementation (4-D float or
    boolean, or None when nothing is padded), so only what it is is known."""
    return TensorValue(None, None, (PaddingTag(call.node),), call.node)


register(_padding_mask, "transformers.padding_mask")
