"""Lint every rule snippet with ALL rules and list the disagreements (a report for people; the same checks run as tests in tests/test_examples_cross_rule.py).

For an INVALID snippet of rule X: X must be reported exactly on the ``# <-`` line, and no other rule
may fire. For a VALID snippet: nothing may fire. Prints one line per disagreement and a summary.

    python tests/snippets/check_against_linter.py [sc101 ...]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from shapecheck.linter import lint_source
from shapecheck.rules.base import EXPECT_MARKER

HERE = Path(__file__).parent
CORPUS = HERE.parents[1] / "shapecheck" / "rules" / "examples"


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"snippets_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _marked(code: str) -> list[int]:
    return [n for n, text in enumerate(code.splitlines(), 1) if text.rstrip().endswith(EXPECT_MARKER) or (EXPECT_MARKER + " ") in text]


def main(argv: list[str]) -> int:
    files = sorted(CORPUS.glob("sc[0-9][0-9][0-9].py"))
    if argv:
        files = [f for f in files if f.stem in argv]
    problems = total = 0
    for path in files:
        code_of_rule = path.stem.upper()
        module = _load(path)
        for kind in ("INVALID", "VALID"):
            for title, code in getattr(module, kind):
                total += 1
                result = lint_source(code, f"{path.stem}.py")
                if result.error is not None:
                    print(f"{path.stem} {kind:7} {title[:55]:55} | linter error: {result.error}")
                    problems += 1
                    continue
                found = sorted((d.span.line, d.code) for d in result.diagnostics)
                own = sorted(line for line, c in found if c == code_of_rule)
                other = [(line, c) for line, c in found if c != code_of_rule]
                expected = _marked(code) if kind == "INVALID" else []
                if own != expected or other:
                    problems += 1
                    detail = f"{code_of_rule} on {own or 'no line'}, marked {expected or 'none'}"
                    if other:
                        detail += f"; other rules: {other}"
                    print(f"{path.stem} {kind:7} {title[:55]:55} | {detail}")
    print(f"{problems} disagreements in {total} snippets")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
