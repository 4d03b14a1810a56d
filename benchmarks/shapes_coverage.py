"""How many tensor values does the shape engine know the shape of, on real model code?

For every file: parse once, ``shapecheck.engine.analyze``, then count each value record of each
analysed function as

- **full**: a shape with every dim known (an int, a symbol such as ``n_heads`` or an expression
  such as ``d_model//n_heads`` all count as known);
- **partial**: a shape with at least one unknown dim, or an unknown rank part;
- **unknown**: no shape at all (``shape is None``).

Only tensors bound by an assignment are counted (what ``shapecheck shapes`` prints), in the
standalone analysis of each function; ``--include-inlined`` also counts the re-analyses of a
function inlined at its call sites.

The counting itself is ``shapecheck.coverage`` (the same figures ``shapecheck lint`` prints).

    python benchmarks/shapes_coverage.py
    python benchmarks/shapes_coverage.py --corpus x-transformers --files 15
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)


@dataclass
class Counts:
    files: int = 0
    lines: int = 0
    functions: int = 0
    full: int = 0
    partial: int = 0
    unknown: int = 0
    crashes: int = 0
    seconds: float = 0.0

    @property
    def values(self) -> int:
        return self.full + self.partial + self.unknown

    def add(self, other: Counts) -> None:
        for key in vars(self):
            setattr(self, key, getattr(self, key) + getattr(other, key))


def count_file(facts, counts: Counts, include_inlined: bool = False) -> None:
    """Add one file's ``shapecheck.coverage`` figures to ``counts``."""
    from shapecheck.coverage import count

    found = count(facts, include_inlined)
    counts.functions += found.functions
    counts.full += found.full
    counts.partial += found.partial
    counts.unknown += found.unknown


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main(argv: Sequence[str] | None = None) -> int:
    default = list(corpora.CORPORA)
    parser = argparse.ArgumentParser(
        description="Count the tensor values whose shape the engine knows fully, partly or not at all, per corpus.",
    )
    corpora.add_corpus_arguments(parser, default=default)
    parser.add_argument(
        "--include-inlined",
        action="store_true",
        help="also count the analyses of functions inlined at their call sites",
    )
    parser.add_argument(
        "--files",
        type=int,
        default=0,
        metavar="K",
        help="also list the K files with the most values of unknown or partial shape",
    )
    args = parser.parse_args(argv)

    corpora.use_repo_checkout()
    import libcst as cst

    try:
        from shapecheck.engine import analyze
    except ImportError as error:
        print(f"cannot import shapecheck.engine.analyze ({error}); nothing measured")
        return 0
    try:
        loaded = corpora.load_corpora(args.corpus or default, args.dir, args.limit)
    except corpora.CorpusError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    print(f"machine: {corpora.describe_machine()}")
    per_corpus: dict[str, Counts] = {}
    per_file: list[tuple[int, int, str]] = []
    crashes: list[str] = []
    for name, files in loaded.items():
        counts = per_corpus.setdefault(name, Counts())
        for file in files:
            counts.files += 1
            counts.lines += file.lines
            try:
                module = cst.parse_module(file.source)
            except Exception:
                continue  # not Python that libcst reads: nothing for the engine either
            started = time.process_time()
            here = Counts()
            try:
                facts = analyze(module, file.source, file.display)
                count_file(facts, here, args.include_inlined)
            except Exception as error:
                counts.crashes += 1
                frame = traceback.extract_tb(error.__traceback__)[-1]
                crashes.append(
                    f"{file.display}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''} "
                    f"at {Path(frame.filename).name}:{frame.lineno}"
                )
                continue
            finally:
                counts.seconds += time.process_time() - started
            counts.add(here)
            per_file.append((here.unknown + here.partial, here.values, file.display))

    print()
    print("| corpus | files | lines | functions | tensor values | full | partial | unknown | full % | crashes | engine CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    total = Counts()
    for name, counts in per_corpus.items():
        total.add(counts)
        print(_row(name, counts))
    if len(per_corpus) > 1:
        print(_row("**total**", total))
    print()
    print(
        "tensor values: tensors bound by assignments in the standalone analysis of each function"
        + (" and its inlined analyses" if args.include_inlined else "")
    )
    print("full = every dim known (int, symbol or expression); partial = an unnamed dim or a *batch prefix; "
          "unknown = no shape")
    if crashes:
        print()
        print(f"engine crashes ({len(crashes)}):")
        for line in crashes:
            print(f"  {line}")
    if args.files and per_file:
        print()
        print(f"files with the most values of unknown or partial shape (top {args.files}):")
        for not_full, values, display in sorted(per_file, reverse=True)[: args.files]:
            print(f"  {not_full:>6} of {values:>6}  {display}")
    return 0


def _row(name: str, c: Counts) -> str:
    return (
        f"| {name} | {c.files:,} | {c.lines:,} | {c.functions:,} | {c.values:,} | {c.full:,} | {c.partial:,} "
        f"| {c.unknown:,} | {pct(c.full, c.values)} | {c.crashes} | {c.seconds:.1f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
