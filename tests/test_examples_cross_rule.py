"""Every rule's examples, linted with ALL rules on (what a user runs), not only their own rule.

A VALID example of one rule is correct code: no rule may fire on it. An INVALID example shows one
bug: its own rule fires once on each marked line and no other rule fires anywhere in it. This replaces
checking by hand with ``tests/snippets/check_against_linter.py``.
"""

from __future__ import annotations

import pytest

from conftest import lint_with_all_rules
from shapecheck.rules.base import Rule, registry

#: One xdist worker runs this module with test_rule_examples.py and test_messages.py: they share the
#: per-process ``lint_with_all_rules`` results instead of each worker linting every example again.
pytestmark = pytest.mark.xdist_group("rule-examples")

RULES = list(registry())


def _cases(kind: str) -> list:
    return [
        pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")
        for rule in RULES
        for index, example in enumerate(getattr(rule, kind))
    ]


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_is_clean_under_every_rule(rule: type[Rule], example) -> None:
    result = lint_with_all_rules(example.code)
    assert result.error is None, result.error
    found = [(d.span.line, d.code, d.message) for d in result.diagnostics]
    assert found == [], f"VALID example {example.title!r} of {rule.code} is flagged with all rules on: {found}"


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_shows_only_its_own_bug(rule: type[Rule], example) -> None:
    result = lint_with_all_rules(example.code)
    assert result.error is None, result.error
    own = sorted(d.span.line for d in result.diagnostics if d.code == rule.code)  # once per line: no duplicates
    others = [(d.span.line, d.code) for d in result.diagnostics if d.code != rule.code]
    assert own == example.expected_lines, f"{rule.code} {example.title!r}: on lines {own}"
    assert others == [], f"INVALID example {example.title!r} of {rule.code} also triggers {others}"
