"""Which attention sites must be causal, and which are causally masked: facts for SC204.

A site is an attention computation: the softmax of attention scores, a
``scaled_dot_product_attention`` call, an ``nn.MultiheadAttention`` call, or the self-attention of
an ``nn.Transformer*`` layer. Whether a site must be causal is read from the data flow, never from a
name:

- its output reaches tokens sampled one at a time (``torch.multinomial`` over the logits it feeds);
- its output reaches a next-token loss: cross-entropy whose logits or targets are shifted by one
  position (``logits[:, :-1]`` against ``ids[:, 1:]``);
- another attention path of the same module over the same query applies a causal mask (a fused
  kernel and its fallback must agree).

The sites an output passed through are carried by ``StreamTag`` along the query stream only, so the
encoder of an encoder-decoder model, whose output reaches the logits as keys and values, is never
taken for causal.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from shapecheck.engine.domain.tags import PaddingTag, ShiftTag, StreamTag
from shapecheck.engine.domain.values import ConstValue, MaskedTag, ProjectionTag, ScoresTag, TensorValue, TriangleTag
from shapecheck.engine.facts.queries import given
from shapecheck.engine.facts.records import FileFacts, OpEvent

#: nn layers whose self-attention takes a mask: (mask argument, its position counting the module
#: as argument 0, the is_causal argument, its position).
LAYER_MASKS = {
    "TransformerEncoder": ("mask", 2, "is_causal", 4),
    "TransformerEncoderLayer": ("src_mask", 2, "is_causal", 4),
    "TransformerDecoder": ("tgt_mask", 3, "tgt_is_causal", 7),
    "TransformerDecoderLayer": ("tgt_mask", 3, "tgt_is_causal", 7),
}

LOSSES = ("cross_entropy", "nll_loss", "module.CrossEntropyLoss", "module.NLLLoss")


@dataclass(frozen=True)
class Evidence:
    """Why a site must be causal: a sentence for the message, and the node it was seen at."""

    reason: str
    node: cst.CSTNode


def flag_set(event: OpEvent, index: int, name: str) -> bool:
    """An is_causal-style flag passed with a value other than a literal False / None."""
    if not event.has_arg(index, name):
        return False
    value = event.arg(index, name)
    return not (isinstance(value, ConstValue) and value.value in (False, None))


def _mask_is_causal(mask: object) -> bool | None:
    """True for a triangular mask, False for a known padding mask, None when it cannot be told."""
    if not isinstance(mask, TensorValue):
        return None
    if mask.has(TriangleTag):
        return True
    if mask.has(PaddingTag):
        return False
    return None


def causally_masked(event: OpEvent) -> bool | None:
    """Whether this attention site is masked causally: True, False (no mask, or only padding masks),
    or None when a mask of unknown kind is applied (which may well be causal)."""
    if event.op in ("softmax", "log_softmax"):
        tag = event.tensor(0, "input").tag(MaskedTag)
        if tag is None:
            return False
        kinds = [True if m.causal else _mask_is_causal(m.mask) for m in tag.chain()]
        if any(kind is True for kind in kinds):
            return True
        return None if any(kind is None for kind in kinds) else False
    if event.op == "scaled_dot_product_attention":
        mask_index, mask_name, flag_index, flag_name = 3, "attn_mask", 5, "is_causal"
    elif event.op == "module.MultiheadAttention":
        mask_index, mask_name, flag_index, flag_name = 6, "attn_mask", 8, "is_causal"
    else:
        mask_name, mask_index, flag_name, flag_index = LAYER_MASKS[event.op.split(".", 1)[1]]
    if flag_set(event, flag_index, flag_name):
        return True
    if not given(event, mask_index, mask_name):
        return False
    return _mask_is_causal(event.arg(mask_index, mask_name))


def _sites(tensor: TensorValue) -> frozenset:
    tag = tensor.tag(StreamTag)
    return tag.sites if tag is not None else frozenset()


def causal_evidence(facts: FileFacts, sites: list[OpEvent]) -> dict[cst.CSTNode, Evidence]:
    """For each attention site (by node) that must be causal, why."""
    found: dict[cst.CSTNode, Evidence] = {}
    for event in facts.events_of("multinomial"):
        for site in _sites(event.tensor(0, "input")):
            found.setdefault(site, Evidence("its output feeds tokens sampled one at a time (torch.multinomial)", event.node))
    for op in LOSSES:
        for event in facts.events_of(op):
            offset = 1 if op.startswith("module.") else 0
            logits, target = event.tensor(offset, "input"), event.tensor(offset + 1, "target")
            if not (logits.has(ShiftTag) or target.has(ShiftTag)):
                continue
            for site in _sites(logits):
                found.setdefault(site, Evidence("its output feeds a next-token loss (logits and targets shifted by one)", event.node))
    # Sibling paths: two attention paths of one module over the same query (a fused kernel and its
    # fallback) must agree; if one is masked causally, so must the other be.
    masked = [(event, _query(event)) for event in sites if causally_masked(event) is True]
    for event in sites:
        cls = event.run.cls if event.run is not None else None
        query = _query(event)
        if cls is None or query is None:
            continue
        for other, other_query in masked:
            other_cls = other.run.cls if other.run is not None else None
            if other.node is not event.node and other_cls is cls and _same_source(query, other_query):
                found.setdefault(event.node, Evidence(f"another attention path of `{cls.name}` over the same query applies a causal mask", other.node))
                break
    return found


def _query(event: OpEvent) -> TensorValue | None:
    if event.op in ("softmax", "log_softmax"):
        tag = event.tensor(0, "input").tag(ScoresTag)
        return tag.query if tag is not None and isinstance(tag.query, TensorValue) else None
    if event.op == "scaled_dot_product_attention":
        return event.tensor(0, "query")
    return event.tensor(1, "query")


def _same_source(a: TensorValue | None, b: TensorValue | None) -> bool:
    """The same tensor, or pieces of the same projection (``q`` of one ``c_attn`` split)."""
    if a is None or b is None:
        return False
    if a is b:
        return True
    pa, pb = a.tag(ProjectionTag), b.tag(ProjectionTag)
    return pa is not None and pb is not None and pa.ident is pb.ident and pa.part == pb.part
