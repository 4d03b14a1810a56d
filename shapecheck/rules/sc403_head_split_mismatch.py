"""SC403 head-split-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules._conflicts import conflict_reports
from shapecheck.rules.base import Report, Rule


class HeadSplitMismatch(Rule):
    """A view / reshape whose sizes cannot hold the tensor's elements.

    ## What it does
    Compares the number of elements of a tensor with the product of the sizes passed to `view` /
    `reshape` / `unflatten`, symbolically (`B * T * d_model` against `B * T * n_heads * d_model`).
    The typical case is a head split that uses the model width as the head dim.

    ## Why is this bad?
    It crashes at the first forward pass: `RuntimeError: shape '[2, 5, 8, 512]' is invalid for
    input of size 5120`.

    ## Example
    ```python
    q = q.view(B, T, self.n_heads, self.d_model)
    ```

    ## Use instead
    ```python
    q = q.view(B, T, self.n_heads, self.d_model // self.n_heads)
    ```
    """

    code = "SC403"
    name = "head-split-mismatch"
    severity = Severity.ERROR
    summary = "Head split/merge sizes inconsistent (view sizes whose product != numel)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        yield from conflict_reports(facts, ("reshape",), "the sizes must multiply to the same number of elements")
