"""``--format text`` (the default): one block per finding, like a compiler's.

::

    model.py:12:16: SC101 [missing-attention-scale] scores reach softmax unscaled
      12 |     attn = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
         |                          ^^^^^^^^^^^^^^^^^^^^^^^^
         = hint: divide the scores by math.sqrt(d_k)

    Found 1 problem in 1 file (1 fixable with --fix).

Colour is used only on a terminal, never when ``NO_COLOR`` is set (or with ``--color never``).
"""

from __future__ import annotations

import os
import re
import sys
from typing import TextIO

from shapecheck.diagnostics import Diagnostic, Severity
from shapecheck.reporters.base import LintReport, summary

STYLES = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow", Severity.INFO: "bold blue"}
TAB = "    "
#: Source lines longer than this are cut around the span, so minified code does not flood the screen.
MAX_LINE = 160
#: Line ends as Python (and libcst) count them; str.splitlines also splits on form feeds.
_LINES = re.compile(r"\r\n|\r|\n")


def use_color(stream: TextIO, setting: str = "auto") -> bool:
    """Whether to colour output on ``stream``: ``always``, ``never`` or ``auto`` (a TTY, no NO_COLOR)."""
    if setting == "always":
        return True
    if setting == "never" or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def console(stream: TextIO, setting: str = "auto"):
    """A rich console on ``stream`` that never wraps lines and never interprets markup."""
    from rich.console import Console

    color = use_color(stream, setting)
    return Console(
        file=stream,
        force_terminal=color,
        no_color=not color,
        color_system="auto" if color else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )


def excerpt(line: str, column: int, end_column: int | None) -> tuple[str, int, int]:
    """The source line as shown, and the cell offset and width of the underline beneath it.

    ``column`` is 1-based; ``end_column`` (exclusive) None means "to the end of the line".
    """
    from rich.cells import cell_len

    line = line.rstrip("\r\n")
    start = min(max(column - 1, 0), len(line))
    end = len(line) if end_column is None else min(max(end_column - 1, start), len(line))
    prefix, marked, rest = line[:start], line[start:end], line[end:]
    if len(line) > MAX_LINE:
        prefix = ("..." + prefix[-40:]) if len(prefix) > 40 else prefix
        marked = marked[:MAX_LINE - 50] + ("..." if len(marked) > MAX_LINE - 50 else "")
        rest = rest[:20] + ("..." if len(rest) > 20 else "")
    prefix, marked, rest = (part.replace("\t", TAB) for part in (prefix, marked, rest))
    return prefix + marked + rest, cell_len(prefix), max(cell_len(marked), 1)


def _block(d: Diagnostic, lines: list[str] | None):
    from rich.text import Text

    style = STYLES[d.severity]
    out = [
        Text.assemble(
            (f"{d.where}:", "bold"),
            " ",
            (d.code, style),
            " ",
            (f"[{d.name}]", "dim"),
            " ",
            d.message,
        )
    ]
    if lines is not None and 1 <= d.line <= len(lines):
        end = d.span.end_column if d.span.end_line == d.line else None
        shown, offset, width = excerpt(lines[d.line - 1], d.column, end)
        gutter = str(d.line)
        pad = " " * len(gutter)
        out.append(Text.assemble((f"  {gutter} | ", "blue"), shown))
        out.append(Text.assemble((f"  {pad} | ", "blue"), " " * offset, ("^" * width, style)))
        indent = f"  {pad} = "
    else:
        indent = "  = "
    hint = d.hint or (d.fix.message if d.fix else None)
    if hint:
        extra = " [fix available: --fix]" if d.fix else ""
        out.append(Text.assemble((indent, "blue"), ("hint: ", "bold"), hint, (extra, "dim")))
    return out


def write(report: LintReport, stream: TextIO) -> None:
    out = console(stream, report.color)
    lines_by_path: dict[str, list[str]] = {}
    for d in report.diagnostics:
        key = d.source_key
        if key not in lines_by_path and key in report.sources:
            lines_by_path[key] = _LINES.split(report.sources[key])
        for text in _block(d, lines_by_path.get(key)):
            out.print(text)
        out.print()
    if report.errors:
        err = console(sys.stderr, report.color)
        for error in report.errors:
            err.print(f"{error.path}: error: {error.message}", style="red")
    complete = not (report.diagnostics or report.errors or report.skipped) and report.files_checked
    out.print(summary(report), style="green" if complete else "bold")
    if report.files_checked:
        line = report.coverage.line()
        if report.internal_errors:
            count = len(report.internal_errors)
            line += f" {count} internal error{'s' if count != 1 else ''} caught (--verbose lists them)."
        out.print(line, style="dim")
