"""``--format json``: one JSON object on stdout, a contract other tools consume.

``{"version": 1, "files_checked": N, "diagnostics": [...], "errors": [{"path", "message"}],
"skipped": [{"path", "message"}], "coverage": {...}}``; each diagnostic is ``Diagnostic.to_json()``
(1-based lines and columns, sorted by path, line, column). Fields are only ever added within a
version (``hint``, ``skipped`` and ``coverage`` were).
"""

from __future__ import annotations

import json
from typing import TextIO

from shapecheck.reporters.base import LintReport

VERSION = 1


def to_object(report: LintReport) -> dict[str, object]:
    return {
        "version": VERSION,
        "files_checked": report.files_checked,
        "diagnostics": [d.to_json() for d in report.diagnostics],
        "errors": [error.to_json() for error in report.errors],
        "skipped": [skipped.to_json() for skipped in report.skipped],
        "coverage": dict(report.coverage.to_json(), internal_errors=len(report.internal_errors)),
    }


def write(report: LintReport, stream: TextIO) -> None:
    json.dump(to_object(report), stream, indent=2, ensure_ascii=False)
    stream.write("\n")
