"""SC203 mask-polarity."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain.values import ScoresTag, TriangleTag
from shapecheck.engine.facts.queries import (
    MaskApplication,
    attention_facts,
    given,
    in_some_context,
    mask_applications,
)
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MaskPolarity(Rule):
    """A causal mask whose True entries mean the opposite of what the API expects.

    ## What it does
    Works out which positions of a triangular mask are True (`tril` / `triu`, their `diagonal`,
    and any `~`, `== 0` or `logical_not` applied since) and compares that with the convention of
    the API it reaches:
    - `masked_fill(mask, -inf)` and `nn.MultiheadAttention` / `nn.Transformer*` bool masks:
      True = blocked;
    - `F.scaled_dot_product_attention` bool `attn_mask`: True = attend.

    ## Why is this bad?
    An inverted causal mask blocks the past and lets every token see the future: the model
    trains to near-zero loss by copying the next token, then generates garbage. With
    `masked_fill` it can also block a whole row and turn it into NaN. Nothing crashes.

    ## Example
    ```python
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=~causal)
    ```

    ## Use instead
    ```python
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))  # True = may attend
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal)
    ```
    """

    code = "SC203"
    name = "mask-polarity"
    severity = Severity.ERROR
    summary = "Inverted mask meaning: tril vs triu for masked_fill(mask, -inf), MHA-convention bool mask to SDPA or the reverse."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        applications = {id(a.event): a for a in mask_applications(facts)}
        attention = attention_facts(facts).mask_nodes
        events = [a.event for a in applications.values() if a.event.node in attention]
        for event in in_some_context(events, lambda e: _fill_blocks_past(applications[id(e)])):
            application = applications[id(event)]
            where = "where the mask is True" if application.true_blocks else "where the mask is False"
            seen = "True on the past and the diagonal" if application.true_blocks else "False on the past"
            node = application.mask_node or event.node
            triangle = _bool_triangle(application.mask)
            built = facts.elsewhere(triangle.node, node) if triangle is not None else ""
            mask = f"the mask (built{built})" if built else "the mask"
            yield Report(
                node,
                f"this fill of -inf blocks {where}, but {mask} is {seen}: it hides what a causal model may "
                "see and leaves the future open",
                hint="block the future: mask with torch.triu(..., diagonal=1).bool(), or use tril(...) == 0",
            )
        for event in in_some_context(facts.events_of("scaled_dot_product_attention"), _sdpa_inverted):
            yield Report(
                event.arg_node(3, "attn_mask") or event.node,  # by keyword or position
                "F.scaled_dot_product_attention treats a bool attn_mask as True = attend, but this mask is True "
                "on the future (the nn.MultiheadAttention convention): it lets tokens see only the future",
                hint="pass the allowed positions (torch.tril(...).bool()), or use is_causal=True",
            )
        mha = facts.events_of("module.MultiheadAttention")
        for event in in_some_context(mha, _mha_inverted):
            yield Report(
                event.kwarg_nodes.get("attn_mask") or event.node,
                "nn.MultiheadAttention treats a bool attn_mask as True = blocked, but this mask is True on the "
                "allowed positions (the scaled_dot_product_attention convention)",
                hint="pass the blocked positions: torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)",
            )


def _bool_triangle(value) -> TriangleTag | None:
    if getattr(value, "dtype", None) != "bool":
        return None
    return value.tag(TriangleTag)


def _fill_blocks_past(application: MaskApplication) -> bool:
    if not application.scores.has(ScoresTag):
        return False
    fill = application.fill
    if fill is None or fill.value is None or fill.value > -1e4:
        return False
    triangle = _bool_triangle(application.mask)
    if triangle is None:
        return False
    blocked_is_allowed = triangle.true_is_allowed if application.true_blocks else triangle.true_is_future
    return blocked_is_allowed is True


def _sdpa_inverted(event: OpEvent) -> bool:
    if not given(event, 3, "attn_mask"):
        return False
    triangle = _bool_triangle(event.tensor(3, "attn_mask"))
    return triangle is not None and triangle.true_is_future is True


def _mha_inverted(event: OpEvent) -> bool:
    if not given(event, 6, "attn_mask"):
        return False
    triangle = _bool_triangle(event.tensor(6, "attn_mask"))
    return triangle is not None and triangle.true_is_allowed is True
