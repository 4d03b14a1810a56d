"""Every finding of shapecheck on real model code, as a Markdown table to give verdicts on.

Runs ``shapecheck.linter.lint_source`` (all rules, or ``--select``) over the modeling files of
transformers, all of x-transformers and timm's models, and writes:

- a summary per corpus (files, lines, findings, crashes, seconds) and the counts per rule;
- one table row per finding: corpus, path relative to the package, line, code, name, message,
  the source line, and an empty verdict column (true bug / false positive, filled in by hand);
- the files on which the linter crashed. A crash never stops the run: the full traceback goes to
  the crash log (``--crash-log``), a one-line summary to the report.

    python benchmarks/precision.py --out /tmp/precision.md
    python benchmarks/precision.py --corpus x-transformers --select SC101,SC204
    python benchmarks/precision.py --dir examples/clean      # any folder, no install
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)


class FileTimeout(Exception):
    """The linter spent longer than ``--timeout`` seconds on one file."""


@dataclass
class Finding:
    corpus: str
    path: str
    line: int
    code: str
    name: str
    severity: str
    message: str
    source_line: str


@dataclass
class CorpusStats:
    files: int = 0
    lines: int = 0
    findings: int = 0
    files_with_findings: int = 0
    crashes: int = 0
    file_errors: int = 0
    suppressed: int = 0
    seconds: float = 0.0


@dataclass
class Run:
    findings: list[Finding] = field(default_factory=list)
    crashes: list[tuple[str, str, str]] = field(default_factory=list)  # corpus, path, one-line summary
    file_errors: list[tuple[str, str, str]] = field(default_factory=list)
    stats: dict[str, CorpusStats] = field(default_factory=dict)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|")


def code_cell(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        return ""
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _package_file(by_path: dict, linted: corpora.SourceFile, path: str) -> corpora.SourceFile | None:
    """The file a finding placed in another file lands in: a file of the corpus, or any other file of
    the linted file's package (``timm/layers/`` for a finding an analysis of ``timm/models/`` placed
    there: ``shapecheck lint timm/`` reports it), read once."""
    if path in by_path:
        return by_path[path]
    base = Path(str(linted.path.resolve())[: -len(linted.display)])
    target = Path(path)
    try:
        display = target.relative_to(base).as_posix()
    except ValueError:
        return None
    if display.split("/")[0] != linted.display.split("/")[0]:
        return None
    by_path[path] = corpora.SourceFile(linted.corpus, target, display, corpora.read_text(target))
    return by_path[path]


def lint_all(
    loaded: dict[str, list[corpora.SourceFile]],
    selected: set[str] | None,
    crash_log,
    timeout: float,
    project: bool = False,
) -> Run:
    """With ``project``, each file is linted in its package (imports followed, one ``Workspace`` per
    corpus, as ``shapecheck lint PACKAGE/`` does); findings the analysis of one file places in
    another file of the corpus count once, in that file."""
    from shapecheck.linter import lint_source
    from shapecheck.project import LintContext, Workspace

    by_path = {str(file.path.resolve()): file for files in loaded.values() for file in files}
    seen: set[tuple[str, int, str]] = set()

    def on_alarm(signum, frame):  # noqa: ARG001
        raise FileTimeout(f"more than {timeout:g} s on one file")

    use_alarm = timeout > 0 and hasattr(signal, "setitimer")
    if use_alarm:
        signal.signal(signal.SIGALRM, on_alarm)
    run = Run()
    total = sum(len(files) for files in loaded.values())
    done = 0
    for name, files in loaded.items():
        stats = run.stats.setdefault(name, CorpusStats())
        workspace = Workspace() if project else None
        for file in files:
            done += 1
            if done % 50 == 0 or done == total:
                print(f"  {done}/{total} files", file=sys.stderr, flush=True)
            stats.files += 1
            stats.lines += file.lines
            started = time.perf_counter()
            try:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, timeout)
                try:
                    context = LintContext.for_file(workspace, file.path) if workspace is not None else None
                    result = lint_source(file.source, file.display, selected, context)
                finally:
                    if use_alarm:
                        signal.setitimer(signal.ITIMER_REAL, 0)
            except Exception as error:  # a crash is a finding about shapecheck, never the end of the run
                stats.seconds += time.perf_counter() - started
                stats.crashes += 1
                summary = _summary(error)
                run.crashes.append((name, file.display, summary))
                crash_log.write(f"=== {file.display} ({name})\n")
                crash_log.write("".join(traceback.format_exception(error)))
                crash_log.write("\n")
                crash_log.flush()
                continue
            stats.seconds += time.perf_counter() - started
            stats.suppressed += result.suppressed
            if result.error is not None:
                stats.file_errors += 1
                run.file_errors.append((name, file.display, result.error.message))
            placed = [(file, diagnostic) for diagnostic in result.diagnostics]
            placed += [(where, d) for d in result.foreign if (where := _package_file(by_path, file, d.path)) is not None]
            new = [(f, d) for f, d in placed if (f.display, d.span.line, d.code) not in seen]
            if new:
                stats.files_with_findings += 1
                stats.findings += len(new)
                for where, diagnostic in new:
                    seen.add((where.display, diagnostic.span.line, diagnostic.code))
                    line = diagnostic.span.line
                    source_lines = where.source.splitlines()
                    text = source_lines[line - 1] if 0 < line <= len(source_lines) else ""
                    run.findings.append(
                        Finding(
                            name,
                            where.display,
                            line,
                            diagnostic.code,
                            diagnostic.name,
                            str(diagnostic.severity),
                            diagnostic.message,
                            text.strip(),
                        )
                    )
            del result
    return run


def _summary(error: BaseException) -> str:
    """``Type: message at file:line in function`` of the innermost frame."""
    # The innermost frame that is not this script (for a timeout: where the linter was at the time).
    this = Path(__file__).resolve()
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename).resolve() != this]
    where = ""
    if frames:
        last = frames[-1]
        where = f" at {Path(last.filename).name}:{last.lineno} in {last.name}"
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {message}{where}"


def git_head() -> str:
    try:
        completed = subprocess.run(
            ["git", "-C", str(corpora.REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if completed.returncode != 0:
            return "? (not a git checkout)"
        head = completed.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(corpora.REPO_ROOT), "status", "--porcelain", "--", "shapecheck"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return head + (" + uncommitted changes in shapecheck/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def report(
    run: Run, loaded, rules: list[tuple[str, str]], selected, crash_log_path: Path, seconds: float, project: bool = False
) -> str:
    out: list[str] = []
    add = out.append
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    add("# shapecheck on real model code")
    add("")
    add(f"- when: {now}; shapecheck at {git_head()}")
    add(f"- machine: {corpora.describe_machine()}")
    add("- linted " + ("in their packages, imports followed (--project)" if project else "each file alone, imports opaque"))
    add(f"- rules: {', '.join(code for code, _ in rules) or 'none'}" + ("" if selected is None else " (--select)"))
    versions = ", ".join(
        f"{name} {corpora.CORPORA[name].version}" if name in corpora.CORPORA else f"{name} (--dir)" for name in loaded
    )
    add(f"- corpora: {versions}")
    add(f"- total time: {seconds:.1f} s")
    add("")
    add("## Summary")
    add("")
    add("| corpus | files | lines | findings | files with findings | crashes | file errors | suppressed | lint s |")
    add("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = CorpusStats()
    for name, stats in run.stats.items():
        add(
            f"| {name} | {stats.files:,} | {stats.lines:,} | {stats.findings:,} | {stats.files_with_findings:,} "
            f"| {stats.crashes} | {stats.file_errors} | {stats.suppressed} | {stats.seconds:.1f} |"
        )
        for key in vars(total):
            setattr(total, key, getattr(total, key) + getattr(stats, key))
    if len(run.stats) > 1:
        add(
            f"| **total** | {total.files:,} | {total.lines:,} | {total.findings:,} | {total.files_with_findings:,} "
            f"| {total.crashes} | {total.file_errors} | {total.suppressed} | {total.seconds:.1f} |"
        )
    add("")
    add("## Findings per rule")
    add("")
    names = list(run.stats)
    per_rule: dict[str, Counter[str]] = defaultdict(Counter)
    rule_names = dict(rules)
    for finding in run.findings:
        per_rule[finding.code][finding.corpus] += 1
        rule_names.setdefault(finding.code, finding.name)
    add("| code | name | " + " | ".join(names) + " | total |")
    add("|---|---|" + "---:|" * (len(names) + 1))
    for code in sorted(rule_names):
        counts = per_rule.get(code, Counter())
        add(
            f"| {code} | {rule_names[code]} | "
            + " | ".join(str(counts[name]) for name in names)
            + f" | {sum(counts.values())} |"
        )
    add("")
    add(f"## Findings ({len(run.findings)})")
    add("")
    if run.findings:
        add("| corpus | path | line | code | name | message | source line | verdict |")
        add("|---|---|---:|---|---|---|---|---|")
        for f in run.findings:
            add(
                f"| {f.corpus} | {cell(f.path)} | {f.line} | {f.code} | {f.name} | {cell(f.message)} "
                f"| {code_cell(f.source_line)} |  |"
            )
    else:
        add("None.")
    add("")
    add(f"## Crashes ({len(run.crashes)})")
    add("")
    if run.crashes:
        add(f"Full tracebacks: `{crash_log_path}`.")
        add("")
        add("| corpus | path | exception |")
        add("|---|---|---|")
        for name, path, summary in run.crashes:
            add(f"| {name} | {cell(path)} | {cell(summary)} |")
    else:
        add("None.")
    if run.file_errors:
        add("")
        add(f"## Files not checked ({len(run.file_errors)})")
        add("")
        add("| corpus | path | reason |")
        add("|---|---|---|")
        for name, path, message in run.file_errors:
            add(f"| {name} | {cell(path)} | {cell(message)} |")
    add("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    default = list(corpora.CORPORA)
    parser = argparse.ArgumentParser(
        description="Lint real model code with every rule and write each finding as a Markdown table "
        "row (plus counts per rule and corpus, and crashes), for verdicts by hand.",
    )
    corpora.add_corpus_arguments(parser, default=default)
    parser.add_argument("--select", help="comma-separated rule codes to run (default: all rules)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the Markdown report to FILE (default: stdout)")
    parser.add_argument(
        "--crash-log",
        type=Path,
        metavar="FILE",
        help="where the full traceback of each crash goes (default: precision-crashes.log in the cache folder)",
    )
    parser.add_argument(
        "--project",
        action="store_true",
        help="lint each file in its package, imports followed (as `shapecheck lint PACKAGE/`), not alone",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="count a file as a crash after S seconds of linting (default 60, 0 = none)",
    )
    args = parser.parse_args(argv)

    corpora.use_repo_checkout()
    selected = {code.strip().upper() for code in args.select.split(",") if code.strip()} if args.select else None
    try:
        loaded = corpora.load_corpora(args.corpus or default, args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    from shapecheck.rules.base import registry

    rules = [(rule.code, rule.name) for rule in registry() if selected is None or rule.code in selected]
    crash_log_path = args.crash_log or corpora.cache_dir() / "precision-crashes.log"
    crash_log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with crash_log_path.open("w", encoding="utf-8") as crash_log:
        run = lint_all(loaded, selected, crash_log, args.timeout, args.project)
    seconds = time.perf_counter() - started

    text = report(run, loaded, rules, selected, crash_log_path, seconds, args.project)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
        print(f"report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    crashes = len(run.crashes)
    print(
        f"{sum(s.files for s in run.stats.values()):,} files, {len(run.findings):,} findings, "
        f"{crashes} crash(es){f' (tracebacks in {crash_log_path})' if crashes else ''}, {seconds:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
