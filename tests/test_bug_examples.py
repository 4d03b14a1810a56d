"""examples/bugs/: every file carries one planted bug, marked ``# BUG: SCnnn`` on its line, and
``shapecheck lint`` reports exactly that one finding (with every rule on), nothing else."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import lint_shipped_file

#: One xdist worker runs this module with test_examples_promises.py: they share the
#: per-process ``lint_shipped_file`` results instead of each worker linting every example again.
pytestmark = pytest.mark.xdist_group("shipped-examples")

BUGS = Path(__file__).resolve().parent.parent / "examples" / "bugs"
MARK = re.compile(r"#\s*BUG:\s*(SC\d{3})")


def _marked(path: Path) -> list[tuple[int, str]]:
    return [
        (number, match.group(1))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if (match := MARK.search(line))
    ]


@pytest.mark.parametrize("path", sorted(BUGS.glob("sc*.py")), ids=lambda path: path.stem)
def test_bug_file_has_exactly_its_marked_finding(path: Path) -> None:
    marked = _marked(path)
    assert len(marked) == 1, f"{path.name}: mark exactly one line with '# BUG: SCnnn'"
    result = lint_shipped_file(path)
    assert result.error is None, result.error
    found = [(d.line, d.code) for d in result.diagnostics]
    assert found == marked, f"{path.name}: expected {marked}, linted {found}"
    assert path.stem.startswith(marked[0][1].lower()), f"{path.name} is not named after {marked[0][1]}"
