"""SC205 causal-mask-diagonal."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.domain.values import (
    MaskedTag,
    ScoresTag,
    TensorValue,
    TriangleTag,
)
from shapecheck.engine.facts.queries import attention_facts, given, mask_applications
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class CausalMaskDiagonal(Rule):
    """A causal mask that also blocks the diagonal.

    ## What it does
    Finds a causal mask whose blocked set is `j >= i` instead of `j > i`: `torch.triu(...)` with
    the default `diagonal=0` used as the blocked set (in `masked_fill(mask, -inf)` or as a bool
    `nn.MultiheadAttention` mask), or `tril(..., diagonal=-1)` as the allowed set of
    `F.scaled_dot_product_attention`.

    ## Why is this bad?
    Each token is then forbidden to attend to itself, and the first token has no position left at
    all: its softmax row is all -inf and becomes NaN, which spreads through the whole batch at the
    next layer.

    ## Example
    ```python
    mask = torch.triu(torch.ones(T, T), diagonal=0).bool()
    scores = scores.masked_fill(mask, float("-inf"))
    ```

    ## Use instead
    ```python
    mask = torch.triu(torch.ones(T, T), diagonal=1).bool()
    scores = scores.masked_fill(mask, float("-inf"))
    ```
    """

    code = "SC205"
    name = "causal-mask-diagonal"
    severity = Severity.ERROR
    fixable = True
    summary = "Causal mask that also blocks the diagonal (triu with diagonal=0 as the blocked set): first row fully masked, NaN."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        seen: set[int] = set()
        candidates = []
        attention = attention_facts(facts).mask_nodes
        for application in mask_applications(facts):
            if application.event.node not in attention:
                continue
            fill = application.fill
            if application.scores.has(ScoresTag) and fill is not None and fill.value is not None and fill.value <= -1e4:
                candidates.append((application.event, application.mask, application.true_blocks))
        for event in facts.events_of("binary"):
            masked = event.result_tensor.tag(MaskedTag)
            if masked is not None and masked.node is event.node and masked.fill is None and masked.mask is not None and event.node in attention:
                if masked.mask.has(TriangleTag) and masked.mask.tag(TriangleTag).additive:
                    candidates.append((event, masked.mask, True))
        for event in facts.events_of("module.MultiheadAttention"):
            if given(event, 6, "attn_mask"):
                candidates.append((event, event.tensor(6, "attn_mask"), True))
        for event in facts.events_of("scaled_dot_product_attention"):
            if given(event, 3, "attn_mask"):
                candidates.append((event, event.tensor(3, "attn_mask"), False))
        for event, mask, true_blocks in candidates:
            triangle = mask.tag(TriangleTag)
            if triangle is None or id(triangle.node) in seen or not _blocks_diagonal(mask, triangle, true_blocks):
                continue
            seen.add(id(triangle.node))
            yield Report(
                triangle.node,
                "this causal mask blocks the diagonal too: no token may attend to itself and the first row is "
                "fully masked (softmax gives NaN)",
                hint="the blocked set of a causal mask is triu(..., diagonal=1)",
                fix=_fix(triangle),
            )


def _blocks_diagonal(mask: TensorValue, triangle: TriangleTag, true_blocks: bool) -> bool:
    if mask.dtype not in ("bool", None) and not triangle.additive:
        return False
    # True set of the triangle: upper with offset d is {j - i >= d}; lower is {j - i <= d}.
    blocked_upper = (not triangle.lower) != triangle.negated
    if triangle.diagonal is None:
        return False
    # Read only for a blocked upper set (an upper triangle, or a negated lower one), or replaced below.
    blocked_from = triangle.diagonal + 1 if triangle.negated else triangle.diagonal
    if not true_blocks:
        # SDPA: True = attend. Blocked set is the complement of the True set.
        if triangle.lower and not triangle.negated:
            blocked_from = triangle.diagonal + 1
        elif not triangle.lower and triangle.negated:
            blocked_from = triangle.diagonal
        else:
            return False
    elif not blocked_upper:
        return False
    return blocked_from == 0


def _fix(triangle: TriangleTag) -> Fix | None:
    node = triangle.node
    if not isinstance(node, cst.Call) or triangle.lower or triangle.negated:
        return None
    args = list(node.args)
    one = cst.Integer("1")
    for index, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "diagonal":
            args[index] = arg.with_changes(value=one)
            break
    else:
        positional = [a for a in args if a.keyword is None and a.star == ""]
        receiver_form = triangle.method_form
        if len(positional) >= (1 if receiver_form else 2):
            position = args.index(positional[0 if receiver_form else 1])
            args[position] = args[position].with_changes(value=one)
        else:
            if args:
                last = args[-1]
                args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
            args.append(cst.Arg(value=one, keyword=cst.Name("diagonal"), equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
    return Fix("use diagonal=1 so that each token may attend to itself", (Edit(node, node.with_changes(args=args)),))
