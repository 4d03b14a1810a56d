"""``--format sarif``: a SARIF 2.1.0 log, for GitHub code scanning and other SARIF viewers.

One run; ``tool.driver.rules`` lists every rule (id, name, shortDescription, help) and each result
points at its rule by ``ruleIndex``; files that could not be checked become tool execution
notifications and mark the invocation unsuccessful.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePath
from typing import TextIO
from urllib.parse import quote

from shapecheck.diagnostics import Diagnostic, FileError, Severity, Span
from shapecheck.reporters.base import LintReport

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def uri(path: str) -> str:
    """A SARIF artifact URI: relative paths stay relative (posix, percent-encoded)."""
    pure = PurePath(path)
    if pure.is_absolute():
        return PurePath(os.path.abspath(path)).as_uri()
    return quote(pure.as_posix())


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }


def _location(path: str, span: Span | None = None) -> dict[str, object]:
    physical: dict[str, object] = {"artifactLocation": {"uri": uri(path)}}
    if span is not None:
        physical["region"] = _region(span)
    return {"physicalLocation": physical}


def _rule(rule: type) -> dict[str, object]:
    doc = rule.doc()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.short_description() or rule.name},
        "fullDescription": {"text": doc or rule.name},
        "help": {"text": doc or rule.name, "markdown": doc or rule.name},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"fixable": bool(rule.fixable)},
    }


def _fixes(d: Diagnostic) -> list[dict[str, object]]:
    if d.fix is None:
        return []
    replacements = [
        {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.content}}
        for edit in d.fix.edits
        if edit.span is not None
    ]
    if not replacements:
        return []
    return [
        {
            "description": {"text": d.fix.message},
            "artifactChanges": [{"artifactLocation": {"uri": uri(d.path)}, "replacements": replacements}],
        }
    ]


def _result(d: Diagnostic, index: dict[str, int]) -> dict[str, object]:
    message = d.message if not d.hint else f"{d.message}\nhint: {d.hint}"
    result: dict[str, object] = {
        "ruleId": d.code,
        "level": LEVELS[d.severity],
        "message": {"text": message},
        "locations": [_location(d.path, d.span)],
    }
    if d.code in index:
        result["ruleIndex"] = index[d.code]
    fixes = _fixes(d)
    if fixes:
        result["fixes"] = fixes
    return result


def _notification(error: FileError) -> dict[str, object]:
    return {"level": "error", "message": {"text": error.message}, "locations": [_location(error.path)]}


def to_object(report: LintReport) -> dict[str, object]:
    from shapecheck import __version__

    rules = sorted(report.rules, key=lambda rule: rule.code)
    index = {rule.code: position for position, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "shapecheck",
                        "version": __version__,
                        "semanticVersion": __version__,
                        "rules": [_rule(rule) for rule in rules],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not report.errors,
                        "toolExecutionNotifications": [_notification(error) for error in report.errors],
                    }
                ],
                "results": [_result(d, index) for d in report.diagnostics],
                "columnKind": "unicodeCodePoints",
            }
        ],
    }


def write(report: LintReport, stream: TextIO) -> None:
    json.dump(to_object(report), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
