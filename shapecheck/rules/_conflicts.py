"""Shared shape of the rules that report the engine's own shape contradictions."""

from __future__ import annotations

from collections.abc import Iterator

from shapecheck.engine.facts.records import FileFacts, ShapeConflict
from shapecheck.rules.base import Report


def conflict_reports(facts: FileFacts, kinds: tuple[str, ...], hint: str, ops: tuple[str, ...] = ()) -> Iterator[Report]:
    """One report per node for the engine's conflicts of these kinds (and, if given, these ops).

    A node met in several contexts follows from a suspect op only if it does in every context. A
    conflict that knows where its fix goes (``at``: a layer's constructor) is reported there."""
    first: dict[int, ShapeConflict] = {}
    causes: dict[int, frozenset] = {}
    for conflict in facts.conflicts:
        if conflict.kind not in kinds or (ops and conflict.op not in ops):
            continue
        key = id(conflict.node)
        first.setdefault(key, conflict)
        causes[key] = causes[key] & conflict.causes if key in causes else conflict.causes
    for key, conflict in first.items():
        if conflict.at is not None and conflict.at is not conflict.node:
            # The fix goes elsewhere (a layer's constructor): report there, or at the op when that
            # place is in a file this run does not report.
            detail = conflict.detail + facts.elsewhere(conflict.node, conflict.at)
            yield Report(
                conflict.at, detail, hint=conflict.hint or hint, causes=causes[key], fallback=conflict.node,
                fallback_message=conflict.detail,
            )
        else:
            yield Report(conflict.node, conflict.detail, hint=conflict.hint or hint, causes=causes[key])
