"""SC504 wrong-key-transpose."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.facts.layouts import causes, misplaced_key_transpose
from shapecheck.engine.facts.queries import in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.engine.symbolic.shapes import dim_text
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule

_PRODUCTS = ("matmul", "bmm")
#: The reorderings that return a new tensor, as methods (``k.transpose(1, 2)``) or functions of
#: torch (``torch.permute(k, ...)``); an in-place ``k.transpose_(1, 2)`` gets no fix.
_REORDERINGS = ("t", "transpose", "permute", "swapaxes", "swapdims")


class WrongKeyTranspose(Rule):
    """Keys transposed with `.T` / `.t()` or over the batch / head axes instead of the last two.

    ## What it does
    Finds `q @ k'` (or `torch.matmul`, `bmm`) where `k'` is the key reordered so that the axis
    the product contracts is not the key's feature axis: `k.T` of a batched key (which reverses
    every axis), `k.transpose(1, 2)` of a `(b, h, t, d_k)` key, `k.transpose(0, 1)` of a
    `(b, t, d)` one. The query must have the key's feature size last, so the intent is `q @ k^T`.
    Correct reorderings (`transpose(-2, -1)`, `permute(0, 2, 3, 1)` of `(b, t, h, d)`) pass.

    ## Why is this bad?
    At best it crashes with a shape error; when the sizes happen to agree (`d_k == t`, or
    `h == d_k`) the scores are products over the wrong axes and attention is meaningless, with
    no error at all.

    ## Example
    ```python
    scores = q @ k.transpose(1, 2)   # q, k: (b, h, t, d_k)
    ```

    ## Use instead
    ```python
    scores = q @ k.transpose(-2, -1)
    ```
    """

    code = "SC504"
    name = "wrong-key-transpose"
    severity = Severity.ERROR
    fixable = True
    summary = "Keys transposed with .T / .t() or over batch/head axes instead of the last two."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        # The verdict found the layout; one transpose used by several products gives several reports
        # on its node, of which the linter keeps the first.
        for event in in_every_context(facts.events_of(*_PRODUCTS), _verdict):
            query, key = event.tensor(0), event.tensor(1)
            layout = misplaced_key_transpose(query, key, event.assumptions)
            assert layout is not None
            original = layout.source.shape if layout.source is not None else None
            before = f" {original}" if original is not None else ""
            query_shape = f" {query.shape}" if query.shape is not None else ""
            yield Report(
                layout.node,
                f"the key{before} is reordered to axis order {layout.order}, giving {key.shape}, so q{query_shape} @ k "
                f"contracts {dim_text(key.shape.dims[-2])} instead of the key's feature dim: expected the last two axes "  # type: ignore[union-attr]
                f"swapped, {_expected(original)}",
                hint="transpose the last two axes: k.transpose(-2, -1)",
                fix=_fix(layout.node, facts),
                causes=causes(query, key),
            )


def _expected(shape) -> str:
    if shape is None or shape.rank is None or shape.rank < 2:
        return "k.transpose(-2, -1)"
    dims = list(shape.dims)
    dims[-2], dims[-1] = dims[-1], dims[-2]
    return "(" + ", ".join(dim_text(d) for d in dims) + ")"


def _verdict(event: OpEvent) -> bool | None:
    return True if misplaced_key_transpose(event.tensor(0), event.tensor(1), event.assumptions) is not None else None


def _fix(node: cst.CSTNode, facts: FileFacts) -> Fix | None:
    """``k.T`` / ``k.t()`` / ``k.transpose(1, 2)`` / ``k.permute(...)`` -> ``k.transpose(-2, -1)``;
    ``torch.transpose(k, 1, 2)`` / ``torch.permute(k, ...)`` -> ``torch.transpose(k, -2, -1)``."""
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    last_two = [
        cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer("2")), comma=comma),
        cst.Arg(cst.UnaryOperation(cst.Minus(), cst.Integer("1"))),
    ]
    if isinstance(node, cst.Attribute) and node.attr.value in ("T", "mT"):
        receiver = node.value
    elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _REORDERINGS:
        if _is_imported(node.func.value, facts):  # torch.transpose(k, 1, 2): a function, not a method
            key = node.args[0]
            if key.keyword is not None or key.star:
                return None  # the key given by keyword or unpacked from a sequence
            func = node.func.with_changes(attr=cst.Name("transpose"))
            replacement = node.with_changes(func=func, args=[key.with_changes(comma=comma), *last_two])
            return Fix("transpose the key's last two axes: transpose(k, -2, -1)", (Edit(node, replacement),))
        receiver = node.func.value
    else:
        return None
    replacement = cst.Call(
        func=cst.Attribute(value=receiver, attr=cst.Name("transpose")),
        args=last_two,
        lpar=list(getattr(node, "lpar", ())),
        rpar=list(getattr(node, "rpar", ())),
    )
    return Fix("transpose the key's last two axes: .transpose(-2, -1)", (Edit(node, replacement),))


def _is_imported(value: cst.BaseExpression, facts: FileFacts) -> bool:
    """``torch`` / ``th`` in ``th.transpose(...)``: a name bound by an import (a module), not a tensor."""
    while isinstance(value, cst.Attribute):
        value = value.value
    return isinstance(value, cst.Name) and facts.imports is not None and facts.imports.resolve(value.value) is not None
