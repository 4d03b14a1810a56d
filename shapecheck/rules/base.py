"""The rule framework: one rule is one class with a code, a name, a docstring and its own examples.

A rule never parses code by itself. It receives the engine's facts about one file
(``shapecheck.engine.facts.FileFacts``) and yields ``Report`` objects: the node to point at, a message
that says what was seen and what was expected, and optionally a hint (the fix title) and a ``Fix``.

Rules register themselves by subclassing ``Rule``: the registry imports every module of the
``shapecheck.rules`` package, so adding a rule touches no other file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from shapecheck.diagnostics import Fix, Severity

if TYPE_CHECKING:  # pragma: no cover - typing only
    import libcst as cst

    from shapecheck.engine.facts.records import FileFacts

CODE_PATTERN = re.compile(r"^SC\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
#: The comment that marks the line an INVALID example must be reported on.
EXPECT_MARKER = "# <-"


@dataclass(frozen=True)
class Report:
    """What a rule yields: where, what, and how to mend it."""

    node: "cst.CSTNode"
    message: str
    hint: str | None = None
    fix: Fix | None = None
    #: nodes of earlier suspect ops this finding may follow from: when one of them is reported
    #: too, this finding is its follow-on and is dropped (one root cause, one finding)
    causes: frozenset = frozenset()
    #: where to report instead when ``node`` lies in a project file this run does not report (a
    #: configuration default in a file pre-commit did not pass): the place in the checked code that
    #: led to it
    fallback: "cst.CSTNode | None" = None
    #: the message at the fallback, when it differs (a place named relative to the finding's file
    #: is named relative to the fallback's); None: the same message
    fallback_message: str | None = None

    def at_fallback(self) -> "Report":
        """This report moved to its fallback."""
        return replace(self, node=self.fallback, fallback=None, message=self.fallback_message or self.message, fallback_message=None)


@dataclass(frozen=True)
class Valid:
    """Code the rule must leave alone."""

    code: str
    title: str = ""


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag on the line marked ``# <-``.

    ``expected_fix`` is the whole file after ``--fix`` when the rule offers a fix for this example.
    """

    code: str
    title: str = ""
    expected_fix: str | None = None

    @property
    def expected_lines(self) -> list[int]:
        return [
            number
            for number, text in enumerate(self.code.splitlines(), start=1)
            if text.rstrip().endswith(EXPECT_MARKER) or (EXPECT_MARKER + " ") in text
        ]


class Rule:
    """Base class of every rule. Subclasses set the class attributes and implement ``check``.

    The docstring is the rule's documentation, in four sections: ``What it does``,
    ``Why is this bad?``, ``Example``, ``Use instead`` (``shapecheck explain`` renders it).
    """

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity] = Severity.WARNING
    fixable: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def check(self, facts: "FileFacts") -> Iterator[Report]:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def doc(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def short_description(cls) -> str:
        if cls.summary:
            return cls.summary
        doc = cls.doc()
        marker = "## What it does"
        if marker in doc:
            body = doc.split(marker, 1)[1].strip()
            return body.split("\n\n", 1)[0].replace("\n", " ").strip()
        return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


class RegistryError(Exception):
    """Two rules share a code or a name, or a code/name is malformed."""


class SelectionError(ValueError):
    """A --select / --ignore entry names no rule."""


class Registry:
    """All known rules, by code and by name."""

    def __init__(self, rules: Iterable[type[Rule]]) -> None:
        self._by_code: dict[str, type[Rule]] = {}
        self._by_name: dict[str, type[Rule]] = {}
        for rule in rules:
            self.add(rule)

    def add(self, rule: type[Rule]) -> None:
        if not CODE_PATTERN.match(rule.code):
            raise RegistryError(f"{rule.__name__}: code {rule.code!r} is not of the form SC123")
        if not NAME_PATTERN.match(rule.name):
            raise RegistryError(f"{rule.__name__}: name {rule.name!r} is not kebab-case")
        for table, key in ((self._by_code, rule.code), (self._by_name, rule.name)):
            other = table.get(key)
            if other is not None and other is not rule:
                raise RegistryError(f"{rule.__name__} and {other.__name__} both claim {key!r}")
            table[key] = rule

    def __iter__(self) -> Iterator[type[Rule]]:
        return iter(sorted(self._by_code.values(), key=lambda rule: rule.code))

    def __len__(self) -> int:
        return len(self._by_code)

    def get(self, code_or_name: str) -> type[Rule] | None:
        key = code_or_name.strip()
        return self._by_code.get(key.upper()) or self._by_name.get(key.lower())

    def expand(self, selector: str) -> set[str]:
        """Codes meant by one selector: a code, a code prefix (``SC1``, ``SC20``), a name, or ALL."""
        key = selector.strip()
        if not key:
            return set()
        if key.upper() == "ALL":
            return set(self._by_code)
        if key.lower() in self._by_name:
            return {self._by_name[key.lower()].code}
        upper = key.upper()
        matches = {code for code in self._by_code if code.startswith(upper)}
        if upper.startswith("SC") and matches:
            return matches
        raise SelectionError(f"unknown rule code or name: {selector!r}")

    def select(
        self,
        select: Iterable[str] | None = None,
        ignore: Iterable[str] = (),
        extend_select: Iterable[str] = (),
    ) -> set[str]:
        """The codes that run: ``select`` (default all) plus ``extend_select`` minus ``ignore``."""
        chosen: set[str] = set()
        for selector in select if select is not None else ["ALL"]:
            chosen |= self.expand(selector)
        for selector in extend_select:
            chosen |= self.expand(selector)
        for selector in ignore:
            chosen -= self.expand(selector)
        return chosen


def _discover() -> list[type[Rule]]:
    import shapecheck.rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("sc"):
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and getattr(value, "code", None)
                and value.__module__ == module.__name__
            ):
                found[value.__qualname__ + "@" + module.__name__] = value
    return list(found.values())


_REGISTRY: Registry | None = None


def registry() -> Registry:
    """The registry of every rule shipped in ``shapecheck.rules`` (built once)."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry(_discover())
    return _REGISTRY
