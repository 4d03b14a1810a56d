"""What project-wide analysis reads: only the project modules whose values the analysis needs."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shapecheck import linter
from shapecheck.engine import analyze
from shapecheck.project import LintContext, Workspace


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))


TRAINING = """
    import torch
    import torch.nn as nn

    from {module} import {decorator}


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x)


    @{decorator}()
    def evaluate(net, batch):
        return net(batch)


    def run(ids):
        model = Net()
        for step in range(3):
            model(ids).sum().backward()
            evaluate(model, ids)
"""


def grad_of_calls(root: Path) -> dict[str, set[bool | None]]:
    """The grad switch at each model call of ``train.py`` analysed in its project (None: a
    standalone run cannot tell)."""
    workspace = Workspace()
    context = LintContext.for_file(workspace, root / "train.py")
    assert context is not None
    facts = analyze(context.this.module, context.this.source, context.this.path, context.graph, context.this)
    grads: dict[str, set[bool | None]] = {}
    for call in facts.model_calls:
        grads.setdefault(context.this.module.code_for_node(call.node), set()).add(call.grad)
    return grads


def test_a_project_decorator_is_read_without_loading_its_module(tmp_path: Path) -> None:
    write(tmp_path, {
        "decorators.py": "def traced():\n    def wrap(f):\n        return f\n    return wrap\n",
        "train.py": TRAINING.format(module="decorators", decorator="traced"),
    })
    workspace = Workspace()
    result = linter.lint_path(tmp_path / "train.py", "train.py", None, workspace)
    assert result.error is None and not result.internal_errors
    parsed = {path.name for path, module in workspace._files.items() if module is not None}
    assert parsed == {"train.py"}  # decorators.py: a decorator that cannot switch grad is not loaded
    assert grad_of_calls(tmp_path) == {"model(ids)": {None}, "net(batch)": {None}}


def test_a_reexported_no_grad_still_switches_gradients_off(tmp_path: Path) -> None:
    write(tmp_path, {
        "helpers.py": "from torch import no_grad\n",
        "train.py": TRAINING.format(module="helpers", decorator="no_grad"),
    })
    assert grad_of_calls(tmp_path) == {"model(ids)": {None}, "net(batch)": {False}}


def test_a_lint_run_collects_garbage_less_often_and_restores_the_thresholds(tmp_path: Path, monkeypatch) -> None:
    """``shapecheck lint`` raises the collector's thresholds while it runs (a project's parsed
    modules stay alive, and each full collection walks them all), then puts the caller's back, also
    when the run fails."""
    import gc

    from shapecheck import runner
    from shapecheck.collector import LINT_THRESHOLDS

    (tmp_path / "model.py").write_text("import torch\nx = torch.zeros(2, 3)\n")
    seen: list[tuple[int, ...]] = []
    lint_source = linter.lint_source

    def spy(*args, **kwargs):
        seen.append(gc.get_threshold())
        return lint_source(*args, **kwargs)

    monkeypatch.setattr(linter, "lint_source", spy)
    before = gc.get_threshold()
    gc.set_threshold(900, 9, 9)
    try:
        runner.run(runner.LintOptions(paths=[str(tmp_path)], isolated=True, jobs=1, cache=False))
        assert seen == [LINT_THRESHOLDS]
        assert gc.get_threshold() == (900, 9, 9)

        def failing(*args, **kwargs):
            raise RuntimeError("boom")

        monkeypatch.setattr(runner, "_run", failing)
        try:
            runner.run(runner.LintOptions(paths=[str(tmp_path)], isolated=True, jobs=1, cache=False))
        except RuntimeError:
            pass
        assert gc.get_threshold() == (900, 9, 9)
    finally:
        gc.set_threshold(*before)
    assert LINT_THRESHOLDS[0] > 700  # rarer young collections than CPython's default (700, 10, 10)
