"""How fast is ``shapecheck lint`` compared with a bare libcst parse of the same files?

Single process. All sources are read into memory first, so disk time counts in neither pass. Then,
for each of N runs (best of N is kept, per file and in total), one pass times
``libcst.parse_module`` of every file and one pass times ``shapecheck.linter.lint_source`` with
all rules. The figure that matters is the ratio lint / parse (target <= 1.5, see issue 3 item 10):
it does not depend on the machine the way lines/s does.

    python benchmarks/throughput.py                 # transformers' modeling_*.py, best of 3
    python benchmarks/throughput.py --limit 50 --runs 1
    python benchmarks/throughput.py --profile       # + cProfile of one lint pass, top 25 cumulative
    python benchmarks/throughput.py --corpus timm --corpus x-transformers
    python benchmarks/throughput.py --dir some/folder   # every *.py under a folder, no install
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

TARGET_RATIO = 1.5

#: ``cpu``: time.process_time, the CPU time of this process only, so other work on the machine barely
#: moves it (the linter is single-threaded, libcst's native parser too); ``wall``: time.perf_counter.
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS["cpu"]


def time_parse(sources: Sequence[str], names: Sequence[str] = (), failed: list[str] | None = None) -> list[float]:
    """Seconds to parse each source with a bare ``libcst.parse_module``.

    The tree is freed after the clock stops, as the lint pass frees its result after the clock.
    Files libcst cannot parse are appended to ``failed`` (their time still counts).
    """
    import libcst as cst

    parse = cst.parse_module
    times = []
    for index, source in enumerate(sources):
        tree = None
        started = clock()
        try:
            tree = parse(source)
        except Exception as error:
            times.append(clock() - started)
            if failed is not None:
                name = names[index] if index < len(names) else f"#{index}"
                first = str(error).strip().splitlines()[0] if str(error).strip() else ""
                failed.append(f"{name}: {type(error).__name__}: {first}")
            continue
        times.append(clock() - started)
        del tree
    return times


def time_lint(sources: Sequence[str], names: Sequence[str], selected: set[str] | None):
    """Seconds to lint each source; returns (times, findings, crashes)."""
    from shapecheck.linter import lint_source

    times = []
    findings = 0
    crashes: list[str] = []
    for name, source in zip(names, sources):
        started = clock()
        try:
            result = lint_source(source, name, selected)
        except Exception as error:
            times.append(clock() - started)
            crashes.append(f"{name}: {type(error).__name__}: {error}".splitlines()[0])
            continue
        times.append(clock() - started)
        findings += len(result.diagnostics)
        del result  # FileResult keeps the tree: never hold more than one
    return times, findings, crashes


def best(a: list[float] | None, b: list[float]) -> list[float]:
    return b if a is None else [min(x, y) for x, y in zip(a, b)]


def rate(lines: int, seconds: float) -> str:
    return f"{lines / seconds:,.0f}" if seconds > 0 else "-"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Time a bare libcst parse against the full shapecheck lint of the same files "
        "(single process, best of N runs) and print the lint/parse ratio (target <= 1.5).",
    )
    corpora.add_corpus_arguments(parser, default=["transformers"])
    parser.add_argument("--runs", type=int, default=3, metavar="N", help="runs per pass, best kept (default 3)")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: CPU time of this process, robust on a busy machine (default); wall: elapsed time",
    )
    parser.add_argument("--select", help="comma-separated rule codes to run (default: all rules)")
    parser.add_argument("--slowest", type=int, default=10, metavar="K", help="files to list by lint/parse ratio (default 10)")
    parser.add_argument(
        "--min-lines",
        type=int,
        default=100,
        metavar="L",
        help="ignore files shorter than L lines in the slowest list, their ratios are noise (default 100)",
    )
    parser.add_argument("--parse-only", action="store_true", help="time the bare parse only (the baseline)")
    parser.add_argument("--profile", action="store_true", help="also profile one lint pass with cProfile")
    parser.add_argument("--profile-top", type=int, default=25, metavar="K", help="functions to print (default 25)")
    parser.add_argument("--profile-out", type=Path, metavar="FILE", help="also dump the raw pstats to FILE")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")

    global clock
    clock = CLOCKS[args.clock]
    corpora.use_repo_checkout()
    selected = {code.strip() for code in args.select.split(",") if code.strip()} if args.select else None
    try:
        loaded = corpora.load_corpora(args.corpus or ["transformers"], args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    files = [file for group in loaded.values() for file in group]
    if not files:
        print("error: no files to measure", file=sys.stderr)
        return 2
    names = [file.display for file in files]
    sources = [file.source for file in files]
    lines = [file.lines for file in files]
    total_lines = sum(lines)

    print(f"machine: {corpora.describe_machine()}")
    print(f"corpus: {', '.join(loaded)}; {len(files):,} files, {total_lines:,} lines; {args.runs} run(s), best kept")
    print(f"clock: {args.clock} ({'CPU time of this process' if args.clock == 'cpu' else 'elapsed time'})")
    lint = not args.parse_only
    if lint:
        import shapecheck.linter  # noqa: F401  import cost stays out of the timed passes
        from shapecheck.rules.base import registry

        rules = [rule.code for rule in registry() if selected is None or rule.code in selected]
        print(f"rules: {len(rules)} ({', '.join(rules) or 'none'})", flush=True)

    parse_best: list[float] = []
    lint_best: list[float] = []
    parse_runs: list[float] = []
    lint_runs: list[float] = []
    findings = 0
    crashes: list[str] = []
    # Warm-up, untimed: first calls pay for lazy imports and caches.
    time_parse(sources[:3])
    if lint:
        time_lint(sources[:3], names[:3], selected)
    for run in range(args.runs):
        # Interleave the passes so that a slow phase of the machine hits both alike.
        gc.collect()
        failed: list[str] = []
        times = time_parse(sources, names, failed)
        parse_runs.append(sum(times))
        parse_best = best(parse_best or None, times)
        progress = f"  run {run + 1}/{args.runs}: parse {parse_runs[-1]:.2f} s"
        if lint:
            gc.collect()
            times, findings, crashes = time_lint(sources, names, selected)
            lint_runs.append(sum(times))
            lint_best = best(lint_best or None, times)
            progress += f", lint {lint_runs[-1]:.2f} s"
        print(progress, file=sys.stderr, flush=True)

    parse_s = min(parse_runs)
    print()
    if not lint:
        print("| files | lines | parse s | parse lines/s |")
        print("|---:|---:|---:|---:|")
        print(f"| {len(files):,} | {total_lines:,} | {parse_s:.2f} | {rate(total_lines, parse_s)} |")
        print()
        print(
            f"sum of per-file best times: parse {sum(parse_best):.2f} s "
            f"({rate(total_lines, sum(parse_best))} lines/s); files libcst cannot parse: {len(failed)}"
        )
        for line in failed:
            print(f"  does not parse: {line}")
        return 0

    lint_s = min(lint_runs)
    ratio = lint_s / parse_s if parse_s > 0 else float("inf")
    verdict = "ok" if ratio <= TARGET_RATIO else "OVER TARGET"
    print("| files | lines | parse s | parse lines/s | lint s | lint lines/s | lint/parse |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(files):,} | {total_lines:,} | {parse_s:.2f} | {rate(total_lines, parse_s)} "
        f"| {lint_s:.2f} | {rate(total_lines, lint_s)} | {ratio:.2f} |"
    )
    print()
    print(f"lint/parse = {ratio:.2f} (target <= {TARGET_RATIO}): {verdict}")
    per_file_ratio = sum(lint_best) / sum(parse_best) if sum(parse_best) > 0 else float("inf")
    print(
        f"sum of per-file best times (less sensitive to a busy machine): parse {sum(parse_best):.2f} s, "
        f"lint {sum(lint_best):.2f} s, lint/parse {per_file_ratio:.2f}"
    )
    print(f"findings in the last lint pass: {findings:,}; lint crashes: {len(crashes)}; files libcst cannot parse: {len(failed)}")
    for line in failed:
        print(f"  does not parse: {line}")
    for line in crashes[:20]:
        print(f"  lint crash: {line}")
    if len(crashes) > 20:
        print(f"  ... and {len(crashes) - 20} more (run benchmarks/precision.py for tracebacks)")

    ranked = sorted(
        (
            (lint_best[i] / parse_best[i], i)
            for i in range(len(files))
            if lines[i] >= args.min_lines and parse_best[i] > 0
        ),
        reverse=True,
    )[: args.slowest]
    if ranked:
        print()
        print(f"slowest {len(ranked)} files by lint/parse (files of >= {args.min_lines} lines, best of {args.runs}):")
        print("| file | lines | parse ms | lint ms | lint/parse |")
        print("|---|---:|---:|---:|---:|")
        for file_ratio, i in ranked:
            print(
                f"| {names[i]} | {lines[i]:,} | {parse_best[i] * 1e3:.1f} | {lint_best[i] * 1e3:.1f} "
                f"| {file_ratio:.2f} |"
            )

    if args.profile:
        profile_lint(sources, names, selected, args.profile_top, args.profile_out)
    return 0


def profile_lint(sources, names, selected, top: int, out: Path | None) -> None:
    """One extra lint pass under cProfile (its own run, so the timings above are unaffected)."""
    from shapecheck.linter import lint_source

    def one_pass() -> None:
        for name, source in zip(names, sources):
            try:
                lint_source(source, name, selected)
            except Exception:  # crashes are counted by the timed passes above
                pass

    gc.collect()
    profiler = cProfile.Profile()
    profiler.runcall(one_pass)
    if out is not None:
        profiler.dump_stats(str(out))
    buffer = io.StringIO()
    stats = pstats.Stats(profiler, stream=buffer)
    stats.strip_dirs().sort_stats(pstats.SortKey.CUMULATIVE).print_stats(top)
    print()
    print(f"cProfile of one lint pass (profiler overhead included), top {top} by cumulative time:")
    text = buffer.getvalue()
    # Drop pstats' preamble up to the first blank line after the header lines.
    print(text[text.find("   ncalls") :] if "   ncalls" in text else text)
    if out is not None:
        print(f"raw stats written to {out} (python -m pstats {out})")


if __name__ == "__main__":
    raise SystemExit(main())
