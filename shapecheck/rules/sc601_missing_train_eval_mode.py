"""SC601 missing-train-eval-mode."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from shapecheck.diagnostics import Severity
from shapecheck.engine.domain import modes
from shapecheck.engine.facts.records import FileFacts, ModelCall
from shapecheck.engine.facts.training import (
    evaluation_calls,
    mode_dependent_layer,
    report_node,
    training_calls,
)
from shapecheck.rules import _examples
from shapecheck.rules.base import Report, Rule


class MissingTrainEvalMode(Rule):
    """A model with dropout or batch norm trained in eval mode, or evaluated in training mode.

    ## What it does
    Follows the train / eval mode of each model a training script builds along every path of the
    script, loops included: torch builds a model in training mode, `model.eval()` and
    `model.train()` switch it. It flags a training step (a forward call followed by
    `loss.backward()`) where the model may still be in eval mode because an earlier evaluation
    switched it and nothing switched it back, and an evaluation (a forward call under
    `torch.no_grad()`, `torch.inference_mode()` or in a `@torch.no_grad()` helper such as
    `estimate_loss`) that runs in training mode. It stays quiet for models without dropout or batch
    norm, and wherever a mode is set from a variable (`model.train(was_training)`).

    ## Why is this bad?
    Dropout and batch norm act differently in the two modes. Training in eval mode switches
    dropout off and freezes batch-norm statistics after the first evaluation, so the model
    overfits quietly. Evaluating in training mode drops activations at random, so validation
    losses are noisy and too high, and samples are worse.

    ## Example
    ```python
    for step in range(max_iters):
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        loss.backward()
        optimizer.step()
        if step % 100 == 0:
            model.eval()
            with torch.no_grad():
                val_loss = F.cross_entropy(model(vx).view(-1, V), vy.view(-1))
    ```

    ## Use instead
    ```python
    for step in range(max_iters):
        model.train()
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        ...
    ```
    """

    code = "SC601"
    name = "missing-train-eval-mode"
    severity = Severity.WARNING
    summary = "Model with dropout/batch norm trained in eval mode or evaluated in train mode."
    VALID, INVALID = _examples.load(code)

    def check(self, facts: FileFacts) -> Iterator[Report]:
        # A call met in several contexts (or by both loops) gives several reports on its node: the
        # linter keeps the first.
        trained = training_calls(facts)
        for call in trained:
            layer = mode_dependent_layer(call.model)
            # Trained in train mode on one path and in eval mode on another: a model kept in eval
            # mode on purpose (a frozen teacher, a VAE) is never switched to train.
            if layer is None or not {modes.TRAIN, modes.EVAL} <= modes.kinds(call.modes):
                continue
            node = report_node(call)
            switch = _switch_text(facts, call, modes.EVAL, "`.eval()`")
            yield Report(
                node,
                f"`{_label(facts, call)}` trains here in eval mode on some path: {switch} ran before this "
                f"training step and nothing switched it back, so its {layer} runs in eval mode while it trains; "
                "expected `.train()` before every training step",
                hint="call model.train() at the start of each training step, after every evaluation",
            )
        trained_models = {id(call.ident) for call in trained}
        for call in evaluation_calls(facts):
            if id(call.ident) not in trained_models or modes.kinds(call.modes) != {modes.TRAIN}:
                continue
            layer = mode_dependent_layer(call.model)
            if layer is None:
                continue
            node = report_node(call)
            yield Report(
                node,
                f"`{_label(facts, call)}` is evaluated with gradients off but in training mode (since "
                f"{_switch_text(facts, call, modes.TRAIN, 'its construction')}): its {layer} is active, "
                "so the evaluation is noisy; expected `.eval()` before evaluating",
                hint="call model.eval() before the evaluation and model.train() after it",
            )


def _label(facts: FileFacts, call: ModelCall) -> str:
    """The model as the script's call writes it (``model`` in ``model(x)`` or ``model.generate(x)``)."""
    func = getattr(report_node(call), "func", None)
    if isinstance(func, cst.Attribute):
        func = func.value
    if func is not None:
        text = facts.module.code_for_node(func).strip()
        if len(text) <= 40:
            return text
    return call.ident.label


def _switch_text(facts: FileFacts, call: ModelCall, mode: str, fallback: str) -> str:
    nodes = modes.setters(call.modes, mode)
    texts = sorted({facts.module.code_for_node(node).strip() for node in nodes if node is not None})
    if not texts:
        return fallback
    text = texts[0] if len(texts[0]) <= 60 else texts[0][:57] + "..."
    return f"`{text}`"
