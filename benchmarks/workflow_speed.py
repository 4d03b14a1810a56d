"""Whole-run speed of ``shapecheck lint`` as CI runs it: the result cache and ``--jobs``.

1. **cache**: a cold run (empty cache) and a warm run (nothing changed) of the same command on the
   corpus files, in fresh processes, with the same output checked byte for byte; prints the
   seconds and the cold/warm ratio (target: >= 20x on transformers' modeling files).
2. **jobs**: the same files with ``--no-cache`` and ``--jobs 1, 2, ...`` up to the CPU count;
   prints seconds and speed-up over one job, and checks that every output is the same bytes.

Wall-clock times of whole processes (start-up included), best of ``--runs``. Cores shared with
other work make the jobs figures noisy: read them next to the machine line.

    python benchmarks/workflow_speed.py                          # transformers, both parts
    python benchmarks/workflow_speed.py --part jobs --limit 100
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

REPO = corpora.REPO_ROOT


def lint(files: Sequence[Path], cache: Path, *flags: str) -> tuple[float, bytes]:
    """Seconds and stdout of one ``shapecheck lint --format json`` process."""
    env = dict(os.environ, PYTHONPATH=str(REPO), SHAPECHECK_CACHE_DIR=str(cache))
    env.pop("SHAPECHECK_DEBUG", None)
    command = [sys.executable, "-m", "shapecheck", "lint", "--format", "json", "--exit-zero", *flags, *map(str, files)]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, cwd=REPO)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 2):
        raise SystemExit(f"shapecheck failed (exit {done.returncode}): {done.stderr.decode()[-500:]}")
    return seconds, done.stdout


def cache_part(files: Sequence[Path], runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="shapecheck-cache-") as folder:
        cache = Path(folder)
        cold, expected = lint(files, cache)
        warm_times = []
        for _ in range(runs):
            seconds, output = lint(files, cache)
            if output != expected:
                raise SystemExit("warm run printed something else than the cold run")
            warm_times.append(seconds)
        warm = min(warm_times)
        print()
        print("| files | cold s (empty cache) | warm s (nothing changed) | cold / warm |")
        print("|---:|---:|---:|---:|")
        print(f"| {len(files)} | {cold:.1f} | {warm:.2f} | {cold / warm:.1f}x |")


def jobs_part(files: Sequence[Path], runs: int, max_jobs: int) -> None:
    print()
    print("| jobs | seconds | speed-up |")
    print("|---:|---:|---:|")
    base = None
    expected = None
    with tempfile.TemporaryDirectory(prefix="shapecheck-cache-") as folder:
        for jobs in range(1, max_jobs + 1):
            best = float("inf")
            for _ in range(runs):
                seconds, output = lint(files, Path(folder), "--no-cache", "--jobs", str(jobs))
                if expected is None:
                    expected = output
                elif output != expected:
                    raise SystemExit(f"--jobs {jobs} printed something else than --jobs 1")
                best = min(best, seconds)
            base = base or best
            print(f"| {jobs} | {best:.1f} | {base / best:.2f}x |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time cold vs warm cache runs and --jobs speed-up.")
    corpora.add_corpus_arguments(parser, default=["transformers"])
    parser.add_argument("--part", choices=("cache", "jobs", "both"), default="both")
    parser.add_argument("--runs", type=int, default=1, help="best of N runs per figure (default: 1)")
    parser.add_argument("--max-jobs", type=int, default=os.cpu_count() or 1, help="up to this many jobs")
    args = parser.parse_args(argv)
    try:
        loaded = corpora.load_corpora(args.corpus or ["transformers"], args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    files = [file.path for group in loaded.values() for file in group]
    lines = sum(file.lines for group in loaded.values() for file in group)
    print(f"machine: {corpora.describe_machine()}")
    print(f"corpus: {', '.join(loaded)}: {len(files)} files, {lines:,} lines")
    if args.part in ("cache", "both"):
        cache_part(files, args.runs)
    if args.part in ("jobs", "both"):
        jobs_part(files, args.runs, args.max_jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
