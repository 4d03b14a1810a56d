"""``shapecheck lint [PATH ...]``: check files, print findings, exit 0 / 1 / 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shapecheck.commands import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, UsageError

NAME = "lint"
HELP = "check Python files for shape and Transformer bugs"
DESCRIPTION = """\
Check Python files for shape and Transformer bugs, without importing or running them.

Folders are searched for *.py files (hidden folders, virtualenvs, __pycache__, build and dist are
skipped). Settings come from [tool.shapecheck] in the nearest pyproject.toml; flags win.

exit codes: 0 no findings, 1 findings, 2 usage error, unreadable path or internal error"""

FORMATS = ("text", "concise", "json", "sarif", "github")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or folders (default: .)")
    parser.add_argument("--format", choices=FORMATS, default="text", help="output format (default: text)")
    parser.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="the file name the source read from stdin (the path -) stands for: shown, and used for configuration",
    )
    selection = parser.add_argument_group("rule selection (codes, prefixes like SC1 or SC20, names, ALL)")
    selection.add_argument("--select", action="append", metavar="RULES", help="run only these rules")
    selection.add_argument("--ignore", action="append", default=[], metavar="RULES", help="do not run these rules")
    selection.add_argument(
        "--extend-select", action="append", default=[], metavar="RULES", help="run these rules as well"
    )
    fixing = parser.add_argument_group("fixes")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes to the files")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    settings = parser.add_argument_group("configuration")
    settings.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=0,
        metavar="N",
        help="check files in N processes (default: one per CPU core); the output is the same",
    )
    settings.add_argument(
        "--no-cache", action="store_true", help="neither read nor write the result cache (.shapecheck_cache/)"
    )
    settings.add_argument(
        "--force-exclude",
        action="store_true",
        help="leave out files named on the command line that the configuration excludes, silently",
    )
    config = settings.add_mutually_exclusive_group()
    config.add_argument("--config", type=Path, metavar="PATH", help="use this TOML file for every path")
    config.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    output = parser.add_argument_group("output")
    output.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    output.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="print to stderr each file and the time it took, and the functions whose inputs stayed unknown",
    )
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    output.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="colour text output (default: auto)"
    )


def run(args: argparse.Namespace) -> int:
    from shapecheck.config import ConfigError
    from shapecheck.rules.base import SelectionError
    from shapecheck.runner import LintOptions
    from shapecheck.runner import run as run_lint
    from shapecheck.selection import RuleSelection, split_selectors, validate

    if args.statistics and args.format not in ("text", "concise", "json"):
        raise UsageError("--statistics prints with --format text, concise or json")
    selection = RuleSelection(
        select=None if args.select is None else split_selectors(args.select),
        ignore=split_selectors(args.ignore),
        extend_select=split_selectors(args.extend_select),
    )
    paths = args.paths or ["."]
    stdin_source = _read_stdin() if "-" in paths else None
    if args.stdin_filename and "-" not in paths:
        raise UsageError("--stdin-filename needs the path - (read the source from stdin)")
    options = LintOptions(
        paths=paths,
        selection=selection,
        config=args.config,
        isolated=args.isolated,
        fix=args.fix and not args.diff,
        diff=args.diff,
        force_exclude=args.force_exclude,
        cache=not args.no_cache,
        jobs=args.jobs,
        stdin_source=stdin_source,
        stdin_filename=args.stdin_filename,
        progress=_progress if args.verbose else None,
    )
    try:
        from shapecheck.linter import registry

        validate(selection, registry())
        _require_some_rule(selection, registry())
        outcome = run_lint(options)
    except (ConfigError, SelectionError) as error:
        raise UsageError(str(error)) from None
    report = outcome.report
    report.color = args.color
    for note in report.notes:
        sys.stderr.write(f"{note.path}: note: {note.message}\n")
    for skipped in report.skipped:
        sys.stderr.write(f"{skipped.path}: skipped: {skipped.message}\n")
    if args.verbose:
        _print_unknown_inputs(report)
        for caught in report.internal_errors:
            sys.stderr.write(f"{caught}; please report it\n")
    if args.diff:
        return _print_diff(outcome, args)
    out = sys.stdout
    if options.fix and outcome.stdin_output is not None:
        # The fixed source goes to stdout, as editors expect; the report goes to stderr.
        sys.stdout.write(outcome.stdin_output)
        sys.stdout.flush()
        out = sys.stderr
    if args.statistics:
        from shapecheck.reporters import statistics

        statistics.write(report, out, "json" if args.format == "json" else "text")
        for error in report.errors:
            sys.stderr.write(f"{error.path}: error: {error.message}\n")
    else:
        from shapecheck.reporters import get

        get(args.format)(report, out)
    out.flush()
    if report.errors:
        return EXIT_ERROR
    if report.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_OK


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes (0 = one per core), got {text!r}")
    return value


def _read_stdin() -> str:
    """The source on standard input, decoded as a file would be (PEP 263, BOM)."""
    from shapecheck.linter import SourceError, decode_source

    try:
        return decode_source(sys.stdin.buffer.read())
    except SourceError as error:
        raise UsageError(f"stdin: {error}") from None
    except (AttributeError, OSError):  # no binary buffer (an in-memory stream) or closed
        return sys.stdin.read()


def _require_some_rule(selection, registry) -> None:
    """A command-line selection that leaves no implemented rule is a usage error, not a clean run."""
    from shapecheck.selection import RuleSelection, resolve

    if selection == RuleSelection() or resolve([selection], registry):
        return
    asked = ",".join(selection.select or ()) or "ALL"
    if selection.ignore:
        asked += f" --ignore {','.join(selection.ignore)}"
    raise UsageError(
        f"--select {asked} selects no implemented rule (`shapecheck rules` lists the implemented ones); "
        "nothing would be checked"
    )


def _print_unknown_inputs(report) -> None:
    inputs = report.coverage.unknown_inputs
    if not inputs:
        return
    sys.stderr.write(f"{len(inputs)} input{'s' if len(inputs) != 1 else ''} stayed unknown; an annotation would let the engine check them:\n")
    for item in inputs:
        sys.stderr.write(f"  {item.advice()}\n")


def _progress(path: str, seconds: float) -> None:
    sys.stderr.write(f"{path}: checked in {seconds:.3f}s\n")
    sys.stderr.flush()


def _print_diff(outcome, args: argparse.Namespace) -> int:
    for diff in outcome.diffs:
        sys.stdout.write(diff)
    sys.stdout.flush()
    for error in outcome.report.errors:
        sys.stderr.write(f"{error.path}: error: {error.message}\n")
    files = len(outcome.diffs)
    if files:
        sys.stderr.write(
            f"Would fix {outcome.would_fix} problem{'s' if outcome.would_fix != 1 else ''} "
            f"in {files} file{'s' if files != 1 else ''} (run with --fix to write them).\n"
        )
    else:
        sys.stderr.write("No fixes available.\n")
    if outcome.report.errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if files and not args.exit_zero else EXIT_OK
