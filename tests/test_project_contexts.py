"""How many calling contexts a function of another project module is followed in.

The file's classes follow every call into the project with the caller's arguments. Its module-level
functions (factories, registered model variants: timm has 1,382 of them, each rebuilding its model
through ``build_model_with_cfg``) run after the classes, and follow a function of another module in
its first ``MAX_FOREIGN_CONTEXTS`` calling contexts only; later calls are opaque, as in per-file lint.
That bounds what following imports costs (issue 9: timm's whole-package lint fell from 4.1x to 2.6x
the per-file sum). These tests pin the decision: what a later variant gets wrong is not reported."""

from __future__ import annotations

from pathlib import Path

from shapecheck.engine.interpreter.core import MAX_FOREIGN_CONTEXTS
from shapecheck.runner import LintOptions, run

LAYERS = """\
import torch


def project(x, width):
    weight = torch.zeros(width, 16)
    return x @ weight
"""


def _variants(bad: int, count: int) -> str:
    lines = ["import torch", "", "from layers import project", ""]
    for index in range(1, count + 1):
        width = 5 if index == bad else 8
        lines += ["", f"def variant_{index}():", f"    return project(torch.zeros(2, 8), {width})", ""]
    return "\n".join(lines)


def _class(bad: int, count: int) -> str:
    lines = ["import torch", "from torch import nn", "", "from layers import project", "", "", "class Heads(nn.Module):", "    def forward(self, x):"]
    for index in range(1, count + 1):
        width = 5 if index == bad else 8
        lines.append(f"        x{index} = project(torch.zeros(2, 8), {width})")
    lines.append("        return x")
    return "\n".join(lines) + "\n"


def _codes(root: Path, model: str) -> list[str]:
    (root / "layers.py").write_text(LAYERS)
    (root / "model.py").write_text(model)
    report = run(LintOptions(paths=[str(root)], isolated=True, cache=False)).report
    return [d.code for d in report.diagnostics]


def test_the_first_contexts_of_module_level_functions_are_followed(tmp_path: Path) -> None:
    count = MAX_FOREIGN_CONTEXTS + 1
    assert _codes(tmp_path, _variants(bad=1, count=count)) == ["SC505"]
    assert _codes(tmp_path, _variants(bad=MAX_FOREIGN_CONTEXTS, count=count)) == ["SC505"]


def test_later_contexts_of_module_level_functions_are_opaque(tmp_path: Path) -> None:
    assert _codes(tmp_path, _variants(bad=MAX_FOREIGN_CONTEXTS + 1, count=MAX_FOREIGN_CONTEXTS + 1)) == []


def test_classes_follow_every_context(tmp_path: Path) -> None:
    count = MAX_FOREIGN_CONTEXTS + 1
    assert _codes(tmp_path, _class(bad=count, count=count)) == ["SC505"]


# ------------------------------------------------------------------ the allowance of steps

CHAIN = """\
import torch


def widen(x, width):
    weight = torch.zeros(width, 16)
    return x @ weight


def project(x, width):
    y = x * 1
    y = y + 0
    return widen(y, width)
"""


def _codes_with(root: Path, model: str, monkeypatch, floor: int, per_line: int) -> list[str]:
    from shapecheck.engine.interpreter import core

    monkeypatch.setattr(core, "FOREIGN_STEPS_FLOOR", floor)
    monkeypatch.setattr(core, "FOREIGN_STEPS_PER_LINE", per_line)
    (root / "layers.py").write_text(CHAIN)
    (root / "model.py").write_text(model)
    report = run(LintOptions(paths=[str(root)], isolated=True, cache=False)).report
    return [d.code for d in report.diagnostics]


def test_calls_into_other_modules_are_followed_within_the_allowance(tmp_path: Path, monkeypatch) -> None:
    assert _codes_with(tmp_path, _class(bad=1, count=1), monkeypatch, floor=100, per_line=0) == ["SC505"]


def test_calls_into_other_modules_are_opaque_once_the_allowance_is_spent(tmp_path: Path, monkeypatch) -> None:
    assert _codes_with(tmp_path, _class(bad=1, count=1), monkeypatch, floor=0, per_line=0) == []
    # the allowance grows with the file: one step per line of the file is enough here
    assert _codes_with(tmp_path, _class(bad=1, count=1), monkeypatch, floor=0, per_line=10) == ["SC505"]


def test_the_allowance_is_spent_in_order_and_counts_the_calls_a_call_makes(tmp_path: Path, monkeypatch) -> None:
    """Eight calls of ``project`` (each calls ``widen`` in turn): an allowance of a few steps covers
    the first calls only. Nested calls are counted: with them free, the last call would be followed."""
    first_bad = _codes_with(tmp_path, _class(bad=1, count=8), monkeypatch, floor=12, per_line=0)
    last_bad = _codes_with(tmp_path, _class(bad=8, count=8), monkeypatch, floor=12, per_line=0)
    assert (first_bad, last_bad) == (["SC505"], [])


def test_module_level_functions_get_a_smaller_share_of_the_allowance(tmp_path: Path, monkeypatch) -> None:
    """The factories and variants run last and may spend only their own share: with none, a class's
    call into another module is followed and a variant's is not."""
    from shapecheck.engine.interpreter import core

    monkeypatch.setattr(core, "MODULE_LEVEL_FOREIGN_STEPS_PER_LINE", 0)
    assert _codes_with(tmp_path, _class(bad=1, count=1), monkeypatch, floor=0, per_line=10) == ["SC505"]
    assert _codes_with(tmp_path, _variants(bad=1, count=1), monkeypatch, floor=0, per_line=10) == []
    monkeypatch.setattr(core, "MODULE_LEVEL_FOREIGN_STEPS_PER_LINE", 10)
    assert _codes_with(tmp_path, _variants(bad=1, count=1), monkeypatch, floor=0, per_line=10) == ["SC505"]


HELPERS = """\
def back_to_training(model):
    model.train()
    return model
"""

TRAIN = """\
import torch
from torch import nn
import torch.nn.functional as F

from helpers import back_to_training


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.fc(self.drop(x))


def main():
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters())
    model.train()
    for step in range(100):
        x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            model.eval()
            with torch.no_grad():
                val = F.cross_entropy(model(x), y)
            back_to_training(model)
"""


def test_an_imported_call_left_unfollowed_may_switch_the_models_it_is_given(tmp_path: Path, monkeypatch) -> None:
    # The helper puts the model back in train mode. Followed, the loop is correct; once the
    # allowance is spent the call is opaque, and an opaque call may switch the model (as in
    # per-file lint): no SC601 either way.
    from shapecheck.engine.interpreter import core

    (tmp_path / "helpers.py").write_text(HELPERS)
    (tmp_path / "train.py").write_text(TRAIN)
    for floor, per_line in ((300, 5), (0, 0)):
        monkeypatch.setattr(core, "FOREIGN_STEPS_FLOOR", floor)
        monkeypatch.setattr(core, "FOREIGN_STEPS_PER_LINE", per_line)
        report = run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report
        assert [d.code for d in report.diagnostics] == [], (floor, per_line)
    # Without the helper's call, the loop stays in eval mode after the first validation.
    (tmp_path / "train.py").write_text(TRAIN.replace("            back_to_training(model)\n", ""))
    report = run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report
    assert [d.code for d in report.diagnostics] == ["SC601"]


BUILDER = """\
def build(cls, **kwargs):
    return cls(**kwargs)
"""

PATCHES = """\
import torch
from torch import nn

from builder import build


class Model(nn.Module):
    def __init__(self, dim=64, num_patches=16, use_pos_embed=True):
        super().__init__()
        self.use_pos_embed = use_pos_embed
        self.patch_embed = nn.Conv2d(3, dim, 4, 4)
        if self.use_pos_embed:
            self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, dim))
        self.attn = nn.MultiheadAttention(dim, 4, batch_first=True)

    def forward(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        if self.use_pos_embed:
            x = {positions}
        return self.attn(x, x, x)[0]


def model_small(**kwargs):
    return build(Model, **kwargs)
"""


def test_a_class_built_by_another_modules_factory_runs_with_its_own_files_names(tmp_path: Path) -> None:
    """timm's ``build_model_with_cfg(ConVit, ...)``: the factory's module imports no ``torch``, yet
    the constructor it calls back is this file's code and reads this file's names. Run with the
    factory's names, ``torch.zeros(1, n, d)`` was unknown there, the table was not a table in that
    context, and the table checked for and dropped was reported as bare tokens instead of where the
    fix goes."""
    (tmp_path / "builder.py").write_text(BUILDER)
    (tmp_path / "model.py").write_text(PATCHES.format(positions="x"))
    report = run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report
    guard = PATCHES.splitlines().index("        if self.use_pos_embed:", 15) + 1
    assert [(d.code, d.span.line) for d in report.diagnostics] == [("SC303", guard)]
    (tmp_path / "model.py").write_text(PATCHES.format(positions="x + self.pos_embed"))
    assert run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report.diagnostics == []


NESTED_LAYERS = """\
import torch


def project(x, width):
    def weight_of(size):
        return torch.zeros(size, 16)

    return x @ weight_of(width)
"""

ALIASED_MODEL = """\
import torch as th
from torch import nn

from layers import project


class Head(nn.Module):
    def forward(self, x):
        return project(th.zeros(2, 8), {width})
"""


def test_a_function_nested_in_another_modules_function_keeps_that_modules_names(tmp_path: Path) -> None:
    """Only this file's own definitions switch back to its names: a helper nested in a function of
    ``layers.py`` reads ``layers.py``'s ``torch`` (this file calls it ``th``)."""
    (tmp_path / "layers.py").write_text(NESTED_LAYERS)
    for width, expected in ((5, ["SC505"]), (8, [])):
        (tmp_path / "model.py").write_text(ALIASED_MODEL.format(width=width))
        report = run(LintOptions(paths=[str(tmp_path)], isolated=True, cache=False)).report
        assert [d.code for d in report.diagnostics] == expected
