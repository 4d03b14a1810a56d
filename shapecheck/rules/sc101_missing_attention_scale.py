"""SC101 missing-attention-scale."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import ScaleTag, ScoresTag
from shapecheck.engine.facts.queries import attention_softmaxes, in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MissingAttentionScale(Rule):
    """Attention scores reach softmax without the 1/sqrt(d_k) scale.

    ## What it does
    Finds a softmax applied to attention scores (`q @ k.transpose(-2, -1)`, or the equivalent
    `einsum`) when neither the scores nor the query or key were multiplied or divided by a scale
    on the way. The scores are recognised by how they were computed (a product of a tensor with a
    tensor transposed over its last two axes), not by variable names. A scale applied to `q`
    before the product, a scale held in an attribute or passed as an argument all count.

    ## Why is this bad?
    The variance of `q . k` grows with d_k: with d_k = 64 the unscaled scores have a standard
    deviation of about 8, softmax saturates to nearly one-hot rows and its gradient vanishes. The
    model still runs, but trains slowly or diverges to NaN; nothing crashes to warn you.

    ## Example
    ```python
    scores = q @ k.transpose(-2, -1)
    attn = scores.softmax(dim=-1)
    ```

    ## Use instead
    ```python
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    attn = scores.softmax(dim=-1)
    ```
    or `F.scaled_dot_product_attention(q, k, v)`, which scales by itself.
    """

    code = "SC101"
    name = "missing-attention-scale"
    severity = Severity.WARNING
    summary = "Attention scores (q @ k^T) reach softmax with no 1/sqrt(d_k) scaling."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_every_context(attention_softmaxes(facts), _unscaled):
            scores = event.tensor(0, "input")
            tag = scores.tag(ScoresTag)
            head_dim = tag.head_dim  # known: _unscaled says "cannot tell" otherwise
            # A head dim the engine had to make up (a view's ``-1`` of an unseen layer's output)
            # is no name a user knows: it is the key dim.
            expected = f"sqrt({head_dim})" if head_dim.is_const or not facts.made_up(head_dim) else "sqrt(d_k)"
            if head_dim.is_const:
                expected += f" = {head_dim.value ** 0.5:g}"
            shape = f" {scores.shape}" if scores.shape is not None else ""
            # Reported at the product that makes the scores: that is where the scale goes. The
            # softmax is the fallback when the product lies in a file this run does not report.
            yield Report(
                tag.node,
                f"attention scores{shape} reach softmax unscaled; expected them divided by {expected}",
                hint="divide the scores by math.sqrt(d_k), or scale q by d_k ** -0.5 before the product",
                fallback=event.node,
            )


def _unscaled(event: OpEvent) -> bool | None:
    scores = event.tensor(0, "input")
    tag = scores.tag(ScoresTag)
    if tag is None or scores.has(ScaleTag):
        return False
    if tag.head_dim is None:
        return None  # this context cannot tell the head dim (it might be 1)
    return not (tag.head_dim.is_const and tag.head_dim.value == 1)
