"""Which rules run on a file: ``select`` / ``ignore`` / ``extend-select`` layers, in one place.

The configuration file, the command line and per-file ignores are each a ``RuleSelection`` layer;
``resolve`` applies them in order, so that a later layer wins (the command line over the file, and
per-file ignores last). Selectors are codes (``SC101``), code prefixes (``SC1``, ``SC20``), rule names
(``missing-attention-scale``) or ``ALL``.

A selector that names a catalogued rule which is not implemented yet is accepted and selects
nothing: a configuration written today keeps working when that rule lands.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from shapecheck.catalogue import BY_CODE, BY_NAME
from shapecheck.rules.base import Registry, SelectionError


@dataclass(frozen=True)
class RuleSelection:
    """One layer of selection. ``select=None`` keeps what the previous layers chose."""

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()

    def selectors(self) -> Iterable[str]:
        yield from self.select or ()
        yield from self.ignore
        yield from self.extend_select


def expand(selector: str, registry: Registry) -> set[str]:
    """The registered codes meant by ``selector``; ``SelectionError`` when it names no rule at all."""
    try:
        return registry.expand(selector)
    except SelectionError:
        pass
    key = selector.strip()
    upper = key.upper()
    if key.lower() in BY_NAME or (upper.startswith("SC") and any(code.startswith(upper) for code in BY_CODE)):
        return set()
    known = sorted(set(BY_CODE) | set(BY_NAME) | {rule.name for rule in registry})
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise SelectionError(f"unknown rule code or name {selector!r}{hint}; `shapecheck rules` lists them")


def validate(selection: RuleSelection, registry: Registry) -> None:
    """Raise ``SelectionError`` for the first selector that names no rule."""
    for selector in selection.selectors():
        expand(selector, registry)


def resolve(layers: Sequence[RuleSelection], registry: Registry) -> frozenset[str]:
    """The codes that run after applying every layer in order, starting from all rules."""
    codes = {rule.code for rule in registry}
    for layer in layers:
        if layer.select is not None:
            codes = set()
            for selector in layer.select:
                codes |= expand(selector, registry)
        for selector in layer.extend_select:
            codes |= expand(selector, registry)
        for selector in layer.ignore:
            codes -= expand(selector, registry)
    return frozenset(codes)


def split_selectors(values: Iterable[str]) -> tuple[str, ...]:
    """``["SC1,SC2", "SC301"]`` -> ``("SC1", "SC2", "SC301")``: flags may repeat or use commas."""
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())
