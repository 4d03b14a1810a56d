"""SC603 lm-targets-not-shifted."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.diagnostics import Severity
from shapecheck.engine.facts.records import FileFacts
from shapecheck.engine.facts.training import has_causal_attention, loss_calls, regression_loss_calls, same_positions, sequence_origin
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
    Windows cut on one path only (`if prefix is not None: logits = logits[:, p:]`) are compared
    path by path. A next-step regression (`F.mse_loss` / `F.l1_loss` / `nn.MSELoss` ... of a
    prediction against values) is flagged when both sides are the same window cut explicitly
    (`x[:, :-1]` twice); the values themselves as targets are an autoencoder's, not flagged.

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
        regressions = {id(loss.event) for loss in regression_loss_calls(facts)}
        for loss in [*loss_calls(facts), *regression_loss_calls(facts)]:
            inputs, targets = sequence_origin(loss.logits), sequence_origin(loss.target)
            if inputs is None or targets is None:
                continue
            if targets.opaque and not (id(loss.event) in regressions and targets.same_moves(inputs)):
                # Targets out of a call the engine cannot see may have been shifted there; a
                # regression's values cut from the very output the prediction was made from were
                # moved alike (``embed[:, :-1]`` against windows of the same ``embed``).
                continue
            same = same_positions(inputs, targets, loss.event.assumptions)
            if same is None:
                continue
            window, target = same
            if id(loss.event) in regressions:
                # A prediction of the values themselves (``mse_loss(net(x), x)``) is an autoencoder;
                # the same window cut on both sides (``x[:, :-1]`` twice) is a next-step model's.
                if not (window.sliced and target.sliced):
                    continue
            elif not (window.sliced or target.sliced or has_causal_attention(facts)):
                continue
            node = target.node if target.sliced and target.node is not None else (loss.target_node or loss.event.node)
            offset = f" (offset {window.offset})" if window.offset.is_const else ""  # type: ignore[union-attr]
            yield Report(
                node,
                f"the targets are the model's own input {'values' if id(loss.event) in regressions else 'tokens'}, "
                f"the same positions{offset} of the same "
                "sequence: expected the next tokens, shifted by one position",
                hint="shift the targets: y = data[i+1 : i+T+1], or logits[:, :-1] against ids[:, 1:]",
            )
