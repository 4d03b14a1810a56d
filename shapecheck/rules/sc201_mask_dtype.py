"""SC201 mask-dtype."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.domain.values import TriangleTag
from shapecheck.engine.facts.queries import in_some_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MaskDtype(Rule):
    """A 0/1 float or integer mask where a bool mask is required.

    ## What it does
    Finds `masked_fill` called with a mask whose dtype the engine knows to be float or integer
    (for example `torch.tril(torch.ones(T, T))`), and a 0/1 float triangle given as `attn_mask`
    to `F.scaled_dot_product_attention` or `nn.MultiheadAttention`, where a float mask is added
    to the scores instead of blocking positions. A float mask inverted with `~` or combined with
    `&`, `|` or `^` is reported too: torch's bitwise ops raise for float tensors.

    ## Why is this bad?
    `masked_fill` with a float mask raises `RuntimeError: masked_fill_ only supports boolean
    masks`. Worse, a float 0/1 `attn_mask` is silently *added* to the scores: allowed positions
    get +1, blocked ones +0, and nothing is masked at all.

    ## Example
    ```python
    mask = torch.tril(torch.ones(T, T))
    scores = scores.masked_fill(mask == 0, float("-inf"))  # fine: `mask == 0` is bool
    scores = scores.masked_fill(1 - mask, float("-inf"))   # float mask: error
    ```

    ## Use instead
    ```python
    scores = scores.masked_fill((1 - mask).bool(), float("-inf"))
    ```
    """

    code = "SC201"
    name = "mask-dtype"
    severity = Severity.ERROR
    fixable = True
    summary = "0/1 float or int mask used where a bool mask is required (masked_fill, boolean attn_mask)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_some_context(facts.events_of("masked_fill"), _non_bool_mask):
            yield _non_bool_report(event, 1, "mask", "masked_fill needs a bool mask", "mask")
        for event in in_some_context(facts.events_of("where"), _non_bool_condition):
            yield _non_bool_report(event, 0, "condition", "torch.where needs a bool condition", "condition")
        for event in in_some_context(facts.events_of("bitwise_not"), _float_input):
            yield _non_bool_report(event, 0, "input", "~ (bitwise not) needs a bool mask", "mask")
        for event in in_some_context(facts.events_of("binary"), lambda e: _float_logical_operand(e) is not None):
            index = _float_logical_operand(event)
            assert index is not None
            symbol = {"and": "&", "or": "|", "xor": "^"}[_operator(event)]
            yield _non_bool_report(event, index, "", f"{symbol} of masks needs bool masks", "mask")
        attention = facts.events_of("scaled_dot_product_attention") + facts.events_of("module.MultiheadAttention")
        for event, name, index in _integer_masks(attention):
            node = event.arg_node(index, name) or event.node  # the keyword's node when given so
            yield Report(
                node,
                f"{name} is an integer tensor; attention masks must be bool (or float, added to the scores), "
                "and PyTorch rejects integer masks",
                hint="build the mask as bool: (ids == pad_id) without .long()",
            )
        for event in in_some_context(attention, _float_triangle):
            node = event.kwarg_nodes.get("attn_mask") or event.node
            yield Report(
                node,
                "a 0/1 float triangle given as attn_mask is added to the scores (+1 / +0) and blocks nothing; "
                "pass a bool mask or a float mask of 0 / -inf",
                hint="convert it with .bool() (mind each API's polarity) or use masked_fill(~mask, float('-inf'))",
            )


def _integer_masks(events: list[OpEvent]):
    seen: set[int] = set()
    for event in events:
        names = (("attn_mask", 3),) if event.op == "scaled_dot_product_attention" else (("attn_mask", 6), ("key_padding_mask", 4))
        for name, index in names:
            if event.tensor(index, name).dtype == "int" and id(event.node) not in seen:  # absent: no dtype
                seen.add(id(event.node))
                yield event, name, index


def _non_bool_mask(event: OpEvent) -> bool:
    mask = event.tensor(1, "mask")
    return mask.dtype in ("float", "int")


def _float_input(event: OpEvent) -> bool:
    """``~mask`` (``bitwise_not``) of a float tensor: torch implements it for bool and integer
    tensors only (an integer ``~`` is a bitwise not, legal, so it is not judged here)."""
    return event.tensor(0, "input").dtype == "float"


def _operator(event: OpEvent) -> str | None:
    operator = event.kwargs.get("operator")
    value = getattr(operator, "value", None)
    return value if isinstance(value, str) else None


def _float_logical_operand(event: OpEvent) -> int | None:
    """``a | b`` / ``a & b`` / ``a ^ b`` with a float tensor operand (the first such operand):
    torch's bitwise ops raise for float tensors."""
    if _operator(event) not in ("and", "or", "xor"):
        return None
    for index in (0, 1):
        if event.tensor(index).dtype == "float":
            return index
    return None


def _non_bool_report(event: OpEvent, index: int, name: str, needs: str, what: str) -> Report:
    """A float or integer mask given where a bool one is required, with the ``.bool()`` fix."""
    mask = event.tensor(index, name)
    node = event.arg_node(index, name)
    fix = None
    if isinstance(node, cst.BaseExpression):
        fix = Fix(f"convert the {what} with .bool()", (Edit(node, _as_bool(node)),))
    return Report(
        node if node is not None else event.node,
        f"{needs} but this mask is {mask.dtype} "
        f"{'(a 0/1 triangle) ' if mask.has(TriangleTag) else ''}and raises a RuntimeError",
        hint="append .bool() to the mask",
        fix=fix,
    )


def _non_bool_condition(event: OpEvent) -> bool:
    """``torch.where(mask, scores, -inf)`` with a float or integer 0/1 triangle as the mask (three
    arguments, by position or keyword: the one-argument form returns indices and takes any tensor).
    Only a triangle the code built is judged: a condition whose dtype comes from farther away (a
    parameter, a cast in a caller) is left alone. The engine gives ``x.where(cond, y)`` the same
    argument order."""
    if not event.has_arg(2, "other"):
        return False  # the one-argument form (torch has no two-argument one)
    condition = event.tensor(0, "condition")
    return condition.dtype in ("float", "int") and condition.has(TriangleTag)


def _float_triangle(event: OpEvent) -> bool:
    mask = event.tensor(3 if event.op == "scaled_dot_product_attention" else 6, "attn_mask")  # absent: no dtype
    triangle = mask.tag(TriangleTag)
    return mask.dtype == "float" and triangle is not None and not triangle.additive


def _as_bool(node: cst.BaseExpression) -> cst.BaseExpression:
    value = node
    if not isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and not node.lpar:
        value = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=value, attr=cst.Name("bool")))
