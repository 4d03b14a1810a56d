"""``--format concise``: one line per finding, ``path:line:col: CODE message``."""

from __future__ import annotations

import sys
from typing import TextIO

from shapecheck.reporters.base import LintReport, summary


def write(report: LintReport, stream: TextIO) -> None:
    for d in report.diagnostics:
        stream.write(f"{d.where}: {d.code} {d.message}\n")
    for error in report.errors:
        sys.stderr.write(f"{error.path}: error: {error.message}\n")
    stream.write(summary(report) + "\n")
