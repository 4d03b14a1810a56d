"""What each rule tells the user, pinned as a reviewed snapshot (as ruff's snapshot tests do).

For every INVALID example of every rule, the rule's own findings (line, column, severity, message,
hint, and the title of the fix when there is one) are compared with ``tests/data/rule_messages.json``. A change to what a rule prints is then a
deliberate, reviewed change of that file, never a silent one: regenerate it with

    python tests/test_rule_message_snapshots.py --update

and read the diff before committing it. The other example tests pin where a rule fires; this one
pins what it says there (the sizes, dims and fix it names are what the user acts on).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import lint_with_all_rules
from shapecheck.rules.base import registry

#: Shares the per-process ``lint_with_all_rules`` results with the other example tests.
pytestmark = pytest.mark.xdist_group("rule-examples")

SNAPSHOT = Path(__file__).parent / "data" / "rule_messages.json"


def _key(code: str, index: int, title: str) -> str:
    return f"{code}/{index}/{title}"


def _examples():
    for rule in registry():
        for index, example in enumerate(rule.INVALID):
            yield rule.code, index, example


def _findings(code: str, source: str) -> list[list[object]]:
    result = lint_with_all_rules(source)
    assert result.error is None, result.error
    own = [d for d in result.diagnostics if d.code == code]
    return sorted(
        [d.span.line, d.span.column, str(d.severity), d.message, d.hint, d.fix.message if d.fix is not None else None] for d in own
    )


def _load() -> dict[str, list[list[object]]]:
    return json.loads(SNAPSHOT.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("code", "index", "example"),
    [pytest.param(code, index, example, id=f"{code}-invalid-{index}") for code, index, example in _examples()],
)
def test_what_a_rule_says_is_the_reviewed_snapshot(code: str, index: int, example) -> None:
    expected = _load().get(_key(code, index, example.title))
    assert expected is not None, f"no snapshot for {code} example {index} ({example.title!r}): run {__file__} --update"
    assert _findings(code, example.code) == expected


def test_the_snapshot_has_no_stale_entries() -> None:
    keys = {_key(code, index, example.title) for code, index, example in _examples()}
    assert set(_load()) == keys


def _update() -> None:
    snapshot = {_key(code, index, example.title): _findings(code, example.code) for code, index, example in _examples()}
    SNAPSHOT.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {len(snapshot)} examples to {SNAPSHOT}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit(f"usage: python {sys.argv[0]} --update")
    sys.path.insert(0, str(Path(__file__).parent))
    _update()
