"""Fixes: --fix rewrites atomically, --diff writes nothing, a fix that breaks the file is not written."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import libcst as cst
import pytest

from shapecheck.diagnostics import Edit, Fix
from shapecheck.fixes import FixError, check_parses, fix_module, unified_diff, write_atomically
from shapecheck.linter import lint_source

SOURCE = "import torch\n\nbad_name = 1\nprint(bad_name)  # keep me\n"
FIXED = "import torch\n\ngood_name = 1\nprint(good_name)  # keep me\n"


def test_fix_module_applies_every_fix_in_one_pass(test_rules) -> None:
    result = lint_source(SOURCE, "m.py", {"SC990"})
    assert len(result.diagnostics) == 2
    outcome = fix_module(result.module, SOURCE, result.diagnostics)
    assert outcome.fixed == FIXED
    assert len(outcome.applied) == 2 and outcome.skipped == []


def test_conflicting_fixes_first_wins() -> None:
    module = cst.parse_module("x = f(a)\n")
    call = module.body[0].body[0].value
    arg = call.args[0].value
    from shapecheck.diagnostics import Diagnostic, Severity, Span

    def diag(line_col: int, node, replacement) -> Diagnostic:
        return Diagnostic(
            "m.py", Span(1, line_col, 1, line_col + 1), "SC990", "bad-name", Severity.WARNING, "m",
            fix=Fix("f", (Edit(node, replacement),)),
        )

    outer = diag(5, call, cst.parse_expression("g(b)"))
    inner = diag(7, arg, cst.Name("c"))
    outcome = fix_module(module, module.code, [inner, outer])
    assert outcome.fixed == "x = g(b)\n"
    assert outcome.applied == [outer] and outcome.skipped == [inner]


def test_cli_fix_rewrites_and_reports_what_is_left(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    path.chmod(0o640)
    ran = cli("lint", "m.py", "--fix", cwd=tmp_path)
    assert ran.code == 0, ran.out + ran.err
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert "Fixed 2 problems. All checks passed: no problems in 1 file." in ran.out
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".shapecheck-tmp")]


def test_cli_fix_keeps_unfixable_findings(cli, tmp_path: Path, test_rules) -> None:
    (tmp_path / "m.py").write_text(SOURCE + "crash_free = broken_name\n")
    ran = cli("lint", "m.py", "--fix", "--ignore", "SC991", "--format", "json", cwd=tmp_path)
    assert ran.code == 0
    assert json.loads(ran.out)["diagnostics"] == []


def test_diff_writes_nothing(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    path.write_text(SOURCE)
    before = path.stat().st_mtime_ns
    ran = cli("lint", "m.py", "--diff", cwd=tmp_path)
    assert ran.code == 1
    assert path.read_text() == SOURCE and path.stat().st_mtime_ns == before
    assert ran.out.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "-bad_name = 1\n-print(bad_name)  # keep me\n+good_name = 1\n" in ran.out
    assert "Would fix 2 problems in 1 file" in ran.err
    ran = cli("lint", "m.py", "--diff", "--select", "SC001", cwd=tmp_path)
    assert ran.code == 0 and ran.out == "" and "No fixes available." in ran.err


def test_fix_that_breaks_the_file_is_not_written(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    text = "broken_name = 1\nbad_name = 2\n"
    path.write_text(text)
    ran = cli("lint", "m.py", "--fix", "--format", "json", cwd=tmp_path)
    assert path.read_text() == text
    data = json.loads(ran.out)
    assert ran.code == 2
    [error] = data["errors"]
    assert error["path"] == "m.py" and "fixed code does not parse, file left unchanged" in error["message"]
    assert {d["code"] for d in data["diagnostics"]} == {"SC990", "SC991"}


def test_check_parses() -> None:
    check_parses("x = 1\n")
    with pytest.raises(FixError, match="does not parse"):
        check_parses("class\n")


def test_write_atomically_keeps_bom_and_refuses_changed_files(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    write_atomically(path, "x = 2\n", expected="x = 1\n")
    assert path.read_bytes() == b"\xef\xbb\xbfx = 2\n"
    with pytest.raises(FixError, match="changed on disk"):
        write_atomically(path, "x = 3\n", expected="x = 1\n")
    assert path.read_bytes() == b"\xef\xbb\xbfx = 2\n"


def test_write_atomically_failure_leaves_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(FixError, match="No space left on device"):
        write_atomically(path, "x = 2\n")
    assert path.read_text() == "x = 1\n"
    assert os.listdir(tmp_path) == ["m.py"]


def test_crlf_files_keep_their_line_ends(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"bad_name = 1\r\nx = 2\r\n")
    assert cli("lint", "m.py", "--fix", cwd=tmp_path).code == 0
    assert path.read_bytes() == b"good_name = 1\r\nx = 2\r\n"


def test_unified_diff_without_final_newline() -> None:
    diff = unified_diff("m.py", "a = 1", "b = 1")
    assert diff.endswith("+b = 1\n\\ No newline at end of file\n")


def test_a_fix_that_does_not_help_is_applied_once(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    path.write_text("x = wrap_me\n")
    ran = cli("lint", "m.py", "--fix", "--select", "SC993", "--format", "json", cwd=tmp_path)
    assert path.read_text() == "x = f(wrap_me)\n"
    assert [d["code"] for d in json.loads(ran.out)["diagnostics"]] == ["SC993"]
    assert ran.code == 1


def test_clashing_fixes_are_applied_in_a_second_pass(cli, tmp_path: Path, test_rules) -> None:
    path = tmp_path / "m.py"
    path.write_text("y = pair(bad_name, 1)\n")
    ran = cli("lint", "m.py", "--fix", "--select", "SC990,SC994", cwd=tmp_path)
    assert path.read_text() == "y = pair2(good_name, 1)\n"
    assert ran.code == 0
    assert "Fixed 2 problems." in ran.out
