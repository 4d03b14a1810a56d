"""SC104 mask-after-softmax."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.tags import NormalisedTag
from shapecheck.engine.domain.values import (
    MaskedTag,
    ProbsTag,
    ScoresTag,
    TensorValue,
    TriangleTag,
    scale_of,
)
from shapecheck.engine.facts.queries import (
    AttentionFacts,
    MaskApplication,
    attention_facts,
    in_every_context,
    mask_applications,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

#: A fill value this negative gives a masked position no weight after softmax.
LARGE_NEGATIVE = -1e4


class MaskAfterSoftmax(Rule):
    """A mask applied after softmax, or with 0 instead of -inf before it.

    ## What it does
    Finds masks that do not remove positions from attention:
    - `masked_fill` (or a product with a mask) on softmax probabilities whose scores were never
      masked before the softmax;
    - an additive mask or bias (a relative position bias, `attn_mask`) added to the probabilities
      after the softmax: anything but another distribution (a gate mixing content and positional
      attention) or a number;
    - `masked_fill(scores, mask, 0)` (or any fill that is not very negative), or `scores * mask`,
      before the softmax.

    ## Why is this bad?
    Masking after softmax leaves rows that no longer sum to 1, and the blocked positions already
    took their share of the probability mass. Filling scores with 0 gives blocked positions
    exp(0) = 1 of weight, as much as an average token: a decoder then still sees the future.
    Nothing crashes; the model trains on leaked or mis-normalised attention.

    ## Example
    ```python
    attn = scores.softmax(dim=-1)
    attn = attn.masked_fill(mask, 0.0)
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill(mask, float("-inf"))
    attn = scores.softmax(dim=-1)
    ```
    """

    code = "SC104"
    name = "mask-after-softmax"
    severity = Severity.ERROR
    summary = "Mask applied to probabilities after softmax, or masked with 0 instead of -inf / large negative before softmax."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        attention = attention_facts(facts)
        fills = facts.events_of("masked_fill")
        for event in in_every_context(fills, lambda e: _masks_probabilities(e, attention)):
            yield Report(
                event.node,
                "mask applied to attention probabilities after softmax; the rows no longer sum to 1 and "
                "the masked positions already took part in the normalisation",
                hint='mask the scores before softmax: scores.masked_fill(mask, float("-inf"))',
            )
        applications = {id(a.event): a for a in mask_applications(facts)}
        events = [a.event for a in applications.values() if a.event.node in attention.mask_nodes]
        for event in in_every_context(events, lambda e: _weak_fill(applications[id(e)])):
            fill = applications[id(event)].fill
            yield Report(
                event.node,
                f"scores masked with {fill.describe() if fill else 'a small value'} before softmax; a masked "
                "position still gets weight exp(fill), use -inf or a very negative number",
                hint='use float("-inf") (or torch.finfo(scores.dtype).min) as the fill value',
            )
        sums = [e for e in facts.events_of("binary") if _operator(e) in ("add", "sub")]
        for event in in_every_context(sums, lambda e: _added_to_probabilities(e, attention)):
            yield Report(
                event.node,
                "mask or bias added to attention probabilities after softmax; the rows no longer sum to 1 "
                "and the bias never took part in the normalisation",
                hint="add it to the scores before softmax",
            )
        products = [e for e in facts.events_of("binary") if _operator(e) == "mul" and _in_attention(e, attention)]
        for event in in_every_context(products, _multiplied_mask):
            result = event.result_tensor
            after = result.has(ProbsTag)
            yield Report(
                event.node,
                "attention probabilities multiplied by a mask after softmax; the rows no longer sum to 1"
                if after
                else "scores multiplied by a 0/1 mask before softmax; masked positions get score 0, not -inf",
                hint='mask the scores before softmax with masked_fill(mask, float("-inf"))',
            )


def _added_to_probabilities(event: OpEvent, attention: AttentionFacts) -> bool | None:
    """``attn = attn.softmax(-1); attn = attn + bias``: a tensor that is no distribution added to
    (or subtracted from) probabilities that reach the values. None where this context cannot tell
    (an attention helper run standalone sees no attention softmax): the contexts that can decide."""
    result = event.result_tensor  # an add or a sub: ``check`` passes no other binary op
    probs, masked = result.tag(ProbsTag), result.tag(MaskedTag)
    if probs is not None and probs.log:
        return False
    if probs is None or probs.node not in attention.softmaxes:
        return None  # this context does not see the attention softmax (a helper run standalone)
    if masked is None or masked.node is not event.node or not isinstance(masked.mask, TensorValue):
        return None  # nor a tensor added here
    if _operator(event) == "sub" and not event.tensor(0).has(ProbsTag):
        # ``y_hard - y_soft.detach()`` (a straight-through estimator): the probabilities are taken
        # away from something else, not given a bias.
        return False
    added = masked.mask
    before = probs.scores.tag(MaskedTag) if isinstance(probs.scores, TensorValue) else None
    if added.shape is None and not added.tags and before is not None and any(tag.fill is not None for tag in before.chain()):
        # A value the engine cannot see (a parameter) added after a softmax whose scores were
        # masked (filled) before it: not the mask moved past the softmax, something else the caller
        # passes (x-transformers' ``attn + attn_delta``), which this context cannot judge. A bias
        # added before (a relative position table) is no mask: a second bias after the softmax is
        # still judged.
        return None
    # Another distribution (a gate mixing two attentions) or a number keeps the rows summing to 1;
    # every tensor computed from a softmax's output (probabilities included) is ``NormalisedTag``.
    return not (added.has(NormalisedTag) or added.rank == 0)


def _operator(event: OpEvent) -> str | None:
    value = event.kwargs.get("operator")
    return getattr(value, "value", None)


def _in_attention(event: OpEvent, attention: AttentionFacts) -> bool:
    result = event.result_tensor
    probs = result.tag(ProbsTag)
    if probs is not None:
        return probs.node in attention.softmaxes
    return event.node in attention.mask_nodes


def _masks_probabilities(event: OpEvent, attention: AttentionFacts) -> bool:
    source = event.tensor(0, "input")
    probs = source.tag(ProbsTag)
    if probs is None or probs.node not in attention.softmaxes:
        return False
    fill = scale_of(event.arg(2, "value"))
    if fill is not None and fill.value is not None and fill.value <= LARGE_NEGATIVE:
        return True  # -inf / finfo.min written into probabilities: a mask meant for the scores
    # Scores masked before: a later fill (0 on padded query rows) is a second, deliberate step.
    return not probs.scores.has(MaskedTag)


def _weak_fill(application: MaskApplication) -> bool | None:
    source = application.scores
    if not source.has(ScoresTag) or source.has(ProbsTag):
        # Not scores in this context: a masking helper analysed alone (its input unknown), or also
        # used on other tensors (logits, values). It has no say on the fill the scores get.
        return None
    fill = application.fill
    if fill is None or fill.value is None:
        return None
    return fill.value > LARGE_NEGATIVE


def _multiplied_mask(event: OpEvent) -> bool | None:
    if not all(isinstance(arg, TensorValue) for arg in event.args[:2]):
        return None
    result = event.result_tensor
    masked = result.tag(MaskedTag)
    if masked is None or masked.node is not event.node or masked.mask is None:
        return False
    mask = masked.mask
    is_mask = mask.has(TriangleTag) or mask.dtype == "bool"
    if not is_mask:
        return False
    if result.has(ProbsTag):
        probs = result.tag(ProbsTag)
        return not probs.scores.has(MaskedTag)
    return result.has(ScoresTag)
