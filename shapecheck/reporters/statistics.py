"""``--statistics``: how many findings each rule produced, instead of the findings themselves."""

from __future__ import annotations

import json
from typing import TextIO

from shapecheck.reporters.base import LintReport


def rows(report: LintReport) -> list[dict[str, object]]:
    """One row per rule with findings, most frequent first."""
    fixable = {d.code for d in report.diagnostics if d.fix is not None}
    counted = sorted(report.counts().items(), key=lambda item: (-item[1], item[0][0]))
    return [
        {"code": code, "name": name, "count": count, "fixable": code in fixable}
        for (code, name), count in counted
    ]


def write(report: LintReport, stream: TextIO, fmt: str = "text") -> None:
    table = rows(report)
    if fmt == "json":
        json.dump(table, stream, indent=2)
        stream.write("\n")
        return
    width = max((len(str(row["count"])) for row in table), default=1)
    for row in table:
        mark = "[*]" if row["fixable"] else "   "
        stream.write(f"{row['count']:>{width}}  {row['code']}  {mark} {row['name']}\n")
    total = sum(int(row["count"]) for row in table)
    stream.write(f"Found {total} problem{'s' if total != 1 else ''}.\n" if total else "No problems found.\n")
