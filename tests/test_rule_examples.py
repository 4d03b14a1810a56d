"""Every registered rule is tested by its own VALID and INVALID examples (Fixit style).

Adding a rule adds its cases here automatically: nothing else to edit.
"""

from __future__ import annotations

import re

import pytest

from shapecheck.catalogue import BY_CODE
from shapecheck.fixes import check_parses, fix_module
from shapecheck.linter import lint_source
from shapecheck.rules.base import Rule, registry

from conftest import lint_with_all_rules

#: One xdist worker runs this module with test_examples_cross_rule.py and test_messages.py: they share the
#: per-process ``lint_with_all_rules`` results instead of each worker linting every example again.
pytestmark = pytest.mark.xdist_group("rule-examples")

RULES = list(registry())
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


def _cases(kind: str) -> list:
    cases = []
    for rule in RULES:
        for index, example in enumerate(getattr(rule, kind)):
            cases.append(pytest.param(rule, example, id=f"{rule.code}-{rule.name}-{kind.lower()}-{index}"))
    return cases


@pytest.mark.parametrize(("rule", "example"), _cases("VALID"))
def test_valid_example_is_not_flagged(rule: type[Rule], example) -> None:
    result = lint_with_all_rules(example.code)
    assert result.error is None, result.error
    found = [d for d in result.diagnostics if d.code == rule.code]
    assert found == [], f"{rule.code} flagged VALID example {example.title!r}: {found}"


@pytest.mark.parametrize(("rule", "example"), _cases("INVALID"))
def test_invalid_example_is_flagged_on_marked_lines(rule: type[Rule], example) -> None:
    expected = example.expected_lines
    assert expected, f"INVALID example {example.title!r} of {rule.code} marks no line with '# <-'"
    result = lint_with_all_rules(example.code)  # other rules: tests/test_examples_cross_rule.py
    assert result.error is None, result.error
    own = [d for d in result.diagnostics if d.code == rule.code]
    lines = sorted({d.span.line for d in own})
    assert lines == expected, f"{rule.code} {example.title!r}: reported on lines {lines}, marked {expected}"
    for diagnostic in own:
        assert diagnostic.message.strip(), "a diagnostic needs a message"
        if not rule.fixable:
            assert diagnostic.fix is None, f"{rule.code} is not fixable but attached a fix"
    if example.expected_fix is not None:
        assert result.module is not None
        outcome = fix_module(result.module, example.code, own)
        assert outcome.fixed == example.expected_fix
        check_parses(outcome.fixed)
        again = lint_source(outcome.fixed, "example.py", {rule.code})
        assert [d for d in again.diagnostics if d.code == rule.code] == []


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_rule_is_documented_and_has_examples(rule: type[Rule]) -> None:
    doc = rule.doc()
    positions = [doc.find(section) for section in SECTIONS]
    assert all(position >= 0 for position in positions), f"{rule.code} docstring lacks one of {SECTIONS}"
    assert positions == sorted(positions), f"{rule.code} docstring sections are out of order"
    for section, following in zip(SECTIONS, [*SECTIONS[1:], None]):
        body = doc.split(section, 1)[1]
        if following:
            body = body.split(following, 1)[0]
        assert body.strip(), f"{rule.code}: section {section!r} is empty"
    assert rule.VALID, f"{rule.code} has no VALID example"
    assert rule.INVALID, f"{rule.code} has no INVALID example"
    assert rule.short_description()
    if rule.fixable:
        assert any(example.expected_fix is not None for example in rule.INVALID), (
            f"{rule.code} is fixable but no INVALID example shows the fixed code"
        )


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.code)
def test_rule_matches_the_catalogue(rule: type[Rule]) -> None:
    entry = BY_CODE.get(rule.code)
    assert entry is not None, f"{rule.code} is not in the catalogue (shapecheck/catalogue.py, RULES.md)"
    assert rule.name == entry.name, f"{rule.code} is called {entry.name!r} in the catalogue, not {rule.name!r}"
    assert re.fullmatch(r"SC\d{3}", rule.code)


def test_codes_and_names_are_unique() -> None:
    assert len({rule.code for rule in RULES}) == len(RULES)
    assert len({rule.name for rule in RULES}) == len(RULES)


def _missed_cases() -> list:
    from shapecheck.rules._examples import load_all

    cases = []
    for rule in RULES:
        for index, (example, reason) in enumerate(load_all(rule.code)[2]):
            cases.append(pytest.param(rule, example, reason, id=f"{rule.code}-missed-{index}"))
    return cases


@pytest.mark.parametrize(("rule", "example", "reason"), _missed_cases())
def test_known_miss_is_still_missed(rule: type[Rule], example, reason: str) -> None:
    """A known miss documents a limit of the engine. When the engine learns to see it, this fails:
    move the example back into INVALID (delete its KNOWN_MISSES entry)."""
    result = lint_source(example.code, "example.py", {rule.code})
    assert result.error is None, f"the linter fails on known miss {example.title!r}: {result.error}"
    assert example.expected_lines, f"known miss {example.title!r} of {rule.code} marks no line with '# <-'"
    lines = sorted({d.span.line for d in result.diagnostics if d.code == rule.code})
    assert lines != example.expected_lines, f"{rule.code} now catches {example.title!r}: remove it from KNOWN_MISSES"
    assert reason.strip()
