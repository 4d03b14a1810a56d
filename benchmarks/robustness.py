"""Zero crashes, none hidden: lint every file of large real corpora and count what went wrong.

For each file, ``shapecheck.linter.lint_source`` with every rule, in worker processes:

- **escaped**: an exception came out of ``lint_source`` (the CLI would report an internal error);
- **swallowed**: exceptions the engine caught and recorded (``FileResult.internal_errors``);
- **over budget**: the file took longer than the per-file budget (``--budget``, default 60 s);
- **not checked**: files refused with a reason (unreadable, binary, too large, hostile input).

Corpora: transformers, timm and x-transformers (``benchmarks/corpus.py``) and the standard library
of the Python running this script (``--stdlib``, every ``*.py`` under ``sysconfig``'s stdlib
folder, site-packages excluded). Target: 0 escaped, 0 swallowed.

    python benchmarks/robustness.py                      # all of it (tens of minutes)
    python benchmarks/robustness.py --corpus timm --no-stdlib
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

DEFAULT_CORPORA = ["transformers", "timm", "x-transformers"]


def stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts and p.is_file())


def check(task: tuple[str, str, str, float]) -> tuple[str, str, int, list[str]]:
    """(group, display, lines, problems as 'kind: detail') for one file."""
    group, path, display, budget = task
    corpora.use_repo_checkout()
    from shapecheck.budget import OverBudget, time_budget
    from shapecheck.linter import SourceError, lint_source, read_source

    try:
        source = read_source(Path(path))
    except SourceError as error:
        return group, display, 0, [f"not checked: {error}"]
    lines = source.count("\n") + 1
    try:
        with time_budget(budget):
            result = lint_source(source, display)
    except OverBudget:
        return group, display, lines, [f"over budget: more than {budget:g} s"]
    except Exception as error:  # noqa: BLE001 - counting these is the point
        frame = traceback.extract_tb(error.__traceback__)[-1]
        return group, display, lines, [f"escaped: {type(error).__name__}: {str(error)[:100]} at {Path(frame.filename).name}:{frame.lineno}"]
    problems = [f"swallowed: {item}" for item in result.internal_errors]
    if result.error is not None:
        problems.append(f"not checked: {result.error.message}")
    return group, display, lines, problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Count escaped and swallowed exceptions over real corpora.")
    corpora.add_corpus_arguments(parser, default=DEFAULT_CORPORA)
    parser.add_argument("--no-stdlib", action="store_true", help="leave out the Python standard library")
    parser.add_argument("--budget", type=float, default=60.0, help="seconds per file (default: 60)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    parser.add_argument("--show", type=int, default=30, help="list at most this many problems")
    args = parser.parse_args(argv)
    try:
        loaded = corpora.load_corpora(args.corpus or DEFAULT_CORPORA, args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    tasks = [(name, str(f.path), f.display, args.budget) for name, files in loaded.items() for f in files]
    if not args.no_stdlib and args.dir is None:
        root = Path(sysconfig.get_paths()["stdlib"])
        files = stdlib_files()[: args.limit]
        tasks += [("stdlib", str(p), str(p.relative_to(root.parent)), args.budget) for p in files]
    print(f"machine: {corpora.describe_machine()}")
    started = time.perf_counter()
    kinds: dict[str, Counter[str]] = {}
    sizes: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    shown: list[str] = []
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for group, display, count, problems in pool.map(check, tasks, chunksize=4):
            sizes[group] += 1
            lines[group] += count
            tally = kinds.setdefault(group, Counter())
            for problem in problems:
                kind = problem.split(":", 1)[0]
                tally[kind] += 1
                if kind in ("escaped", "swallowed", "over budget") and len(shown) < args.show:
                    shown.append(f"{display}: {problem}")
    print()
    print("| corpus | files | lines | escaped | swallowed | over budget | not checked |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for group in sizes:
        t = kinds.get(group, Counter())
        print(f"| {group} | {sizes[group]:,} | {lines[group]:,} | {t['escaped']} | {t['swallowed']} | {t['over budget']} | {t['not checked']} |")
    print(f"\n{time.perf_counter() - started:.0f} s wall, {args.jobs} processes")
    if shown:
        print("\nproblems:")
        for line in shown:
            print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
