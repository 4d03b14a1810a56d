"""Applying fixes: one libcst transformation per file, re-parsed before anything is written.

A fix is a list of ``Edit(node, replacement)`` pairs on the module the linter parsed. All the fixes
of one file are applied in a single pass that swaps nodes by identity. Two fixes that touch the same
node, or a node and one inside it, conflict: the first (in source order) wins, the other stays
reported and is picked up by the next run. The new text must parse (libcst and CPython's own
compiler, which executes nothing) or nothing is written; writing goes through a temporary file in
the same folder and ``os.replace``, so a file is either the old text or the new one, never half.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from shapecheck.diagnostics import Diagnostic, Edit

_BOM = b"\xef\xbb\xbf"


class FixError(Exception):
    """The fixes of a file could not be applied; the file is left as it was."""


@dataclass
class FixOutcome:
    """What fixing one file produced: the new text and the diagnostics whose fixes went in."""

    original: str
    fixed: str
    applied: list[Diagnostic] = field(default_factory=list)
    skipped: list[Diagnostic] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


class _Swap(cst.CSTTransformer):
    """Replaces every node whose identity is a key of ``edits``."""

    def __init__(self, edits: dict[int, Edit]) -> None:
        super().__init__()
        self._edits = edits
        self.done: set[int] = set()

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode):  # type: ignore[override]
        edit = self._edits.get(id(original_node))
        if edit is None:
            return updated_node
        self.done.add(id(original_node))
        return edit.replacement


class _Nesting(cst.CSTVisitor):
    """For each edited node, the edited nodes that enclose it."""

    def __init__(self, targets: set[int]) -> None:
        super().__init__()
        self._targets = targets
        self._stack: list[int] = []
        self.enclosing: dict[int, set[int]] = {}

    def on_visit(self, node: cst.CSTNode) -> bool:
        key = id(node)
        if key in self._targets:
            self.enclosing[key] = set(self._stack)
            self._stack.append(key)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] == id(original_node):
            self._stack.pop()


def _choose(module: cst.Module, diagnostics: Sequence[Diagnostic]) -> tuple[list[Diagnostic], list[Diagnostic]]:
    """Split fixable diagnostics into those applied together and those that conflict."""
    fixable = [d for d in sorted(diagnostics, key=Diagnostic.sort_key) if d.fix is not None and d.fix.edits]
    targets = {id(edit.node) for d in fixable for edit in d.fix.edits}  # type: ignore[union-attr]
    nesting = _Nesting(targets)
    module.visit(nesting)
    taken: set[int] = set()
    applied: list[Diagnostic] = []
    skipped: list[Diagnostic] = []
    for diagnostic in fixable:
        keys = {id(edit.node) for edit in diagnostic.fix.edits}  # type: ignore[union-attr]
        if any(key not in nesting.enclosing for key in keys):
            skipped.append(diagnostic)  # an edit points at a node that is not in this module
            continue
        clash = any(
            key in taken or nesting.enclosing[key] & taken or any(key in nesting.enclosing[other] for other in taken)
            for key in keys
        )
        if clash:
            skipped.append(diagnostic)
            continue
        taken |= keys
        applied.append(diagnostic)
    return applied, skipped


def fix_module(module: cst.Module, source: str, diagnostics: Sequence[Diagnostic], path: str = "<string>") -> FixOutcome:
    """Apply the fixes of ``diagnostics`` to ``module`` and check that the result parses.

    Raises ``FixError`` when the fixed text does not parse; nothing is written here.
    """
    applied, skipped = _choose(module, diagnostics)
    if not applied:
        return FixOutcome(source, source, [], skipped)
    edits = {id(edit.node): edit for d in applied for edit in d.fix.edits}  # type: ignore[union-attr]
    swap = _Swap(edits)
    try:
        fixed = module.visit(swap).code
    except Exception as error:  # libcst validates replacements while building the new tree
        raise FixError(f"could not apply fixes: {type(error).__name__}: {_first_line(error)}") from None
    check_parses(fixed, path)
    return FixOutcome(source, fixed, applied, skipped)


def check_parses(text: str, path: str = "<string>") -> None:
    """Raise ``FixError`` unless ``text`` parses with libcst and compiles with CPython."""
    try:
        cst.parse_module(text)
        compile(text, path, "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError, ValueError) as error:
        raise FixError(f"fixed code does not parse, file left unchanged: {_first_line(error)}") from None


def write_atomically(path: Path, text: str, expected: str | None = None) -> None:
    """Replace the content of ``path`` with ``text`` in one step.

    When ``expected`` is given and the file no longer holds it (it changed while being checked),
    nothing is written. A UTF-8 byte-order mark, a PEP 263 coding declaration's encoding and the
    file's permissions are kept.
    """
    from shapecheck.linter import SourceError, source_encoding

    try:
        current = path.read_bytes()
    except OSError as error:
        raise FixError(f"cannot read file before writing: {error.strerror or error}") from None
    bom = _BOM if current.startswith(_BOM) else b""
    try:
        encoding = source_encoding(current)
    except SourceError:
        encoding = "utf-8"
    if expected is not None and current.removeprefix(_BOM).decode(encoding, errors="replace") != expected:
        raise FixError("file changed on disk while it was being checked; not written")
    try:
        data = bom + text.encode(encoding)
    except UnicodeEncodeError:
        raise FixError(f"the fixed text cannot be written in the file's encoding ({encoding}); not written") from None
    folder = path.resolve().parent
    try:
        mode = path.stat().st_mode & 0o7777
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".shapecheck-tmp", dir=folder)
    except OSError as error:
        raise FixError(f"cannot write next to the file: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise FixError(f"cannot write fixed file: {error.strerror or error}") from None


def unified_diff(display: str, original: str, fixed: str) -> str:
    """A unified diff of one file, ``a/`` and ``b/`` prefixed like git's."""
    lines = difflib.unified_diff(
        original.splitlines(keepends=True),
        fixed.splitlines(keepends=True),
        fromfile=f"a/{display}",
        tofile=f"b/{display}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
