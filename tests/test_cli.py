"""The ``shapecheck`` command line: subcommands, selection flags, exit codes, formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import assert_no_traceback, run_subprocess
from shapecheck import __version__

CLEAN = "import torch\n\n\ndef double(x):\n    return x * 2\n"
BROKEN = "def forward(self, x)\n    return x\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / "broken.py").write_text(BROKEN)
    return tmp_path


def test_version(cli) -> None:
    ran = cli("--version")
    assert ran.code == 0
    assert ran.out.strip() == f"shapecheck {__version__}"


def test_python_dash_m_and_no_command(tmp_path: Path) -> None:
    done = run_subprocess(["--version"], cwd=tmp_path)
    assert done.returncode == 0 and __version__ in done.stdout
    done = run_subprocess([], cwd=tmp_path)
    assert done.returncode == 2
    assert "lint" in done.stderr and "explain" in done.stderr
    assert_no_traceback(done.stderr)


def test_unknown_option_is_a_usage_error(cli) -> None:
    ran = cli("lint", "--no-such-flag")
    assert ran.code == 2
    assert "unrecognized arguments" in ran.err


def test_clean_files_exit_zero(cli, project: Path) -> None:
    ran = cli("lint", "pkg/clean.py", cwd=project)
    assert ran.code == 0
    assert "All checks passed: no problems in 1 file." in ran.out


def test_default_path_is_current_folder(cli, project: Path) -> None:
    ran = cli("lint", "--format", "json", cwd=project)
    data = json.loads(ran.out)
    assert data["files_checked"] == 2
    assert [d["path"] for d in data["diagnostics"]] == ["pkg/broken.py"]
    assert ran.code == 1


def test_findings_exit_one_and_exit_zero_forces_zero(cli, project: Path) -> None:
    assert cli("lint", "pkg", cwd=project).code == 1
    ran = cli("lint", "pkg", "--exit-zero", cwd=project)
    assert ran.code == 0
    assert "SC001" in ran.out


def test_syntax_error_is_reported_and_run_goes_on(cli, project: Path) -> None:
    ran = cli("lint", "pkg", "--format", "concise", cwd=project)
    assert ran.out.splitlines()[0] == "pkg/broken.py:1:21: SC001 the file does not parse: expected ':'"
    assert "Found 1 problem in 1 file." in ran.out


def test_text_format_block(cli, project: Path) -> None:
    ran = cli("lint", "pkg/broken.py", cwd=project)
    lines = ran.out.splitlines()
    assert lines[0] == "pkg/broken.py:1:21: SC001 [syntax-error] the file does not parse: expected ':'"
    assert lines[1] == "  1 | def forward(self, x)"
    assert lines[2] == "    |                     ^"
    assert lines[-2] == "Found 1 problem in 1 file."
    assert lines[-1] == "Coverage: 0 functions analysed; no tensor values found."
    assert "\x1b[" not in ran.out  # not a terminal: no colour


def test_select_ignore_extend_select(cli, project: Path, test_rules) -> None:
    (project / "pkg" / "names.py").write_text("bad_name = 1\n")

    def codes(*flags: str) -> set[str]:
        ran = cli("lint", "pkg", "--format", "json", *flags, cwd=project)
        assert ran.code in (0, 1), ran.err
        return {d["code"] for d in json.loads(ran.out)["diagnostics"]}

    assert codes() == {"SC001", "SC990"}
    assert codes("--select", "SC001") == {"SC001"}
    assert codes("--select", "bad-name") == {"SC990"}
    assert codes("--select", "SC99") == {"SC990"}
    assert codes("--select", "SC0,SC990") == {"SC001", "SC990"}
    assert codes("--select", "SC0", "--select", "SC990") == {"SC001", "SC990"}
    assert codes("--ignore", "SC9") == {"SC001"}
    assert codes("--ignore", "syntax-error") == {"SC990"}
    assert codes("--select", "SC001", "--extend-select", "SC990") == {"SC001", "SC990"}
    nothing = cli("lint", "pkg", "--select", "ALL", "--ignore", "ALL", cwd=project)
    assert nothing.code == 2 and "selects no implemented rule" in nothing.err


@pytest.mark.parametrize("flag", ["--select", "--ignore", "--extend-select"])
def test_unknown_rule_is_a_usage_error(cli, project: Path, flag: str) -> None:
    ran = cli("lint", "pkg", flag, "SC9999", cwd=project)
    assert ran.code == 2
    assert "unknown rule code or name 'SC9999'" in ran.err
    assert ran.out == ""


def test_catalogued_but_unwritten_rule_is_accepted(cli, project: Path) -> None:
    # SC603 is in RULES.md; while it is not implemented, selecting it selects nothing.
    ran = cli("lint", "pkg", "--ignore", "lm-targets-not-shifted", cwd=project)
    assert ran.code == 1


def test_statistics(cli, project: Path, test_rules) -> None:
    (project / "pkg" / "names.py").write_text("bad_name = 1\nbad_name = 2\n")
    ran = cli("lint", "pkg", "--statistics", cwd=project)
    assert ran.code == 1
    assert ran.out.splitlines() == ["2  SC990  [*] bad-name", "1  SC001      syntax-error", "Found 3 problems."]
    ran = cli("lint", "pkg", "--statistics", "--format", "json", cwd=project)
    assert json.loads(ran.out)[0] == {"code": "SC990", "name": "bad-name", "count": 2, "fixable": True}
    assert cli("lint", "pkg", "--statistics", "--format", "sarif", cwd=project).code == 2


def test_summary_counts_fixable(cli, project: Path, test_rules) -> None:
    (project / "pkg" / "names.py").write_text("bad_name = 1\n")
    ran = cli("lint", "pkg", cwd=project)
    assert ran.out.splitlines()[-2] == "Found 2 problems in 2 files (1 fixable with --fix)."
    assert "= hint: call it good_name [fix available: --fix]" in ran.out


def test_rule_crash_becomes_an_error_entry(cli, project: Path, test_rules) -> None:
    (project / "pkg" / "crash.py").write_text("crash_me = 1\n")
    ran = cli("lint", "pkg", "--format", "json", cwd=project)
    assert ran.code == 2
    data = json.loads(ran.out)
    assert data["errors"] == [
        {
            "path": "pkg/crash.py",
            "message": "internal error while checking this file (RuntimeError: rule blew up); please report it",
        }
    ]
    assert [d["path"] for d in data["diagnostics"]] == ["pkg/broken.py"]  # the run went on
    assert_no_traceback(ran.out, ran.err)


def test_rules_table_and_json(cli) -> None:
    ran = cli("rules")
    assert ran.code == 0
    assert "SC001" in ran.out and "syntax-error" in ran.out
    ran = cli("rules", "--format", "json")
    rows = json.loads(ran.out)
    assert {"code": "SC001", "name": "syntax-error", "severity": "error", "fixable": False} == {
        key: rows[0][key] for key in ("code", "name", "severity", "fixable")
    }
    assert [row["code"] for row in rows] == sorted(row["code"] for row in rows)


@pytest.mark.parametrize("key", ["SC001", "sc001", "syntax-error"])
def test_explain(cli, key: str) -> None:
    ran = cli("explain", key)
    assert ran.code == 0
    assert "SC001 syntax-error" in ran.out
    assert "What it does" in ran.out and "Use instead" in ran.out


def test_explain_raw_markdown(cli) -> None:
    ran = cli("explain", "SC001", "--raw")
    assert ran.out.startswith("# SC001 syntax-error\n")
    assert "## Why is this bad?" in ran.out


def test_explain_unknown_and_unwritten(cli) -> None:
    ran = cli("explain", "syntax-eror")
    assert ran.code == 2
    assert "unknown rule 'syntax-eror'; did you mean 'syntax-error'?" in ran.err
    ran = cli("explain", "SC9999")
    assert ran.code == 2
    assert_no_traceback(ran.err)


def test_json_is_sorted_across_arguments_and_folders(cli, tmp_path: Path) -> None:
    for name in ("b/z.py", "b/a/y.py", "a.py", "c.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = (\n")
    ran = cli("lint", "--format", "json", "c.py", "b", "a.py", "missing2.py", "missing1.py", cwd=tmp_path)
    data = json.loads(ran.out)
    assert [d["path"] for d in data["diagnostics"]] == ["a.py", "b/a/y.py", "b/z.py", "c.py"]
    assert [e["path"] for e in data["errors"]] == ["missing1.py", "missing2.py"]


def test_verbose_prints_each_file(cli, project: Path) -> None:
    ran = cli("lint", "pkg", "--verbose", cwd=project)
    lines = [line for line in ran.err.splitlines() if "checked in" in line]
    assert [line.split(":")[0] for line in lines] == ["pkg/broken.py", "pkg/clean.py"]
