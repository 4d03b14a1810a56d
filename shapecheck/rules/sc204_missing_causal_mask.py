"""SC204 missing-causal-mask."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import UNKNOWN_TENSOR, ConstValue, ProbsTag, ScoresTag
from shapecheck.engine.facts.causality import LAYER_MASKS, causal_evidence, causally_masked
from shapecheck.engine.facts.queries import attention_softmaxes, by_node, self_attention
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MissingCausalMask(Rule):
    """Self-attention of a decoder or causal language model with no causal mask.

    ## What it does
    Finds self-attention (query and key projected from the same tensor) that applies no causal mask
    (no triangular mask on the scores, no `is_causal=True`, no causal `attn_mask` / `tgt_mask`; a
    padding mask alone is not a causal mask) when the data flow shows the attention must be causal:
    its output feeds tokens sampled one at a time (a generation loop), or a next-token loss whose
    logits and targets are shifted by one position, or another attention path of the same module
    is masked causally. Names and docstrings are never evidence. Encoders and cross-attention are
    left alone: an encoder's output reaches a decoder as keys and values, not on the query stream.

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
        evidence = causal_evidence(facts, sites)
        # A mask applied after the softmax is a mask in the wrong place (SC104), not a missing one.
        masked_later = {
            tag.node
            for event in facts.events_of("masked_fill") + facts.events_of("binary")
            if (tag := event.tensor(0, "input").tag(ProbsTag)) is not None
            or (tag := event.tensor(1).tag(ProbsTag)) is not None
        }
        for node, events in by_node(sites).items():
            why = evidence.get(node)
            if why is None or node in masked_later:
                continue
            # Masked causally in some context: not missing. A mask whose kind no context can tell
            # may well be causal; one context that shows no causal mask decides.
            verdicts = [causally_masked(event) for event in events]
            if True in verdicts or False not in verdicts:
                continue
            if not any(_is_self_attention(event) for event in events):
                continue
            yield Report(
                node,
                f"self-attention with no causal mask, but {why.reason}: every position can attend to the "
                "tokens after it",
                hint="mask the future: masked_fill(torch.triu(ones(T, T), 1).bool(), -inf), or is_causal=True",
            )


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
