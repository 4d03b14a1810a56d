"""SC204 missing-causal-mask."""

from __future__ import annotations

import re
from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import (
    UNKNOWN_TENSOR,
    ClassInfo,
    ConstValue,
    MaskedTag,
    ProbsTag,
    ScoresTag,
    dim_of,
)
from shapecheck.engine.facts.queries import (
    attention_softmaxes,
    by_node,
    enclosing_classes,
    given,
    self_attention,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

CAUSAL_NAME = re.compile(r"causal|decoder|gpt|autoregressive|(?<![a-z])lm(?![a-z])|languagemodel|LM$", re.IGNORECASE)
CAUSAL_DOC = re.compile(r"\b(causal|decoder|auto-?regressive|next[- ]token|language model)\b", re.IGNORECASE)
NOT_CAUSAL = re.compile(r"encoder|bert|vit|cross|bidirectional|non-?causal", re.IGNORECASE)


class MissingCausalMask(Rule):
    """Self-attention of a decoder or causal language model with no causal mask.

    ## What it does
    Finds self-attention (query and key projected from the same tensor) that applies no mask at
    all — no `masked_fill` or additive mask on the scores, no `attn_mask` and no `is_causal` for
    `F.scaled_dot_product_attention` or `nn.MultiheadAttention` — inside a model that the file shows
    to be causal, and says which evidence it used: the module or a module that calls it is named or
    documented as a decoder / causal / GPT model, or the model maps to logits over its vocabulary and
    is trained with next-token cross-entropy or sampled from token by token. Encoders and
    cross-attention are left alone.

    ## Why is this bad?
    Without the mask every position sees the tokens after it during training. The loss falls to
    nearly zero by copying the next token, and the model generates garbage at inference time, when
    there is no future to copy. Nothing crashes.

    ## Example
    ```python
    class DecoderBlock(nn.Module):
        def forward(self, x):
            out = F.scaled_dot_product_attention(q, k, v)
    ```

    ## Use instead
    ```python
    class DecoderBlock(nn.Module):
        def forward(self, x):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ```
    """

    code = "SC204"
    name = "missing-causal-mask"
    severity = Severity.ERROR
    summary = "Decoder / causal-LM self-attention with no causal masking."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        sites = (
            attention_softmaxes(facts)
            + facts.events_of("scaled_dot_product_attention")
            + facts.events_of("module.MultiheadAttention")
            + [e for kind in LAYER_MASKS for e in facts.events_of("module." + kind)]
        )
        lm_evidence = _language_model_evidence(facts)
        # A mask applied after the softmax is a mask in the wrong place (SC104), not a missing one.
        masked_later = {
            tag.node
            for event in facts.events_of("masked_fill") + facts.events_of("binary")
            if (tag := event.tensor(0, "input").tag(ProbsTag)) is not None
            or (tag := event.tensor(1).tag(ProbsTag)) is not None
        }
        for node, events in by_node(sites).items():
            if node in masked_later or any(_masked(event) for event in events):
                continue
            for event in events:
                if not _is_self_attention(event):
                    continue
                found = _evidence(enclosing_classes(event.run), lm_evidence)
                if found is None:
                    continue
                cls, evidence = found
                evidence = evidence.replace(f"`{cls.name}`", f"`{cls.name}`{facts.elsewhere(cls.node.name, node)}", 1)
                yield Report(
                    node,
                    f"self-attention with no causal mask in a causal model ({evidence}): every position can "
                    "attend to the tokens after it",
                    hint="mask the future: masked_fill(torch.triu(ones(T, T), 1).bool(), -inf), or is_causal=True",
                )
                break


#: nn layers whose self-attention takes a mask: (mask argument, its position counting the module
#: as argument 0, the is_causal argument, its position).
LAYER_MASKS = {
    "TransformerEncoder": ("mask", 2, "is_causal", 4),
    "TransformerEncoderLayer": ("src_mask", 2, "is_causal", 4),
    "TransformerDecoder": ("tgt_mask", 3, "tgt_is_causal", 7),
    "TransformerDecoderLayer": ("tgt_mask", 3, "tgt_is_causal", 7),
}


def _flag_set(event: OpEvent, index: int, name: str) -> bool:
    """An is_causal-style flag passed with a value other than a literal False / None."""
    if not event.has_arg(index, name):
        return False
    value = event.arg(index, name)
    return not (isinstance(value, ConstValue) and value.value in (False, None))


def _masked(event: OpEvent) -> bool:
    if event.op in ("softmax", "log_softmax"):
        return event.tensor(0, "input").has(MaskedTag)
    if event.op == "scaled_dot_product_attention":
        return given(event, 3, "attn_mask") or _flag_set(event, 5, "is_causal")
    if event.op == "module.MultiheadAttention":
        return given(event, 6, "attn_mask") or _flag_set(event, 8, "is_causal")
    mask_name, mask_index, flag_name, flag_index = LAYER_MASKS[event.op.split(".", 1)[1]]
    return given(event, mask_index, mask_name) or _flag_set(event, flag_index, flag_name)


def _is_self_attention(event: OpEvent) -> bool:
    if event.op in ("softmax", "log_softmax"):
        tag = event.tensor(0, "input").tag(ScoresTag)
        relation = self_attention(tag.query, tag.key)
    elif event.op == "scaled_dot_product_attention":
        relation = self_attention(event.tensor(0, "query"), event.tensor(1, "key"))
    elif event.op == "module.MultiheadAttention":
        query, key = event.arg(1, "query"), event.arg(2, "key")
        return query is key and query is not UNKNOWN_TENSOR and not isinstance(query, ConstValue)
    else:
        return True  # the self-attention of a Transformer layer
    return relation.known and relation.same


def _evidence(classes: list[ClassInfo], lm_evidence: dict[str, str]) -> tuple[ClassInfo, str] | None:
    """The class that makes the model causal and the sentence that says why."""
    if any(NOT_CAUSAL.search(cls.name) for cls in classes):
        return None
    for cls in classes:
        if CAUSAL_NAME.search(cls.name):
            return cls, f"`{cls.name}` is named as a causal / decoder model"
        if cls.docstring and CAUSAL_DOC.search(cls.docstring) and not NOT_CAUSAL.search(cls.docstring):
            return cls, f"`{cls.name}` is documented as causal / decoder"
    for cls in classes:
        if cls.qualname in lm_evidence:
            return cls, lm_evidence[cls.qualname]
    return None


def _language_model_evidence(facts: FileFacts) -> dict[str, str]:
    """Classes that embed tokens and project back to logits over the same vocabulary, in a file that
    trains with cross-entropy or samples token by token."""
    trains = bool(facts.events_of("cross_entropy") or facts.events_of("module.CrossEntropyLoss") or facts.events_of("multinomial"))
    if not trains:
        return {}
    found: dict[str, str] = {}
    by_class: dict[str, list] = {}
    for construction in facts.constructions:
        run = construction.run
        if run is not None and run.cls is not None:
            by_class.setdefault(run.cls.qualname, []).append(construction)
    for qualname, constructions in by_class.items():
        vocabularies = [dim_of(c.params.get("num_embeddings")) for c in constructions if c.kind == "Embedding"]
        heads = [dim_of(c.params.get("out_features")) for c in constructions if c.kind == "Linear"]
        for vocabulary in vocabularies:
            if vocabulary is None:
                continue
            if any(head is not None and equal(head, vocabulary) is Truth.TRUE for head in heads):
                found[qualname] = (
                    f"`{qualname.split('.')[-1]}` maps token embeddings to logits over its vocabulary of {vocabulary} "
                    "and the file trains it with cross-entropy"
                )
                break
    return found
