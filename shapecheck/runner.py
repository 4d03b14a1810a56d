"""A whole ``shapecheck lint`` run as a library call: paths in, a ``LintReport`` out.

Discovery, configuration, selection, linting, fixing: everything but printing and the exit code,
which the CLI decides. Per file, the rules that run are the configuration file's layer, then the
command line's layer, then the file's ``per-file-ignores``. Nothing that goes wrong with one file
stops the run: it becomes a ``FileError`` for that file.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from shapecheck import linter
from shapecheck.config import ConfigResolver
from shapecheck import notebooks
from shapecheck.budget import BUDGET_ENV, OverBudget, file_budget, time_budget
from shapecheck.cache import Cache, Dependency, content_hash
from shapecheck.collector import lint_thresholds
from shapecheck.diagnostics import Diagnostic, FileError, cell_key
from shapecheck.discovery import Target, discover
from shapecheck.fixes import FixError, fix_module, unified_diff, write_atomically
from shapecheck.linter import FileResult, SourceError, read_source
from shapecheck.notebooks import Notebook, NotebookError, is_notebook
from shapecheck.project import LintContext, Workspace
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
    #: Worker processes (0: one per CPU core). The output does not depend on it.
    jobs: int = 0
    #: Reuse and store results in the on-disk cache (``--no-cache`` turns it off).
    cache: bool = True
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
    #: Findings a file's analysis placed in another project file, with where to report them in the
    #: analysed file when that other file is not checked in this run.
    foreign: list[tuple[Diagnostic, Diagnostic | None]] = field(default_factory=list)


#: The project workspace of this process: imported modules parsed and loaded once, shared by the
#: files this process lints (a worker process forked from the run inherits the run's and grows its
#: own copy).
_WORKSPACE: Workspace | None = None


def run(options: LintOptions, registry: Registry | None = None) -> LintRun:
    """Check ``options.paths``. Raises ``ConfigError`` / ``SelectionError`` for unusable settings."""
    with lint_thresholds():  # worker processes forked during the run inherit the thresholds
        return _run(options, registry)


def _run(options: LintOptions, registry: Registry | None) -> LintRun:
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
    global _WORKSPACE
    _WORKSPACE = Workspace(lambda path: resolver.for_path(path).src_roots())
    cache: dict[tuple[int, tuple[str, ...]], frozenset[str]] = {}
    tasks: list[tuple[Target, frozenset[str]]] = []
    for target in found.targets:
        config = resolver.for_path(target.path)
        file_layer = config.file_ignores(target.path)
        key = (id(config), file_layer.ignore)
        if key not in cache:
            cache[key] = resolve([config.selection, options.selection, file_layer], registry)
        if not cache[key]:
            outcome.report.skipped.append(FileError(target.display, "the configuration selects no implemented rule for it"))
            continue
        tasks.append((target, cache[key]))
    # Worker processes are forked with the workspace: they know which files the run reports.
    _WORKSPACE.reported = {str(target.path.resolve()): selected for target, selected in tasks if not target.stdin}
    for target, (part, seconds) in zip((task[0] for task in tasks), _check_all(tasks, options)):
        _merge(outcome, part)
        if options.progress is not None:
            options.progress(target.display, seconds)
    selections = {str(target.path.resolve()): (target, selected) for target, selected in tasks if not target.stdin}
    _add_foreign(outcome.foreign, selections, outcome.report)
    outcome.report.sort()
    return outcome


def _add_foreign(
    foreign: list[tuple[Diagnostic, Diagnostic | None]],
    selections: dict[str, tuple[Target, frozenset[str]]],
    report: LintReport,
) -> None:
    """Findings that one file's analysis placed in another file of the project: reported when that
    file is checked in this run (with its own selection), once, unless its own lint found them; else
    at their fallback in the analysed file, when they have one."""
    seen = {(d.path, d.code, d.span.line, d.span.column) for d in report.diagnostics}
    # A finding's own file is named by its resolved path; a fallback is in the analysed file, which
    # its diagnostic names as the user wrote it (``train.py``, relative to where shapecheck runs).
    analysed = {target.display: (target, selected) for target, selected in selections.values()}
    for diagnostic, fallback in foreign:
        found = selections.get(diagnostic.path)
        if found is None and fallback is not None:
            diagnostic, found = fallback, analysed.get(fallback.path)
        if found is None:
            continue  # an imported file that was not named: read, not reported
        target, selected = found
        if diagnostic.code not in selected:
            continue
        placed = replace(diagnostic, path=target.display)
        key = (placed.path, placed.code, placed.span.line, placed.span.column)
        if key in seen:
            continue
        seen.add(key)
        report.diagnostics.append(placed)
        if target.display not in report.sources:
            try:
                report.sources[target.display] = read_source(target.path)
            except SourceError:
                pass


def jobs_wanted(jobs: int) -> int:
    """``jobs`` worker processes, 0 meaning one per CPU core."""
    return jobs if jobs > 0 else (os.cpu_count() or 1)


def _check_all(tasks: list[tuple[Target, frozenset[str]]], options: LintOptions) -> Iterator[tuple[LintRun, float]]:
    """Each task's partial run, in task order, from ``options.jobs`` processes."""
    jobs = min(jobs_wanted(options.jobs), len(tasks))
    files = [task for task in tasks if not task[0].stdin]
    if jobs <= 1 or len(files) <= 1:
        for target, selected in tasks:
            yield _check_alone(target, selected, options)
        return
    from concurrent.futures import ProcessPoolExecutor

    portable = replace(options, progress=None, stdin_source=None)
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods and sys.platform == "linux" else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        pending = [
            None if target.stdin else pool.submit(_check_alone, target, selected, portable) for target, selected in tasks
        ]
        for (target, selected), future in zip(tasks, pending):
            yield _check_alone(target, selected, options) if future is None else future.result()


def _check_alone(target: Target, selected: frozenset[str], options: LintOptions) -> tuple[LintRun, float]:
    """One file's run on its own (in a worker process or not), with the seconds it took.

    Parsed trees stay behind: fixes travel as text (what reporters print), so that the partial run
    crosses process boundaries and prints the same bytes whichever process made it.
    """
    started = time.perf_counter()
    part = LintRun(LintReport())
    try:
        with time_budget(file_budget()):
            _check(target, selected, options, part, Cache.default() if options.cache else None)
    except OverBudget as over:
        part = LintRun(LintReport())
        part.report.errors.append(
            FileError(target.display, f"took longer than the per-file budget of {over.seconds:g} s ({BUDGET_ENV}); not checked")
        )
    part.report.diagnostics = [_detached(d) for d in part.report.diagnostics]
    part.foreign = [(_detached(d), _detached(f) if f is not None else None) for d, f in part.foreign]
    return part, time.perf_counter() - started


def _detached(diagnostic: Diagnostic) -> Diagnostic:
    if diagnostic.fix is None:
        return diagnostic
    edits = tuple(replace(edit, node=None, replacement=None) for edit in diagnostic.fix.edits)
    return replace(diagnostic, fix=replace(diagnostic.fix, edits=edits))


def _merge(outcome: LintRun, part: LintRun) -> None:
    report, piece = outcome.report, part.report
    report.diagnostics.extend(piece.diagnostics)
    report.errors.extend(piece.errors)
    report.notes.extend(piece.notes)
    report.sources.update(piece.sources)
    report.files_checked += piece.files_checked
    report.fixed += piece.fixed
    report.coverage.add(piece.coverage)
    report.internal_errors.extend(piece.internal_errors)
    outcome.diffs.extend(part.diffs)
    outcome.would_fix += part.would_fix
    outcome.foreign.extend(part.foreign)
    if part.stdin_output is not None:
        outcome.stdin_output = part.stdin_output


def _check(target: Target, selected: frozenset[str], options: LintOptions, outcome: LintRun, store: Cache | None) -> None:
    report = outcome.report
    notebook = None
    if target.stdin:
        # An editor's buffer of a file of the project: its imports are followed as the file's are.
        context = _context(target) if target.path.is_file() else None
        result = _lint_source(options.stdin_source or "", target.display, selected, context)
        outcome.stdin_output = options.stdin_source
    else:
        try:
            text = read_source(target.path)
            if is_notebook(target.path):
                notebook = notebooks.parse(text)
        except (SourceError, NotebookError) as error:
            report.errors.append(FileError(target.display, str(error)))
            return
        result = _lint_cached(target, text, notebook.source if notebook else text, selected, store)
        if result.cached and (options.fix or options.diff) and any(d.fix for d in result.diagnostics):
            result = _lint_source(result.source or "", target.display, selected)  # fixes need the parsed module
    if result.error is not None:
        report.errors.append(result.error)
        return
    outcome.foreign.extend(zip(result.foreign, result.foreign_fallbacks))
    report.files_checked += 1
    if result.coverage is not None:
        report.coverage.add(result.coverage)
    report.internal_errors.extend(f"{target.display}:{where}" for where in result.internal_errors)
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


def _lint_cached(target: Target, text: str, source: str, selected: frozenset[str], store: Cache | None) -> FileResult:
    """``source`` (the file's ``text``, or a notebook's code) linted, or its result from the cache.

    A Python file is linted in its project (its imports followed); the cache entry records every
    project file the result was computed from, so a change to an imported file invalidates it."""
    notebook = source is not text
    context = None if notebook else _context(target)
    if store is None:
        return _lint_source(source, target.display, selected, context)
    kind = "ipynb" if notebook else "py"
    own = Dependency(str(target.path.resolve()), content_hash(text))
    result = store.get(target.display, selected, kind, own)
    if result is not None:
        result.source = source
        return result
    result = _lint_source(source, target.display, selected, context)
    if not result.foreign:  # findings placed in other files are not kept in the cache
        others = [Dependency(path, digest) for path, digest in result.dependencies if path != own.path]
        store.put(result, selected, kind, [own, *others])
    return result


def _context(target: Target) -> LintContext | None:
    """The file placed in its project, for following its imports."""
    global _WORKSPACE
    if _WORKSPACE is None:
        _WORKSPACE = Workspace()
    try:
        return LintContext.for_file(_WORKSPACE, target.path)
    except Exception as error:  # a project that cannot be read: the file is still linted alone
        if os.environ.get("SHAPECHECK_DEBUG"):
            raise error
        return None


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
            if notebook is not None:  # the change to the notebook file itself, as --fix would write it
                outcome.diffs.append(unified_diff(target.display, notebook.text, notebook.with_source(current.source)))
            else:
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


def _lint_source(source: str, display: str, selected: frozenset[str], context: LintContext | None = None) -> FileResult:
    try:
        return linter.lint_source(source, display, selected, context)
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
