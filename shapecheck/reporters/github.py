"""``--format github``: GitHub Actions workflow commands, shown as annotations on the pull request.

``::error file=PATH,line=L,col=C,endLine=L,endColumn=C,title=SC101 missing-attention-scale::message``
"""

from __future__ import annotations

from typing import TextIO

from shapecheck.diagnostics import Severity
from shapecheck.reporters.base import LintReport, summary

LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """Escape a command's message as the Actions runner expects."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a property value (``file=``, ``title=``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def write(report: LintReport, stream: TextIO) -> None:
    for d in report.diagnostics:
        properties = ",".join(
            [
                f"file={escape_property(d.path)}",
                f"line={d.span.line}",
                f"col={d.span.column}",
                f"endLine={d.span.end_line}",
                f"endColumn={d.span.end_column}",
                f"title={escape_property(f'{d.code} {d.name}')}",
            ]
        )
        message = d.message if not d.hint else f"{d.message} (hint: {d.hint})"
        if d.cell is not None:
            message = f"cell {d.cell}, line {d.span.line}: {message}"
        stream.write(f"::{LEVELS[d.severity]} {properties}::{escape_data(message)}\n")
    for error in report.errors:
        stream.write(
            f"::error file={escape_property(error.path)},title=shapecheck::{escape_data(error.message)}\n"
        )
    stream.write(summary(report) + "\n")
