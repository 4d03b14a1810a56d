"""SC406 linear-chain-mismatch."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules import _examples
from shapecheck.rules._conflicts import conflict_reports
from shapecheck.rules.base import Report, Rule


class LinearChainMismatch(Rule):
    """Consecutive layers whose output and input features disagree.

    ## What it does
    Checks `nn.Sequential` stacks of `nn.Linear` layers (activations and dropout in between are
    skipped) and every `nn.Linear` applied to a tensor of known feature size: the in_features of a
    layer must equal the feature size it receives. When one layer feeds another, the finding is on
    the constructor of the layer that receives the wrong width (its `in_features` is what to
    change), and names the method that applies it.

    ## Why is this bad?
    It crashes at the first forward pass with `RuntimeError: mat1 and mat2 shapes cannot be
    multiplied (10x2048 and 512x2048)`.

    ## Example
    ```python
    self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_model, d_ff))
    ```

    ## Use instead
    ```python
    self.ffn = nn.Sequential(nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model))
    ```
    """

    code = "SC406"
    name = "linear-chain-mismatch"
    severity = Severity.ERROR
    summary = "Consecutive layers whose in/out features disagree."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        yield from conflict_reports(facts, ("layer-chain",), "make in_features equal the size the layer receives")
