"""Shared shape of the rules that report the engine's own shape contradictions."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.engine.facts.records import FileFacts
from shapecheck.rules.base import Report


def conflict_reports(facts: FileFacts, kinds: tuple[str, ...], hint: str, ops: tuple[str, ...] = ()) -> Iterator[Report]:
    """One report per node for the engine's conflicts of these kinds (and, if given, these ops)."""
    seen: set[int] = set()
    for conflict in facts.conflicts:
        if conflict.kind not in kinds or (ops and conflict.op not in ops):
            continue
        if id(conflict.node) in seen:
            continue
        seen.add(id(conflict.node))
        yield Report(conflict.node, conflict.detail, hint=hint)
