"""One file through the whole pipeline: read once, parse once, engine facts, rules, suppression.

``lint_source`` is the pure core (a string in, diagnostics out) that the CLI, the pre-commit hook,
the tests and any future plugin share; ``lint_path`` adds reading the file and its failure modes.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import tokenize
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst

from shapecheck import coverage
from shapecheck.diagnostics import Diagnostic, FileError, Severity, Span
from shapecheck.engine import analyze
from shapecheck.hostile import MAX_OPERATOR_CHAIN, longest_operator_chain
from shapecheck.parsing import parse_module
from shapecheck.positions import PositionIndex
from shapecheck.rules.base import Report, Rule, registry
from shapecheck.suppression import Suppressions, has_ignore_file

if TYPE_CHECKING:  # pragma: no cover - typing only
    from shapecheck.project import LintContext, ProjectModule, Workspace

#: Files larger than this are reported, not parsed: generated code, data dumps, minified blobs.
MAX_FILE_BYTES = int(os.environ.get("SHAPECHECK_MAX_FILE_BYTES", 5 * 1024 * 1024))

SYNTAX_ERROR_CODE = "SC001"
#: CPython refuses deeper nesting of brackets ("too many nested parentheses").
MAX_BRACKET_DEPTH = 200
_BRACKET = re.compile(r"[()\[\]{}]")


@dataclass
class FileResult:
    """Everything the linter learned about one file."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    error: FileError | None = None
    note: str | None = None
    source: str | None = field(default=None, repr=False)
    module: cst.Module | None = field(default=None, repr=False)
    suppressed: int = 0
    #: Findings whose node lies in another project module (the file a user would change), with that
    #: file's resolved path; the runner reports those of files it checks. Already filtered by that
    #: file's suppression comments.
    foreign: list[Diagnostic] = field(default_factory=list)
    #: for each foreign finding, where to report it in this file when its own file is not checked
    #: in this run (None: nowhere)
    foreign_fallbacks: list[Diagnostic | None] = field(default_factory=list)
    #: (resolved path, sha256) of this file and of every project module it imports, directly or not.
    dependencies: list[tuple[str, str]] = field(default_factory=list)
    #: What the engine could see of the file (None: it did not analyse it).
    coverage: coverage.Coverage | None = None
    #: Exceptions the engine caught in this file (shapecheck bugs), as ``line:col: what (where)``.
    internal_errors: list[str] = field(default_factory=list)
    #: The result came from the on-disk cache (no parsed module: ``--fix`` checks the file again).
    cached: bool = False


class SourceError(Exception):
    """The file cannot be read as Python source text."""


def read_source(path: Path) -> str:
    """Read a file as UTF-8 Python source, or raise ``SourceError`` with a one-line reason."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise SourceError("no such file or directory") from None
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None
    if size > MAX_FILE_BYTES:
        raise SourceError(
            f"file too large to check ({size:,} bytes > {MAX_FILE_BYTES:,}); "
            "set SHAPECHECK_MAX_FILE_BYTES to raise the limit"
        )
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None
    return decode_source(data)


def decode_source(data: bytes) -> str:
    """Python source text from bytes (a file, or stdin), or ``SourceError`` with a one-line reason."""
    if len(data) > MAX_FILE_BYTES:
        raise SourceError(
            f"file too large to check ({len(data):,} bytes > {MAX_FILE_BYTES:,}); "
            "set SHAPECHECK_MAX_FILE_BYTES to raise the limit"
        )
    if b"\0" in data:
        raise SourceError("binary file (contains NUL bytes), not Python source")
    encoding = source_encoding(data)
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as error:
        raise SourceError(
            f"not valid {'UTF-8' if encoding == 'utf-8' else encoding} (byte 0x{data[error.start]:02x} at offset {error.start}); "
            "Python source is UTF-8 unless a coding declaration (PEP 263) says otherwise"
        ) from None
    return text.removeprefix("\ufeff")


def source_encoding(data: bytes) -> str:
    """The encoding Python would read ``data`` with: a PEP 263 coding declaration, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if "encoding problem" in str(error) or "unknown encoding" in str(error):
            raise SourceError(f"bad coding declaration: {error}") from None
        return "utf-8"  # the first lines are not UTF-8: decoding says where
    return "utf-8" if encoding == "utf-8-sig" else encoding


def lint_path(
    path: Path, display: str, selected: Collection[str] | None = None, workspace: "Workspace | None" = None
) -> FileResult:
    """Lint one file on disk; read errors become ``FileResult.error``, never exceptions.

    The project's modules that the file imports are followed (``workspace`` shares their parse and
    analysis across the files of a run; by default the file gets a workspace of its own)."""
    try:
        source = read_source(path)
    except SourceError as error:
        return FileResult(display, error=FileError(display, str(error)))
    from shapecheck.project import LintContext, ProjectModule, Workspace

    if workspace is None:
        workspace = Workspace()
    context = LintContext.for_file(workspace, path)
    return lint_source(source, display, selected, context)


def lint_source(
    source: str,
    path: str = "<string>",
    selected: Collection[str] | None = None,
    context: "LintContext | None" = None,
) -> FileResult:
    """Lint Python source text. ``selected`` is the set of rule codes to run (default: all).
    ``context`` places the text in a project (its imports are followed); without, it stands alone."""
    result = FileResult(path, source=source)
    if not source.strip():
        result.note = "empty file, nothing to check"
        return result
    rules = [rule for rule in registry() if selected is None or rule.code in selected]
    in_project = context is not None and context.this.source == source
    # A project file was screened and parsed by the workspace (``Workspace.file``) already.
    chain, chain_line = longest_operator_chain(source) if not in_project else (0, 0)
    if chain > MAX_OPERATOR_CHAIN:
        result.error = FileError(
            path,
            f"line {chain_line} holds a chain of {chain:,} binary operators, more than the parser handles in "
            f"reasonable time (limit {MAX_OPERATOR_CHAIN:,}); not checked",
        )
        return result
    if not in_project and max_bracket_depth(source) > MAX_BRACKET_DEPTH:
        # libcst's native parser overflows the C stack (a segfault, not an exception) on brackets
        # nested a few thousand deep; CPython rejects more than 200, with a proper SyntaxError.
        precise = _cpython_syntax_error(source, path)
        if precise is not None:
            if selected is None or SYNTAX_ERROR_CODE in selected:
                line, column, reason = precise
                result.diagnostics.append(_syntax_diagnostic(path, line, column, reason))
            return result
    try:
        module = context.this.module if in_project else parse_module(source)
    except cst.ParserSyntaxError as error:
        if selected is None or SYNTAX_ERROR_CODE in selected:
            result.diagnostics.append(_syntax_error(path, error, source))
        return result
    except (RecursionError, MemoryError) as error:
        result.error = FileError(path, f"too deeply nested to parse ({type(error).__name__})")
        return result
    result.module = module
    if has_ignore_file(source):
        return result
    if context is not None:
        # Text other than the file's on disk (a mutant, an editor's unsaved buffer) is still that
        # module of the project: its imports are followed the same way.
        this = context.this if in_project else _edited(context.this, module, source)
        facts = analyze(module, source, path, context.graph, this)
        result.dependencies = context.workspace.digests([context.this.path, *facts.project_reads])
    else:
        facts = analyze(module, source, path)
    result.coverage = coverage.count(facts)
    positions = PositionIndex(module)
    for caught in facts.internal_errors:
        span = positions.span(caught.node)
        result.internal_errors.append(
            f"{span.line}:{span.column}: internal error in {caught.op!r} ({caught.error}) at {caught.where}"
        )
    if context is not None:
        context.index(facts)
        facts.locator = lambda node: _locate(node, path, positions, context)
    reported: set[tuple[str, int]] = set()
    findings: list[tuple[type[Rule], Report]] = []
    for rule in rules:
        if rule.code == SYNTAX_ERROR_CODE:
            continue
        for report in rule().check(facts):
            key = (rule.code, id(report.node))
            if key in reported:
                continue
            reported.add(key)
            findings.append((rule, report))
    def shown(rule: type[Rule], report: Report) -> bool:
        """Whether the run shows this finding: in this file, at a fallback in this file, or in a
        project file the run reports with the rule selected there."""
        home = context.home_of(report.node, positions) if context is not None else None
        if home is None or (report.fallback is not None and context.home_of(report.fallback, positions) is None):
            return True
        return home.reportable and context.workspace.reports(home.path, rule.code)

    for rule, report in _root_causes(findings, shown):
        home = context.home_of(report.node, positions) if context is not None else None
        if home is not None and not home.reportable and report.fallback is not None:
            report = report.at_fallback()
            home = context.home_of(report.node, positions)
        if home is None:
            result.diagnostics.append(_diagnostic(path, rule, report, positions))
        elif home.reportable:
            diagnostic = _diagnostic(home.path, rule, report, home.positions)
            if not home.suppressions.suppresses(diagnostic):
                fallback = None
                if report.fallback is not None and context.home_of(report.fallback, positions) is None:
                    fallback = _diagnostic(path, rule, report.at_fallback(), positions)
                result.foreign.append(diagnostic)
                result.foreign_fallbacks.append(fallback)
    if result.diagnostics:
        suppressions = Suppressions.from_source(source)
        kept = [d for d in result.diagnostics if not suppressions.suppresses(d)]
        result.suppressed = len(result.diagnostics) - len(kept)
        result.diagnostics = kept
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result


def _edited(this: "ProjectModule", module: cst.Module, source: str) -> "ProjectModule":
    return replace(this, module=module, source=source, digest=hashlib.sha256(source.encode("utf-8")).hexdigest())


def _root_causes(
    findings: list[tuple[type[Rule], Report]], shown: "Callable[[type[Rule], Report], bool]"
) -> list[tuple[type[Rule], Report]]:
    """Drop the follow-ons: a finding computed from a suspect op that is itself reported (a
    concatenated positional encoding makes every later layer see the wrong width: report the cat).
    Only a cause the run ``shown`` counts: the follow-on of a finding in an imported file the run
    does not report stands, so that the user sees the problem somewhere."""
    causes = [report for rule, report in findings if shown(rule, report)]
    nodes = {id(report.node) for report in causes}
    # A finding moved to where its fix goes (a layer's constructor) still stands for the op it was
    # found at: what follows from that op is its follow-on.
    nodes |= {id(report.fallback) for report in causes if report.fallback is not None}
    return [
        (rule, report)
        for rule, report in findings
        if not any(id(cause) in nodes for cause in report.causes if cause is not report.node)
    ]


def _locate(node: cst.CSTNode, path: str, positions: PositionIndex, context: "LintContext") -> tuple[str, int]:
    """(path, line) of a node of this file or of a project module it imports."""
    home = context.home_of(node, positions)
    if home is None:
        return context.this.path, positions.span(node).line
    return home.path, home.positions.span(node).line


def _diagnostic(path: str, rule: type[Rule], report: Report, positions: PositionIndex) -> Diagnostic:
    span = positions.span(report.node)
    fix = report.fix
    if fix is not None:
        fix = positions.with_spans(fix)
    return Diagnostic(
        path=path,
        span=span,
        code=rule.code,
        name=rule.name,
        severity=rule.severity,
        message=report.message,
        hint=report.hint,
        fix=fix,
    )


def _syntax_error(path: str, error: cst.ParserSyntaxError, source: str) -> Diagnostic:
    """SC001 at the position CPython's own parser gives (libcst's points past the real error)."""
    line = max(error.raw_line, 1)
    column = error.raw_column + 1
    reason = error.message.strip().splitlines()[0] if error.message else "invalid syntax"
    precise = _cpython_syntax_error(source, path)
    if precise is not None:
        line, column, reason = precise
    return _syntax_diagnostic(path, line, column, reason)


def _syntax_diagnostic(path: str, line: int, column: int, reason: str) -> Diagnostic:
    return Diagnostic(
        path=path,
        span=Span(line, column, line, column + 1),
        code=SYNTAX_ERROR_CODE,
        name="syntax-error",
        severity=Severity.ERROR,
        message=f"the file does not parse: {reason}",
    )


def _cpython_syntax_error(source: str, path: str) -> tuple[int, int, str] | None:
    """(line, column, message) from ``compile`` to an AST only: nothing is executed."""
    try:
        compile(source, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as error:
        if not error.lineno:
            return None
        return error.lineno, max(error.offset or 1, 1), error.msg or "invalid syntax"
    except Exception:  # noqa: BLE001 - too deep, too big: keep libcst's answer
        return None
    return None


def max_bracket_depth(source: str) -> int:
    """The deepest bracket nesting, counted roughly (brackets in strings count too)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(source):
        if match.group() in "([{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest
