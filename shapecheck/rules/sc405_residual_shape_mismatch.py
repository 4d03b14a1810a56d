"""SC405 residual-shape-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules._conflicts import conflict_reports
from shapecheck.rules.base import Report, Rule


class ResidualShapeMismatch(Rule):
    """A residual (or any) addition of tensors whose shapes cannot broadcast.

    ## What it does
    Reports `a + b` / `a - b` between tensors whose inferred shapes provably cannot broadcast,
    such as `x + sublayer(x)` where the sublayer returns a different feature size. When the
    sublayer's output comes straight from an `nn.Linear` that takes the residual's width and gives
    another, the finding lands on that Linear's constructor, where the fix goes (its
    `out_features`); otherwise on the addition.

    ## Why is this bad?
    It crashes: `RuntimeError: The size of tensor a (512) must match the size of tensor b (2048)`.
    A residual connection needs the sublayer to return exactly the shape it was given.

    ## Example
    ```python
    x = x + self.ffn_in(x)  # Linear(d_model, d_ff): (B, T, d_ff)
    ```

    ## Use instead
    ```python
    x = x + self.ffn_out(F.gelu(self.ffn_in(x)))  # back to d_model
    ```
    """

    code = "SC405"
    name = "residual-shape-mismatch"
    severity = Severity.ERROR
    summary = "Residual add of tensors whose feature sizes differ."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        yield from conflict_reports(facts, ("broadcast",), "make both operands the same shape", ops=("add", "sub"))
