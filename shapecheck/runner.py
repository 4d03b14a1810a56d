"""A whole ``shapecheck lint`` run as a library call: paths in, a ``LintReport`` out.

Discovery, configuration, selection, linting, fixing: everything but printing and the exit code,
which the CLI decides. Per file, the rules that run are the configuration file's layer, then the
command line's layer, then the file's ``per-file-ignores``. Nothing that goes wrong with one file
stops the run: it becomes a ``FileError`` for that file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from shapecheck import linter
from shapecheck.config import ConfigResolver
from shapecheck import notebooks
from shapecheck.diagnostics import FileError, cell_key
from shapecheck.discovery import Target, discover
from shapecheck.fixes import FixError, fix_module, unified_diff, write_atomically
from shapecheck.linter import FileResult, SourceError, read_source
from shapecheck.notebooks import Notebook, NotebookError, is_notebook
from shapecheck.reporters.base import LintReport
from shapecheck.rules.base import Registry
from shapecheck.selection import RuleSelection, resolve

#: Fixes that clashed with others are applied in further passes, at most this many in all.
MAX_FIX_PASSES = 10


@dataclass(frozen=True)
class LintOptions:
    """What the command line asked for."""

    paths: Sequence[str] = (".",)
    selection: RuleSelection = RuleSelection()
    config: Path | None = None
    isolated: bool = False
    fix: bool = False
    diff: bool = False
    #: Leave out files named in ``paths`` that the configuration excludes, without a word.
    force_exclude: bool = False
    #: The text of standard input, for the path ``-``, and the file name it stands for.
    stdin_source: str | None = None
    stdin_filename: str | None = None
    #: Called after each file with its display path and the seconds it took (``--verbose``).
    progress: Callable[[str, float], None] | None = None


@dataclass
class LintRun:
    """The report plus what ``--diff`` needs: the diffs and how many fixes they hold."""

    report: LintReport
    diffs: list[str] = field(default_factory=list)
    would_fix: int = 0
    #: With ``--fix`` on standard input: the fixed text (the input itself when nothing was fixed).
    stdin_output: str | None = None


def run(options: LintOptions, registry: Registry | None = None) -> LintRun:
    """Check ``options.paths``. Raises ``ConfigError`` / ``SelectionError`` for unusable settings."""
    if registry is None:
        registry = linter.registry()
    resolver = ConfigResolver(registry, explicit=options.config, isolated=options.isolated)
    found = discover(
        options.paths,
        excluded=lambda path: resolver.for_path(path).excludes(path),
        force_exclude=options.force_exclude,
        stdin_filename=options.stdin_filename,
    )
    outcome = LintRun(LintReport(errors=list(found.errors), rules=list(registry), skipped=list(found.skipped)))
    cache: dict[tuple[int, tuple[str, ...]], frozenset[str]] = {}
    for target in found.targets:
        config = resolver.for_path(target.path)
        file_layer = config.file_ignores(target.path)
        key = (id(config), file_layer.ignore)
        if key not in cache:
            cache[key] = resolve([config.selection, options.selection, file_layer], registry)
        if not cache[key]:
            outcome.report.skipped.append(FileError(target.display, "the configuration selects no implemented rule for it"))
            continue
        started = time.perf_counter()
        _check(target, cache[key], options, outcome)
        if options.progress is not None:
            options.progress(target.display, time.perf_counter() - started)
    outcome.report.sort()
    return outcome


def _check(target: Target, selected: frozenset[str], options: LintOptions, outcome: LintRun) -> None:
    report = outcome.report
    notebook = None
    if target.stdin:
        result = _lint_source(options.stdin_source or "", target.display, selected)
        outcome.stdin_output = options.stdin_source
    elif is_notebook(target.path):
        notebook, result = _lint_notebook(target, selected)
    else:
        result = _lint_file(target, selected)
    if result.error is not None:
        report.errors.append(result.error)
        return
    report.files_checked += 1
    if result.coverage is not None:
        report.coverage.add(result.coverage)
    if result.note and target.explicit:
        report.notes.append(FileError(target.display, result.note))
    if (options.fix or options.diff) and any(d.fix for d in result.diagnostics):
        result = _fix(target, result, selected, options, outcome, notebook)
    if notebook is not None:
        _to_cells(notebook, result, report)
        return
    report.diagnostics.extend(result.diagnostics)
    if result.diagnostics and result.source is not None:
        report.sources[target.display] = result.source


def _lint_notebook(target: Target, selected: frozenset[str]) -> tuple[Notebook | None, FileResult]:
    """The notebook's code cells linted as one source (positions still in that joined source)."""
    try:
        notebook = notebooks.parse(read_source(target.path))
    except (SourceError, NotebookError) as error:
        return None, FileResult(target.display, error=FileError(target.display, str(error)))
    return notebook, _lint_source(notebook.source, target.display, selected)


def _to_cells(notebook: Notebook, result: FileResult, report: LintReport) -> None:
    """Report a notebook's findings at their cell and line, with each cell's text for the excerpt."""
    if result.source is not None and result.source != notebook.source:
        notebook = notebooks.parse(notebook.with_source(result.source))  # fixed: positions of the new text
    located = [notebook.locate(d) for d in result.diagnostics]
    report.diagnostics.extend(located)
    texts = notebook.cell_sources()
    for d in located:
        if d.cell is not None:
            report.sources[cell_key(d.path, d.cell)] = texts[d.cell]


def _fix(
    target: Target,
    result: FileResult,
    selected: frozenset[str],
    options: LintOptions,
    outcome: LintRun,
    notebook: Notebook | None = None,
) -> FileResult:
    """Apply fixes (again and again while new ones appear); return the result for the new text."""
    original = result.source or ""
    current = result
    applied = 0
    try:
        for _ in range(MAX_FIX_PASSES):
            fixable = sum(1 for d in current.diagnostics if d.fix)
            if current.module is None or current.source is None or not fixable:
                break
            step = fix_module(current.module, current.source, current.diagnostics, target.display)
            if not step.changed:
                break
            applied += len(step.applied)
            current = _lint_source(step.fixed, target.display, selected)
            if current.error is not None:
                raise FixError(current.error.message)
            # Go again only for fixes that clashed with this pass's, and only while that converges:
            # a fix that does not make its finding go away must not be applied over and over.
            if not step.skipped or sum(1 for d in current.diagnostics if d.fix) >= fixable:
                break
        if current.source is None or current.source == original:
            return result
        if options.diff:
            outcome.diffs.append(unified_diff(target.display, original, current.source))
            outcome.would_fix += applied
            return result
        if target.stdin:
            outcome.stdin_output = current.source
        elif notebook is not None:
            write_atomically(target.path, notebook.with_source(current.source), expected=notebook.text)
        else:
            write_atomically(target.path, current.source, expected=original)
    except (FixError, NotebookError) as error:
        outcome.report.errors.append(FileError(target.display, str(error)))
        return result
    outcome.report.fixed += applied
    return current


def _lint_file(target: Target, selected: frozenset[str]) -> FileResult:
    try:
        return linter.lint_path(target.path, target.display, selected)
    except Exception as error:  # one broken file must not stop the run
        return _internal_error(target.display, error)


def _lint_source(source: str, display: str, selected: frozenset[str]) -> FileResult:
    try:
        return linter.lint_source(source, display, selected)
    except Exception as error:
        return _internal_error(display, error)


def _internal_error(display: str, error: Exception) -> FileResult:
    if os.environ.get("SHAPECHECK_DEBUG"):
        raise error
    text = str(error).strip().splitlines()
    detail = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    message = f"internal error while checking this file ({detail}); please report it"
    return FileResult(display, error=FileError(display, message))


__all__ = ["LintOptions", "LintRun", "run"]
