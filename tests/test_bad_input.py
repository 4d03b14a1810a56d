"""Bad input never produces a traceback: each case gets a one-line message and the right exit code.

They run the command in this process (``cli``: ``shapecheck.cli.main`` with its output captured, an
escaping exception fails the test); ``test_huge_file`` runs it in a subprocess, as a user or CI would,
because the limit it checks is read from the environment when the linter is imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_no_traceback, run_subprocess

CASES = {
    # name: (file content or None for "do not create", expected exit code, message in errors or None)
    "missing": (None, 2, "no such file or directory"),
    "binary": (b"\x00\x01\x02import torch\n", 2, "binary file (contains NUL bytes), not Python source"),
    "latin1": ("x = 'caf\u00e9'\n".encode("latin-1"), 2, "not valid UTF-8 (byte 0xe9 at offset 8)"),
    "empty": (b"", 0, None),
    "syntax": (b"def f(x)\n    return x\n", 1, None),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_each_bad_input(cli, tmp_path: Path, case: str, fmt: str) -> None:
    content, expected_code, message = CASES[case]
    name = f"{case}.py"
    if content is not None:
        (tmp_path / name).write_bytes(content)
    done = cli("lint", "--format", fmt, name, cwd=tmp_path)
    assert done.code == expected_code, done.out + done.err
    assert_no_traceback(done.out, done.err)
    if fmt == "json":
        data = json.loads(done.out)
        expected_errors = [{"path": name, "message": message}] if message else []
        assert data["errors"] == [{"path": e["path"], "message": e["message"]} for e in data["errors"]]
        assert [e["path"] for e in data["errors"]] == [e["path"] for e in expected_errors]
        if message:
            assert data["errors"][0]["message"].startswith(message)
    elif message:
        assert f"{name}: error: {message}" in done.err
        assert len([line for line in done.err.splitlines() if line.strip()]) == 1


def test_syntax_error_diagnostic_in_json(cli, tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("x = (1,\n")
    (tmp_path / "good.py").write_text("x = 1\n")
    done = cli("lint", "--format", "json", ".", cwd=tmp_path)
    data = json.loads(done.out)
    assert done.code == 1
    assert data["files_checked"] == 2
    [diagnostic] = data["diagnostics"]
    assert (diagnostic["path"], diagnostic["code"], diagnostic["name"]) == ("bad.py", "SC001", "syntax-error")
    assert (diagnostic["line"], diagnostic["column"]) == (1, 5)
    assert "'(' was never closed" in diagnostic["message"]


def test_empty_file_gets_a_note(cli, tmp_path: Path) -> None:
    (tmp_path / "empty.py").write_text("")
    done = cli("lint", "empty.py", cwd=tmp_path)
    assert done.code == 0
    assert done.err.strip() == "empty.py: note: empty file, nothing to check"


def test_folder_without_python_files(cli, tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# hi\n")
    done = cli("lint", "--format", "json", "docs", cwd=tmp_path)
    assert done.code == 2
    assert json.loads(done.out)["errors"] == [{"path": "docs", "message": "no Python files found in this folder"}]
    done = cli("lint", "docs", cwd=tmp_path)
    assert done.err.strip() == "docs: error: no Python files found in this folder"


def test_huge_file(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * 100)
    done = run_subprocess(["lint", "--format", "json", "big.py"], cwd=tmp_path, env={"SHAPECHECK_MAX_FILE_BYTES": "100"})
    assert done.returncode == 2
    [error] = json.loads(done.stdout)["errors"]
    assert error["message"].startswith("file too large to check (600 bytes > 100)")
    assert_no_traceback(done.stderr)


def test_good_and_bad_together_still_checks_the_good(cli, tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text("x = 1\n")
    done = cli("lint", "--format", "json", "good.py", "missing.py", cwd=tmp_path)
    data = json.loads(done.out)
    assert done.code == 2
    assert data["files_checked"] == 1
    assert data["errors"] == [{"path": "missing.py", "message": "no such file or directory"}]


def test_deeply_nested_expression(cli, tmp_path: Path) -> None:
    (tmp_path / "deep.py").write_text("x = " + "(" * 3000 + "1" + ")" * 3000 + "\n")
    done = cli("lint", "deep.py", cwd=tmp_path)
    assert done.code in (1, 2)
    assert_no_traceback(done.out, done.err)
