"""Import resolution inside the linted roots: layouts, import forms, re-exports, cycles, opacity."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from shapecheck.engine.domain.values import ClassValue, FunctionValue, IntValue, QualifiedValue
from shapecheck.engine.interpreter.project import public_names
from shapecheck.project import LintContext, Workspace

import libcst as cst


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def context(path: Path, workspace: Workspace | None = None) -> LintContext:
    found = LintContext.for_file(workspace or Workspace(), path)
    assert found is not None
    return found


LAYERS = """
    import torch.nn as nn

    WIDTH = 64

    class Attention(nn.Module):
        def forward(self, x):
            return x

    def build(n):
        return Attention()
"""


def test_flat_layout_absolute_import(tmp_path: Path) -> None:
    write(tmp_path, {"layers.py": LAYERS, "model.py": "from layers import Attention, WIDTH\n"})
    ctx = context(tmp_path / "model.py")
    assert ctx.this.name == "model"
    assert isinstance(ctx.graph.resolve("layers.Attention"), ClassValue)
    width = ctx.graph.resolve("layers.WIDTH")
    assert isinstance(width, IntValue) and width.dim.value == 64
    assert isinstance(ctx.graph.resolve("layers.build"), FunctionValue)
    assert ctx.graph.resolve("layers.missing") is None


def test_package_relative_imports(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": LAYERS,
            "pkg/sub/__init__.py": "",
            "pkg/sub/model.py": "from ..layers import Attention\nfrom .. import layers as L\nfrom . import helpers\n",
            "pkg/sub/helpers.py": "X = 3\n",
        },
    )
    ctx = context(tmp_path / "pkg" / "sub" / "model.py")
    assert ctx.this.name == "pkg.sub.model"
    table = ctx.graph.import_table(ctx.this)
    assert table.resolve("Attention") == "pkg.layers.Attention"
    assert table.resolve("L") == "pkg.layers"
    assert table.resolve("helpers") == "pkg.sub.helpers"
    assert isinstance(ctx.graph.resolve("pkg.layers.Attention"), ClassValue)
    assert isinstance(ctx.graph.resolve("pkg.sub.helpers.X"), IntValue)


def test_relative_import_in_package_init(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "from .layers import Attention\n", "pkg/layers.py": LAYERS})
    ctx = context(tmp_path / "pkg" / "__init__.py")
    assert (ctx.this.name, ctx.this.is_package) == ("pkg", True)
    assert ctx.graph.import_table(ctx.this).resolve("Attention") == "pkg.layers.Attention"


def test_src_layout_found_from_pyproject(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'pkg'\n",
            "src/pkg/__init__.py": "",
            "src/pkg/layers.py": LAYERS,
            "scripts/train.py": "from pkg.layers import Attention\n",
        },
    )
    ctx = context(tmp_path / "scripts" / "train.py")
    assert isinstance(ctx.graph.resolve("pkg.layers.Attention"), ClassValue)


def test_src_key_in_tool_shapecheck(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "[tool.shapecheck]\nsrc = ['lib']\n",
            "lib/layers.py": LAYERS,
            "app/main.py": "import layers\n",
        },
    )
    ctx = context(tmp_path / "app" / "main.py")
    assert isinstance(ctx.graph.resolve("layers.Attention"), ClassValue)
    # Without the key, lib/ is no root.
    write(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n"})
    assert context(tmp_path / "app" / "main.py").graph.resolve("layers.Attention") is None


def test_import_module_as_alias_and_dotted(tmp_path: Path) -> None:
    write(tmp_path, {"pkg/__init__.py": "", "pkg/layers.py": LAYERS, "main.py": "import pkg.layers as m\nimport pkg.layers\n"})
    ctx = context(tmp_path / "main.py")
    table = ctx.graph.import_table(ctx.this)
    assert table.resolve("m") == "pkg.layers" and table.resolve("pkg") == "pkg"
    assert ctx.graph.resolve("pkg.layers") is None  # a module stays a qualified name
    assert isinstance(ctx.graph.resolve("pkg.layers.Attention"), ClassValue)


def test_reexport_through_init_and_star_with_all(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pkg/__init__.py": "from .api import *\n",
            "pkg/api.py": "from .layers import Attention, build\n__all__ = ['Attention']\n",
            "pkg/layers.py": LAYERS,
            "main.py": "from pkg import Attention\n",
        },
    )
    ctx = context(tmp_path / "main.py")
    assert isinstance(ctx.graph.resolve("pkg.Attention"), ClassValue)
    assert ctx.graph.resolve("pkg.build") is None  # not in __all__


def test_star_without_all_exports_public_names() -> None:
    module = cst.parse_module("import torch\nX = 1\n_hidden = 2\ndef f(): pass\nclass C: pass\n")
    assert public_names(module) == ["torch", "X", "f", "C"]


def test_import_cycle_terminates_and_resolves(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.py": "from b import B_CONST\nA_CONST = 2\nclass A:\n    pass\n",
            "b.py": "from a import A_CONST, A\nB_CONST = A_CONST\nclass B:\n    pass\n",
            "c.py": "from c import C\nclass C:\n    pass\n",
        },
    )
    ctx = context(tmp_path / "a.py")
    assert isinstance(ctx.graph.resolve("b.B"), ClassValue)
    assert isinstance(ctx.graph.resolve("b.A"), ClassValue)
    assert ctx.graph.resolve("c.C") is not None


def test_stdlib_and_third_party_stay_opaque(tmp_path: Path) -> None:
    # A project file that shadows the standard library or torch is never read for their imports.
    write(tmp_path, {"math.py": "pi = 3\n", "torch.py": "X = 1\n", "main.py": "import math\nimport torch\nimport numpy\n"})
    ctx = context(tmp_path / "main.py")
    assert ctx.graph.resolve("math.pi") is None
    assert ctx.graph.resolve("torch.X") is None
    assert ctx.graph.resolve("numpy.zeros") is None
    assert ctx.graph.loaded_paths() == []


def test_reexport_of_torch_keeps_canonical_name(tmp_path: Path) -> None:
    write(tmp_path, {"common.py": "import torch.nn.functional as F\n", "main.py": "from common import F\n"})
    ctx = context(tmp_path / "main.py")
    resolved = ctx.graph.resolve("common.F")
    assert isinstance(resolved, QualifiedValue) and resolved.qualname == "torch.nn.functional"


def test_each_file_parsed_once_per_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(
        tmp_path,
        {
            "layers.py": LAYERS,
            "a.py": "import torch\nfrom layers import Attention\nx = Attention()\n",
            "b.py": "import torch\nfrom layers import Attention, build\ny = build(2)\n",
        },
    )
    import shapecheck.project as project
    from shapecheck import linter

    parsed: list[str] = []
    real = project.cst.parse_module

    def counting(source: str, *args, **kwargs):
        parsed.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(project.cst, "parse_module", counting)
    workspace = Workspace()
    for name in ("a.py", "b.py", "layers.py"):
        linter.lint_path(tmp_path / name, name, None, workspace)
    assert len(parsed) == 3


def test_relative_import_above_the_root_stays_opaque(tmp_path: Path) -> None:
    """``from ..modules import X`` reaching above the package (found on real code: fair-esm's
    model/msa_transformer.py subclasses a class imported that way) names no file: opaque, no crash."""
    write(
        tmp_path,
        {
            "model/__init__.py": "",
            "model/msa.py": """
                import torch.nn as nn
                from ..modules import Block

                class Model(Block):
                    def forward(self, x):
                        return super().forward(x)
            """,
        },
    )
    from shapecheck.linter import lint_source

    path = tmp_path / "model" / "msa.py"
    ctx = context(path)
    result = lint_source(path.read_text(), str(path), context=ctx)
    assert result.error is None and result.internal_errors == [] and result.diagnostics == []
    # the name a relative import leaves when it cannot be made absolute is no file path
    assert Workspace().locate(".", (tmp_path,)) is None and Workspace().locate("", (tmp_path,)) is None
    assert Workspace().locate("model.msa", (tmp_path,)) == (tmp_path / "model" / "msa.py").resolve()
