"""Recall of shapecheck on real model code: one catalogue bug planted at a time, then linted.

For every file of the corpora (``benchmarks/corpus.py``) and every operator of
``mutation_operators.py`` (one per rule code), the harness finds every site where the operator's
precondition holds, plants the bug at each (one mutant per site), keeps the mutants that still
parse, and lints each with ``shapecheck.linter.lint_source`` (all rules) from this checkout.

A mutant is **found** when the linter reports the expected code within ``--window`` lines of the
planted site and that finding is not on the unmodified original (same code, same line after the
line shift of the mutation). **Found anywhere** drops the window. Every finding on the originals is
printed too: that is the precision baseline.

Sampling (deterministic, ``--seed``): at most ``--per-file`` mutants per code per file, then at most
``--per-corpus`` per code per corpus.

    python benchmarks/mutation.py --out /tmp/mutation.md --json /tmp/mutation.json
    python benchmarks/mutation.py --corpus x-transformers --code SC101 --code SC103
    python benchmarks/mutation.py --dir examples/clean       # any folder, no install
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import os
import signal
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402
import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from mutation_operators import DESCRIPTIONS, OPERATORS, Mutation  # noqa: E402
from mutation_sites import code, set_index  # noqa: E402

corpora.use_repo_checkout()


@dataclass
class MutantSpec:
    """Where one mutant comes from; the source is rebuilt from this in the worker that lints it."""

    corpus: str
    path: str  # absolute path of the original
    display: str
    code: str
    index: int  # position among the operator's mutations of this file
    line: int  # first line of the planted site
    end_line: int  # last line of the replaced nodes, in the original
    delta: int  # lines added (+) or removed (-) by the mutation
    description: str


@dataclass
class MutantResult:
    spec: MutantSpec
    found_near: bool = False
    found_in_function: bool = False  # near, or in the function (``def``) that holds the site
    found_anywhere: bool = False
    new_codes: list[str] = field(default_factory=list)  # every code new on the mutant
    crashed: str | None = None
    seconds: float = 0.0


@dataclass
class OriginalFinding:
    corpus: str
    path: str
    line: int
    code: str
    message: str
    source_line: str


class LintTimeout(Exception):
    pass


# ------------------------------------------------------------------------------ building mutants


def _apply(source: str, index, mutation: Mutation) -> str:
    """Splice the new nodes' code over the old nodes' text (every other byte of the file is kept)."""
    edits = []
    for old, new in mutation.replacements:
        span = index.span(old)
        if span is None:
            raise ValueError("a replaced node has no position")
        edits.append((span[0], span[1], new if isinstance(new, str) else code(new)))
    edits.sort()
    for (_, end, _), (start, _, _) in zip(edits, edits[1:]):
        if start < end:
            raise ValueError("overlapping replacements")
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source


def _parse(source: str) -> cst.Module | None:
    try:
        return cst.parse_module(source)
    except Exception:
        return None


def _mutations(module: cst.Module, code: str) -> list[Mutation]:
    """The operator's mutations of ``module`` (indexed by ``set_index`` beforehand), without duplicates."""
    found: list[Mutation] = []
    seen: set[tuple[int, ...]] = set()
    try:
        for mutation in OPERATORS[code](module):
            key = tuple(id(old) for old, _ in mutation.replacements)
            if key not in seen:
                seen.add(key)
                found.append(mutation)
    except RecursionError:
        return []
    return found


def mutant_source(spec: MutantSpec) -> str:
    source = corpora.read_text(Path(spec.path))
    module = _parse(source)
    assert module is not None
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    index = set_index(module, source, positions)
    try:
        return _apply(source, index, _mutations(module, spec.code)[spec.index])
    finally:
        set_index(None)


def _parses(source: str) -> bool:
    """CPython compiles it (libcst parse failures show up as SC001 in the lint and are counted)."""
    try:
        compile(source, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def find_mutants(job: tuple[str, str, str, tuple[str, ...], int, int]) -> tuple[list[MutantSpec], dict[str, int], dict[str, int]]:
    """All mutants of one file, capped per code: (kept specs, sites per code, mutants not parsing per code)."""
    corpus, path, display, codes, per_file, seed = job
    source = corpora.read_text(Path(path))
    specs: list[MutantSpec] = []
    sites: dict[str, int] = {}
    broken: dict[str, int] = {}
    module = _parse(source)
    if module is None:
        return specs, sites, broken
    try:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    except Exception:
        return specs, sites, broken
    tree = set_index(module, source, positions)
    for code in codes:
        found = _mutations(module, code)
        if not found:
            continue
        sites[code] = len(found)
        order = list(range(len(found)))
        random.Random(f"{seed}:{display}:{code}").shuffle(order)
        kept = 0
        seen_sources: set[int] = set()
        for position in order:
            if kept >= per_file:
                break
            mutation = found[position]
            try:
                mutated = _apply(source, tree, mutation)
            except Exception:
                broken[code] = broken.get(code, 0) + 1
                continue
            if mutated == source or hash(mutated) in seen_sources:
                continue
            if not _parses(mutated):
                broken[code] = broken.get(code, 0) + 1
                continue
            seen_sources.add(hash(mutated))
            spans = [positions[old] for old, _ in mutation.replacements if old in positions]
            anchor = positions.get(mutation.anchor)
            line = anchor.start.line if anchor else min(s.start.line for s in spans)
            end_line = max([s.end.line for s in spans] + [line])
            delta = mutated.count("\n") - source.count("\n")
            specs.append(MutantSpec(corpus, path, display, code, position, line, end_line, delta, mutation.description))
            kept += 1
    set_index(None)
    return specs, sites, broken


# ------------------------------------------------------------------------------ linting


def _on_alarm(signum, frame):  # noqa: ARG001
    raise LintTimeout("lint took too long")


#: Set (in the environment, so that worker processes see it) by ``--project``: lint each file in
#: its package, imports followed, as ``shapecheck lint PACKAGE/`` does.
PROJECT_ENV = "SHAPECHECK_MUTATION_PROJECT"
_WORKSPACE = None


def _context(path: str | None):
    global _WORKSPACE
    if path is None or not os.environ.get(PROJECT_ENV):
        return None
    from shapecheck.project import LintContext, Workspace

    if _WORKSPACE is None:
        _WORKSPACE = Workspace()  # one per worker: each project file is parsed once
    return LintContext.for_file(_WORKSPACE, Path(path))


def _lint(source: str, display: str, timeout: float, path: str | None = None) -> list[tuple[str, int, str]]:
    from shapecheck.linter import lint_source

    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = lint_source(source, display, context=_context(path))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return [(d.code, d.span.line, d.message) for d in result.diagnostics]


def lint_original(job: tuple[str, str, str, float]) -> tuple[str, list[tuple[str, int, str]] | None, str | None]:
    corpus, path, display, timeout = job
    try:
        return path, _lint(corpora.read_text(Path(path)), display, timeout, path), None
    except Exception as error:
        return path, None, f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def lint_mutant(job: tuple[MutantSpec, list[tuple[str, int]], int, float]) -> MutantResult:
    spec, original, window, timeout = job
    result = MutantResult(spec)
    started = time.perf_counter()
    try:
        source = mutant_source(spec)
        findings = _lint(source, spec.display, timeout, spec.path)
    except Exception as error:
        result.crashed = f"{type(error).__name__}: {traceback.format_exception_only(error)[-1].strip()}"
        result.seconds = time.perf_counter() - started
        return result
    result.seconds = time.perf_counter() - started
    shifted = {(code, line + spec.delta if line > spec.end_line else line) for code, line in original}
    new = [(code, line) for code, line, _ in findings if (code, line) not in shifted]
    result.new_codes = sorted({code for code, _ in new})
    low, high = spec.line - window, spec.end_line + spec.delta + window
    for code, line in new:
        if code == spec.code:
            result.found_anywhere = True
            if low <= line <= high:
                result.found_near = True
    result.found_in_function = result.found_near
    if result.found_anywhere and not result.found_near:
        function = enclosing_function(source, spec.line)
        result.found_in_function = function is not None and any(
            code == spec.code and function[0] <= line <= function[1] for code, line in new
        )
    return result


def enclosing_function(source: str, line: int) -> tuple[int, int] | None:
    """First and last line of the innermost ``def`` holding ``line`` (None outside any)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    best: tuple[int, int] | None = None
    for node, span in positions.items():
        if isinstance(node, cst.FunctionDef) and span.start.line <= line <= span.end.line:
            if best is None or span.start.line >= best[0]:
                best = (span.start.line, span.end.line)
    return best


# ------------------------------------------------------------------------------ report


def ratio(part: int, whole: int) -> str:
    return f"{part / whole:.2f}" if whole else "-"


def report(results, originals, original_errors, sites, broken, loaded, args, seconds) -> str:
    out: list[str] = []
    add = out.append
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    add("# Mutation recall of shapecheck on real model code")
    add("")
    add(f"- when: {now}; shapecheck at {_git_head()}; {corpora.describe_machine()}")
    add(f"- found = expected code reported within {args.window} lines of the planted site and not on the original;")
    add("  found in function = that, or the code reported (new) inside the `def` that holds the site (a missing scale")
    add("  reported at the softmax it reaches, a mask fault at the product it feeds)")
    add(f"- sampling: at most {args.files or 'all'} files per corpus, at most {args.per_file} mutants per code per file, {args.per_corpus} per code per corpus, seed {args.seed}")
    add("- linted " + ("in their packages, imports followed (--project)" if args.project else "each file alone, imports opaque"))
    add(f"- {sum(len(f) for f in loaded.values())} files; {len(results)} mutants linted in {seconds:.0f} s with {args.jobs} jobs")
    add("")
    add("## Recall per code")
    add("")
    add("| code | operator | sites | mutants | found | recall | found in function | recall in function | found anywhere | recall anywhere | crashed |")
    add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    by_code: dict[str, list[MutantResult]] = defaultdict(list)
    for r in results:
        by_code[r.spec.code].append(r)
    total = near = in_function = anywhere = 0
    for code in args.codes:
        rs = by_code.get(code, [])
        n = len(rs)
        f_near = sum(r.found_near for r in rs)
        f_function = sum(r.found_in_function for r in rs)
        f_any = sum(r.found_anywhere for r in rs)
        crashed = sum(r.crashed is not None for r in rs)
        total, near, in_function, anywhere = total + n, near + f_near, in_function + f_function, anywhere + f_any
        add(
            f"| {code} | {DESCRIPTIONS[code]} | {sites.get(code, 0)} | {n} | {f_near} | {ratio(f_near, n)} | "
            f"{f_function} | {ratio(f_function, n)} | {f_any} | {ratio(f_any, n)} | {crashed} |"
        )
    add(
        f"| **all** | | {sum(sites.values())} | {total} | {near} | **{ratio(near, total)}** | {in_function} | "
        f"**{ratio(in_function, total)}** | {anywhere} | {ratio(anywhere, total)} | |"
    )
    add("")
    if broken:
        add("Mutants dropped because they did not parse: " + ", ".join(f"{c} {n}" for c, n in sorted(broken.items())))
        add("")
    add("## Mutants per corpus")
    add("")
    codes_present = [c for c in args.codes if by_code.get(c)]
    add("| corpus | files | " + " | ".join(codes_present) + " | total | found |")
    add("|---|---:|" + "---:|" * len(codes_present) + "---:|---:|")
    per_corpus: dict[str, Counter] = defaultdict(Counter)
    found_corpus: Counter = Counter()
    for r in results:
        per_corpus[r.spec.corpus][r.spec.code] += 1
        found_corpus[r.spec.corpus] += r.found_near
    for name, files in loaded.items():
        counts = per_corpus.get(name, Counter())
        add(f"| {name} | {len(files)} | " + " | ".join(str(counts.get(c, 0)) for c in codes_present) + f" | {sum(counts.values())} | {found_corpus[name]} |")
    add("")
    add(f"## Findings on the unmodified originals ({sum(len(v) for v in originals.values())})")
    add("")
    add("| corpus | path | line | code | message | source line |")
    add("|---|---|---:|---|---|---|")
    displays = {file.path.as_posix(): (file.corpus, file.display, file.source.splitlines()) for files in loaded.values() for file in files}
    for path, findings in sorted(originals.items(), key=lambda item: displays[item[0]][1]):
        corpus, display, lines = displays[path]
        for code, line, message in findings:
            text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            add(f"| {corpus} | {_cell(display)} | {line} | {code} | {_cell(message)} | `{_cell(text).replace('`', '')}` |")
    if original_errors:
        add("")
        add(f"Originals the linter crashed on ({len(original_errors)}): " + "; ".join(f"{displays[p][1]}: {e}" for p, e in original_errors.items()))
    crashed = [r for r in results if r.crashed]
    if crashed:
        add("")
        add(f"## Mutants the linter crashed on ({len(crashed)})")
        add("")
        for r in crashed[:50]:
            add(f"- {r.spec.code} {r.spec.display}:{r.spec.line}: {_cell(r.crashed or '')}")
    add("")
    add("## Every mutant")
    add("")
    add("| code | corpus | path | line | what | found | new codes |")
    add("|---|---|---|---:|---|---|---|")
    for r in sorted(results, key=lambda r: (r.spec.code, r.spec.display, r.spec.line)):
        verdict = "near" if r.found_near else "in function" if r.found_in_function else ("elsewhere" if r.found_anywhere else ("crash" if r.crashed else "missed"))
        add(f"| {r.spec.code} | {r.spec.corpus} | {_cell(r.spec.display)} | {r.spec.line} | {_cell(r.spec.description)} | {verdict} | {' '.join(r.new_codes)} |")
    add("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _git_head() -> str:
    import subprocess

    try:
        head = subprocess.run(["git", "-C", str(corpora.REPO_ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(corpora.REPO_ROOT), "status", "--porcelain", "--", "shapecheck"], capture_output=True, text=True, timeout=10).stdout.strip()
        return (head or "?") + (" + uncommitted changes in shapecheck/" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "?"


def summary_lines(results, sites, originals) -> list[str]:
    by_code: dict[str, list[MutantResult]] = defaultdict(list)
    for r in results:
        by_code[r.spec.code].append(r)
    lines = [f"{'code':<6} {'sites':>6} {'mutants':>8} {'found':>6} {'recall':>7} {'function':>9} {'anywhere':>9}"]
    for code in sorted(set(sites) | set(by_code)):
        rs = by_code.get(code, [])
        lines.append(
            f"{code:<6} {sites.get(code, 0):>6} {len(rs):>8} {sum(r.found_near for r in rs):>6} "
            f"{ratio(sum(r.found_near for r in rs), len(rs)):>7} {ratio(sum(r.found_in_function for r in rs), len(rs)):>9} "
            f"{ratio(sum(r.found_anywhere for r in rs), len(rs)):>9}"
        )
    n = len(results)
    lines.append(f"{'all':<6} {sum(sites.values()):>6} {n:>8} {sum(r.found_near for r in results):>6} "
                 f"{ratio(sum(r.found_near for r in results), n):>7} {ratio(sum(r.found_in_function for r in results), n):>9} "
                 f"{ratio(sum(r.found_anywhere for r in results), n):>9}")
    lines.append(f"findings on originals: {sum(len(v) for v in originals.values())}")
    for path, findings in sorted(originals.items()):
        for code, line, message in findings:
            lines.append(f"  {path}:{line}: {code} {message}")
    return lines


# ------------------------------------------------------------------------------ main


def main(argv: Sequence[str] | None = None) -> int:
    default = list(corpora.CORPORA)
    parser = argparse.ArgumentParser(
        description="Plant one catalogue bug at a time into real model code and measure which ones "
        "shapecheck reports (recall per code), plus every finding on the unmodified originals.",
    )
    corpora.add_corpus_arguments(parser, default=default)
    parser.add_argument("--code", action="append", choices=sorted(OPERATORS), help="operator to run, repeatable (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument("--per-file", type=int, default=2, metavar="N", help="mutants per code per file (default 2)")
    parser.add_argument("--per-corpus", type=int, default=30, metavar="N", help="mutants per code per corpus (default 30)")
    parser.add_argument("--files", type=int, default=40, metavar="N", help="files sampled per corpus (default 40; 0: all)")
    parser.add_argument("--window", type=int, default=3, metavar="L", help="lines around the site a finding may be on (default 3)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per lint (default 60)")
    parser.add_argument(
        "--project", action="store_true",
        help="lint each file in its package with its imports followed (as `shapecheck lint PACKAGE/` does); "
        "default: each file alone",
    )
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the Markdown report to FILE")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write every mutant and original finding as JSON")
    args = parser.parse_args(argv)
    if args.project:
        os.environ[PROJECT_ENV] = "1"
    args.codes = sorted(args.code or OPERATORS)
    try:
        loaded = corpora.load_corpora(args.corpus or default, args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    if args.files:
        loaded = {
            name: sorted(random.Random(f"{args.seed}:{name}").sample(group, args.files), key=lambda f: f.display)
            if len(group) > args.files else group
            for name, group in loaded.items()
        }
    files = [file for group in loaded.values() for file in group]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(max(1, args.jobs), maxtasksperchild=50) as pool:
        print(f"finding sites in {len(files)} files ...", file=sys.stderr, flush=True)
        jobs = [(f.corpus, f.path.as_posix(), f.display, tuple(args.codes), args.per_file, args.seed) for f in files]
        sites: Counter = Counter()
        broken: Counter = Counter()
        candidates: dict[tuple[str, str], list[MutantSpec]] = defaultdict(list)
        for specs, file_sites, file_broken in pool.imap(find_mutants, jobs, chunksize=4):
            sites.update(file_sites)
            broken.update(file_broken)
            for spec in specs:
                candidates[(spec.corpus, spec.code)].append(spec)
        chosen: list[MutantSpec] = []
        for (name, code), specs in sorted(candidates.items()):
            if len(specs) > args.per_corpus:
                specs = random.Random(f"{args.seed}:{name}:{code}").sample(specs, args.per_corpus)
            chosen.extend(specs)
        print(f"{sum(sites.values())} sites, {len(chosen)} mutants; linting originals ...", file=sys.stderr, flush=True)
        originals: dict[str, list[tuple[str, int, str]]] = {}
        original_errors: dict[str, str] = {}
        for path, findings, error in pool.imap_unordered(lint_original, [(f.corpus, f.path.as_posix(), f.display, args.timeout) for f in files], chunksize=2):
            if error is not None:
                original_errors[path] = error
            if findings:
                originals[path] = findings
        print(f"linting {len(chosen)} mutants ...", file=sys.stderr, flush=True)
        mutant_jobs = [
            (spec, [(c, l) for c, l, _ in originals.get(spec.path, [])], args.window, args.timeout) for spec in chosen
        ]
        results: list[MutantResult] = []
        for done, result in enumerate(pool.imap_unordered(lint_mutant, mutant_jobs, chunksize=1), 1):
            results.append(result)
            if done % 100 == 0:
                print(f"  {done}/{len(chosen)}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    for line in summary_lines(results, sites, originals):
        print(line)
    text = report(results, originals, original_errors, sites, broken, loaded, args, seconds)
    if args.out:
        args.out.write_text(text)
        print(f"report written to {args.out}")
    if args.json:
        args.json.write_text(json.dumps({
            "mutants": [asdict(r) for r in results],
            "originals": {path: findings for path, findings in originals.items()},
            "sites": dict(sites),
        }, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
