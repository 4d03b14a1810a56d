"""Jupyter notebooks: their code cells as one Python source, and findings mapped back to cells.

The code cells are joined, in order, into one module (a cell can use what an earlier one defined),
with a boundary comment line between cells. IPython syntax is not Python: a cell that starts with a
cell magic (``%%time``) is left out whole, and a line magic (``%matplotlib inline``) or a shell line
(``!pip install x``) becomes ``pass`` at the same indentation, so every other line keeps its number.

Findings name the cell (1-based, counting every cell of the notebook as Jupyter lists them) and the
line inside it. ``--fix`` rewrites only the code cells it changed, putting the magics back, and
writes the notebook with its own JSON layout (indent, key order, non-ASCII text, final newline)
and its outputs untouched.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from shapecheck.diagnostics import Diagnostic, Span

NOTEBOOK_SUFFIX = ".ipynb"
#: The line that separates two cells in the joined source (a comment: it never changes meaning).
BOUNDARY = "# shapecheck: cell boundary"
_MAGIC_LINE = re.compile(r"^(\s*)[%!]")


class NotebookError(Exception):
    """The file is not a notebook shapecheck can read or write."""


def is_notebook(path: Path | str) -> bool:
    return str(path).endswith(NOTEBOOK_SUFFIX)


@dataclass
class CodeCell:
    """One code cell: its index among all cells (0-based) and its lines as Python sees them."""

    index: int
    lines: list[str]
    #: Line numbers (0-based, in this cell) of magic or shell lines replaced by ``pass``.
    magics: dict[int, str] = field(default_factory=dict)
    #: The whole cell is a cell magic (``%%bash``): not Python, never linted or fixed.
    skipped: bool = False
    #: The first line of this cell in the joined source (1-based).
    first_line: int = 0


@dataclass
class Notebook:
    """A parsed notebook: the JSON document, its layout and its code cells."""

    document: dict
    cells: list[CodeCell]
    indent: int | None
    ensure_ascii: bool
    final_newline: bool
    #: The JSON text as read.
    text: str = ""

    @property
    def source(self) -> str:
        """The code cells joined into one module (boundary lines between them)."""
        parts: list[str] = []
        line = 1
        for cell in self.cells:
            if parts:
                parts.append(BOUNDARY)
                line += 1
            cell.first_line = line
            parts.extend(cell.lines if not cell.skipped else [""] * len(cell.lines))
            line += len(cell.lines)
        return "\n".join(parts) + "\n" if parts else ""

    def cell_at(self, line: int) -> tuple[CodeCell, int] | None:
        """The cell that holds ``line`` of the joined source, and the line inside it (1-based)."""
        for cell in reversed(self.cells):
            if cell.first_line and line >= cell.first_line:
                inner = line - cell.first_line + 1
                return (cell, inner) if inner <= len(cell.lines) else None
        return None

    def locate(self, diagnostic: Diagnostic) -> Diagnostic:
        """``diagnostic`` with its position inside its cell, and the cell number (1-based)."""
        found = self.cell_at(diagnostic.span.line)
        if found is None:
            return diagnostic
        cell, line = found
        shift = line - diagnostic.span.line
        span = diagnostic.span
        end_line = span.end_line + shift
        end_column = span.end_column
        if end_line > len(cell.lines):  # a span that runs past its cell stops at the cell's end
            end_line, end_column = len(cell.lines), len(cell.lines[-1]) + 1 if cell.lines else 1
        return replace(diagnostic, span=Span(line, span.column, end_line, end_column), cell=cell.index + 1)

    def cell_sources(self) -> dict[int, str]:
        """The text of each code cell as shown in findings, by cell number (1-based)."""
        return {cell.index + 1: "\n".join(self._original_lines(cell)) for cell in self.cells}

    def _original_lines(self, cell: CodeCell) -> list[str]:
        return [cell.magics.get(i, text) for i, text in enumerate(cell.lines)]

    def with_source(self, fixed: str) -> str:
        """The notebook's JSON text with its code cells replaced by those of ``fixed``."""
        chunks = fixed.rstrip("\n").split("\n" + BOUNDARY + "\n") if fixed.strip() else []
        if len(chunks) != len(self.cells):
            raise NotebookError("a fix moved a cell boundary; not written")
        cells = self.document.get("cells", [])
        for cell, chunk in zip(self.cells, chunks):
            lines = chunk.split("\n")
            if cell.skipped or lines == cell.lines:
                continue
            if cell.magics and len(lines) != len(cell.lines):
                raise NotebookError(f"a fix changed the line count of cell {cell.index + 1}, which has magics; not written")
            restored = [cell.magics.get(i, text) for i, text in enumerate(lines)]
            cells[cell.index]["source"] = _as_source_field(restored, cells[cell.index].get("source"))
        return self.dumps()

    def dumps(self) -> str:
        text = json.dumps(self.document, indent=self.indent, ensure_ascii=self.ensure_ascii)
        return text + ("\n" if self.final_newline else "")


def parse(text: str) -> Notebook:
    """Read a notebook's JSON text; ``NotebookError`` when it is not a notebook."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a valid notebook: JSON error at line {error.lineno} column {error.colno}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a valid notebook: no list of cells")
    cells: list[CodeCell] = []
    for index, cell in enumerate(document["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        cells.append(_code_cell(index, "".join(raw) if isinstance(raw, list) else str(raw)))
    return Notebook(
        document,
        cells,
        indent=_indent_of(text),
        ensure_ascii=not any(ord(ch) > 127 for ch in text),
        final_newline=text.endswith("\n"),
        text=text,
    )


def _code_cell(index: int, text: str) -> CodeCell:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # a trailing newline ends the last line; it does not start another
    if not lines:
        lines = [""]
    cell = CodeCell(index, lines)
    if lines[0].lstrip().startswith("%%"):
        cell.skipped = True
        return cell
    for i, line in enumerate(lines):
        match = _MAGIC_LINE.match(line)
        if match and not _continues(lines, i):
            cell.magics[i] = line
            lines[i] = match.group(1) + "pass"
    return cell


def _continues(lines: list[str], i: int) -> bool:
    """A line that continues the previous one (after a backslash) is not a magic."""
    return i > 0 and lines[i - 1].endswith("\\")


def _indent_of(text: str) -> int | None:
    """The indent of the JSON text (nbformat writes 1), or None for a single-line document."""
    match = re.search(r"\n( +)\S", text)
    return len(match.group(1)) if match else None


def _as_source_field(lines: list[str], original: object) -> object:
    """The cell's ``source`` in the form the notebook used: a list of lines or one string."""
    text = "\n".join(lines)
    if isinstance(original, str):
        trailing = "\n" if original.endswith("\n") else ""
        return text + trailing
    trailing = isinstance(original, list) and bool(original) and str(original[-1]).endswith("\n")
    text += "\n" if trailing else ""
    return text.splitlines(keepends=True)
