"""Output formats: text, concise, json (an exact contract), sarif (schema-valid), github."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from conftest import BadNameRule
from shapecheck.diagnostics import Diagnostic, Edit, FileError, Fix, Severity, Span
from shapecheck.reporters import FORMATS, get
from shapecheck.reporters.base import LintReport, summary
from shapecheck.reporters.github import escape_property
from shapecheck.reporters.text import excerpt
from shapecheck.rules.base import registry

SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())


class FakeNode:
    """Edits only need a node for identity; reporters never look at it."""


def diagnostic(path: str = "pkg/a.py", line: int = 2, column: int = 5, **changes) -> Diagnostic:
    values = dict(
        path=path,
        span=Span(line, column, line, column + 8),
        code="SC990",
        name="bad-name",
        severity=Severity.WARNING,
        message="bad_name is a bad name",
        hint="call it good_name",
        fix=None,
    )
    values.update(changes)
    return Diagnostic(**values)


def fixed(d: Diagnostic) -> Diagnostic:
    edit = Edit(FakeNode(), FakeNode(), span=d.span, content="good_name")  # type: ignore[arg-type]
    return Diagnostic(**{**d.__dict__, "fix": Fix("rename to good_name", (edit,))})


def report(**changes) -> LintReport:
    values = dict(
        diagnostics=[
            diagnostic("pkg/b.py", 1, 1, code="SC001", name="syntax-error", severity=Severity.ERROR, hint=None),
            fixed(diagnostic()),
            diagnostic(line=1, severity=Severity.INFO),
        ],
        errors=[FileError("missing.py", "no such file or directory")],
        files_checked=3,
        sources={"pkg/a.py": "import torch\nx = bad_name\n", "pkg/b.py": "def f(:\n"},
        rules=[*registry(), BadNameRule],
        color="never",
    )
    values.update(changes)
    return LintReport(**values)


def render(name: str, data: LintReport) -> str:
    stream = io.StringIO()
    get(name)(data, stream)
    return stream.getvalue()


def test_json_is_exactly_the_contract() -> None:
    data = json.loads(render("json", report()))
    # Version 1 only ever gains fields: "skipped" and "coverage" (and a diagnostic's "hint") were added.
    assert list(data) == ["version", "files_checked", "diagnostics", "errors", "skipped", "coverage"]
    assert data["version"] == 1 and data["files_checked"] == 3
    assert [(d["path"], d["line"], d["column"]) for d in data["diagnostics"]] == [
        ("pkg/a.py", 1, 5),
        ("pkg/a.py", 2, 5),
        ("pkg/b.py", 1, 1),
    ]
    first, second, _ = data["diagnostics"]
    assert list(first) == [
        "path", "line", "column", "end_line", "end_column", "code", "name", "severity", "message", "hint", "fix", "cell",
    ]
    assert first["severity"] == "info" and first["fix"] is None
    assert second["fix"] == {
        "message": "rename to good_name",
        "edits": [{"line": 2, "column": 5, "end_line": 2, "end_column": 13, "content": "good_name"}],
    }
    assert data["errors"] == [{"path": "missing.py", "message": "no such file or directory"}]


def test_sarif_is_valid_sarif_2_1_0() -> None:
    log = json.loads(render("sarif", report()))
    jsonschema.validate(log, SCHEMA)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {"id", "name", "shortDescription", "help"} <= set(rules[0])
    ids = [rule["id"] for rule in rules]
    assert "SC001" in ids and "SC990" in ids
    result = run["results"][1]
    assert result["ruleId"] == "SC990" and ids[result["ruleIndex"]] == "SC990"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pkg/a.py"
    assert result["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 13,
    }
    assert result["fixes"][0]["artifactChanges"][0]["replacements"][0]["insertedContent"] == {"text": "good_name"}
    assert run["invocations"][0]["executionSuccessful"] is False
    levels = [r["level"] for r in run["results"]]
    assert levels == ["note", "warning", "error"]


def test_sarif_empty_run_is_valid() -> None:
    log = json.loads(render("sarif", LintReport(rules=list(registry()))))
    jsonschema.validate(log, SCHEMA)
    assert log["runs"][0]["results"] == []


def test_sarif_uri_of_odd_paths() -> None:
    from shapecheck.reporters.sarif import uri

    assert uri("dir with space/a.py") == "dir%20with%20space/a.py"
    assert uri("/abs/a.py") == "file:///abs/a.py"


def test_github_workflow_commands() -> None:
    lines = render("github", report()).splitlines()
    assert lines[0] == (
        "::notice file=pkg/a.py,line=1,col=5,endLine=1,endColumn=13,title=SC990 bad-name::"
        "bad_name is a bad name (hint: call it good_name)"
    )
    assert lines[2].startswith("::error file=pkg/b.py,line=1,col=1,endLine=1,endColumn=9,title=SC001 syntax-error::")
    assert "::error file=missing.py,title=shapecheck::no such file or directory" in lines
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"


def test_concise() -> None:
    lines = render("concise", report(errors=[])).splitlines()
    assert lines[:3] == [
        "pkg/a.py:1:5: SC990 bad_name is a bad name",
        "pkg/a.py:2:5: SC990 bad_name is a bad name",
        "pkg/b.py:1:1: SC001 bad_name is a bad name",
    ]
    assert lines[-1] == "Found 3 problems in 2 files (1 fixable with --fix)."


def test_text_blocks_and_summary() -> None:
    out = render("text", report(errors=[]))
    assert "\x1b[" not in out
    block = out.split("\n\n")[1].splitlines()
    assert block == [
        "pkg/a.py:2:5: SC990 [bad-name] bad_name is a bad name",
        "  2 | x = bad_name",
        "    |     ^^^^^^^^",
        "    = hint: call it good_name [fix available: --fix]",
    ]
    assert out.rstrip().splitlines()[-2] == "Found 3 problems in 2 files (1 fixable with --fix)."
    assert out.rstrip().splitlines()[-1].startswith("Coverage: ")


def test_text_colour_only_when_asked_or_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "\x1b[" in render("text", report(color="always"))
    assert "\x1b[" not in render("text", report(color="auto"))

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    get("text")(report(color="auto"), stream)
    assert "\x1b[" in stream.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    stream = Terminal()
    get("text")(report(color="auto"), stream)
    assert "\x1b[" not in stream.getvalue()


def test_text_long_messages_do_not_wrap() -> None:
    long = diagnostic(message="x" * 300)
    out = render("text", LintReport(diagnostics=[long], files_checked=1, color="never"))
    assert ("x" * 300) in out


@pytest.mark.parametrize(
    ("line", "column", "end", "shown", "offset", "width"),
    [
        ("x = bad_name", 5, 13, "x = bad_name", 4, 8),
        ("\tx = bad_name", 6, 14, "    x = bad_name", 8, 8),
        ("s = '日本' + bad", 12, 15, "s = '日本' + bad", 13, 3),
        ("x = (", 5, None, "x = (", 4, 1),
        ("", 1, 2, "", 0, 1),
    ],
)
def test_excerpt_aligns_the_underline(line, column, end, shown, offset, width) -> None:
    assert excerpt(line, column, end) == (shown, offset, width)


def test_summary_wording() -> None:
    assert summary(LintReport(files_checked=1)) == "All checks passed: no problems in 1 file."
    one = LintReport(diagnostics=[diagnostic()], files_checked=2)
    assert summary(one) == "Found 1 problem in 1 file."
    one.fixed = 2
    assert summary(one) == "Fixed 2 problems. Found 1 problem in 1 file."


def test_every_format_is_registered() -> None:
    assert set(FORMATS) == {"text", "concise", "json", "sarif", "github"}
