"""SC505 matmul-shape-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules._conflicts import conflict_reports
from shapecheck.rules.base import Report, Rule


class MatmulShapeMismatch(Rule):
    """A matrix product whose inner dims provably differ.

    ## What it does
    Infers the shapes of both operands of `@`, `torch.matmul`, `bmm`, `baddbmm` and `einsum`
    and reports a product whose contracted dims are provably different (for example a query of
    head dim 64 against keys that were not transposed, or an einsum index bound to two sizes).

    ## Why is this bad?
    It crashes: `RuntimeError: mat1 and mat2 shapes cannot be multiplied (5x64 and 5x64)` or
    `expected size ... for dimension ...`.

    ## Example
    ```python
    scores = q @ k  # (B, h, T, d_k) @ (B, h, T, d_k)
    ```

    ## Use instead
    ```python
    scores = q @ k.transpose(-2, -1)  # (B, h, T, d_k) @ (B, h, d_k, T)
    ```
    """

    code = "SC505"
    name = "matmul-shape-mismatch"
    severity = Severity.ERROR
    summary = "Inferred inner dims of a matmul / linear disagree."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        yield from conflict_reports(facts, ("matmul", "linear"), "transpose or reshape one operand so the inner dims agree")
