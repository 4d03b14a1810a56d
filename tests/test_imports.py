"""``shapecheck lint`` never imports torch, jaxtyping or beartype, and keeps its start light."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import REPO, run_subprocess

HEAVY = ("torch", "jaxtyping", "beartype", "numpy")

PROBE = """
import json, sys
sys.argv = ["shapecheck", *sys.argv[1:]]
from shapecheck.cli import main
try:
    code = main()
finally:
    loaded = sorted({name.split(".")[0] for name in sys.modules})
    sys.stderr.write("MODULES=" + json.dumps(loaded) + "\\n")
"""


def _modules_after(args: list[str], cwd: Path) -> set[str]:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    line = [line for line in done.stderr.splitlines() if line.startswith("MODULES=")][-1]
    return set(json.loads(line.removeprefix("MODULES=")))


#: ``shapecheck lint --format F .`` for each format in turn, in one interpreter; the modules loaded so far
#: are written after each run, so a heavy import shows up first under the format that caused it.
FORMATS_PROBE = """
import json, sys
from shapecheck.cli import main
for fmt in sys.argv[1:]:
    main(["lint", "--format", fmt, "."])
    loaded = sorted({name.split(".")[0] for name in sys.modules})
    sys.stderr.write("MODULES " + fmt + "=" + json.dumps(loaded) + "\\n")
"""


def test_lint_never_imports_torch_jaxtyping_beartype(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "model.py").write_text(
        "import torch\nimport jaxtyping\nfrom beartype import beartype\n\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n        return x.softmax(-1)\n"
    )
    formats = ("text", "json", "sarif", "github", "concise")
    done = subprocess.run(
        [sys.executable, "-c", FORMATS_PROBE, *formats],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    after = {
        line.split("=", 1)[0].removeprefix("MODULES "): set(json.loads(line.split("=", 1)[1]))
        for line in done.stderr.splitlines()
        if line.startswith("MODULES ")
    }
    assert list(after) == list(formats), done.stderr
    for fmt in formats:
        loaded = after[fmt]
        assert not loaded & set(HEAVY), f"--format {fmt} imported {sorted(loaded & set(HEAVY))}"
        assert "shapecheck" in loaded and "libcst" in loaded


def test_importtime_shows_no_torch(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    done = run_subprocess(["lint", "m.py"], cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in done.stderr.splitlines() if "|" in line}
    assert "libcst" in imported
    assert not imported & set(HEAVY)


def test_rules_and_version_do_not_need_libcst_parsing(tmp_path: Path) -> None:
    loaded = _modules_after(["--version"], tmp_path)
    assert "rich" not in loaded and "libcst" not in loaded
