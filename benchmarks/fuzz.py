"""Fuzz the linter with hypothesmith: random valid Python from the grammar and from libcst's nodes.

Every program (with ``import torch`` in front, so that the engine analyses it) goes through
``shapecheck.linter.lint_source`` with every rule; an exception escaping it, or one the engine caught
and recorded, is printed with the program. Prints how many programs each source gave (distinct
ones), the seconds spent, and every failure. Exit status 1 when anything failed.

hypothesmith is slow to build and to draw from (seconds per program from ``from_node``), so this
runs outside the test suite; ``tests/test_fuzz.py`` keeps cheap layouts and mutated examples.

    python benchmarks/fuzz.py                       # 200 grammar programs, 20 node programs
    python benchmarks/fuzz.py --grammar 1000 --node 0 --seed 3
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as corpora  # noqa: E402  (benchmarks/corpus.py, next to this file)


def failures_of(program: str) -> str | None:
    """What went wrong when linting the program, or None."""
    from shapecheck.linter import lint_source

    try:
        result = lint_source(program, "fuzz.py")
    except Exception as error:  # noqa: BLE001 - what this script looks for
        return f"escaped: {type(error).__name__}: {error}"
    if result.error is not None and "internal error" in result.error.message:
        return f"internal error: {result.error.message}"
    if result.internal_errors:
        return "swallowed: " + "; ".join(result.internal_errors)
    return None


def run(source: str, count: int, seed: int) -> tuple[int, int, list[tuple[str, str]]]:
    """Lint ``count`` programs drawn from hypothesmith's ``source`` strategy: (drawn, distinct, failures)."""
    import hypothesmith
    from hypothesis import HealthCheck, given, seed as fixed_seed, settings

    strategy = hypothesmith.from_grammar() if source == "grammar" else hypothesmith.from_node()
    drawn: list[str] = []
    failed: list[tuple[str, str]] = []

    @fixed_seed(seed)
    @settings(max_examples=count, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(strategy)
    def lint_each(program: str) -> None:
        drawn.append(program)
        program = "import torch\nimport torch.nn as nn\n" + program
        problem = failures_of(program)
        if problem is not None:
            failed.append((program, problem))

    lint_each()
    return len(drawn), len(set(drawn)), failed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grammar", type=int, default=200, help="programs from the grammar (default 200)")
    parser.add_argument("--node", type=int, default=20, help="programs from libcst nodes (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    corpora.use_repo_checkout()
    warnings.simplefilter("ignore", SyntaxWarning)  # hypothesmith compiles odd programs such as `1()`
    status = 0
    for source, count in (("grammar", args.grammar), ("node", args.node)):
        if count <= 0:
            continue
        started = time.perf_counter()
        drawn, distinct, failed = run(source, count, args.seed)
        print(f"{source}: {drawn} programs ({distinct} distinct), {len(failed)} failures, {time.perf_counter() - started:.1f} s")
        for program, problem in failed:
            status = 1
            print(f"  {problem}\n  --- program:\n{program}\n  ---")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
