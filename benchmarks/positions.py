"""Positions of reported nodes: shapecheck's own table against libcst's ``PositionProvider``.

shapecheck computes the positions of a file with findings by one code generation pass that tracks
lines and columns (``shapecheck/positions.py``), instead of resolving ``PositionProvider`` through a
``MetadataWrapper``. This script checks, on real model code, that both give the same range for every
node, and prints how long each takes.

    python benchmarks/positions.py                        # the first 60 files of transformers
    python benchmarks/positions.py --corpus timm --limit 0
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)

corpora.use_repo_checkout()

import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider  # noqa: E402

from shapecheck.positions import positions  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=sorted(corpora.CORPORA), help="corpus (repeatable; default transformers)")
    parser.add_argument("--limit", type=int, default=60, help="first N files of each corpus (0: all; default 60)")
    args = parser.parse_args(argv)
    loaded = corpora.load_corpora(args.corpus or ["transformers"], limit=args.limit or None)
    files = nodes = differ = 0
    libcst_seconds = own_seconds = parse_seconds = 0.0
    for sources in loaded.values():
        for source in sources:
            start = time.process_time()
            try:
                module = cst.parse_module(source.source)
            except cst.ParserSyntaxError:
                continue
            parse_seconds += time.process_time() - start
            start = time.process_time()
            reference = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
            libcst_seconds += time.process_time() - start
            start = time.process_time()
            own = positions(module)
            own_seconds += time.process_time() - start
            files += 1
            nodes += len(reference)
            for node, code_range in reference.items():
                if own.get(node) != ((code_range.start.line, code_range.start.column), (code_range.end.line, code_range.end.column)):
                    differ += 1
    print(f"{files} files, {nodes} nodes: {differ} ranges differ")
    print(f"CPU seconds: parse {parse_seconds:.2f}, libcst PositionProvider {libcst_seconds:.2f}, shapecheck {own_seconds:.2f}")
    if own_seconds:
        print(f"shapecheck's table costs {own_seconds / parse_seconds:.2f}x a parse; libcst's {libcst_seconds / parse_seconds:.2f}x")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
