"""What every message promises: no ``None`` where a shape or a value is unknown."""

from __future__ import annotations

import pytest

from conftest import lint_with_all_rules
from shapecheck.rules.base import registry

#: One xdist worker runs this module with test_rule_examples.py and test_examples_cross_rule.py: they share the
#: per-process ``lint_with_all_rules`` results instead of each worker linting every example again.
pytestmark = pytest.mark.xdist_group("rule-examples")


def _invalid_examples():
    for rule in registry():
        for example in rule.INVALID:
            yield pytest.param(rule.code, example.code, id=f"{rule.code}-{example.title[:40]}")


@pytest.mark.parametrize(("code", "source"), list(_invalid_examples()))
def test_messages_never_print_none(code: str, source: str) -> None:
    result = lint_with_all_rules(source)  # the result the example tests linted (cached per snippet)
    assert result.diagnostics, f"{code}: the INVALID example gives no finding"
    for diagnostic in result.diagnostics:
        assert "None" not in diagnostic.message, diagnostic.message
        assert diagnostic.hint is None or "None" not in diagnostic.hint, diagnostic.hint
