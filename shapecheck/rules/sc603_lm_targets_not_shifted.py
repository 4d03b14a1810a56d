"""SC603 lm-targets-not-shifted."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.facts.training import has_causal_attention, loss_calls, sequence_origin
from shapecheck.engine.symbolic.dims import Truth, equal
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class LmTargetsNotShifted(Rule):
    """Language-model targets that are the input tokens themselves, not the next tokens.

    ## What it does
    Follows which tokens each tensor holds: windows cut from one token sequence
    (`x = data[i:i+T]`, `y = data[i+1:i+T+1]`, `ids[:, :-1]`, `ids[:, 1:]`) and the logits a model
    computes from them, position by position. It flags a cross-entropy whose targets are the same
    positions of the same sequence as the model's input: the same window cut twice, the same
    `ids` tensor, or `logits[:, :-1]` against `ids[:, :-1]`. When the targets are the very
    tensor fed to the model, it also needs the file's attention to be causal (a language model);
    `model(ids, labels=ids)` in the Hugging Face style is fine when the model shifts inside.

    ## Why is this bad?
    With a causal mask, position t sees token t, so predicting token t is copying: the loss
    drops to almost zero within a few steps and the model never learns to predict the next token.
    Generation then produces garbage.

    ## Example
    ```python
    x = torch.stack([data[i : i + T] for i in ix])
    y = torch.stack([data[i : i + T] for i in ix])
    ```

    ## Use instead
    ```python
    x = torch.stack([data[i : i + T] for i in ix])
    y = torch.stack([data[i + 1 : i + T + 1] for i in ix])
    ```
    """

    code = "SC603"
    name = "lm-targets-not-shifted"
    severity = Severity.ERROR
    summary = "Language-model targets equal the inputs (no next-token shift)."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        # A loss met in several contexts gives several reports on its node: the linter keeps the first.
        for loss in loss_calls(facts):
            inputs, targets = sequence_origin(loss.logits), sequence_origin(loss.target)
            if inputs is None or targets is None or inputs.source is not targets.source or targets.opaque:
                continue
            if inputs.offset is None or targets.offset is None:
                continue
            if equal(inputs.offset, targets.offset, loss.event.assumptions) is not Truth.TRUE:  # type: ignore[arg-type]
                continue
            if not (inputs.sliced or targets.sliced or has_causal_attention(facts)):
                continue
            node = targets.node if targets.sliced and targets.node is not None else (loss.target_node or loss.event.node)
            offset = f" (offset {inputs.offset})" if inputs.offset.is_const else ""
            yield Report(
                node,
                f"the targets are the model's own input tokens, the same positions{offset} of the same "
                "sequence: expected the next tokens, shifted by one position",
                hint="shift the targets: y = data[i+1 : i+T+1], or logits[:, :-1] against ids[:, 1:]",
            )
