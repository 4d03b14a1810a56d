"""What a check reports: diagnostics, their fixes, and problems reading a file.

Everything here is a frozen dataclass so that results can be sorted, hashed, cached and sent across
processes. Positions are 1-based lines and 1-based columns, end exclusive, as editors and SARIF count.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - typing only
    import libcst as cst


class Severity(str, enum.Enum):
    """How sure and how bad: error = certain crash or wrong result, warning = very likely a bug,
    info = a guard or a hint."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class Span:
    """A source range: 1-based line and column, end column exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, eq=False)
class Edit:
    """Replace one node of the parsed module with another.

    Edits are applied by node identity in a single libcst transformation (see ``shapecheck.fixes``);
    ``span`` and ``content`` describe the same edit as text for reporters (json, sarif).
    """

    node: "cst.CSTNode"
    replacement: "cst.CSTNode"
    span: Span | None = None
    content: str = ""

    def to_json(self) -> dict[str, object]:
        span = self.span
        return {
            "line": span.line if span else None,
            "column": span.column if span else None,
            "end_line": span.end_line if span else None,
            "end_column": span.end_column if span else None,
            "content": self.content,
        }


@dataclass(frozen=True, eq=False)
class Fix:
    """A safe, mechanical correction: ``message`` says what it does (the fix title)."""

    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, object]:
        return {"message": self.message, "edits": [edit.to_json() for edit in self.edits]}


@dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule at one place."""

    path: str
    span: Span
    code: str
    name: str
    severity: Severity
    message: str
    hint: str | None = None
    fix: Fix | None = field(default=None, compare=False)
    #: In a notebook, the cell (1-based); ``span`` is then inside that cell.
    cell: int | None = None

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def where(self) -> str:
        """``path:line:col``, or ``path:cell 3:line:col`` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.span.line}:{self.span.column}"

    @property
    def source_key(self) -> str:
        """The key of the text this finding's lines come from, in ``LintReport.sources``."""
        return self.path if self.cell is None else cell_key(self.path, self.cell)

    @property
    def column(self) -> int:
        return self.span.column

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "hint": self.hint,
            "fix": self.fix.to_json() if self.fix else None,
            "cell": self.cell,
        }


def cell_key(path: str, cell: int) -> str:
    """The ``LintReport.sources`` key of one notebook cell's text."""
    return f"{path}#cell {cell}"


@dataclass(frozen=True)
class FileError:
    """A path that could not be checked at all (missing, unreadable, not text)."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}
