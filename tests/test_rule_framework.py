"""The rule framework: registry, selection by code / prefix / name, the catalogue."""

from __future__ import annotations

import re

import pytest

from conftest import BadNameRule, REPO
from shapecheck.catalogue import BY_CODE, BY_NAME, CATALOGUE, FAMILIES
from shapecheck.rules.base import Invalid, Registry, RegistryError, Rule, SelectionError, registry
from shapecheck.selection import RuleSelection, expand, resolve


def make_rule(code: str, name: str) -> type[Rule]:
    return type(f"Rule{code}", (Rule,), {"code": code, "name": name})


def test_registry_finds_the_shipped_rules() -> None:
    codes = [rule.code for rule in registry()]
    assert "SC001" in codes
    assert codes == sorted(codes)
    for path in (REPO / "shapecheck" / "rules").glob("sc[0-9][0-9][0-9]_*.py"):
        code = path.name[:5].upper()
        assert code in codes, f"{path.name} defines no registered rule {code}"
        assert registry().get(code).name.replace("-", "_") == path.stem[6:], f"{path.name} vs rule name"


def test_registry_rejects_duplicates_and_bad_codes() -> None:
    with pytest.raises(RegistryError, match="both claim 'SC900'"):
        Registry([make_rule("SC900", "one"), make_rule("SC900", "two")])
    with pytest.raises(RegistryError, match="both claim 'same'"):
        Registry([make_rule("SC900", "same"), make_rule("SC901", "same")])
    with pytest.raises(RegistryError, match="not of the form"):
        Registry([make_rule("X1", "x")])
    with pytest.raises(RegistryError, match="kebab-case"):
        Registry([make_rule("SC900", "Not_Kebab")])


def test_expand_and_resolve() -> None:
    rules = Registry([make_rule("SC101", "a-rule"), make_rule("SC102", "b-rule"), make_rule("SC201", "c-rule")])
    assert expand("SC1", rules) == {"SC101", "SC102"}
    assert expand("sc10", rules) == {"SC101", "SC102"}
    assert expand("b-rule", rules) == {"SC102"}
    assert expand("ALL", rules) == {"SC101", "SC102", "SC201"}
    assert expand("SC6", rules) == set()  # catalogued family, nothing written yet
    assert expand("lm-targets-not-shifted", rules) == set()
    with pytest.raises(SelectionError, match="did you mean 'b-rule'"):
        expand("b-rul", rules)
    layers = [RuleSelection(select=("SC1",)), RuleSelection(ignore=("SC102",), extend_select=("c-rule",))]
    assert resolve(layers, rules) == {"SC101", "SC201"}
    assert resolve([RuleSelection(select=("SC1",)), RuleSelection(select=("SC2",))], rules) == {"SC201"}


def test_invalid_expected_lines() -> None:
    example = Invalid("a = 1\nb = 2  # <-\nc = 3  # <- second\n")
    assert example.expected_lines == [2, 3]


def test_catalogue_shape() -> None:
    assert len(BY_CODE) == len(CATALOGUE) == len(BY_NAME)
    for entry in CATALOGUE:
        assert re.fullmatch(r"SC\d{3}", entry.code)
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", entry.name)
        assert entry.description


def test_catalogue_is_well_formed() -> None:
    """The project's own catalogue (shapecheck/catalogue.py) is the contract: read nothing outside the repo."""
    codes = [entry.code for entry in CATALOGUE]
    names = [entry.name for entry in CATALOGUE]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for entry in CATALOGUE:
        assert re.fullmatch(r"SC\d{3}", entry.code), entry
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", entry.name), entry
        assert entry.description.strip(), entry
        assert entry.code[:3] in FAMILIES, f"{entry.code} is in no family"
    assert BY_CODE == {entry.code: entry for entry in CATALOGUE}
    assert BY_NAME == {entry.name: entry for entry in CATALOGUE}


def test_planned_rules_are_catalogued_but_not_registered() -> None:
    shipped = {rule.code for rule in registry()}
    assert shipped <= set(BY_CODE), f"registered but not catalogued: {shipped - set(BY_CODE)}"
    assert BY_CODE["SC507"].name == "batch-first-mismatch"
    assert "batch_first=True" in BY_CODE["SC507"].description
    assert "SC507" in shipped  # planned in the catalogue first, shipped with rules II


def test_test_only_rules_are_not_shipped() -> None:
    assert BadNameRule.code not in {rule.code for rule in registry()}
