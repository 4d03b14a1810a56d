"""``shapecheck lint -``: source from stdin, as editors and pre-commit wrappers pass it.

The first test pipes the source to a real ``python -m shapecheck`` process; the others run the CLI in
this process with ``sys.stdin`` replaced by a byte stream (``lint_stdin``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, assert_no_traceback

FIXABLE = REPO / "examples" / "bugs" / "sc201_mask_dtype.py"
CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"


def lint(args: list[str], stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    import os

    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SHAPECHECK_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "shapecheck", "lint", *args], input=stdin, cwd=cwd, env=env, capture_output=True, timeout=120
    )


@pytest.fixture
def lint_stdin(cli, monkeypatch: pytest.MonkeyPatch):
    """``shapecheck lint ARGS`` in this process with ``stdin`` (bytes) on standard input: (code, out, err) as bytes."""

    def run(args: list[str], stdin: bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
        ran = cli("lint", *args, cwd=cwd)
        return subprocess.CompletedProcess(args, ran.code, ran.out.encode(), ran.err.encode())

    return run


def test_stdin_is_linted_under_the_given_name(tmp_path: Path) -> None:
    source = FIXABLE.read_bytes()
    done = lint(["-", "--stdin-filename", "model.py", "--format", "json"], source, tmp_path)
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["files_checked"] == 1
    assert {d["path"] for d in data["diagnostics"]} == {"model.py"}
    assert any(d["code"] == "SC201" for d in data["diagnostics"])
    plain = lint(["-"], CLEAN.encode(), tmp_path)
    assert plain.returncode == 0 and b"All checks passed: no problems in 1 file." in plain.stdout


def test_stdin_fix_writes_the_fixed_source_to_stdout(lint_stdin, tmp_path: Path) -> None:
    source = FIXABLE.read_text()
    done = lint_stdin(["-", "--fix", "--stdin-filename", "model.py"], source.encode(), tmp_path)
    fixed = done.stdout.decode()
    assert fixed != source and "def " in fixed
    copy = tmp_path / "model.py"
    copy.write_text(source)
    on_disk = lint_stdin(["--fix", "model.py"], b"", tmp_path)
    assert on_disk.returncode in (0, 1)
    assert copy.read_text() == fixed  # the same fixes as on a file
    assert b"Fixed" in done.stderr and not list(tmp_path.glob("*.shapecheck-tmp"))
    unchanged = lint_stdin(["-", "--fix"], CLEAN.encode(), tmp_path)
    assert unchanged.stdout.decode() == CLEAN and unchanged.returncode == 0


def test_stdin_filename_is_matched_against_the_configuration(lint_stdin, tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.shapecheck]\nexclude = ['gen_*.py']\nignore = ['SC201']\n")
    source = FIXABLE.read_bytes()
    ignored = lint_stdin(["-", "--stdin-filename", "model.py", "--format", "json"], source, tmp_path)
    assert "SC201" not in {d["code"] for d in json.loads(ignored.stdout)["diagnostics"]}
    skipped = lint_stdin(["-", "--stdin-filename", "gen_a.py"], source, tmp_path)
    assert b"gen_a.py: skipped" in skipped.stderr and skipped.returncode == 0
    quiet = lint_stdin(["-", "--stdin-filename", "gen_a.py", "--force-exclude"], source, tmp_path)
    assert quiet.returncode == 0 and b"skipped" not in quiet.stderr


def test_stdin_bad_input_is_a_clear_error(lint_stdin, tmp_path: Path) -> None:
    done = lint_stdin(["-"], b"\x00\x01", tmp_path)
    assert done.returncode == 2 and b"stdin: binary file" in done.stderr
    assert_no_traceback(done.stderr.decode())
    orphan = lint_stdin(["x.py", "--stdin-filename", "a.py"], b"", tmp_path)
    assert orphan.returncode == 2 and b"--stdin-filename needs the path -" in orphan.stderr


def test_coding_declaration_is_honoured(cli, tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\nimport torch\n\nNAME = 'caf\u00e9'\n\n\ndef f(x):\n    return x * 2\n"
    (tmp_path / "latin.py").write_bytes(text.encode("latin-1"))
    ran = cli("lint", "latin.py", cwd=tmp_path)
    assert ran.code == 0 and "All checks passed" in ran.out
    (tmp_path / "bogus.py").write_bytes(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    ran = cli("lint", "bogus.py", cwd=tmp_path)
    assert ran.code == 2 and "bad coding declaration" in ran.err
    (tmp_path / "plain.py").write_bytes(b"x = '\xe9'\n")
    assert "not valid UTF-8" in cli("lint", "plain.py", cwd=tmp_path).err


def test_stdin_of_a_file_of_a_project_follows_its_imports(lint_stdin, tmp_path: Path) -> None:
    """An editor passes its unsaved buffer of ``attention.py``: the helper it imports from the
    project is read (it does not scale the query), as it is when the saved file is linted."""
    (tmp_path / "helpers.py").write_text("import torch\n\n\ndef prepare(q, d_k):\n    return q\n")
    buffer = (
        "import torch.nn as nn\n\nfrom helpers import prepare\n\n\n"
        "class Attention(nn.Module):\n"
        "    def __init__(self, d_model, n_heads):\n"
        "        super().__init__()\n"
        "        self.n_heads, self.d_k = n_heads, d_model // n_heads\n"
        "        self.qkv = nn.Linear(d_model, 3 * d_model)\n\n"
        "    def forward(self, x):\n"
        "        B, T, C = x.shape\n"
        "        q, k, v = self.qkv(x).split(C, dim=-1)\n"
        "        q = q.view(B, T, self.n_heads, self.d_k).transpose(1, 2)\n"
        "        k = k.view(B, T, self.n_heads, self.d_k).transpose(1, 2)\n"
        "        v = v.view(B, T, self.n_heads, self.d_k).transpose(1, 2)\n"
        "        q = prepare(q, self.d_k)\n"
        "        scores = q @ k.transpose(-2, -1)\n"
        "        return (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)\n"
    )
    (tmp_path / "attention.py").write_text(buffer.replace("q = prepare(q, self.d_k)", "q = q * self.d_k ** -0.5"))
    done = lint_stdin(["-", "--stdin-filename", "attention.py", "--format", "json"], buffer.encode(), tmp_path)
    assert done.returncode == 1, done.stderr
    assert [(d["path"], d["code"], d["line"]) for d in json.loads(done.stdout)["diagnostics"]] == [("attention.py", "SC101", 19)]
    saved = lint_stdin(["-", "--stdin-filename", "attention.py"], (tmp_path / "attention.py").read_bytes(), tmp_path)
    assert saved.returncode == 0, saved.stdout
