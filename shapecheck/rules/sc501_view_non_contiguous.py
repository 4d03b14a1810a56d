"""SC501 view-non-contiguous."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Edit, Fix, Severity
from shapecheck.engine.facts.layouts import causes, non_contiguous_merge
from shapecheck.engine.facts.queries import in_every_context
from shapecheck.engine.facts.records import FileFacts, OpEvent
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class ViewNonContiguous(Rule):
    """`.view()` right after a `transpose` / `permute` without `.contiguous()`.

    ## What it does
    Finds a `.view(...)` whose input was reordered by `transpose`, `permute`, `.T` or `.mT` and not
    made contiguous since, when the view merges axes that the reordering left apart in memory
    (the usual head merge `y.transpose(1, 2).view(B, T, C)`). A view that only splits axes, or
    merges axes that are still adjacent, is left alone.

    ## Why is this bad?
    `view` never copies: it needs strides it can reinterpret. After a transpose the memory is in
    the old order, and the call raises `RuntimeError: view size is not compatible with input
    tensor's size and stride (at least one dimension spans across two contiguous subspaces)`.

    ## Example
    ```python
    y = y.transpose(1, 2).view(B, T, C)
    ```

    ## Use instead
    ```python
    y = y.transpose(1, 2).contiguous().view(B, T, C)  # or .reshape(B, T, C)
    ```
    """

    code = "SC501"
    name = "view-non-contiguous"
    severity = Severity.ERROR
    fixable = True
    summary = ".view() right after transpose/permute without .contiguous()."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        for event in in_every_context(facts.events_of("view"), _verdict):
            layout, merge = non_contiguous_merge(event)  # type: ignore[misc]  # the verdict found one
            source = event.tensor(0).shape
            merged = ", ".join(str(d) for d in source.dims[merge.first : merge.last + 1])  # type: ignore[union-attr]
            yield Report(
                event.node,
                f".view() merges axes {merge.first}..{merge.last} ({merged}) of a tensor of shape {source} that "
                f"was reordered to axis order {layout.order} and is not contiguous: those axes are not adjacent "
                f"in memory, so view raises at run time",
                hint="call .contiguous() before .view() (or use .reshape())",
                fix=_fix(event),
                causes=causes(event.tensor(0)),
            )


def _verdict(event: OpEvent) -> bool | None:
    return True if non_contiguous_merge(event) is not None else None


def _fix(event: OpEvent) -> Fix | None:
    node = event.node
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute) or node.func.attr.value != "view":
        return None
    receiver = node.func.value
    contiguous = cst.Call(func=cst.Attribute(value=receiver, attr=cst.Name("contiguous")))
    replacement = node.with_changes(func=node.func.with_changes(value=contiguous))
    return Fix("insert .contiguous() before .view()", (Edit(node, replacement),))
